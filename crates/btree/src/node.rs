//! The B-tree's view of an index page: a thin adapter over [`barracuda_page::IndexPage`] that
//! turns page-level outcomes into tree errors and holds the tree's sizing rules.

use barracuda_page::{
    index_capacity, FileHeader, IndexPage, PageError, PageId, PageNo, PageSize, PageType, Record,
    SplitPoint, SysFields, ValueRef, FIL_NULL,
};

use crate::error::{BTreeError, Result};
use crate::tree::{BTree, Target};

/// The longest value the tree stores: 4 GiB − 1, the longest an overflow record may describe
/// ([`barracuda_page::index::MAX_OVERFLOW_LEN`]; records claiming more are refused as corrupt).
pub const MAX_VALUE_LEN: u64 = barracuda_page::index::MAX_OVERFLOW_LEN;

/// The longest key a tree with pages of `page_size` accepts: `page_size / 8` bytes.
pub fn max_key_len(page_size: PageSize) -> usize {
    barracuda_page::max_key_len(page_size)
}

/// A record's value as the tree sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Stored in the leaf.
    Inline(&'a [u8]),
    /// Stored in an overflow chain.
    Overflow { total_len: u64, first_page: PageNo },
    /// A child pointer (internal nodes).
    Child(PageNo),
}

impl<'a> Value<'a> {
    /// The page record for `key → self` with transaction fields `sys` (ignored for child
    /// pointers, which carry none).
    pub(crate) fn record(self, key: &'a [u8], sys: SysFields) -> Record<'a> {
        match self {
            Value::Inline(v) => Record::inline(key, v).with_sys(sys),
            Value::Overflow {
                total_len,
                first_page,
            } => Record::overflow(key, &[], total_len, first_page).with_sys(sys),
            Value::Child(child) => Record::child(key, child),
        }
    }

    fn from_page(value: ValueRef<'a>) -> Self {
        match value {
            ValueRef::Inline(v) => Value::Inline(v),
            // The tree writes no inline prefix; a prefix written by another producer is still
            // read correctly because the chain is read from its first page.
            ValueRef::Overflow {
                total_len,
                first_page,
                ..
            } => Value::Overflow {
                total_len,
                first_page,
            },
            ValueRef::Child(child) => Value::Child(child),
        }
    }
}

/// Bytes a record with this key and value costs in a page (slot included).
pub(crate) fn record_size(page_size: PageSize, key_len: usize, value: Value<'_>) -> usize {
    let size = match value {
        Value::Inline(v) => barracuda_page::record_size(&Record::inline(&[], v)),
        Value::Overflow {
            total_len,
            first_page,
        } => barracuda_page::record_size(&Record::overflow(&[], &[], total_len, first_page)),
        Value::Child(child) => barracuda_page::record_size(&Record::child(&[], child)),
    };
    let _ = page_size; // every page size encodes records alike; kept for call-site clarity
    size + key_len
}

/// The largest separator record an internal node may have to take (a maximal key).
pub(crate) fn max_separator_record(page_size: PageSize) -> usize {
    record_size(page_size, max_key_len(page_size), Value::Child(0))
}

fn page_err(id: PageId) -> impl Fn(PageError) -> BTreeError {
    move |source| BTreeError::Page { page: id, source }
}

/// A view of a tree node over a page buffer `B` (shared or exclusive).
pub(crate) struct Node<B> {
    page: IndexPage<B>,
    id: PageId,
}

/// A read-only view of a tree node.
pub(crate) type NodeRef<'a> = Node<&'a [u8]>;

/// A mutable view of a tree node.
pub(crate) type NodeMut<'a> = Node<&'a mut [u8]>;

impl<'a> Node<&'a [u8]> {
    /// Opens a page that came through the pool (validated when it was read from disk): O(1).
    pub(crate) fn open(buf: &'a [u8], id: PageId, tree: &BTree) -> Result<Self> {
        let page = IndexPage::open_trusted(buf, tree.ctx.pool.page_size()).map_err(page_err(id))?;
        Self::checked_identity(page, id, tree)
    }

    /// Opens a page validating its whole structure (for `check`).
    pub(crate) fn open_checked(buf: &'a [u8], id: PageId, tree: &BTree) -> Result<Self> {
        let page = IndexPage::open(buf, tree.ctx.pool.page_size()).map_err(page_err(id))?;
        Self::checked_identity(page, id, tree)
    }

    fn checked_identity(page: IndexPage<&'a [u8]>, id: PageId, tree: &BTree) -> Result<Self> {
        if page.page_id() != id {
            return Err(BTreeError::corrupt(
                id,
                format!("page claims to be {}", page.page_id()),
            ));
        }
        if page.index_id() != tree.index_id {
            return Err(BTreeError::corrupt(
                id,
                format!(
                    "page of index {} found in index {}",
                    page.index_id(),
                    tree.index_id
                ),
            ));
        }
        Ok(Self { page, id })
    }
}

impl<B: AsRef<[u8]>> Node<B> {
    pub(crate) fn id(&self) -> PageId {
        self.id
    }

    pub(crate) fn level(&self) -> u16 {
        self.page.level()
    }

    pub(crate) fn index_id(&self) -> u64 {
        self.page.index_id()
    }

    pub(crate) fn len(&self) -> usize {
        self.page.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.page.is_empty()
    }

    pub(crate) fn key(&self, i: usize) -> Result<&[u8]> {
        self.page.key(i).map_err(page_err(self.id))
    }

    pub(crate) fn value(&self, i: usize) -> Result<Value<'_>> {
        self.page
            .record(i)
            .map(|r| Value::from_page(r.value))
            .map_err(page_err(self.id))
    }

    /// Starts loading record `i` into the cache (a hint; scans read a few records ahead).
    pub(crate) fn prefetch(&self, i: usize) {
        self.page.prefetch_record(i);
    }

    /// Key, value and transaction fields of record `i`, decoded once (scans).
    #[expect(
        clippy::inline_always,
        reason = "out of line, the row came back through the stack and was read back whole: \
                  a store-forwarding stall per record of a scan (see `Record::decode`)"
    )]
    #[inline(always)]
    pub(crate) fn row(&self, i: usize) -> Result<(&[u8], Value<'_>, SysFields)> {
        self.page
            .record(i)
            .map(|r| (r.key, Value::from_page(r.value), r.sys))
            .map_err(page_err(self.id))
    }

    /// The transaction fields of record `i` ([`SysFields::NONE`] for child records).
    pub(crate) fn sys(&self, i: usize) -> Result<SysFields> {
        self.page
            .record(i)
            .map(|r| r.sys)
            .map_err(page_err(self.id))
    }

    pub(crate) fn child(&self, i: usize) -> Result<PageNo> {
        match self.value(i)? {
            Value::Child(child) if child != FIL_NULL => Ok(child),
            _ => Err(BTreeError::corrupt(
                self.id,
                format!("record {i} is not a child pointer"),
            )),
        }
    }

    pub(crate) fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.page.search(key)
    }

    /// Which child of this internal node leads to `target`.
    pub(crate) fn route(&self, target: Target<'_>) -> Result<usize> {
        if self.is_empty() {
            return Err(BTreeError::corrupt(
                self.id,
                "internal node without children",
            ));
        }
        Ok(match target {
            // Largest i with key(i) <= key; the first key is a lower routing bound.
            Target::AtLeast(key) => match self.search(key) {
                Ok(i) => i,
                Err(i) => i.saturating_sub(1),
            },
            // Largest i with key(i) < key.
            Target::Below(key) => match self.search(key) {
                Ok(i) | Err(i) => i.saturating_sub(1),
            },
            Target::Last => self.len() - 1,
        })
    }

    pub(crate) fn prev(&self) -> Option<PageNo> {
        Some(self.page.prev()).filter(|&p| p != FIL_NULL)
    }

    pub(crate) fn next(&self) -> Option<PageNo> {
        Some(self.page.next()).filter(|&p| p != FIL_NULL)
    }

    /// The page's bytes between heap and directory ([`IndexPage::free_gap`]).
    pub(crate) fn free_gap(&self) -> std::ops::Range<usize> {
        self.page.free_gap()
    }

    pub(crate) fn free_space(&self) -> usize {
        self.page.free_space()
    }

    pub(crate) fn used_space(&self) -> usize {
        self.page.used_space()
    }

    pub(crate) fn capacity(&self) -> usize {
        index_capacity(self.page.page_size())
    }

    pub(crate) fn record_size_at(&self, i: usize) -> Result<usize> {
        self.page.record_size_at(i).map_err(page_err(self.id))
    }

    /// Below this many used bytes a non-root node is under-full: a quarter of the capacity
    /// (InnoDB merges below `MERGE_THRESHOLD`, 50 % by default; a lower bound avoids merge/split
    /// ping-pong on delete-insert workloads).
    pub(crate) fn underflow_threshold(&self) -> usize {
        self.capacity() / 4
    }

    /// Two siblings merge only when their records fill at most three quarters of one page, so
    /// the merged page has room to grow before it splits again.
    pub(crate) fn merge_limit(&self) -> usize {
        self.capacity() * 3 / 4
    }

    /// Where to split before inserting `key → value` at `pos`.
    pub(crate) fn split_point(&self, pos: usize, key: &[u8], value: Value<'_>) -> SplitPoint {
        // Records of any transaction fields have the same size.
        self.page
            .split_point(pos, &value.record(key, SysFields::NONE))
    }
}

impl<'a> Node<&'a mut [u8]> {
    /// Formats `buf` as an empty node of the tree.
    pub(crate) fn init(
        buf: &'a mut [u8],
        id: PageId,
        level: u16,
        index_id: u64,
        prev: Option<PageNo>,
        next: Option<PageNo>,
        page_size: PageSize,
    ) -> Result<Self> {
        // A buffer of the wrong size is refused by `init_created`, untouched.
        if buf.len() == page_size.bytes() {
            buf.fill(0);
        }
        Self::init_created(buf, id, level, index_id, prev, next, page_size)
    }

    /// [`init`](Self::init) for a page the pool has just created, whose frame holds only
    /// zeros (`BufferPool::create`'s promise): only the headers are written.
    pub(crate) fn init_created(
        buf: &'a mut [u8],
        id: PageId,
        level: u16,
        index_id: u64,
        prev: Option<PageNo>,
        next: Option<PageNo>,
        page_size: PageSize,
    ) -> Result<Self> {
        let mut page =
            IndexPage::init_zeroed(buf, page_size, id, level, index_id).map_err(page_err(id))?;
        page.set_prev(prev.unwrap_or(FIL_NULL));
        page.set_next(next.unwrap_or(FIL_NULL));
        Ok(Self { page, id })
    }

    pub(crate) fn open(buf: &'a mut [u8], id: PageId, tree: &BTree) -> Result<Self> {
        let page = IndexPage::open_trusted(buf, tree.ctx.pool.page_size()).map_err(page_err(id))?;
        if page.page_id() != id || page.index_id() != tree.index_id {
            return Err(BTreeError::corrupt(
                id,
                "page belongs to another page id or index",
            ));
        }
        Ok(Self { page, id })
    }

    /// Inserts at `pos`; `Ok(false)` when the record does not fit (the page is unchanged).
    pub(crate) fn insert(
        &mut self,
        pos: usize,
        key: &[u8],
        value: Value<'_>,
        sys: SysFields,
    ) -> Result<bool> {
        match self.page.insert(pos, &value.record(key, sys)) {
            Ok(()) => Ok(true),
            Err(PageError::PageFull { .. }) => Ok(false),
            Err(source) => Err(BTreeError::Page {
                page: self.id,
                source,
            }),
        }
    }

    /// Replaces record `i`; `Ok(false)` when the new record does not fit (page unchanged).
    pub(crate) fn replace(
        &mut self,
        i: usize,
        key: &[u8],
        value: Value<'_>,
        sys: SysFields,
    ) -> Result<bool> {
        match self.page.replace(i, &value.record(key, sys)) {
            Ok(()) => Ok(true),
            Err(PageError::PageFull { .. }) => Ok(false),
            Err(source) => Err(BTreeError::Page {
                page: self.id,
                source,
            }),
        }
    }

    pub(crate) fn remove(&mut self, i: usize) -> Result<()> {
        self.page.remove(i).map_err(page_err(self.id))
    }

    pub(crate) fn set_prev(&mut self, prev: Option<PageNo>) {
        self.page.set_prev(prev.unwrap_or(FIL_NULL));
    }

    pub(crate) fn set_next(&mut self, next: Option<PageNo>) {
        self.page.set_next(next.unwrap_or(FIL_NULL));
    }

    pub(crate) fn set_links(&mut self, prev: Option<PageNo>, next: Option<PageNo>) {
        self.set_prev(prev);
        self.set_next(next);
    }

    /// Moves records `at..` to the empty page `right`.
    pub(crate) fn move_tail_to(&mut self, at: usize, right: &mut NodeMut<'_>) -> Result<()> {
        self.page
            .split_off(at, &mut right.page)
            .map_err(page_err(self.id))
    }

    /// Moves the first `k` records of `right` to the end of this node.
    pub(crate) fn take_first_from(&mut self, right: &mut NodeMut<'_>, k: usize) -> Result<()> {
        self.page
            .take_first_from(&mut right.page, k)
            .map_err(page_err(self.id))
    }

    /// Moves the last `k` records of `left` to the start of this node.
    pub(crate) fn take_last_from(&mut self, left: &mut NodeMut<'_>, k: usize) -> Result<()> {
        self.page
            .take_last_from(&mut left.page, k)
            .map_err(page_err(self.id))
    }

    /// Copies page `src` into `dst` and gives the copy the identity `dst_id` (links kept: the
    /// caller sets them).
    pub(crate) fn copy_page(dst: &mut [u8], src: &[u8], dst_id: PageId) -> Result<()> {
        if dst.len() != src.len() {
            return Err(BTreeError::corrupt(
                dst_id,
                "page copy between different page sizes",
            ));
        }
        dst.copy_from_slice(src);
        let mut header = FileHeader::read(dst).map_err(page_err(dst_id))?;
        header.page_no = dst_id.page_no;
        header.space_id = dst_id.space_id;
        header.write(dst);
        Ok(())
    }

    /// Formats a page that was just freed: type `Free`, body zeroed (stale records cannot be
    /// mistaken for live ones, and free pages compress to nothing).
    pub(crate) fn mark_free(buf: &mut [u8], id: PageId) {
        buf.fill(0);
        FileHeader::new(id, PageType::Free).write(buf);
    }
}

/// How many records to move between two leaves so that their used bytes even out, and from
/// which side: `(from_left, k)`; `None` when nothing useful can move.
pub(crate) fn even_out_plan(
    left: &NodeMut<'_>,
    right: &NodeMut<'_>,
) -> Result<Option<(bool, usize)>> {
    let (l_used, r_used) = (left.used_space(), right.used_space());
    let half = usize::midpoint(l_used, r_used);
    let limit = index_capacity(left.page.page_size());
    if l_used < r_used {
        let (mut moved, mut k) = (0, 0);
        while k + 1 < right.len() {
            let size = right.record_size_at(k)?;
            if l_used + moved + size > half || l_used + moved + size > limit {
                break;
            }
            moved += size;
            k += 1;
        }
        Ok((k > 0).then_some((false, k)))
    } else {
        let (mut moved, mut k) = (0, 0);
        while k + 1 < left.len() {
            let size = left.record_size_at(left.len() - 1 - k)?;
            if r_used + moved + size > half || r_used + moved + size > limit {
                break;
            }
            moved += size;
            k += 1;
        }
        Ok((k > 0).then_some((true, k)))
    }
}
