//! Latch coupling under contention: writer threads insert and delete disjoint key sets while
//! reader threads look keys up and scan ranges, all through a pool much smaller than the tree,
//! so splits, merges, root raises and evictions race with reads. If this breaks, a reader sees a
//! key out of order or a half-made split, a thread deadlocks, or a write is lost.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use barracuda_page::PageSize;

const WRITERS: u32 = 3;
const PER_WRITER: u32 = 6_000;

fn key(writer: u32, i: u32) -> [u8; 8] {
    // Interleave writers' keys so they share leaves and fight over the same splits.
    let n = u64::from(i) * u64::from(WRITERS) + u64::from(writer);
    n.to_be_bytes()
}

#[test]
fn writers_and_readers_agree_on_the_final_state() {
    let tree = common::tree(PageSize::K4, 48);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let tree = tree.clone();
            writers.push(s.spawn(move || {
                for i in 0..PER_WRITER {
                    tree.put(&key(w, i), &[w as u8; 60]).unwrap();
                }
                // Delete every third key again: merges run while others still insert.
                for i in (0..PER_WRITER).step_by(3) {
                    assert!(tree.delete(&key(w, i)).unwrap());
                }
            }));
        }
        for r in 0..2u32 {
            let (tree, stop) = (tree.clone(), &stop);
            s.spawn(move || {
                let mut round = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    // Point reads: a value, if present, is always the writer's.
                    let (w, i) = (round % WRITERS, (round * 7919 + r) % PER_WRITER);
                    if let Some(v) = tree.get(&key(w, i)).unwrap() {
                        assert_eq!(v, vec![w as u8; 60]);
                    }
                    // Scans: strictly ascending keys, whatever happens meanwhile.
                    let start = key(0, (round * 31) % PER_WRITER);
                    let mut last: Option<Vec<u8>> = None;
                    for kv in tree.range(start.as_slice()..).take(300) {
                        let (k, _) = kv.unwrap();
                        assert!(last.as_ref().is_none_or(|l| *l < k), "scan went backwards");
                        last = Some(k);
                    }
                }
            });
        }
        common::join_writers_then_stop(writers, &stop);
    });
    let stats = tree.check().unwrap();
    let expected = WRITERS * (PER_WRITER - PER_WRITER.div_ceil(3));
    assert_eq!(stats.records, u64::from(expected));
    for w in 0..WRITERS {
        for i in 0..PER_WRITER {
            let present = tree.get(&key(w, i)).unwrap().is_some();
            assert_eq!(present, i % 3 != 0, "writer {w} key {i}");
        }
    }
}
