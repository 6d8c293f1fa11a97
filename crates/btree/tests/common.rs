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
