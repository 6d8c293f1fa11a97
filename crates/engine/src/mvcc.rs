//! Multi-versioning in the engine: writes log their undo before they change rows in place,
//! readers see the versions their read view allows, rollback applies the undo, and purge
//! removes what no view can need.
//!
//! A transaction's write appends its undo record (the key for an insert, the whole version it
//! replaces for an update or delete-mark) and changes the row in place with its transaction id
//! and a roll pointer to that record, in one mini-transaction (or one redo commit unit when
//! the row splits its leaf): a crash keeps both or neither.
//!
//! Row locks are mostly *implicit*, as InnoDB's inserts are: the row's transaction id is its
//! lock while that transaction is active. With the leaf latched, a writer looks at the row it
//! is about to change ([`Mvcc::claim`]): its own, or absent / last changed by an ended
//! transaction and not locked by another through the lock table — it writes; changed by
//! another active transaction, or locked by one — it stops before changing anything and the
//! caller waits ([`Blocked`]) and tries again. Only locking reads, deletes and the general
//! path (a split: the row is read and changed in two steps) take explicit row locks.
//!
//! Until commit the transaction is *active*: every reader but itself rebuilds the rows it
//! changed from the undo records, so nobody sees part of it. A crash leaves its undo log named by a slot of the
//! transaction system page, and the next open rolls it back ([`Mvcc::open`] returns it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use barracuda_btree::{BTree, InPlace, InPlaceOutcome, LogSink, PageAllocator, StoredRecord};
use barracuda_buffer_pool::BufferPool;
use barracuda_lock::TrxLocks;
use barracuda_page::{PageNo, SysFields, UndoKind};
use barracuda_undo::{
    decode_version, encode_version, visible_version, ReadView, RollPtr, TrxSystem, UndoLog,
    UndoSpace,
};

use crate::error::{Error, Result};
use crate::layout::UNDO_SPACE_ID;

/// Purge's counters, for `status()`.
#[derive(Default)]
pub(crate) struct PurgeCounters {
    pub(crate) logs_purged: AtomicU64,
    pub(crate) rows_removed: AtomicU64,
    /// Logs committed by discarding them (`UndoSpace::commit_discarding`).
    pub(crate) discarded_at_commit: AtomicU64,
    /// Logs purged without reading their records: this process committed them into the
    /// history list knowing they held nothing for purge to do to rows.
    pub(crate) purged_unread: AtomicU64,
    /// The history logs (header page, transaction) this process committed with nothing for
    /// purge to do to rows ([`UndoLog::needs_purge`] false: a transaction of inserts whose
    /// log outgrew one page, or that committed while a view was open). Purge frees them
    /// without reading them: for a load's 1000-row transactions, reading every insert record
    /// to find none to act on was most of purge's work. In memory only — after a restart the
    /// logs left in the history list are read as before — and keyed by the transaction as
    /// well as the page, since a purged log's header page starts another log.
    pub(crate) rows_untouched: parking_lot::Mutex<std::collections::HashSet<(PageNo, u64)>>,
    /// Transactions rolled back at open, and their row changes undone.
    pub(crate) recovered_rollbacks: AtomicU64,
    pub(crate) recovered_rows_undone: AtomicU64,
    /// The rollback segment the next purge round starts with (taken modulo their number).
    pub(crate) next_rseg: std::sync::atomic::AtomicUsize,
}

/// Why a row write stopped before changing its row: another transaction may change it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// This transaction changed the row and has not ended (its implicit lock): wait for it.
    ByTransaction(u64),
    /// The row's lock must be taken first: another transaction holds it in the lock table,
    /// or the write reads and changes the row in two steps. Queue for it.
    RowLock,
}

/// What [`Mvcc::apply_row`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The row was written or delete-marked.
    Changed,
    /// Nothing to do (a delete of an absent or already deleted row).
    Unchanged,
    /// Nothing changed: the row is another active transaction's.
    Blocked(Blocked),
}

/// Transactions' view of the data: the transaction system and the undo tablespace.
pub(crate) struct Mvcc {
    pub(crate) trx: TrxSystem,
    pub(crate) undo: UndoSpace,
    pub(crate) purge: PurgeCounters,
}

fn undo_err(err: barracuda_btree::BTreeError) -> Error {
    Error::table("(undo tablespace)", err)
}

impl Mvcc {
    /// Opens the undo tablespace (already registered with the pool's page store) and starts
    /// the transaction system above every id it persisted.
    pub(crate) fn open(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
    ) -> Result<(Self, Vec<(PageNo, u64)>)> {
        let (undo, state) = UndoSpace::open(pool, alloc, log, UNDO_SPACE_ID).map_err(undo_err)?;
        let trx = TrxSystem::new(state.max_trx_id);
        // Transactions the last run left uncommitted are active until their rollback, so no
        // reader sees their rows meanwhile.
        for &(_, trx_id) in &state.active_logs {
            trx.resurrect(trx_id);
        }
        let mvcc = Self {
            trx,
            undo,
            purge: PurgeCounters::default(),
        };
        Ok((mvcc, state.active_logs))
    }

    /// The counters for `status()`.
    pub(crate) fn status(&self) -> crate::status::MvccStatus {
        crate::status::MvccStatus {
            history_list_length: self.undo.history_len().map_or(0, u64::from),
            active_transactions: self.trx.active_count() as u64,
            read_views: self.trx.view_count() as u64,
            logs_purged: self.purge.logs_purged.load(Ordering::Relaxed),
            rows_purged: self.purge.rows_removed.load(Ordering::Relaxed),
            recovered_rollbacks: self.purge.recovered_rollbacks.load(Ordering::Relaxed),
            recovered_rows_undone: self.purge.recovered_rows_undone.load(Ordering::Relaxed),
            cached_undo_pages: u64::from(self.undo.cached_header_pages()),
            logs_discarded_at_commit: self.purge.discarded_at_commit.load(Ordering::Relaxed),
            logs_purged_unread: self.purge.purged_unread.load(Ordering::Relaxed),
        }
    }

    /// Starts a read-write transaction: its id, now active. When the id reserve runs out, the
    /// new high-water mark is logged (one mini-transaction) before the id is handed out, so
    /// this takes no engine-wide lock.
    pub(crate) fn begin(&self) -> Result<u64> {
        self.trx
            .begin_persisting(|to| self.undo.raise_max_trx_id(to))
            .map_err(undo_err)
    }

    /// Starts the undo log of transaction `trx_id` (at its first row write) in a cached
    /// header page: one mini-transaction, so it needs no redo commit unit. `None` when the
    /// cache is empty: [`start_log`](Self::start_log), in a unit, allocates one.
    pub(crate) fn start_cached_log(&self, trx_id: u64) -> Result<Option<UndoLog>> {
        self.undo.begin_cached_log(trx_id).map_err(undo_err)
    }

    /// Starts the undo log of transaction `trx_id` in a newly allocated page: several
    /// mini-transactions, to run in a redo commit unit.
    pub(crate) fn start_log(&self, trx_id: u64) -> Result<UndoLog> {
        self.undo.begin_log(trx_id).map_err(undo_err)
    }

    /// Ends the transaction: its rows become visible to views opened from now on, and its log
    /// goes to the history list — or, when no view was open at that moment and purge would
    /// have nothing to do but free it, straight back to the header page cache
    /// (`UndoSpace::commit_discarding`). The log changes in one mini-transaction (and possibly
    /// one before it raising the persisted id mark, which stands alone): returns the LSN it
    /// ends at.
    ///
    /// Also says whether the log went to the history list (purge has work to do).
    pub(crate) fn commit(
        &self,
        trx_id: u64,
        log: UndoLog,
    ) -> Result<(Option<barracuda_page::Lsn>, bool)> {
        let (no, no_view_open) = self
            .trx
            .commit_seeing_views(trx_id, |to| self.undo.raise_max_trx_id(to))
            .map_err(undo_err)?;
        let log = if no_view_open {
            match self.undo.commit_discarding(log).map_err(undo_err)? {
                Ok(end) => {
                    self.purge
                        .discarded_at_commit
                        .fetch_add(1, Ordering::Relaxed);
                    return Ok((end, false));
                }
                Err(log) => log,
            }
        } else {
            log
        };
        // Registered before `commit` links the log where purge can reach it, and taken back
        // if that fails, so that no entry outlives its log.
        let untouched = (!log.needs_purge()).then(|| (log.first_page(), trx_id));
        if let Some(key) = untouched {
            self.purge.rows_untouched.lock().insert(key);
        }
        match self.undo.commit(log, no) {
            Ok(end) => Ok((end, true)),
            Err(e) => {
                if let Some(key) = untouched {
                    self.purge.rows_untouched.lock().remove(&key);
                }
                Err(undo_err(e))
            }
        }
    }

    /// Whether transaction `me` (holding `locks`) may change the row of `key` in `space`,
    /// whose newest version is `current` (`None`: absent), without waiting: `None` if so.
    /// Called with the row's leaf latched, so the answer holds until the change is made: a
    /// transaction that takes the row's lock later reads the row after it and sees the
    /// change (and waits for `me`).
    pub(crate) fn claim(
        &self,
        locks: &TrxLocks,
        me: u64,
        space: u32,
        key: &[u8],
        current: Option<&StoredRecord>,
    ) -> Option<Blocked> {
        if let Some(row) = current {
            let owner = row.sys.trx_id;
            if owner == me {
                // Its own change: nobody else may change the row until `me` ends.
                return None;
            }
            if self.trx.is_active(owner) {
                return Some(Blocked::ByTransaction(owner));
            }
        }
        locks
            .locked_by_other(u64::from(space), key)
            .map(|_| Blocked::RowLock)
    }

    /// The transaction other than `me` that changed `current` and is still active: its
    /// implicit lock on the row.
    fn held_by_other(&self, me: u64, current: Option<&StoredRecord>) -> Option<u64> {
        current
            .map(|row| row.sys.trx_id)
            .filter(|&owner| owner != me && self.trx.is_active(owner))
    }

    /// Applies `key → value` (or its deletion) to `tree` for transaction `trx_id`, writing the
    /// undo record first. The row is read, then changed, in two steps: the caller holds the
    /// row's lock, or the row is already `trx_id`'s. A row another active transaction changed
    /// (before the caller locked it) is left alone: [`Applied::Blocked`].
    pub(crate) fn apply_row(
        &self,
        tree: &BTree,
        log: &mut UndoLog,
        trx_id: u64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> std::result::Result<Applied, barracuda_btree::BTreeError> {
        let space = tree.space();
        let sys = |ptr: RollPtr, deleted| SysFields {
            trx_id,
            roll_ptr: ptr.to_u64(),
            deleted,
        };
        let current = tree.get_stored_to_change(key)?;
        if let Some(owner) = self.held_by_other(trx_id, current.as_ref()) {
            return Ok(Applied::Blocked(Blocked::ByTransaction(owner)));
        }
        match (current, value) {
            (None, Some(v)) => {
                let ptr = self.undo.append(log, UndoKind::Insert, space, key)?;
                tree.put_versioned(key, v, sys(ptr, false))?;
                Ok(Applied::Changed)
            }
            (Some(old), Some(v)) => {
                // Also a revived delete-marked row: its old version is the deleted one.
                let payload = encode_version(key, &old)?;
                let ptr = self.undo.append(log, UndoKind::Update, space, &payload)?;
                // The replaced version keeps its value (off-page chain included) for readers
                // of older views; purge frees it.
                tree.put_versioned(key, v, sys(ptr, false))?;
                Ok(Applied::Changed)
            }
            (Some(old), None) if !old.sys.deleted => {
                let payload = encode_version(key, &old)?;
                let ptr = self
                    .undo
                    .append(log, UndoKind::DeleteMark, space, &payload)?;
                tree.put_stored(key, &old.value, sys(ptr, true))?;
                Ok(Applied::Changed)
            }
            (_, None) => Ok(Applied::Unchanged),
        }
    }

    /// The fast path of a row write: the undo record and the row change in one
    /// mini-transaction, with no redo commit unit and no engine-wide lock — when the record
    /// fits the log's last undo page and the row fits its leaf in place (no split, no overflow
    /// chain). Returns [`InPlaceOutcome::NotHere`] (nothing changed) otherwise, with the
    /// reason when the row is another transaction's ([`claim`](Self::claim)).
    pub(crate) fn write_in_place(
        &self,
        tree: &BTree,
        log: &mut UndoLog,
        locks: &TrxLocks,
        trx_id: u64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> std::result::Result<(InPlaceOutcome, Option<Blocked>), barracuda_btree::BTreeError> {
        let space = tree.space();
        let undo = &self.undo;
        let change = value.map_or(InPlace::DeleteMark, InPlace::Put);
        let mut blocked = None;
        let outcome = tree.change_in_place(key, change, &mut |mtr, current| {
            if let Some(why) = self.claim(locks, trx_id, space, key, current) {
                blocked = Some(why);
                return Ok(None);
            }
            // An insert's payload is the key itself: no copy on the hot path.
            let (kind, version) = match (current, value) {
                (None, Some(_)) => (UndoKind::Insert, None),
                // Also a revived delete-marked row: its old version is the deleted one.
                (Some(old), Some(_)) => (UndoKind::Update, Some(encode_version(key, old)?)),
                (Some(old), None) => (UndoKind::DeleteMark, Some(encode_version(key, old)?)),
                (None, None) => return Ok(None),
            };
            let payload = version.as_deref().unwrap_or(key);
            let Some(ptr) = undo.append_in(mtr, log, kind, space, payload)? else {
                return Ok(None);
            };
            Ok(Some(SysFields {
                trx_id,
                roll_ptr: ptr.to_u64(),
                deleted: value.is_none(),
            }))
        })?;
        Ok((outcome, blocked))
    }

    /// [`write_in_place`](Self::write_in_place) for a run of puts, keys strictly ascending:
    /// as many rows as the first one's leaf takes in place, with their undo records, in one
    /// mini-transaction (`BTree::put_run_in_place`). Returns how many rows, from the first,
    /// were written — 0 leaves the first to the general path — and, when the run stopped at
    /// a row another transaction may change ([`claim`](Self::claim)), why: that row is the
    /// first not written.
    pub(crate) fn write_run_in_place(
        &self,
        tree: &BTree,
        log: &mut UndoLog,
        locks: &TrxLocks,
        trx_id: u64,
        rows: &[(&[u8], &[u8])],
    ) -> std::result::Result<(usize, Option<Blocked>), barracuda_btree::BTreeError> {
        let space = tree.space();
        let undo = &self.undo;
        let mut blocked = None;
        let written = tree.put_run_in_place(rows, &mut |mtr, currents| {
            // The rows this transaction may change now: the prefix before the first that is
            // another's.
            let mut claimed = currents.len();
            for (i, (&(key, _), current)) in rows.iter().zip(currents).enumerate() {
                if let Some(why) = self.claim(locks, trx_id, space, key, current.as_ref()) {
                    blocked = Some(why);
                    claimed = i;
                    break;
                }
            }
            let currents = currents.get(..claimed).unwrap_or_default();
            // An insert's payload is its key; an update's, the version it replaces.
            let versions = rows
                .iter()
                .zip(currents)
                .map(|(&(key, _), current)| {
                    current
                        .as_ref()
                        .map(|old| encode_version(key, old))
                        .transpose()
                })
                .collect::<std::result::Result<Vec<Option<Vec<u8>>>, _>>()?;
            let records: Vec<(UndoKind, &[u8])> = rows
                .iter()
                .zip(&versions)
                .map(|(&(key, _), version)| match version {
                    None => (UndoKind::Insert, key),
                    Some(v) => (UndoKind::Update, v.as_slice()),
                })
                .collect();
            if records.is_empty() {
                return Ok(Vec::new());
            }
            let ptrs = undo.append_run_in(mtr, log, space, &records)?;
            if ptrs.len() < records.len() {
                // The undo page took only a prefix: the stop is not the blocked row's.
                blocked = None;
            }
            Ok(ptrs
                .iter()
                .map(|ptr| SysFields {
                    trx_id,
                    roll_ptr: ptr.to_u64(),
                    deleted: false,
                })
                .collect())
        })?;
        Ok((written, blocked))
    }

    /// The value of `key` that `view` sees.
    pub(crate) fn read_in(
        &self,
        table: &str,
        tree: &BTree,
        view: &ReadView,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        match tree.get_stored(key).map_err(|e| Error::table(table, e))? {
            Some(current) => self.resolve(table, tree, view, key, current),
            None => Ok(None),
        }
    }

    /// The value of the version of `key` (newest `current`) that `view` sees.
    pub(crate) fn resolve(
        &self,
        table: &str,
        tree: &BTree,
        view: &ReadView,
        key: &[u8],
        current: StoredRecord,
    ) -> Result<Option<Vec<u8>>> {
        let table_err = |e| Error::table(table, e);
        let version = visible_version(&self.undo, view, key, current).map_err(table_err)?;
        version
            .map(|v| tree.read_stored(&v.value))
            .transpose()
            .map_err(table_err)
    }

    /// Purges up to `max` of the oldest committed logs that no open view can need: removes
    /// the rows each delete-marked (if no later change revived them), frees the off-page
    /// values of the versions it replaced, then removes the logs from their rollback segment's
    /// history list, one mini-transaction per segment. Segments take turns at going first.
    /// `tree_of` finds a table's tree by tablespace (`None` for a dropped table, whose rows
    /// went with its file). Returns how many logs were purged. The caller runs it inside a
    /// commit unit, so that a crash repeats it whole.
    ///
    /// The segments' lists are purged independently, not merged in commit order: whether a
    /// log may be purged depends only on the views (every one must see its transaction), and
    /// of two transactions that changed one row, the later committed later and sits in a list
    /// after the earlier, or in another list whose purge of it needs every view to see it —
    /// and so the earlier one too.
    pub(crate) fn purge_logs(
        &self,
        tree_of: &dyn Fn(u32) -> Option<BTree>,
        max: usize,
    ) -> std::result::Result<usize, barracuda_btree::BTreeError> {
        let limit = self.trx.purge_limit();
        let count = self.undo.rseg_count();
        let first = self.purge.next_rseg.fetch_add(1, Ordering::Relaxed);
        let mut total = 0;
        for i in 0..count {
            if total >= max {
                break;
            }
            let rseg = (first + i) % count;
            let mut purged = Vec::new();
            let mut next = self.undo.history_head(rseg)?;
            while let Some(entry) = next.take() {
                // Commits may enter a list slightly out of commit-number order (each links its
                // log once it has its number, without a lock over both): stop at the first log
                // a view may need, even if a later one would not be.
                if entry.trx_no >= limit {
                    break;
                }
                let untouched = self
                    .purge
                    .rows_untouched
                    .lock()
                    .remove(&(entry.first_page, entry.trx_id));
                if untouched {
                    self.purge.purged_unread.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.purge_rows_of(&entry, tree_of)?;
                }
                purged.push(entry.first_page);
                if total + purged.len() < max {
                    next = self.undo.history_after(&entry)?;
                }
            }
            self.undo.remove_history_heads(rseg, &purged)?;
            total += purged.len();
        }
        self.purge
            .logs_purged
            .fetch_add(total as u64, Ordering::Relaxed);
        Ok(total)
    }

    /// What purging the log `entry` does to rows (see [`purge_logs`](Self::purge_logs)), one
    /// undo page of records in memory at a time (a transaction of millions of rows has
    /// megabytes of undo).
    fn purge_rows_of(
        &self,
        entry: &barracuda_undo::HistoryEntry,
        tree_of: &dyn Fn(u32) -> Option<BTree>,
    ) -> std::result::Result<(), barracuda_btree::BTreeError> {
        for page in self.undo.log_pages(entry.first_page)? {
            // An insert's record leaves nothing to purge: the row it names stays.
            let records = self
                .undo
                .records_on_page_of_kind(entry.first_page, page, |kind| kind != UndoKind::Insert)?;
            for (ptr, record) in records {
                if let Some(tree) = tree_of(record.space) {
                    self.purge_record(&tree, entry.trx_id, ptr, &record)?;
                }
            }
        }
        Ok(())
    }

    /// Purges what one undo record of committed transaction `trx_id` left in `tree`.
    fn purge_record(
        &self,
        tree: &BTree,
        trx_id: u64,
        ptr: RollPtr,
        record: &barracuda_undo::OwnedUndoRecord,
    ) -> std::result::Result<(), barracuda_btree::BTreeError> {
        let at = barracuda_page::PageId::new(UNDO_SPACE_ID, ptr.page_no);
        match record.kind {
            UndoKind::Insert => {}
            UndoKind::Update => {
                // The version this transaction replaced: no view needs it any more.
                let (_, old) = decode_version(&record.payload, at)?;
                tree.free_stored(&old.value)?;
            }
            UndoKind::DeleteMark => {
                let (key, _) = decode_version(&record.payload, at)?;
                // Only if still marked by this transaction: a writer may have revived the row
                // since (checked under the latch that removes it).
                let roll_ptr = ptr.to_u64();
                let still_marked = |now: SysFields| {
                    now.deleted && now.trx_id == trx_id && now.roll_ptr == roll_ptr
                };
                if let Some(removed) = tree.remove_stored_if(&key, &still_marked)? {
                    tree.free_stored(&removed.value)?;
                    self.purge.rows_removed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}

/// Takes back one change of transaction `trx_id` — the one undo record `record` (at `ptr`)
/// logged — if the row still shows it: an insert is removed, an update or delete-mark puts
/// back the version it replaced (an update also frees the off-page value it wrote). A row
/// that does not carry `ptr` was already restored (a rollback resumed after a crash) and is
/// left alone, so applying a record twice is harmless.
pub(crate) fn undo_one(
    trx: &TrxSystem,
    tree: &BTree,
    trx_id: u64,
    ptr: RollPtr,
    record: &barracuda_undo::OwnedUndoRecord,
) -> std::result::Result<(), barracuda_btree::BTreeError> {
    let at = barracuda_page::PageId::new(UNDO_SPACE_ID, ptr.page_no);
    let (key, old) = match record.kind {
        UndoKind::Insert => (record.payload.clone(), None),
        UndoKind::Update | UndoKind::DeleteMark => {
            let (key, old) = decode_version(&record.payload, at)?;
            (key, Some(old))
        }
    };
    let Some(current) = tree.get_stored_to_change(&key)? else {
        return Ok(());
    };
    if current.sys.trx_id != trx_id || current.sys.roll_ptr != ptr.to_u64() {
        return Ok(());
    }
    match (record.kind, old) {
        (UndoKind::Insert, _) => {
            if let Some(removed) = tree.remove_stored(&key)? {
                tree.free_stored(&removed.value)?;
            }
        }
        (UndoKind::Update, Some(old)) if old.sys.deleted && trx.all_views_see(old.sys.trx_id) => {
            // The update revived a row another transaction had deleted, and every view sees
            // that delete: purge may already have passed the deleting transaction's log (it
            // checks that the row is still marked, and it was not), so nothing else would ever
            // remove the mark put back here. Remove the row instead, as purge would have (its
            // value, shared with the deleting transaction's undo record, goes with it: that
            // record's purge finds no row to free). Purge cannot run meanwhile: both hold the
            // unit lock.
            if let Some(removed) = tree.remove_stored(&key)? {
                tree.free_stored(&removed.value)?;
            }
            tree.free_stored(&old.value)?;
        }
        (UndoKind::Update, Some(old)) => {
            tree.put_stored(&key, &old.value, old.sys)?;
            tree.free_stored(&current.value)?;
        }
        (_, Some(old)) => {
            // A delete-mark kept the value it marked: only the fields go back.
            tree.put_stored(&key, &old.value, old.sys)?;
        }
        (_, None) => {}
    }
    Ok(())
}
