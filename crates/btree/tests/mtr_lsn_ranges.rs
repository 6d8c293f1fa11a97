//! A committed mini-transaction stamps its pages with the LSN where its records *end* and puts a
//! clean page on the flush list at the LSN where they *start*, so that a checkpoint taken at the
//! flush list's minimum replays the whole mtr. What would break: oldest modification = end LSN
//! (a checkpoint there would skip the mtr that dirtied the page); a later mtr moving an already
//! dirty page's oldest modification forward.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::sync::Arc;

use barracuda_btree::testing::MemAllocator;
use barracuda_btree::{BTree, BTreeError, LogSink, LsnRange, MtrSummary, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{page_lsn, Lsn, PageId, PageSize};
use parking_lot::Mutex;

/// A log whose mtrs each occupy 1000 bytes of log per page, starting at 5000: ranges far apart,
/// so start and end cannot be confused.
#[derive(Default)]
struct SpacedLog {
    next: Mutex<Lsn>,
    ranges: Mutex<Vec<LsnRange>>,
}

impl LogSink for SpacedLog {
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> Result<LsnRange, BTreeError> {
        let mut next = self.next.lock();
        let start = (*next).max(5000);
        let range = LsnRange {
            start,
            end: start + 1000 * mtr.pages.len() as u64,
        };
        *next = range.end;
        self.ranges.lock().push(range);
        Ok(range)
    }

    fn current_lsn(&self) -> Lsn {
        *self.next.lock()
    }
}

#[test]
fn a_clean_page_is_dirtied_at_the_mtr_start_and_stamped_at_its_end() {
    let store = Arc::new(MemStore::new(PageSize::K4));
    store.create_space(1, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(PageSize::K4).capacity_pages(64), store).unwrap();
    let log = Arc::new(SpacedLog::default());
    let ctx = TreeContext::new(pool.clone(), Arc::new(MemAllocator::new()), log.clone());
    let tree = BTree::create(ctx, 1, 7).unwrap();
    let root = PageId::new(1, tree.root());

    let create = *log.ranges.lock().last().unwrap();
    assert_eq!(pool.oldest_modification(), Some(create.start));
    assert_eq!(page_lsn(&pool.get_shared(root).unwrap()), Some(create.end));

    tree.put(b"k", b"v").unwrap();
    let put = *log.ranges.lock().last().unwrap();
    assert!(put.start >= create.end);
    // Already dirty: its oldest modification stays the first mtr's start; the stamp moves on.
    assert_eq!(pool.oldest_modification(), Some(create.start));
    assert_eq!(page_lsn(&pool.get_shared(root).unwrap()), Some(put.end));

    pool.flush_all().unwrap();
    assert_eq!(pool.oldest_modification(), None);
    tree.put(b"k2", b"v2").unwrap();
    let second = *log.ranges.lock().last().unwrap();
    assert_eq!(pool.oldest_modification(), Some(second.start));
    assert!(second.start < second.end);
}
