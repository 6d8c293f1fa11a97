//! Rollback segments: threads writing at once keep to different segments, each segment's
//! history list takes its own threads' logs, and every list survives a reopen.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::sync::{Arc, Barrier};

use barracuda_btree::{testing::MemAllocator, PlaceholderLog};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageSize, UndoKind};
use barracuda_undo::{UndoSpace, ROLLBACK_SEGMENTS};

const SPACE: u32 = 3;

#[test]
fn concurrent_writers_use_different_segments_and_each_list_keeps_its_logs() {
    let ps = PageSize::K4;
    let store = Arc::new(MemStore::new(ps));
    store.create_space(SPACE, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(ps).capacity_pages(64), store).unwrap();
    let alloc = Arc::new(MemAllocator::new());
    let log = Arc::new(PlaceholderLog::default());
    let undo = UndoSpace::create(pool.clone(), alloc.clone(), log.clone(), SPACE).unwrap();
    assert_eq!(undo.rseg_count(), ROLLBACK_SEGMENTS as usize);

    let threads = ROLLBACK_SEGMENTS as usize;
    let start = Barrier::new(threads);
    // Each thread: two logs, committed; returns (segment, first pages, trx ids).
    let per_thread: Vec<(usize, Vec<(u32, u64)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (undo, start) = (&undo, &start);
                s.spawn(move || {
                    start.wait();
                    let mut logs = Vec::new();
                    let mut rseg = None;
                    for i in 0..2 {
                        let trx = 10 * (t + 1) + i;
                        let mut log = undo.begin_log(trx).unwrap();
                        undo.append(&mut log, UndoKind::Insert, 1, b"k").unwrap();
                        assert!(
                            rseg.is_none_or(|r| r == log.rseg()),
                            "one thread, one segment"
                        );
                        rseg = Some(log.rseg());
                        logs.push((log.first_page(), trx));
                        undo.commit(log, 1000 + trx).unwrap();
                    }
                    (rseg.unwrap(), logs)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut segments: Vec<usize> = per_thread.iter().map(|(r, _)| *r).collect();
    segments.sort_unstable();
    segments.dedup();
    assert_eq!(
        segments.len(),
        threads,
        "every thread had a segment of its own"
    );

    let (undo, state) = UndoSpace::open(pool, alloc, log, SPACE).unwrap();
    assert_eq!(state.history_len, 2 * threads as u32);
    assert_eq!(undo.history_len().unwrap(), 2 * threads as u32);
    for (rseg, logs) in per_thread {
        let head = undo.history_head(rseg).unwrap().unwrap();
        assert_eq!((head.first_page, head.trx_id), logs[0]);
        let next = undo.history_after(&head).unwrap().unwrap();
        assert_eq!(
            (next.first_page, next.trx_id, next.rseg),
            (logs[1].0, logs[1].1, rseg)
        );
        assert_eq!(undo.history_after(&next).unwrap(), None);
        undo.remove_history_heads(rseg, &[logs[0].0, logs[1].0])
            .unwrap();
        assert_eq!(undo.history_head(rseg).unwrap(), None);
    }
    assert_eq!(undo.history_len().unwrap(), 0);
}
