//! The sorted bulk build: a tree built bottom-up from rows in key order is a valid tree with
//! every row, behaves as any other tree afterwards, appears to readers all at once, and gives
//! back every page when it is abandoned.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, BTree, BTreeError, PlaceholderLog, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageSize, SysFields};

const SPACE: u32 = 1;

fn tree(page_size: PageSize, frames: usize) -> (BTree, Arc<MemAllocator>) {
    let store = Arc::new(MemStore::new(page_size));
    store.create_space(SPACE, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(page_size).capacity_pages(frames), store).unwrap();
    let alloc = Arc::new(MemAllocator::new());
    let ctx = TreeContext::new(pool, alloc.clone(), Arc::new(PlaceholderLog::default()));
    (BTree::create(ctx, SPACE, 7).unwrap(), alloc)
}

fn k(n: u64) -> [u8; 8] {
    (n * 3).to_be_bytes()
}

/// Values of varied lengths; every 97th is long enough for an overflow chain.
fn value(n: u64, page_size: PageSize) -> Vec<u8> {
    let len = if n % 97 == 5 {
        page_size.bytes() + 123
    } else {
        (n % 200) as usize
    };
    (0..len).map(|i| (n as usize + i) as u8).collect()
}

fn build(tree: &BTree, rows: u64, page_size: PageSize) -> barracuda_btree::BuildStats {
    let mut build = tree.build_sorted(SysFields::NONE).unwrap();
    for n in 0..rows {
        build.push(&k(n), &value(n, page_size)).unwrap();
    }
    assert_eq!(build.rows(), rows);
    build.finish().unwrap().0
}

#[test]
fn a_built_tree_holds_every_row_in_order_at_every_page_size() {
    for (page_size, rows, height) in [(PageSize::K4, 30_000, 3), (PageSize::K16, 20_000, 2)] {
        let (tree, alloc) = tree(page_size, 4096);
        let root_only = alloc.allocated_pages(SPACE);
        let stats = build(&tree, rows, page_size);
        assert_eq!(stats.rows, rows);
        assert_eq!(stats.height, height, "{page_size:?}");
        assert_eq!(
            stats.pages,
            alloc.allocated_pages(SPACE) - root_only,
            "every page allocated is counted, none leaked"
        );
        let shape = tree.check().unwrap();
        assert_eq!(shape.records, rows);
        assert_eq!(shape.height, stats.height);
        // Fifteen sixteenths full, less what one more record would have needed.
        assert!(
            shape.leaf_fill > 0.85 && shape.leaf_fill <= 0.94,
            "{page_size:?}: leaf fill {}",
            shape.leaf_fill
        );
        for n in (0..rows).step_by(7) {
            assert_eq!(
                tree.get(&k(n)).unwrap(),
                Some(value(n, page_size)),
                "row {n}"
            );
            assert_eq!(tree.get(&(n * 3 + 1).to_be_bytes()).unwrap(), None);
        }
        let mut expected = 0;
        for row in tree.range(..) {
            let (key, v) = row.unwrap();
            assert_eq!(key, k(expected));
            assert_eq!(v, value(expected, page_size));
            expected += 1;
        }
        assert_eq!(expected, rows);
        let mut backwards = rows;
        for row in tree.range(..).rev().take(500) {
            backwards -= 1;
            assert_eq!(row.unwrap().0, k(backwards));
        }
    }
}

#[test]
fn a_built_tree_takes_inserts_and_deletes_like_any_other() {
    let page_size = PageSize::K4;
    let (tree, _) = tree(page_size, 512);
    let rows = 10_000;
    build(&tree, rows, page_size);
    // Between every pair of rows (splits of the full pages), then every built row (merges).
    for n in 0..rows {
        tree.put(&(n * 3 + 1).to_be_bytes(), &[9u8; 40]).unwrap();
    }
    assert_eq!(tree.check().unwrap().records, 2 * rows);
    for n in 0..rows {
        assert!(tree.delete(&k(n)).unwrap(), "built row {n}");
    }
    let shape = tree.check().unwrap();
    assert_eq!(shape.records, rows);
    for n in (0..rows).step_by(13) {
        assert_eq!(
            tree.get(&(n * 3 + 1).to_be_bytes()).unwrap(),
            Some(vec![9u8; 40])
        );
    }
}

#[test]
fn small_builds_fill_the_root_alone() {
    let page_size = PageSize::K16;
    let (tree, alloc) = tree(page_size, 64);
    let root_only = alloc.allocated_pages(SPACE);
    let stats = build(&tree, 0, page_size);
    assert_eq!((stats.rows, stats.pages, stats.height), (0, 0, 0));
    assert_eq!(tree.check().unwrap().records, 0);
    // Row 5's value takes an overflow chain of two pages; the rows fit in the root.
    let stats = build(&tree, 20, page_size);
    assert_eq!((stats.rows, stats.pages, stats.height), (20, 2, 1));
    assert_eq!(alloc.allocated_pages(SPACE) - root_only, 2);
    assert_eq!(tree.check().unwrap().records, 20);
    assert_eq!(tree.get(&k(19)).unwrap(), Some(value(19, page_size)));
}

#[test]
fn keys_out_of_order_are_refused_and_the_pages_given_back() {
    let page_size = PageSize::K4;
    let (tree, alloc) = tree(page_size, 256);
    let root_only = alloc.allocated_pages(SPACE);
    let mut build = tree.build_sorted(SysFields::NONE).unwrap();
    for n in 0..2_000 {
        build.push(&k(n), &value(n, page_size)).unwrap();
    }
    assert!(alloc.allocated_pages(SPACE) > root_only + 10);
    match build.push(&k(1_999), b"again") {
        Err(BTreeError::KeysNotAscending { position, .. }) => assert_eq!(position, 2_000),
        other => panic!("expected KeysNotAscending, got {other:?}"),
    }
    match build.push(&k(5), b"lower") {
        Err(BTreeError::KeysNotAscending { position, .. }) => assert_eq!(position, 2_000),
        other => panic!("expected KeysNotAscending, got {other:?}"),
    }
    drop(build);
    assert_eq!(
        alloc.allocated_pages(SPACE),
        root_only,
        "an abandoned build frees its pages"
    );
    assert_eq!(tree.check().unwrap().records, 0);
}

#[test]
fn a_tree_written_meanwhile_is_not_overwritten() {
    let page_size = PageSize::K4;
    let (tree, alloc) = tree(page_size, 256);
    let root_only = alloc.allocated_pages(SPACE);
    let mut build = tree.build_sorted(SysFields::NONE).unwrap();
    for n in 0..3_000 {
        build.push(&k(n), &value(n, page_size)).unwrap();
    }
    tree.put(b"written meanwhile", b"kept").unwrap();
    match build.finish() {
        Err(BTreeError::TreeNotEmpty { index_id }) => assert_eq!(index_id, 7),
        other => panic!("expected TreeNotEmpty, got {other:?}"),
    }
    assert_eq!(alloc.allocated_pages(SPACE), root_only);
    assert_eq!(tree.check().unwrap().records, 1);
    assert_eq!(
        tree.get(b"written meanwhile").unwrap(),
        Some(b"kept".to_vec())
    );
}

#[test]
fn a_build_larger_than_the_pool_is_written_through_eviction() {
    let page_size = PageSize::K4;
    let (tree, _) = tree(page_size, 48);
    let rows = 20_000;
    let stats = build(&tree, rows, page_size);
    assert!(stats.pages > 200, "{} pages for 48 frames", stats.pages);
    assert_eq!(tree.check().unwrap().records, rows);
    let mut seen = 0;
    tree.scan_stored(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        |key, _, _| {
            assert_eq!(key, k(seen));
            seen += 1;
            ControlFlow::Continue(())
        },
    )
    .unwrap();
    assert_eq!(seen, rows);
}

/// Readers running while the build finishes see the tree empty, then whole: never part of it.
#[test]
fn readers_see_nothing_then_everything() {
    let page_size = PageSize::K4;
    let (tree, _) = tree(page_size, 1024);
    let rows = 8_000u64;
    let installed = AtomicBool::new(false);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                let (tree, installed) = (&tree, &installed);
                s.spawn(move || {
                    let mut whole = 0u32;
                    let mut n = r;
                    // Until the install, then a few more rounds to see it whole.
                    while whole < 20 {
                        n = (n * 7919 + 13) % rows;
                        let done_before = installed.load(Ordering::SeqCst);
                        match tree.get(&k(n)).unwrap() {
                            Some(v) => assert_eq!(v, value(n, page_size)),
                            None => assert!(!done_before, "row {n} missing after the install"),
                        }
                        let done_before = installed.load(Ordering::SeqCst);
                        match tree.range(..).count() as u64 {
                            0 => assert!(!done_before, "empty after the install"),
                            c if c == rows => whole += 1,
                            c => panic!("a scan saw {c} of {rows} rows"),
                        }
                    }
                })
            })
            .collect();
        build(&tree, rows, page_size);
        installed.store(true, Ordering::SeqCst);
        for reader in readers {
            reader.join().unwrap();
        }
    });
    assert_eq!(tree.check().unwrap().records, rows);
}
