//! Routed descents: a read crosses the inner nodes through their routing copies and latches only
//! the leaf, and is never misled by a copy that a split, merge or eviction has made stale.
//!
//! What would break: a reader routed by an inner node's old separators to a leaf whose keys a
//! split has just moved right would miss a key that is in the tree; one routed to a leaf freed
//! by a merge, or to a frame reused for another page, would read the wrong page. Readers here
//! look up only keys that stay in the tree the whole time, while writers split and merge the
//! leaves around them, through a pool small enough that frames are reused all the time: every
//! lookup must find its key, and every scan must see every stable key of its range.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use barracuda_btree::BTree;
use barracuda_page::PageSize;

/// Stable keys are the multiples of 4; writers churn the others.
const STABLE: u64 = 3_000;

fn k(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

fn stable_value(n: u64) -> Vec<u8> {
    let mut v = vec![b's'; 40];
    v[..8].copy_from_slice(&n.to_be_bytes());
    v
}

fn load_stable(tree: &BTree) {
    for n in 0..STABLE {
        tree.put(&k(n * 4), &stable_value(n * 4)).unwrap();
    }
}

#[test]
fn a_warm_get_latches_only_the_leaf() {
    const ROWS: u64 = 20_000;
    let tree = common::tree(PageSize::K4, 2048);
    for n in 0..ROWS {
        tree.put(&k(n * 4), &[b'w'; 100]).unwrap();
    }
    let height = tree.check().unwrap().height;
    assert!(height >= 3, "a tree of {height} levels");
    let pool = tree.context().pool().clone();
    // The first gets descend latched and leave routing copies and frame hints behind.
    for n in 0..ROWS {
        tree.get(&k(n * 4)).unwrap().unwrap();
    }
    let before = pool.stats().page_requests;
    for n in (0..ROWS).step_by(7) {
        assert_eq!(tree.get(&k(n * 4)).unwrap(), Some(vec![b'w'; 100]));
    }
    let gets = ROWS.div_ceil(7);
    assert_eq!(
        pool.stats().page_requests - before,
        gets,
        "one page request (the leaf) per get on a tree of {height} levels"
    );
    // A split posts a separator to its parent, and keeps the parent's copy current: the next
    // get through that parent is still routed. (A parent that splits itself is left with a
    // stale copy: the puts go on until a leaf splits into a parent with room.)
    let before_puts = tree.check().unwrap();
    let (mut leaves, mut inner) = (before_puts.leaf_pages, before_puts.internal_pages);
    let mut n = 0;
    loop {
        assert!(
            n < 1000,
            "1000 puts into the first leaves split no leaf alone"
        );
        tree.put(&k(n * 4 + 1), b"splits the leaves").unwrap();
        n += 1;
        let now = tree.check().unwrap();
        if now.leaf_pages > leaves && now.internal_pages == inner {
            break;
        }
        (leaves, inner) = (now.leaf_pages, now.internal_pages);
    }
    let before = pool.stats().page_requests;
    tree.get(&k((n - 1) * 4 + 1)).unwrap().unwrap();
    assert_eq!(
        pool.stats().page_requests - before,
        1,
        "the copy was kept through the split"
    );
    // A merge removes a separator without keeping the copy: the next get on that path
    // descends latched (more than one request), and the one after is routed again.
    let leaves = tree.check().unwrap().leaf_pages;
    let mut n = 10;
    while tree.check().unwrap().leaf_pages == leaves {
        assert!(n < 3000, "3000 deletes merged no leaves");
        tree.delete(&k(n * 4)).unwrap();
        n += 1;
    }
    let before = pool.stats().page_requests;
    tree.get(&k(8)).unwrap().unwrap();
    assert!(
        pool.stats().page_requests - before > 1,
        "a stale copy is not used"
    );
    let before = pool.stats().page_requests;
    tree.get(&k(8)).unwrap().unwrap();
    assert_eq!(
        pool.stats().page_requests - before,
        1,
        "the copy was rebuilt"
    );
}

fn churn_while_reading(frames: usize) {
    let tree = common::tree(PageSize::K4, frames);
    load_stable(&tree);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 1..=2u64 {
            let tree = tree.clone();
            writers.push(s.spawn(move || {
                for round in 0..3u64 {
                    // Each writer has keys of its own (a key two writers shared could be
                    // deleted by the other first): writer 1 alternates between the gaps at
                    // 1 and 2 above each stable key, writer 2 takes the gaps at 3.
                    let gap = if w == 1 { 1 + round % 2 } else { 3 };
                    // Fill the gaps (splits everywhere), then empty them (merges).
                    for n in 0..STABLE {
                        let key = k(n * 4 + gap);
                        tree.put(&key, &[w as u8; 90]).unwrap();
                    }
                    for n in 0..STABLE {
                        let key = k(n * 4 + gap);
                        assert!(tree.delete(&key).unwrap());
                    }
                }
            }));
        }
        for r in 0..2u64 {
            let (tree, stop) = (tree.clone(), &stop);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ r;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let n = (x % STABLE) * 4;
                    assert_eq!(
                        tree.get(&k(n)).unwrap(),
                        Some(stable_value(n)),
                        "stable key {n} not found"
                    );
                    // A scan from a stable key sees the next stable keys, none skipped.
                    let mut expected = n;
                    for kv in tree.range(k(n).as_slice()..).take(40) {
                        let (key, _) = kv.unwrap();
                        let got = u64::from_be_bytes(key.try_into().unwrap());
                        if got % 4 == 0 {
                            assert_eq!(got, expected, "scan from {n} skipped a stable key");
                            expected += 4;
                        }
                    }
                }
            });
        }
        common::join_writers_then_stop(writers, &stop);
    });
    let stats = tree.check().unwrap();
    assert_eq!(stats.records, STABLE);
}

#[test]
fn readers_find_every_stable_key_while_leaves_split_and_merge() {
    churn_while_reading(1024);
}

#[test]
fn readers_find_every_stable_key_while_frames_are_reused() {
    churn_while_reading(48);
}
