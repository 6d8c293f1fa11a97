//! Snapshot isolation against a model: random interleavings of transactions (each writing keys
//! no other open transaction writes, as row locks ensure), commits and read views; every read
//! through a view must return what the model's copy of the committed state at the view's
//! opening holds — plus, for a transaction's own view, its own writes.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, BTree, PlaceholderLog, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageSize, SysFields, UndoKind};
use barracuda_undo::{encode_version, visible_version, ReadView, TrxSystem, UndoLog, UndoSpace};
use proptest::prelude::*;

type State = BTreeMap<u8, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Begin,
    Write {
        trx: usize,
        key: u8,
        value: Option<Vec<u8>>,
    },
    Commit {
        trx: usize,
    },
    OpenView,
    Read {
        view: usize,
        key: u8,
    },
    ReadOwn {
        trx: usize,
        key: u8,
    },
}

fn value() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        4 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Some),
        // Off-page at 4 KiB pages.
        1 => (any::<u8>(), 1500usize..6000).prop_map(|(b, n)| Some(vec![b; n])),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Begin),
        6 => (0..4usize, 0..5u8, value()).prop_map(|(trx, key, value)| Op::Write { trx, key, value }),
        2 => (0..4usize).prop_map(|trx| Op::Commit { trx }),
        2 => Just(Op::OpenView),
        4 => (0..6usize, 0..5u8).prop_map(|(view, key)| Op::Read { view, key }),
        2 => (0..4usize, 0..5u8).prop_map(|(trx, key)| Op::ReadOwn { trx, key }),
    ]
}

struct OpenTrx {
    id: u64,
    log: UndoLog,
    view: ReadView,
    /// The committed state when it began, with its own writes applied.
    sees: State,
    written: BTreeSet<u8>,
}

fn setup() -> (BTree, UndoSpace) {
    let ps = PageSize::K4;
    let store = Arc::new(MemStore::new(ps));
    store.create_space(1, u32::MAX);
    store.create_space(9, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(ps).capacity_pages(256), store).unwrap();
    let alloc = Arc::new(MemAllocator::new());
    let log = Arc::new(PlaceholderLog::default());
    let ctx = TreeContext::new(pool.clone(), alloc.clone(), log.clone());
    (
        BTree::create(ctx, 1, 7).unwrap(),
        UndoSpace::create(pool, alloc, log, 9).unwrap(),
    )
}

fn read(tree: &BTree, undo: &UndoSpace, view: &ReadView, key: u8) -> Option<Vec<u8>> {
    let current = tree.get_stored(&[key]).unwrap()?;
    let version = visible_version(undo, view, &[key], current).unwrap()?;
    Some(tree.read_stored(&version.value).unwrap())
}

fn write(tree: &BTree, undo: &UndoSpace, t: &mut OpenTrx, key: u8, value: Option<&[u8]>) {
    let k = [key];
    let sys = |roll_ptr: u64, deleted| SysFields {
        trx_id: t.id,
        roll_ptr,
        deleted,
    };
    match (tree.get_stored(&k).unwrap(), value) {
        (None, Some(v)) => {
            let ptr = undo.append(&mut t.log, UndoKind::Insert, 1, &k).unwrap();
            tree.put_versioned(&k, v, sys(ptr.to_u64(), false)).unwrap();
        }
        (Some(old), Some(v)) => {
            let payload = encode_version(&k, &old).unwrap();
            let ptr = undo
                .append(&mut t.log, UndoKind::Update, 1, &payload)
                .unwrap();
            tree.put_versioned(&k, v, sys(ptr.to_u64(), false)).unwrap();
        }
        (Some(old), None) if !old.sys.deleted => {
            let payload = encode_version(&k, &old).unwrap();
            let ptr = undo
                .append(&mut t.log, UndoKind::DeleteMark, 1, &payload)
                .unwrap();
            tree.put_stored(&k, &old.value, sys(ptr.to_u64(), true))
                .unwrap();
        }
        (_, None) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn views_read_the_committed_state_of_their_opening(ops in proptest::collection::vec(op(), 1..60)) {
        let (tree, undo) = setup();
        let trx_sys = TrxSystem::new(1);
        let mut committed = State::new();
        let mut open: Vec<OpenTrx> = Vec::new();
        let mut views: Vec<(ReadView, State)> = Vec::new();
        for op in ops {
            match op {
                Op::Begin => {
                    let id = trx_sys.begin().value;
                    open.push(OpenTrx {
                        id,
                        log: undo.begin_log(id).unwrap(),
                        view: trx_sys.read_view(id),
                        sees: committed.clone(),
                        written: BTreeSet::new(),
                    });
                }
                Op::Write { trx, key, value } => {
                    if open.is_empty() {
                        continue;
                    }
                    let i = trx % open.len();
                    // Row locks: a key another open transaction wrote is not writable.
                    if open.iter().enumerate().any(|(j, t)| j != i && t.written.contains(&key)) {
                        continue;
                    }
                    let t = &mut open[i];
                    write(&tree, &undo, t, key, value.as_deref());
                    t.written.insert(key);
                    match value {
                        Some(v) => t.sees.insert(key, v),
                        None => t.sees.remove(&key),
                    };
                }
                Op::Commit { trx } => {
                    if open.is_empty() {
                        continue;
                    }
                    let t = open.remove(trx % open.len());
                    for key in &t.written {
                        match t.sees.get(key) {
                            Some(v) => committed.insert(*key, v.clone()),
                            None => committed.remove(key),
                        };
                    }
                    let no = trx_sys.commit(t.id).value;
                    undo.commit(t.log, no).unwrap();
                }
                Op::OpenView => {
                    views.push((trx_sys.read_view(0), committed.clone()));
                }
                Op::Read { view, key } => {
                    if views.is_empty() {
                        continue;
                    }
                    let (v, expected) = &views[view % views.len()];
                    prop_assert_eq!(read(&tree, &undo, v, key), expected.get(&key).cloned());
                }
                Op::ReadOwn { trx, key } => {
                    if open.is_empty() {
                        continue;
                    }
                    let t = &open[trx % open.len()];
                    prop_assert_eq!(read(&tree, &undo, &t.view, key), t.sees.get(&key).cloned());
                }
            }
        }
        // Every view, at the end, still reads its snapshot, key by key.
        for (v, expected) in &views {
            for key in 0..5u8 {
                prop_assert_eq!(read(&tree, &undo, v, key), expected.get(&key).cloned());
            }
        }
    }
}
