//! The B-tree is a map: any sequence of puts, deletes, gets and range scans gives what a
//! `BTreeMap` gives, through splits, merges, root raises and lowers, overflow chains and
//! evictions from a pool far smaller than the tree. If this breaks, a read returns the wrong
//! value or a structure change loses records.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use barracuda_page::PageSize;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Get(Vec<u8>),
    Range(Vec<u8>, Vec<u8>, bool),
    DeleteRun(Vec<u8>, usize),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // Few distinct prefixes so that keys collide (replaces, deletes that hit).
    (0u16..600, prop::collection::vec(any::<u8>(), 0..6)).prop_map(|(n, tail)| {
        let mut k = n.to_be_bytes().to_vec();
        k.extend(tail);
        k
    })
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..200),
        1 => prop::collection::vec(any::<u8>(), 900..3000),   // off-page at 4 KiB pages
        1 => (10_000usize..40_000).prop_map(|n| vec![0xAB; n]), // multi-page chains
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        4 => key().prop_map(Op::Delete),
        2 => key().prop_map(Op::Get),
        1 => (key(), key(), any::<bool>()).prop_map(|(a, b, rev)| Op::Range(a, b, rev)),
        1 => (key(), 1usize..200).prop_map(|(k, n)| Op::DeleteRun(k, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tree_matches_model(ops in prop::collection::vec(op(), 1..400)) {
        let tree = common::tree(PageSize::K4, 24);
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    let replaced = tree.put(&k, &v).unwrap();
                    prop_assert_eq!(replaced, model.insert(k, v).is_some());
                }
                Op::Delete(k) => {
                    prop_assert_eq!(tree.delete(&k).unwrap(), model.remove(&k).is_some());
                }
                Op::Get(k) => prop_assert_eq!(tree.get(&k).unwrap(), model.get(&k).cloned()),
                Op::Range(a, b, rev) => {
                    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                    let got: Vec<_> = if rev {
                        tree.range(lo.as_slice()..hi.as_slice()).rev().map(Result::unwrap).collect()
                    } else {
                        tree.range(lo.as_slice()..hi.as_slice()).map(Result::unwrap).collect()
                    };
                    let mut want: Vec<_> = model.range(lo..hi).map(|(k, v)| (k.clone(), v.clone())).collect();
                    if rev { want.reverse(); }
                    prop_assert_eq!(got, want);
                }
                Op::DeleteRun(start, n) => {
                    let doomed: Vec<Vec<u8>> = model.range(start..).take(n).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        prop_assert!(tree.delete(&k).unwrap());
                        model.remove(&k);
                    }
                }
            }
        }
        let stats = tree.check().unwrap();
        prop_assert_eq!(stats.records, model.len() as u64);
        let all: Vec<_> = tree.range(..).map(Result::unwrap).collect();
        let want: Vec<_> = model.into_iter().collect();
        prop_assert_eq!(all, want);
    }
}

#[test]
fn sequential_and_reverse_loads_build_a_valid_deep_tree() {
    for reverse in [false, true] {
        let tree = common::tree(PageSize::K4, 32);
        let mut keys: Vec<u64> = (0..20_000).collect();
        if reverse {
            keys.reverse();
        }
        for k in &keys {
            tree.put(&k.to_be_bytes(), &[7u8; 100]).unwrap();
        }
        let stats = tree.check().unwrap();
        assert_eq!(stats.records, 20_000);
        assert!(stats.height >= 3, "height {}", stats.height);
        // Splits at the insert point keep sequentially loaded leaves nearly full.
        assert!(
            stats.leaf_fill > 0.85,
            "leaf fill {} (reverse={reverse})",
            stats.leaf_fill
        );
        // Delete everything: merges and root lowering bring it back to one empty leaf.
        for k in &keys {
            assert!(tree.delete(&k.to_be_bytes()).unwrap());
        }
        let stats = tree.check().unwrap();
        assert_eq!((stats.records, stats.height, stats.leaf_pages), (0, 1, 1));
    }
}

#[test]
fn bounds_of_every_kind() {
    let tree = common::tree(PageSize::K4, 32);
    for i in 0u32..3000 {
        tree.put(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    let k = |i: u32| i.to_be_bytes().to_vec();
    let keys = |it: barracuda_btree::RangeIter| {
        it.map(|kv| u32::from_be_bytes(kv.unwrap().0.try_into().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(tree.range(k(10).as_slice()..k(13).as_slice())),
        vec![10, 11, 12]
    );
    assert_eq!(
        keys(tree.range(k(10).as_slice()..=k(13).as_slice())),
        vec![10, 11, 12, 13]
    );
    assert_eq!(
        keys(tree.range((
            Bound::Excluded(k(10).as_slice()),
            Bound::Included(k(12).as_slice())
        ))),
        vec![11, 12]
    );
    assert_eq!(keys(tree.range(k(2997).as_slice()..)).len(), 3);
    assert_eq!(keys(tree.range(..k(3).as_slice())), vec![0, 1, 2]);
    assert_eq!(keys(tree.range(..)).len(), 3000);
    assert_eq!(tree.range(..).rev().count(), 3000);
    // Both ends at once meet in the middle without duplicates.
    let mut it = tree.range(..);
    let mut seen = Vec::new();
    loop {
        match (it.next(), it.next_back()) {
            (None, None) => break,
            (a, b) => seen.extend(a.into_iter().chain(b).map(|kv| kv.unwrap().0)),
        }
    }
    let yielded = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(
        (yielded, seen.len()),
        (3000, 3000),
        "every key once, none twice"
    );
}

#[test]
fn large_values_round_trip_and_free_their_pages() {
    let tree = common::tree(PageSize::K16, 64);
    let big: Vec<u8> = (0..(3 << 20)).map(|i: u32| (i % 251) as u8).collect();
    tree.put(b"big", &big).unwrap();
    tree.put(b"small", b"x").unwrap();
    assert_eq!(tree.get(b"big").unwrap().unwrap(), big);
    let stats = tree.check().unwrap();
    assert!(stats.overflow_pages >= 190, "{stats:?}");
    // Replacing with an inline value frees the chain; the freed pages are reused.
    tree.put(b"big", b"now small").unwrap();
    assert_eq!(tree.check().unwrap().overflow_pages, 0);
    assert_eq!(tree.get(b"big").unwrap().unwrap(), b"now small");
}

#[test]
fn keys_over_the_limit_are_refused() {
    let tree = common::tree(PageSize::K4, 16);
    let max = barracuda_btree::max_key_len(PageSize::K4);
    tree.put(&vec![1u8; max], b"ok").unwrap();
    let err = tree.put(&vec![1u8; max + 1], b"no").unwrap_err();
    assert!(
        matches!(err, barracuda_btree::BTreeError::KeyTooLong { .. }),
        "{err}"
    );
    assert_eq!(tree.get(&vec![1u8; max + 1]).unwrap(), None);
}

#[test]
fn long_keys_split_inner_nodes_and_every_key_stays_found() {
    // Keys near the longest allowed: an inner node takes only a few separators, so splits
    // run up through several levels (the splits that measure the keys of the nodes below).
    let tree = common::tree(PageSize::K4, 64);
    let max = barracuda_btree::max_key_len(PageSize::K4);
    let mut model = BTreeMap::new();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..400u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Lengths vary (a short key beside long ones); long keys share a long prefix and
        // differ at the end, so separators are long too.
        let len = if i % 5 == 0 {
            9
        } else {
            max - (x % 64) as usize
        };
        let mut key = vec![7u8; len - 8];
        key.extend(x.to_be_bytes());
        let value = i.to_be_bytes();
        tree.put(&key, &value).unwrap();
        model.insert(key, value.to_vec());
    }
    let stats = tree.check().unwrap();
    assert!(stats.height >= 3, "inner nodes split: {stats:?}");
    assert_eq!(stats.records, model.len() as u64);
    for (key, value) in &model {
        assert_eq!(tree.get(key).unwrap().as_deref(), Some(&value[..]));
    }
}
