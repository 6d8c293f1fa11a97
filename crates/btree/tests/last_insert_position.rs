//! The last-insert position: a put whose key belongs to the rightmost leaf latches that leaf
//! without a descent, and never once a structure change may have moved or freed it.
//!
//! What would break: a hint followed after the rightmost leaf split (the key would land left of
//! its new home, out of order) or after it was merged away and freed (the key would go to a
//! page no longer in the tree: lost). Both are checked by reading every key back and by the
//! tree's own structural check, across thousands of appends, splits and merges, and under
//! threads appending while others delete from the top.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::collections::BTreeSet;

use barracuda_btree::BTree;
use barracuda_page::PageSize;

fn k(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

const VALUE: [u8; 100] = [b'v'; 100];

/// Page requests one `put` makes (the pool counts every page a change latches).
fn requests_of_put(tree: &BTree, key: u64) -> u64 {
    let before = tree.context().pool().stats().page_requests;
    tree.put(&k(key), &VALUE).unwrap();
    tree.context().pool().stats().page_requests - before
}

#[test]
fn an_append_latches_the_rightmost_leaf_alone() {
    let tree = common::tree(PageSize::K4, 256);
    for n in 0..2_000 {
        tree.put(&k(n), &VALUE).unwrap();
    }
    let levels = tree.check().unwrap().height;
    assert!(levels >= 2, "a tree of {levels} levels");
    // The put of 1999 descended (or used the hint): either way 2000 goes to the same leaf,
    // unless it is full, so look at a few.
    let requests: Vec<u64> = (2_000..2_010).map(|n| requests_of_put(&tree, n)).collect();
    assert!(
        requests.iter().filter(|&&r| r == 1).count() >= 8,
        "appends latched only the leaf: {requests:?}"
    );
    // A key below the rightmost leaf's first key descends.
    assert!(
        requests_of_put(&tree, 5) >= u64::from(levels),
        "a put far left descends"
    );
    tree.check().unwrap();
}

#[test]
fn the_hint_is_not_followed_into_a_split_or_a_freed_leaf() {
    let tree = common::tree(PageSize::K4, 256);
    let mut model = BTreeSet::new();
    let mut next = 0u64;
    for round in 0..40 {
        // Appends: the rightmost leaf splits again and again.
        for _ in 0..300 {
            tree.put(&k(next), &VALUE).unwrap();
            model.insert(next);
            next += 1;
        }
        // Deletes from the top: the rightmost leaf empties and merges into its left sibling,
        // which becomes the rightmost (the hint's page is freed, its bytes stale).
        for _ in 0..(100 + round * 3) {
            let last = *model.iter().next_back().unwrap();
            assert!(tree.delete(&k(last)).unwrap());
            model.remove(&last);
        }
        // An append right after: it must reach the live rightmost leaf.
        tree.put(&k(next), &VALUE).unwrap();
        model.insert(next);
        next += 1;
        assert_eq!(tree.get(&k(next - 1)).unwrap().as_deref(), Some(&VALUE[..]));
    }
    tree.check().unwrap();
    let keys: Vec<u64> = tree
        .range(..)
        .map(|kv| u64::from_be_bytes(kv.unwrap().0.try_into().unwrap()))
        .collect();
    assert_eq!(keys, model.into_iter().collect::<Vec<_>>());
}

#[test]
fn appenders_and_top_deleters_together_lose_nothing() {
    let tree = common::tree(PageSize::K4, 512);
    for n in 0..1_000 {
        tree.put(&k(n), &VALUE).unwrap();
    }
    // Two appenders on disjoint key streams above 1000 (even / odd), one thread deleting the
    // keys 500..1000 from the top down, so the rightmost leaves split and merge under them.
    std::thread::scope(|s| {
        for parity in 0..2u64 {
            let tree = &tree;
            s.spawn(move || {
                for i in 0..3_000u64 {
                    tree.put(&k(1_000 + i * 2 + parity), &VALUE).unwrap();
                }
            });
        }
        let tree = &tree;
        s.spawn(move || {
            for n in (500..1_000u64).rev() {
                assert!(tree.delete(&k(n)).unwrap());
            }
        });
    });
    tree.check().unwrap();
    let keys: Vec<u64> = tree
        .range(..)
        .map(|kv| u64::from_be_bytes(kv.unwrap().0.try_into().unwrap()))
        .collect();
    let expected: Vec<u64> = (0..500).chain(1_000..7_000).collect();
    assert_eq!(keys, expected);
}
