//! The LRU changes a hit or a miss makes — a page read in joins the LRU, an old page accessed is
//! made young — applied at once when the LRU mutex is free, and otherwise deferred to its next
//! holder instead of waiting for it.
//!
//! Why not wait: the LRU manager's batch holds the mutex for a chunk of evictions at a time, a
//! reader that finds it held spins briefly and then parks, and waking a parked thread cost
//! 50–250 µs on the 2-vCPU VM this was measured on. `hot_paths get_quarter` (one reader, the pool
//! a quarter of the data) blocked ~20,000 times in 2,000,000 gets — 80 % adding a page read in,
//! 20 % making one young — and those waits were the whole p99.9 (EXPERIMENTS §16).
//!
//! The deferred changes are applied in the order they were made by whoever takes the mutex next
//! through [`Inner::lock_lists`], before it looks at the LRU: a holder of the LRU mutex always
//! sees every change made so far. Until then a page read in is in the page hash but on no list,
//! so nothing evicts it (the head of the old sublist, where it goes, would protect it as well).
//! A queued make-young names a frame, not a page: that is sound because no page leaves the LRU
//! (and so no frame is reused) but under the mutex, which applies the queue first; it is decided
//! again when applied.
//! The queue is bounded: past [`MAX_DEFERRED`] changes a thread waits for the mutex after all.

use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};

use parking_lot::{Mutex, MutexGuard};

use crate::inner::{Due, FirstAccess, Inner, Lists};
use crate::stats::inc;

/// Changes that may wait in the queue before a thread waits for the LRU mutex.
const MAX_DEFERRED: usize = 256;

/// One LRU change.
#[derive(Clone, Copy, Debug)]
enum LruOp {
    /// A page read in joins the LRU: at the head if `young`, else at the old-sublist head.
    Add { frame: u32, young: bool },
    /// An access found the page due to be made young (first accessed at `first_access` ms).
    MakeYoung {
        frame: u32,
        first_access: FirstAccess,
    },
}

/// The queue of deferred changes (a leaf lock, held only to push or to take the whole queue).
#[derive(Default)]
pub(crate) struct Deferred {
    queue: Mutex<Vec<LruOp>>,
    /// Mirror of the queue's length, read without its mutex.
    len: AtomicUsize,
}

impl Inner {
    /// Takes the LRU mutex and applies the deferred changes: every holder of `lists` goes
    /// through here (or [`try_lock_lists`](Self::try_lock_lists)).
    pub(crate) fn lock_lists(&self) -> MutexGuard<'_, Lists> {
        let mut lists = self.lists.lock();
        self.apply_deferred(&mut lists);
        lists
    }

    /// [`lock_lists`](Self::lock_lists) if the mutex is free now.
    pub(crate) fn try_lock_lists(&self) -> Option<MutexGuard<'_, Lists>> {
        let mut lists = self.lists.try_lock()?;
        self.apply_deferred(&mut lists);
        Some(lists)
    }

    /// Adds `f` to the LRU: at the head if `young`, else at the old-sublist head.
    pub(crate) fn lru_add(&self, f: u32, young: bool) {
        if let Some(mut lists) = self.lists_or_defer(LruOp::Add { frame: f, young }) {
            self.lru_add_locked(&mut lists, f, young);
        }
    }

    /// Moves pinned frame `f`, found due by [`due_young`](Self::due_young), to the LRU head.
    /// InnoDB: `buf_page_make_young`.
    pub(crate) fn make_young(&self, f: u32, first_access: FirstAccess) {
        if let Some(mut lists) = self.lists_or_defer(LruOp::MakeYoung {
            frame: f,
            first_access,
        }) {
            self.make_young_locked(&mut lists, f, first_access);
        }
    }

    /// The LRU mutex if it is free (or the queue is full: then after waiting for it); `None`
    /// when `op` was queued instead.
    fn lists_or_defer(&self, op: LruOp) -> Option<MutexGuard<'_, Lists>> {
        if let Some(lists) = self.try_lock_lists() {
            return Some(lists);
        }
        {
            let mut queue = self.lru_deferred.queue.lock();
            if queue.len() < MAX_DEFERRED {
                queue.push(op);
                self.lru_deferred.len.store(queue.len(), SeqCst);
                inc(&self.counters.lru_ops_deferred);
                return None;
            }
        }
        Some(self.lock_lists())
    }

    fn apply_deferred(&self, lists: &mut Lists) {
        if self.lru_deferred.len.load(SeqCst) == 0 {
            return;
        }
        let ops = {
            let mut queue = self.lru_deferred.queue.lock();
            self.lru_deferred.len.store(0, SeqCst);
            std::mem::take(&mut *queue)
        };
        for op in ops {
            match op {
                LruOp::Add { frame, young } => self.lru_add_locked(lists, frame, young),
                LruOp::MakeYoung {
                    frame,
                    first_access,
                } => self.make_young_locked(lists, frame, first_access),
            }
        }
    }

    fn lru_add_locked(&self, lists: &mut Lists, f: u32, young: bool) {
        if lists.lru.add(f, young) {
            self.frames
                .frame(f)
                .desc
                .freed_page_clock
                .store(lists.freed_page_clock, Relaxed);
        }
    }

    fn make_young_locked(&self, lists: &mut Lists, f: u32, first_access: FirstAccess) {
        // Decided again under the mutex: a page read in while the LRU was busy may have entered
        // it (old) only as the mutex was taken, after the decision was made without its old
        // flag; and a queued change is applied later than it was decided.
        if !lists.lru.contains(f) {
            return;
        }
        match self.due_young(f, first_access) {
            Due::Young => {}
            Due::KeptOld => {
                inc(&self.counters.pages_not_made_young);
                return;
            }
            Due::Stay => return,
        }
        lists.lru.make_young(f);
        self.frames
            .frame(f)
            .desc
            .freed_page_clock
            .store(lists.freed_page_clock, Relaxed);
        inc(&self.counters.pages_made_young);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use barracuda_page::{PageId, PageSize};

    use super::*;
    use crate::testing::MemStore;
    use crate::PoolConfig;

    /// A pool without its background threads: nothing but the test takes the LRU mutex.
    fn quiet_pool() -> Inner {
        let store = Arc::new(MemStore::new(PageSize::K4));
        store.create_space(1, 100);
        let config = PoolConfig::new(PageSize::K4)
            .capacity_pages(32)
            .old_blocks_time(Duration::ZERO);
        Inner::new(config, store).expect("pool")
    }

    fn frame_of(inner: &Inner, id: PageId) -> u32 {
        inner.hash.peek(id).expect("page in the pool")
    }

    #[test]
    fn a_miss_finding_the_lru_held_queues_its_page_and_the_next_holder_inserts_it() {
        let inner = quiet_pool();
        for p in 10..30 {
            drop(inner.fetch_shared(PageId::new(1, p)).expect("read"));
        }
        let held = inner.lists.lock();
        // Same thread: had the miss waited for the mutex, it would never return.
        let page = inner.fetch_shared(PageId::new(1, 7)).expect("read");
        assert_eq!(page.page_id(), PageId::new(1, 7));
        drop(page);
        let f = frame_of(&inner, PageId::new(1, 7));
        assert!(
            !held.lru.contains(f),
            "not inserted behind the holder's back"
        );
        assert_eq!(inner.lru_deferred.len.load(SeqCst), 1);
        drop(held);
        let lists = inner.lock_lists();
        assert!(lists.lru.contains(f), "inserted by the next holder");
        assert!(
            lists.lru.is_old(f),
            "at the old sublist's head, as a read page goes"
        );
        assert_eq!(inner.lru_deferred.len.load(SeqCst), 0);
        drop(lists);
        assert_eq!(inner.counters.lru_ops_deferred.load(SeqCst), 1);
    }

    #[test]
    fn a_make_young_finding_the_lru_held_is_applied_by_the_next_holder() {
        let inner = quiet_pool();
        for p in 0..20 {
            drop(inner.fetch_shared(PageId::new(1, p)).expect("read"));
        }
        let f = frame_of(&inner, PageId::new(1, 0));
        assert!(
            inner.lock_lists().lru.is_old(f),
            "the first page read has aged"
        );
        // As if many pages had been evicted since page 0 was put at the head: it is due.
        inner.freed_page_clock.store(1_000, SeqCst);
        let held = inner.lists.lock();
        drop(inner.fetch_shared(PageId::new(1, 0)).expect("hit"));
        assert!(held.lru.is_old(f), "not moved behind the holder's back");
        drop(held);
        let lists = inner.lock_lists();
        assert_eq!(lists.lru.head(), f, "made young by the next holder");
        drop(lists);
        assert_eq!(inner.counters.pages_made_young.load(SeqCst), 1);
        assert_eq!(inner.counters.lru_ops_deferred.load(SeqCst), 1);
    }
}
