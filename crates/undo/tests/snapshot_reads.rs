//! Read views over a B-tree whose changes keep their old versions in undo logs: every view
//! reads the row as it was committed when the view opened — through updates, deletes,
//! re-inserts, uncommitted changes and off-page values — following roll pointers back.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, BTree, PlaceholderLog, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageSize, SysFields, UndoKind};
use barracuda_undo::{encode_version, visible_version, ReadView, TrxSystem, UndoLog, UndoSpace};

const TABLE: u32 = 1;
const UNDO: u32 = 9;

/// A table, an undo tablespace and a transaction system: the write path a transaction takes,
/// in miniature.
struct Db {
    tree: BTree,
    undo: UndoSpace,
    trx: TrxSystem,
}

struct Open {
    id: u64,
    log: UndoLog,
}

impl Db {
    fn new() -> Self {
        let ps = PageSize::K4;
        let store = Arc::new(MemStore::new(ps));
        store.create_space(TABLE, u32::MAX);
        store.create_space(UNDO, u32::MAX);
        let pool = BufferPool::new(PoolConfig::new(ps).capacity_pages(128), store).unwrap();
        let alloc = Arc::new(MemAllocator::new());
        let log = Arc::new(PlaceholderLog::default());
        let ctx = TreeContext::new(pool.clone(), alloc.clone(), log.clone());
        Self {
            tree: BTree::create(ctx, TABLE, 7).unwrap(),
            undo: UndoSpace::create(pool, alloc, log, UNDO).unwrap(),
            trx: TrxSystem::new(1),
        }
    }

    fn begin(&self) -> Open {
        let assigned = self.trx.begin();
        if let Some(to) = assigned.raise_to {
            self.undo.raise_max_trx_id(to).unwrap();
        }
        Open {
            id: assigned.value,
            log: self.undo.begin_log(assigned.value).unwrap(),
        }
    }

    /// Writes `key → value` (or deletes it) in place for `t`, undo first.
    fn change(&self, t: &mut Open, key: &[u8], value: Option<&[u8]>) {
        let current = self.tree.get_stored(key).unwrap();
        let sys = |roll_ptr: u64, deleted| SysFields {
            trx_id: t.id,
            roll_ptr,
            deleted,
        };
        match (current, value) {
            (None, Some(v)) => {
                let ptr = self
                    .undo
                    .append(&mut t.log, UndoKind::Insert, TABLE, key)
                    .unwrap();
                self.tree
                    .put_versioned(key, v, sys(ptr.to_u64(), false))
                    .unwrap();
            }
            (Some(old), Some(v)) => {
                let payload = encode_version(key, &old).unwrap();
                let ptr = self
                    .undo
                    .append(&mut t.log, UndoKind::Update, TABLE, &payload)
                    .unwrap();
                // The replaced version's off-page value stays allocated: its undo record
                // refers to it until purge.
                self.tree
                    .put_versioned(key, v, sys(ptr.to_u64(), false))
                    .unwrap();
            }
            (Some(old), None) if !old.sys.deleted => {
                let payload = encode_version(key, &old).unwrap();
                let ptr = self
                    .undo
                    .append(&mut t.log, UndoKind::DeleteMark, TABLE, &payload)
                    .unwrap();
                self.tree
                    .put_stored(key, &old.value, sys(ptr.to_u64(), true))
                    .unwrap();
            }
            (_, None) => {}
        }
    }

    fn commit(&self, t: Open) {
        let no = self.trx.commit(t.id);
        self.undo.commit(t.log, no.value).unwrap();
    }

    fn write(&self, key: &[u8], value: Option<&[u8]>) {
        let mut t = self.begin();
        self.change(&mut t, key, value);
        self.commit(t);
    }

    fn read(&self, view: &ReadView, key: &[u8]) -> Option<Vec<u8>> {
        let current = self.tree.get_stored(key).unwrap()?;
        let version = visible_version(&self.undo, view, key, current).unwrap()?;
        Some(self.tree.read_stored(&version.value).unwrap())
    }
}

#[test]
fn each_view_reads_the_row_as_committed_when_it_opened() {
    let db = Db::new();
    let before = db.trx.read_view(0);
    db.write(b"k", Some(b"v1"));
    let after_insert = db.trx.read_view(0);
    db.write(b"k", Some(b"v2"));
    let after_update = db.trx.read_view(0);
    db.write(b"k", None);
    let after_delete = db.trx.read_view(0);
    db.write(b"k", Some(b"v3"));
    let after_reinsert = db.trx.read_view(0);

    assert_eq!(db.read(&before, b"k"), None);
    assert_eq!(db.read(&after_insert, b"k").as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.read(&after_update, b"k").as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.read(&after_delete, b"k"), None);
    assert_eq!(db.read(&after_reinsert, b"k").as_deref(), Some(&b"v3"[..]));
    // The tree itself holds only the newest version.
    assert_eq!(db.tree.get(b"k").unwrap().as_deref(), Some(&b"v3"[..]));
    assert_eq!(db.undo.history_len().unwrap(), 4);
}

#[test]
fn an_uncommitted_change_is_seen_by_its_own_transaction_only() {
    let db = Db::new();
    db.write(b"a", Some(b"old-a"));
    db.write(b"b", Some(b"old-b"));
    let mut t = db.begin();
    db.change(&mut t, b"a", Some(b"new-a"));
    db.change(&mut t, b"b", None);
    db.change(&mut t, b"c", Some(b"new-c"));
    let reader = db.trx.read_view(0);
    let own = db.trx.read_view(t.id);
    assert_eq!(db.read(&reader, b"a").as_deref(), Some(&b"old-a"[..]));
    assert_eq!(db.read(&reader, b"b").as_deref(), Some(&b"old-b"[..]));
    assert_eq!(db.read(&reader, b"c"), None);
    assert_eq!(db.read(&own, b"a").as_deref(), Some(&b"new-a"[..]));
    assert_eq!(db.read(&own, b"b"), None);
    assert_eq!(db.read(&own, b"c").as_deref(), Some(&b"new-c"[..]));
    db.commit(t);
    // A view opened before the commit still reads the old rows; a new one the new rows.
    assert_eq!(db.read(&reader, b"a").as_deref(), Some(&b"old-a"[..]));
    let later = db.trx.read_view(0);
    assert_eq!(db.read(&later, b"a").as_deref(), Some(&b"new-a"[..]));
    assert_eq!(db.read(&later, b"b"), None);
}

#[test]
fn an_old_off_page_value_is_read_through_the_chain_its_version_kept() {
    let db = Db::new();
    let big = vec![0x42u8; 20_000];
    db.write(b"blob", Some(&big));
    let old_view = db.trx.read_view(0);
    db.write(b"blob", Some(b"small now"));
    db.write(b"blob", Some(&vec![0x43u8; 9_000]));
    assert_eq!(db.read(&old_view, b"blob").unwrap(), big);
    assert_eq!(db.tree.get(b"blob").unwrap().unwrap(), vec![0x43u8; 9_000]);
}

#[test]
fn a_damaged_roll_pointer_is_an_error_not_a_panic() {
    let db = Db::new();
    db.write(b"k", Some(b"v1"));
    let old_view = db.trx.read_view(0);
    db.write(b"k", Some(b"v2"));
    let mut current = db.tree.get_stored(b"k").unwrap().unwrap();
    // Point into the middle of the undo page, where no record starts.
    current.sys.roll_ptr = (current.sys.roll_ptr & !0xFFFF) | 3;
    let err = visible_version(&db.undo, &old_view, b"k", current.clone()).unwrap_err();
    assert!(err.to_string().contains("no undo record"), "{err}");
    current.sys.roll_ptr = 1 << 50; // reserved bits
    let err = visible_version(&db.undo, &old_view, b"k", current).unwrap_err();
    assert!(err.to_string().contains("roll pointer"), "{err}");
}
