//! The engine is a durable map: random puts, deletes, gets, ranges and transactions, with
//! clean close + reopen anywhere in the sequence, give what a `BTreeMap` gives — through a
//! buffer pool of 64 frames, so eviction and write-back happen all the time. If this breaks,
//! data written before a clean close is lost or a read returns the wrong row.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::collections::BTreeMap;

use barracuda::{Engine, EngineOptions, FreePagePolicy, PageSize, TableOptions};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Put(u16, usize),
    Delete(u16),
    Get(u16),
    Range(u16, u16, bool),
    Batch(Vec<(u16, Option<usize>)>, bool),
    Reopen,
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u16..2000, 0usize..600).prop_map(|(k, n)| Op::Put(k, n)),
        3 => (0u16..2000).prop_map(Op::Delete),
        3 => (0u16..2000).prop_map(Op::Get),
        1 => (0u16..2000, 0u16..2000, any::<bool>()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        2 => (prop::collection::vec((0u16..2000, prop::option::of(0usize..300)), 1..40), any::<bool>())
            .prop_map(|(w, commit)| Op::Batch(w, commit)),
        1 => Just(Op::Reopen),
        1 => Just(Op::Checkpoint),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn value(k: u16, n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_add(k as u8)).collect()
}

fn options(policy: FreePagePolicy) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(64 * 4096)
        .free_page_policy(policy)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn engine_matches_model(ops in prop::collection::vec(op(), 1..300), policy in prop_oneof![Just(FreePagePolicy::Eager), Just(FreePagePolicy::Legacy)]) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Engine::open(dir.path(), options(policy)).unwrap();
        let mut t = db.create_table("t", TableOptions::default()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, n) => {
                    db.put(&t, &key(k), &value(k, n)).unwrap();
                    model.insert(key(k), value(k, n));
                }
                Op::Delete(k) => {
                    db.delete(&t, &key(k)).unwrap();
                    model.remove(&key(k));
                }
                Op::Get(k) => prop_assert_eq!(db.get(&t, &key(k)).unwrap(), model.get(&key(k)).cloned()),
                Op::Range(a, b, rev) => {
                    let (lo, hi) = (key(a.min(b)), key(a.max(b)));
                    let mut want: Vec<_> = model.range(lo.clone()..=hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
                    let got: Vec<_> = if rev {
                        want.reverse();
                        db.range(&t, lo.as_slice()..=hi.as_slice()).unwrap().rev().collect::<Result<_, _>>().unwrap()
                    } else {
                        db.range(&t, lo.as_slice()..=hi.as_slice()).unwrap().collect::<Result<_, _>>().unwrap()
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Batch(writes, commit) => {
                    let mut tx = db.begin();
                    let mut staged = model.clone();
                    for (k, v) in writes {
                        if let Some(n) = v {
                            tx.put(&t, &key(k), &value(k, n)).unwrap();
                            staged.insert(key(k), value(k, n));
                        } else {
                            tx.delete(&t, &key(k)).unwrap();
                            staged.remove(&key(k));
                        }
                        // Read-your-writes inside the batch.
                        prop_assert_eq!(tx.get(&t, &key(k)).unwrap(), staged.get(&key(k)).cloned());
                    }
                    if commit { tx.commit().unwrap(); model = staged; } else { tx.rollback().unwrap(); }
                }
                Op::Reopen => {
                    db.close().unwrap();
                    db = Engine::open(dir.path(), options(policy)).unwrap();
                    t = db.table("t").unwrap();
                }
                Op::Checkpoint => db.checkpoint().unwrap(),
            }
        }
        db.close().unwrap();
        let db = Engine::open(dir.path(), options(policy)).unwrap();
        let t = db.table("t").unwrap();
        let all: Vec<_> = db.range(&t, ..).unwrap().collect::<Result<_, _>>().unwrap();
        let want: Vec<_> = model.into_iter().collect();
        prop_assert_eq!(all, want);
        let stats = db.check_table(&t).unwrap();
        prop_assert_eq!(stats.records as usize, db.range(&t, ..).unwrap().count());
    }
}
