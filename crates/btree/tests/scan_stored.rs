//! The lending reads: `get_stored_with` and `scan_stored`, which show records in place under the
//! leaf's latch and walk the leaf chain. Checked against a `BTreeMap` for every kind of bound,
//! and under writers that split and merge the leaves being walked, through a pool so small that
//! the next leaf is often not in it (so the scan must fall back to a descent).

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicBool, Ordering};

use barracuda_btree::{BTree, ValueView};
use barracuda_page::PageSize;

fn k(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// Every (key, value) `scan_stored` visits, inline values copied, a chain as its debug text
/// (reading it inside the closure would latch other pages under the leaf's latch).
fn scanned(tree: &BTree, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rows = Vec::new();
    tree.scan_stored(start, end, |key, value, _| {
        let value = match value {
            ValueView::Inline(v) => v.to_vec(),
            chain @ ValueView::Overflow { .. } => format!("{:?}", chain.to_stored()).into_bytes(),
        };
        rows.push((key.to_vec(), value));
        ControlFlow::Continue(())
    })
    .unwrap();
    rows
}

#[test]
fn a_scan_visits_what_the_map_holds_for_every_kind_of_bound() {
    let tree = common::tree(PageSize::K4, 64);
    let mut model = BTreeMap::new();
    // Values of several sizes, so leaves hold different numbers of records.
    for n in (0..3_000u64).map(|i| i * 7 % 3_001) {
        let value = vec![n as u8; (n % 90) as usize + 1];
        tree.put(&k(n * 2), &value).unwrap();
        model.insert(k(n * 2).to_vec(), value);
    }
    let points = [0u64, 1, 2, 999, 1000, 3_001, 5_998, 5_999, 6_000, 9_000];
    let bounds = |p: u64| {
        [
            Bound::Included(k(p).to_vec()),
            Bound::Excluded(k(p).to_vec()),
            Bound::Unbounded,
        ]
    };
    for &a in &points {
        for &b in &points {
            for start in bounds(a) {
                for end in bounds(b) {
                    let (s, e) = (
                        start.as_ref().map(Vec::as_slice),
                        end.as_ref().map(Vec::as_slice),
                    );
                    if matches!((s, e), (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) if x > y)
                        || matches!((s, e), (Bound::Excluded(x), Bound::Excluded(y)) if x == y)
                    {
                        continue; // BTreeMap::range panics on these; the scan visits nothing
                    }
                    let want: Vec<_> = model
                        .range::<[u8], _>((s, e))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(scanned(&tree, s, e), want, "{start:?}..{end:?}");
                }
            }
        }
    }
}

#[test]
fn a_scan_stops_where_its_closure_breaks_and_point_reads_lend_the_value() {
    let tree = common::tree(PageSize::K4, 64);
    for n in 0..2_000u64 {
        tree.put(&k(n), &k(n * 3)).unwrap();
    }
    let mut seen = Vec::new();
    tree.scan_stored(Bound::Included(&k(500)), Bound::Unbounded, |key, _, _| {
        seen.push(key.to_vec());
        if seen.len() == 250 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    let want: Vec<Vec<u8>> = (500..750u64).map(|n| k(n).to_vec()).collect();
    assert_eq!(seen, want);

    let lent = tree
        .get_stored_with(&k(77), |value, sys| (value.to_stored(), sys))
        .unwrap()
        .unwrap();
    assert_eq!(
        lent.0,
        barracuda_btree::StoredValue::Inline(k(231).to_vec())
    );
    assert_eq!(tree.get_stored_with(&k(5_000), |_, _| ()).unwrap(), None);
}

#[test]
fn off_page_values_are_lent_as_their_chain() {
    let tree = common::tree(PageSize::K4, 64);
    let big = vec![9u8; 20_000];
    tree.put(b"big", &big).unwrap();
    tree.put(b"small", b"s").unwrap();
    let chain = tree
        .get_stored_with(b"big", |value, _| value.to_stored())
        .unwrap()
        .unwrap();
    assert!(matches!(
        chain,
        barracuda_btree::StoredValue::Overflow {
            total_len: 20_000,
            ..
        }
    ));
    assert_eq!(tree.read_stored(&chain).unwrap(), big);
    let rows = scanned(&tree, Bound::Unbounded, Bound::Unbounded);
    assert_eq!(rows.len(), 2);
    assert!(String::from_utf8_lossy(&rows[0].1).contains("Overflow"));
    assert_eq!(rows[1], (b"small".to_vec(), b"s".to_vec()));
}

/// Keys that exist throughout (odd numbers) must be seen exactly once, ascending, by every
/// scan, while writers insert and delete the even keys between them: splits and merges of the
/// very leaves being walked, through a pool of 48 frames (the next leaf is often not in it).
#[test]
fn scans_see_every_stable_key_once_while_writers_split_and_merge_the_leaves() {
    const STABLE: u64 = 4_000;
    const WRITERS: u64 = 3;
    const PER_WRITER: u64 = 5_000;
    let tree = common::tree(PageSize::K4, 48);
    for j in 0..STABLE {
        tree.put(&k(2 * j + 1), &[1u8; 40]).unwrap();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let tree = tree.clone();
            writers.push(s.spawn(move || {
                let even = |i: u64| k(2 * ((i * WRITERS + w) % (2 * STABLE)));
                for i in 0..PER_WRITER {
                    tree.put(&even(i), &[2u8; 60]).unwrap();
                }
                for i in 0..PER_WRITER {
                    tree.delete(&even(i)).unwrap();
                }
            }));
        }
        let mut scans = 0u32;
        while !stop.load(Ordering::Relaxed) {
            scans += 1;
            let mut last: Option<Vec<u8>> = None;
            let mut stable_seen = 0u64;
            tree.scan_stored(Bound::Unbounded, Bound::Unbounded, |key, value, _| {
                assert!(
                    last.as_deref().is_none_or(|l| l < key),
                    "scan went backwards"
                );
                last = Some(key.to_vec());
                let n = u64::from_be_bytes(key.try_into().unwrap());
                if n % 2 == 1 {
                    assert_eq!(n, 2 * stable_seen + 1, "stable key skipped or repeated");
                    assert_eq!(value, ValueView::Inline(&[1u8; 40]));
                    stable_seen += 1;
                }
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(stable_seen, STABLE);
            if writers
                .iter()
                .all(std::thread::ScopedJoinHandle::is_finished)
            {
                stop.store(true, Ordering::Relaxed);
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        assert!(scans > 1, "the scans ran while the writers did");
    });
    tree.check().unwrap();
}
