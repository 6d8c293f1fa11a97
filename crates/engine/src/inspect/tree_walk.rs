//! The depth-first walk of a table's B-tree read from its file: levels, fences, key order, leaf
//! sibling links, index id and overflow chains (type, `prev`/`next` links, total length), no
//! page reached twice.

use barracuda_page::{
    verify_page, FileHeader, IndexPage, OverflowPage, PageId, PageNo, SpaceId, ValueRef, FIL_NULL,
};

use super::{page_no_text, PageReader, Problem};

/// What [`walk_tree`] found.
pub(super) struct Walk {
    /// The B-tree height (1 = the root is a leaf; 0 = the root is unreadable).
    pub(super) height: u32,
    /// Records in the leaves reached.
    pub(super) records: u64,
    /// Per page of the file: reached from the root (tree pages and overflow pages).
    pub(super) reached: Vec<bool>,
    /// The problems met on the way.
    pub(super) problems: Vec<Problem>,
}

/// Walks the B-tree of index `index_id` in `reader`'s file (space `space`) from `root`.
pub(super) fn walk_tree(reader: &PageReader, space: SpaceId, index_id: u64, root: PageNo) -> Walk {
    let mut walk = TreeWalk {
        reader,
        space,
        index_id,
        reached: vec![false; reader.pages as usize],
        previous_leaf: None,
        last_key: None,
        records: 0,
        problems: Vec::new(),
        links_unknown: false,
    };
    let height = walk.run(root);
    Walk {
        height,
        records: walk.records,
        reached: walk.reached,
        problems: walk.problems,
    }
}

/// The depth-first walk of a B-tree read from its file.
struct TreeWalk<'r> {
    reader: &'r PageReader,
    space: SpaceId,
    index_id: u64,
    reached: Vec<bool>,
    previous_leaf: Option<PageNo>,
    last_key: Option<Vec<u8>>,
    records: u64,
    problems: Vec<Problem>,
    /// A page was skipped (unreadable): the next leaf's sibling links cannot be judged.
    links_unknown: bool,
}

struct Visit {
    page_no: PageNo,
    level: Option<u16>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl TreeWalk<'_> {
    /// Walks from `root`; returns the height (0 if the root is unreadable).
    fn run(&mut self, root: PageNo) -> u32 {
        let mut height = 0;
        let mut stack = vec![Visit {
            page_no: root,
            level: None,
            lower: None,
            upper: None,
        }];
        while let Some(visit) = stack.pop() {
            let Some(buf) = self.fetch(visit.page_no, "B-tree") else {
                self.links_unknown = true;
                continue;
            };
            let page = match IndexPage::open(&buf[..], self.reader.page_size) {
                Ok(page) => page,
                Err(e) => {
                    self.problem(visit.page_no, format!("B-tree page: {e}"));
                    self.links_unknown = true;
                    continue;
                }
            };
            if page.index_id() != self.index_id {
                self.problem(
                    visit.page_no,
                    format!(
                        "B-tree page of index {}, expected {}",
                        page.index_id(),
                        self.index_id
                    ),
                );
                self.links_unknown = true;
                continue;
            }
            match visit.level {
                None => height = u32::from(page.level()) + 1,
                Some(level) if level != page.level() => {
                    self.problem(
                        visit.page_no,
                        format!("level {}, expected {level}", page.level()),
                    );
                    self.links_unknown = true;
                    continue;
                }
                Some(_) => {}
            }
            for i in 0..page.len() {
                let key = match page.key(i) {
                    Ok(key) => key,
                    Err(e) => {
                        self.problem(visit.page_no, e.to_string());
                        continue;
                    }
                };
                let routing = !page.is_leaf() && i == 0;
                if !routing && visit.lower.as_deref().is_some_and(|l| key < l) {
                    self.problem(
                        visit.page_no,
                        format!("key {i} is below its parent's fence"),
                    );
                }
                if visit.upper.as_deref().is_some_and(|u| key >= u) {
                    self.problem(
                        visit.page_no,
                        format!("key {i} is at or above its parent's fence"),
                    );
                }
            }
            if page.is_leaf() {
                self.leaf(&page, visit.page_no, root);
                continue;
            }
            if page.is_empty() {
                self.problem(visit.page_no, "internal page without children");
                continue;
            }
            let n = page.len();
            for i in (0..n).rev() {
                let record = match page.record(i) {
                    Ok(record) => record,
                    Err(e) => {
                        self.problem(visit.page_no, e.to_string());
                        continue;
                    }
                };
                let Some(child) = record.child_page() else {
                    self.problem(
                        visit.page_no,
                        format!("record {i} of an internal page is not a child pointer"),
                    );
                    continue;
                };
                let lower = if i == 0 {
                    visit.lower.clone()
                } else {
                    Some(record.key.to_vec())
                };
                // A bad next key was reported by the fence loop above; the child is then
                // checked against the parent's upper fence only.
                let upper = match page.key(i + 1) {
                    Ok(key) if i + 1 < n => Some(key.to_vec()),
                    _ => visit.upper.clone(),
                };
                stack.push(Visit {
                    page_no: child,
                    level: Some(page.level() - 1),
                    lower,
                    upper,
                });
            }
        }
        if let Some(last) = self.previous_leaf {
            if let Ok(buf) = self.reader.read(last) {
                if FileHeader::read(&buf).is_ok_and(|h| h.next != FIL_NULL) {
                    self.problem(last, "the last leaf has a next page");
                }
            }
        }
        height
    }

    fn leaf(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo, root: PageNo) {
        if std::mem::take(&mut self.links_unknown) {
            self.previous_leaf = None;
        } else {
            self.check_links(page, page_no);
        }
        self.leaf_body(page, page_no, root);
    }

    fn check_links(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo) {
        let prev = (page.prev() != FIL_NULL).then_some(page.prev());
        if prev != self.previous_leaf {
            self.problem(
                page_no,
                format!(
                    "prev link {}, expected {}",
                    page_no_text(page.prev()),
                    page_no_text(self.previous_leaf.unwrap_or(FIL_NULL))
                ),
            );
        }
        if let Some(previous) = self.previous_leaf {
            if let Ok(buf) = self.reader.read(previous) {
                let next = FileHeader::read(&buf).map_or(FIL_NULL, |h| h.next);
                if next != page_no {
                    self.problem(
                        previous,
                        format!("next link {}, expected {page_no}", page_no_text(next)),
                    );
                }
            }
        }
    }

    fn leaf_body(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo, root: PageNo) {
        if page_no != root && page.is_empty() {
            self.problem(page_no, "empty leaf that is not the root");
        }
        for i in 0..page.len() {
            let record = match page.record(i) {
                Ok(record) => record,
                Err(e) => {
                    self.problem(page_no, e.to_string());
                    continue;
                }
            };
            if self
                .last_key
                .as_deref()
                .is_some_and(|last| record.key <= last)
            {
                self.problem(
                    page_no,
                    format!("key {i} is not above the previous leaf's last key"),
                );
            }
            self.last_key = Some(record.key.to_vec());
            match record.value {
                ValueRef::Inline(_) => {}
                ValueRef::Overflow {
                    prefix,
                    total_len,
                    first_page,
                } => {
                    self.chain(
                        page_no,
                        i,
                        first_page,
                        total_len.saturating_sub(prefix.len() as u64),
                    );
                }
                ValueRef::Child(_) => {
                    self.problem(page_no, format!("record {i}: child pointer in a leaf"));
                }
            }
        }
        self.records += page.len() as u64;
        self.previous_leaf = Some(page_no);
    }

    fn chain(&mut self, leaf: PageNo, record: usize, first: PageNo, expected_len: u64) {
        let mut page_no = first;
        let mut prev = FIL_NULL;
        let mut total = 0u64;
        while page_no != FIL_NULL {
            let Some(buf) = self.fetch(page_no, "overflow chain") else {
                return;
            };
            let page = match OverflowPage::read(&buf, self.reader.page_size) {
                Ok(p) => p,
                Err(e) => {
                    self.problem(
                        page_no,
                        format!("overflow chain of page {leaf} record {record}: {e}"),
                    );
                    return;
                }
            };
            // Every page links back to the previous one, the first to none (FORMATS.md §6).
            let link = FileHeader::read(&buf).map_or(FIL_NULL, |h| h.prev);
            if link != prev {
                self.problem(
                    page_no,
                    format!(
                        "overflow chain of page {leaf} record {record}: prev link {}, expected {}",
                        page_no_text(link),
                        page_no_text(prev)
                    ),
                );
            }
            total += page.payload.len() as u64;
            prev = page_no;
            page_no = page.next;
        }
        if total != expected_len {
            self.problem(
                leaf,
                format!(
                    "record {record}: overflow chain holds {total} bytes, expected {expected_len}"
                ),
            );
        }
    }

    /// Reads a page reached by the walk, once: checks bounds, double references and
    /// verification (problems with the page itself are reported by the sequential pass).
    fn fetch(&mut self, page_no: PageNo, what: &str) -> Option<Vec<u8>> {
        let Some(seen) = self.reached.get_mut(page_no as usize) else {
            self.problem(page_no, format!("{what} points beyond the end of the file"));
            return None;
        };
        if *seen {
            self.problem(page_no, format!("{what} reaches this page a second time"));
            return None;
        }
        *seen = true;
        let buf = self.reader.read(page_no).ok()?;
        verify_page(
            &buf,
            PageId::new(self.space, page_no),
            self.reader.page_size,
        )
        .ok()
        .map(|()| buf)
        .or_else(|| {
            self.problem(
                page_no,
                format!("{what} reaches a page that fails verification"),
            );
            None
        })
    }

    fn problem(&mut self, page_no: PageNo, reason: impl Into<String>) {
        self.problems
            .push(self.reader.problem(Some(page_no), reason));
    }
}
