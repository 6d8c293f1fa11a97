//! A split or merge that cannot get what it needs — a new page, a frame, a sibling read from
//! disk — fails before it changes a byte: the operation returns an error, the tree is exactly as
//! before (same rows, `check` passes), and nothing was poisoned, so the tree keeps working.
//!
//! What would break: allocating the right page after moving records out of the left one; reading
//! the right neighbour after copying records into the left one; raising the root before its new
//! child exists. Each of those would leave records lost or duplicated, or (with poisoning) a
//! pool that refuses every later write.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use barracuda_btree::testing::MemAllocator;
use barracuda_btree::{BTree, BTreeError, PageAllocator, PlaceholderLog, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageId, PageNo, PageSize, SpaceId};

/// Fails the allocation numbered `fail_at` (1-based, counted over the allocator's life), once.
#[derive(Debug, Default)]
struct FailingAllocator {
    inner: MemAllocator,
    count: AtomicU64,
    fail_at: AtomicU64,
}

impl PageAllocator for FailingAllocator {
    fn allocate(&self, space: SpaceId, near: Option<PageNo>) -> barracuda_btree::Result<PageNo> {
        let n = self.count.fetch_add(1, SeqCst) + 1;
        if n == self.fail_at.load(SeqCst) {
            return Err(BTreeError::Allocation {
                space,
                what: "injected: no space left".into(),
            });
        }
        self.inner.allocate(space, near)
    }

    fn free(&self, page: PageId) -> barracuda_btree::Result<()> {
        self.inner.free(page)
    }
}

struct Setup {
    store: Arc<MemStore>,
    pool: Arc<BufferPool>,
    alloc: Arc<FailingAllocator>,
    tree: BTree,
}

fn setup(frames: usize) -> Setup {
    let store = Arc::new(MemStore::new(PageSize::K4));
    store.create_space(1, u32::MAX);
    let pool = BufferPool::new(
        PoolConfig::new(PageSize::K4).capacity_pages(frames),
        store.clone(),
    )
    .unwrap();
    let alloc = Arc::new(FailingAllocator::default());
    let ctx = TreeContext::new(
        pool.clone(),
        alloc.clone(),
        Arc::new(PlaceholderLog::default()),
    );
    let tree = BTree::create(ctx, 1, 7).unwrap();
    Setup {
        store,
        pool,
        alloc,
        tree,
    }
}

/// Inserts that split up to three levels on 4 KiB pages, then deletes that merge back down.
fn workload() -> Vec<(u32, Option<usize>)> {
    let mut ops: Vec<(u32, Option<usize>)> = (0..900u32)
        .map(|i| ((i * 7919) % 1000, Some(60 + (i as usize * 37) % 400)))
        .collect();
    ops.extend((0..1000u32).map(|i| ((i * 613) % 1000, None)));
    ops
}

fn apply(tree: &BTree, key: u32, value: Option<usize>) -> barracuda_btree::Result<()> {
    let k = key.to_be_bytes();
    match value {
        Some(len) => tree.put(&k, &vec![key as u8; len]).map(|_| ()),
        None => tree.delete(&k).map(|_| ()),
    }
}

fn assert_matches(tree: &BTree, model: &BTreeMap<u32, usize>, what: &str) {
    tree.check()
        .unwrap_or_else(|e| panic!("{what}: check: {e}"));
    let rows: Vec<(Vec<u8>, Vec<u8>)> = tree.range(..).collect::<Result<_, _>>().unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|(k, len)| (k.to_be_bytes().to_vec(), vec![*k as u8; *len]))
        .collect();
    assert!(rows == expected, "{what}: rows differ from the model");
}

#[test]
fn a_failed_allocation_leaves_the_tree_as_it_was() {
    // Allocations made by the fault-free workload: fail each of them in turn.
    let total = {
        let s = setup(64);
        for (key, value) in workload() {
            apply(&s.tree, key, value).unwrap();
        }
        s.alloc.count.load(SeqCst) - 1 // the root's, before the workload
    };
    assert!(
        total > 20,
        "the workload should split often ({total} allocations)"
    );
    for fail_at in 1..=total {
        let s = setup(64);
        let created = s.alloc.count.load(SeqCst);
        s.alloc.fail_at.store(created + fail_at, SeqCst);
        let mut model = BTreeMap::new();
        let mut failed = false;
        for (i, (key, value)) in workload().into_iter().enumerate() {
            if let Err(err) = apply(&s.tree, key, value) {
                failed = true;
                assert!(
                    matches!(err, BTreeError::Allocation { .. }),
                    "allocation {fail_at}, op {i}: {err}"
                );
                assert_matches(&s.tree, &model, &format!("allocation {fail_at}, op {i}"));
                // The failpoint fired; the retry runs on a healthy allocator.
                apply(&s.tree, key, value)
                    .unwrap_or_else(|e| panic!("allocation {fail_at}, op {i} retried: {e}"));
            }
            match value {
                Some(len) => model.insert(key, len),
                None => model.remove(&key),
            };
            assert!(
                s.pool.writes_stopped().is_none(),
                "allocation {fail_at}: poisoned"
            );
        }
        assert!(failed, "allocation {fail_at} was never reached");
        assert_matches(&s.tree, &model, &format!("allocation {fail_at}, end"));
    }
}

#[test]
fn a_failed_sibling_read_leaves_the_tree_as_it_was() {
    // A pool of 20 frames holds a fraction of the tree; during each operation every page not in
    // the pool fails to read, so every split or merge that needs a page from disk fails.
    let s = setup(20);
    let mut model = BTreeMap::new();
    let mut failed = 0;
    for (i, (key, value)) in workload().into_iter().enumerate() {
        let pages = s.alloc.inner.allocated_pages(1) as u32 + 8;
        for page in 0..pages {
            s.store.fail_reads_of(PageId::new(1, page), true);
        }
        let result = apply(&s.tree, key, value);
        for page in 0..pages {
            s.store.fail_reads_of(PageId::new(1, page), false);
        }
        match result {
            Ok(()) => {
                match value {
                    Some(len) => model.insert(key, len),
                    None => model.remove(&key),
                };
            }
            Err(err) => {
                failed += 1;
                assert_matches(&s.tree, &model, &format!("op {i} failed ({err})"));
                // Retried on healthy reads, the operation succeeds.
                apply(&s.tree, key, value).unwrap_or_else(|e| panic!("op {i} retried: {e}"));
                match value {
                    Some(len) => model.insert(key, len),
                    None => model.remove(&key),
                };
            }
        }
        assert!(s.pool.writes_stopped().is_none(), "op {i}: poisoned");
        if i % 50 == 0 {
            assert_matches(&s.tree, &model, &format!("op {i}"));
        }
    }
    assert_matches(&s.tree, &model, "end");
    assert!(failed > 50, "only {failed} operations met a failing read");
}
