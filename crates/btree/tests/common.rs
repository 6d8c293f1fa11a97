//! Shared setup for the B-tree tests: a tree over an in-memory page store and a small pool.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, BTree, PlaceholderLog, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::PageSize;

/// A fresh tree with `frames` pool frames of `page_size`.
pub fn tree(page_size: PageSize, frames: usize) -> BTree {
    let store = Arc::new(MemStore::new(page_size));
    store.create_space(1, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(page_size).capacity_pages(frames), store).unwrap();
    let ctx = TreeContext::new(
        pool,
        Arc::new(MemAllocator::new()),
        Arc::new(PlaceholderLog::default()),
    );
    BTree::create(ctx, 1, 7).unwrap()
}

/// Joins `writers`, then sets `stop` (which the readers poll), then re-raises the first
/// writer's panic: joined with `unwrap` before `stop` is set, a panicking writer would leave
/// the readers, and so the test, running forever.
#[allow(
    dead_code,
    reason = "each test binary compiles this module; not all have readers"
)]
pub fn join_writers_then_stop(
    writers: Vec<std::thread::ScopedJoinHandle<'_, ()>>,
    stop: &std::sync::atomic::AtomicBool,
) {
    let outcomes: Vec<_> = writers
        .into_iter()
        .map(std::thread::ScopedJoinHandle::join)
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for outcome in outcomes {
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
