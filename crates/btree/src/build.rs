//! Sorted bulk build: a tree built bottom-up from rows given in key order, each page written
//! once (InnoDB's sorted index build, `btr_bulk`; MariaDB uses it for inserts into an empty
//! table).
//!
//! Rows fill a leaf in order until it holds fifteen sixteenths of its capacity (InnoDB leaves
//! the same sixteenth free, so that the first inserts after the load do not split every page);
//! the full leaf is then written as a created page in a mini-transaction of its own — its image
//! is its redo record — and its first key (for a leaf, the shortest separator from the leaf
//! before it) goes to the level above, which fills the same way. `finish` seals the last page
//! of each level and copies the one page of the top level into the tree's root page, which
//! never moves.
//!
//! **Why a crash cannot show a partial build.** Every page the build writes is unreachable
//! until the root is rewritten: nothing points to them, as nothing points to an overflow chain
//! before its record commits (`overflow.rs`). The root's rewrite is one mini-transaction, after
//! every page's own, so the log replays it only after all of them. A crash before it leaves the
//! tree empty and the written pages allocated but unreachable, as a partly written overflow
//! chain is (the engine frees them when it recovers: an empty tree is its root alone); a build
//! that fails or is dropped frees them itself.

use barracuda_page::{PageId, PageNo, SysFields};

use crate::error::{BTreeError, Result};
use crate::insert::shortest_separator;
use crate::node::{self, NodeMut, NodeRef, Value};
use crate::overflow;
use crate::tree::BTree;

/// A leaf or internal page is sealed once its records use this share of its capacity
/// (numerator over 16).
const FILL_SIXTEENTHS: usize = 15;

/// A bottom-up build of a tree from rows in ascending key order ([`BTree::build_sorted`]).
///
/// Nothing is visible until [`finish`](Self::finish) installs the built tree in the (empty)
/// tree's root; a build dropped or failed before that frees every page it allocated.
pub struct SortedBuild<'t> {
    tree: &'t BTree,
    sys: SysFields,
    /// The page being filled at each level, leaves first.
    levels: Vec<OpenPage>,
    /// Pages written (sealed) so far, and page numbers allocated for pages not yet sealed.
    allocated: Vec<PageNo>,
    /// First pages of the overflow chains written for long values.
    chains: Vec<PageNo>,
    /// Pages those chains hold.
    chain_pages: u64,
    /// The key of the last row pushed.
    last_key: Option<Vec<u8>>,
    rows: u64,
    installed: bool,
}

/// The page being filled at one level.
struct OpenPage {
    /// The page's bytes, formatted with a placeholder identity (its number is known only when
    /// it is sealed or its right sibling starts).
    buf: Vec<u8>,
    len: usize,
    /// Its level in the tree (0: leaves).
    level: u16,
    /// Its page number, once allocated.
    no: Option<PageNo>,
    /// The page sealed before it at this level (its left sibling).
    prev: Option<PageNo>,
    /// The key of its record in the level above: empty for the first page of a level.
    parent_key: Vec<u8>,
    /// Pages of this level sealed so far.
    sealed: u64,
}

/// What a finished build made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Rows placed.
    pub rows: u64,
    /// Pages written besides the root (leaves, internal pages, overflow pages).
    pub pages: u64,
    /// Levels of the tree built (1: the root is a leaf).
    pub height: u32,
}

impl BTree {
    /// Starts a bottom-up build of this tree from rows in ascending key order, each leaf row
    /// carrying the transaction fields `sys`. The tree must be empty when the build is
    /// [finished](SortedBuild::finish); writers may use it meanwhile (the finish then fails).
    /// Trees of compressed pages are not built this way
    /// ([`BTreeError::BuildUnsupported`]).
    pub fn build_sorted(&self, sys: SysFields) -> Result<SortedBuild<'_>> {
        if self.zip.is_some() {
            return Err(BTreeError::BuildUnsupported {
                index_id: self.index_id,
                why: "its pages are compressed (each page's compressed size decides its split)",
            });
        }
        // Checked now so that a load into a table with rows fails before it builds anything;
        // `finish` checks again under the root's latch.
        if !self.is_empty()? {
            return Err(BTreeError::TreeNotEmpty {
                index_id: self.index_id,
            });
        }
        Ok(SortedBuild {
            tree: self,
            sys,
            levels: Vec::new(),
            allocated: Vec::new(),
            chains: Vec::new(),
            chain_pages: 0,
            last_key: None,
            rows: 0,
            installed: false,
        })
    }
}

impl SortedBuild<'_> {
    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// An upper bound of the redo the next [`push`](Self::push) of a value of `value_len`
    /// bytes may log: a sealed page at every level (and one more above), and the value's
    /// overflow chain. A log with limited room is asked for this much before the push.
    pub fn redo_bound(&self, value_len: usize) -> u64 {
        let page = self.tree.ctx.pool.page_size().bytes() as u64;
        let levels = self.levels.len() as u64 + 1;
        let chain = value_len as u64 + value_len as u64 / 64 + 256;
        levels * (page + 256) + chain
    }

    /// Adds the row `key → value`, whose key must be above the last one pushed. A long value
    /// goes to an overflow chain, as [`BTree::put`] would store it.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.tree.check_key(key)?;
        let len = value.len() as u64;
        if len > node::MAX_VALUE_LEN {
            return Err(BTreeError::ValueTooLong {
                len,
                max: node::MAX_VALUE_LEN,
            });
        }
        if self.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(BTreeError::KeysNotAscending {
                index_id: self.tree.index_id,
                position: self.rows,
            });
        }
        let stored = if self.tree.needs_overflow(key.len(), value) {
            let first_page = overflow::write_chain(self.tree, value)?;
            self.chains.push(first_page);
            let capacity = barracuda_page::payload_capacity(self.tree.ctx.pool.page_size());
            self.chain_pages += value.len().div_ceil(capacity.max(1)) as u64;
            Value::Overflow {
                total_len: len,
                first_page,
            }
        } else {
            Value::Inline(value)
        };
        self.add(0, key, stored)?;
        match &mut self.last_key {
            Some(last) => {
                last.clear();
                last.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        self.rows += 1;
        Ok(())
    }

    /// Places a record at the end of level `level`'s page, sealing the page first when the
    /// record would fill it past the fill limit.
    fn add(&mut self, level: usize, key: &[u8], value: Value<'_>) -> Result<()> {
        let tree = self.tree;
        let page_size = tree.ctx.pool.page_size();
        let placeholder = self.placeholder();
        if level == self.levels.len() {
            let level_no = u16::try_from(level).map_err(|_| {
                BTreeError::corrupt(placeholder, "a sorted build deeper than 65535 levels")
            })?;
            self.levels
                .push(OpenPage::new(tree, placeholder, level_no, Vec::new())?);
        }
        let size = node::record_size(page_size, key.len(), value);
        let needs_seal = {
            let current = self.level(level)?;
            let page = NodeRef::open(&current.buf, placeholder, tree)?;
            current.len > 0
                && (page.used_space() + size > page.capacity() * FILL_SIXTEENTHS / 16
                    || page.free_space() < size)
        };
        if needs_seal {
            // The sealed page links to its right sibling, whose number is allocated now.
            let current_no = self.page_no_of(level)?;
            let next_no = self.allocate(Some(current_no))?;
            let parent_key = if level == 0 {
                let last = self.last_key.as_deref().unwrap_or_default();
                shortest_separator(last, key)
            } else {
                key.to_vec()
            };
            let level_no = self.level(level)?.level;
            let fresh = OpenPage::new(tree, placeholder, level_no, parent_key)?;
            let full = std::mem::replace(self.level_mut(level)?, fresh);
            {
                let next = self.level_mut(level)?;
                next.no = Some(next_no);
                next.prev = Some(current_no);
                next.sealed = full.sealed + 1;
            }
            self.seal(level, &full, current_no, Some(next_no))?;
        }
        let sys = if level == 0 {
            self.sys
        } else {
            SysFields::NONE
        };
        let current = self.level_mut(level)?;
        let pos = current.len;
        if !NodeMut::open(&mut current.buf, placeholder, tree)?.insert(pos, key, value, sys)? {
            return Err(BTreeError::corrupt(
                placeholder,
                "a record does not fit in an empty page of a sorted build",
            ));
        }
        current.len += 1;
        Ok(())
    }

    /// Writes `page` (level `level`'s page just replaced by its right sibling, or its last
    /// page) as page `no` with right sibling `next`, in a mini-transaction of its own, and
    /// adds its record to the level above.
    fn seal(
        &mut self,
        level: usize,
        page: &OpenPage,
        no: PageNo,
        next: Option<PageNo>,
    ) -> Result<()> {
        let tree = self.tree;
        let id = tree.page_id(no);
        let mut guard = tree.ctx.pool.create(id)?;
        NodeMut::copy_page(&mut guard, &page.buf, id)?;
        NodeMut::open(&mut guard, id, tree)?.set_links(page.prev, next);
        let mut mtr = tree.mtr();
        mtr.changed(guard);
        mtr.commit()?;
        self.add(level + 1, &page.parent_key, Value::Child(no))
    }

    /// The number of the page open at `level`, allocated now if it has none yet (the first page
    /// of a level gets its number when it is sealed).
    fn page_no_of(&mut self, level: usize) -> Result<PageNo> {
        if let Some(no) = self.level(level)?.no {
            return Ok(no);
        }
        let near = self.level(level)?.prev.or(self.allocated.last().copied());
        let no = self.allocate(near)?;
        self.level_mut(level)?.no = Some(no);
        Ok(no)
    }

    fn allocate(&mut self, near: Option<PageNo>) -> Result<PageNo> {
        let no = self.tree.ctx.alloc.allocate(self.tree.space, near)?;
        self.allocated.push(no);
        Ok(no)
    }

    /// Installs the built tree: seals the last page of every level but the top one, then
    /// rewrites the root page with the top page in one mini-transaction, which is the moment
    /// every row becomes part of the tree. Fails with [`BTreeError::TreeNotEmpty`] (freeing
    /// what was built) when the tree has a record by then. Returns what was built and the
    /// LSN the root's rewrite ends at (`None` when no row was pushed: nothing was changed).
    pub fn finish(mut self) -> Result<(BuildStats, Option<barracuda_page::Lsn>)> {
        let mut level = 0;
        while level < self.levels.len() {
            let top_alone = level + 1 == self.levels.len() && self.level(level)?.sealed == 0;
            if top_alone {
                break;
            }
            let no = self.page_no_of(level)?;
            let placeholder = self.placeholder();
            let level_no = self.level(level)?.level;
            let empty = OpenPage::new(self.tree, placeholder, level_no, Vec::new())?;
            let last = std::mem::replace(self.level_mut(level)?, empty);
            self.seal(level, &last, no, None)?;
            level += 1;
        }
        let height = self.levels.len() as u32;
        let Some(top) = self.levels.last() else {
            self.installed = true;
            return Ok((BuildStats::default(), None));
        };
        let tree = self.tree;
        let root_id = tree.page_id(tree.root);
        let mut guard = tree.ctx.pool.get_exclusive(root_id)?;
        {
            let root = NodeRef::open(&guard, root_id, tree)?;
            if root.level() != 0 || !root.is_empty() {
                return Err(BTreeError::TreeNotEmpty {
                    index_id: tree.index_id,
                });
            }
        }
        // Descents that remembered the root as the rightmost leaf must not use it again.
        tree.note_structure_change();
        NodeMut::copy_page(&mut guard, &top.buf, root_id)?;
        let mut mtr = tree.mtr();
        mtr.changed(guard);
        let end = mtr.commit()?;
        self.installed = true;
        let stats = BuildStats {
            rows: self.rows,
            pages: self.allocated.len() as u64 + self.chain_pages,
            height,
        };
        Ok((stats, end))
    }

    fn placeholder(&self) -> PageId {
        self.tree.page_id(self.tree.root)
    }

    fn level(&self, level: usize) -> Result<&OpenPage> {
        self.levels
            .get(level)
            .ok_or_else(|| BTreeError::corrupt(self.placeholder(), "a sorted build lost a level"))
    }

    fn level_mut(&mut self, level: usize) -> Result<&mut OpenPage> {
        let placeholder = self.placeholder();
        self.levels
            .get_mut(level)
            .ok_or_else(|| BTreeError::corrupt(placeholder, "a sorted build lost a level"))
    }
}

impl OpenPage {
    fn new(tree: &BTree, placeholder: PageId, level: u16, parent_key: Vec<u8>) -> Result<Self> {
        let page_size = tree.ctx.pool.page_size();
        let mut buf = vec![0u8; page_size.bytes()];
        NodeMut::init(
            &mut buf,
            placeholder,
            level,
            tree.index_id,
            None,
            None,
            page_size,
        )?;
        Ok(Self {
            buf,
            len: 0,
            level,
            no: None,
            prev: None,
            parent_key,
            sealed: 0,
        })
    }
}

impl Drop for SortedBuild<'_> {
    /// A build not installed gives back every page it took: nothing points to them.
    fn drop(&mut self) {
        if self.installed {
            return;
        }
        let tree = self.tree;
        let pages: Vec<PageId> = self.allocated.iter().map(|&no| tree.page_id(no)).collect();
        if let Err(err) = tree.ctx.alloc.free_pages(&pages) {
            tracing::warn!(%err, pages = pages.len(), "could not free the pages of an abandoned sorted build; they leak");
        }
        for &first in &self.chains {
            crate::insert::free_unreachable_chain(tree, first);
        }
    }
}
