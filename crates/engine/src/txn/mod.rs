//! Transactions: row locks, writes in place with undo, read views, commit and rollback.

use std::ops::{ControlFlow, RangeBounds};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use barracuda_lock::{Acquired, LockError, TrxLocks};
use barracuda_undo::{ReadView, UndoLog};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::mvcc::Blocked;
use crate::rollback::{roll_back, LogToRollBack};
use crate::table::{Range, Table, TableInner};

mod write;

pub(crate) use write::check_value;

/// Which committed data a transaction's plain reads see (InnoDB's `transaction_isolation`).
/// Locking reads ([`Transaction::get_for_update`]) and writes always act on the newest
/// committed version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IsolationLevel {
    /// Every read sees the data committed before the transaction's first read (one read view
    /// for the whole transaction), plus its own writes. The default, as in InnoDB.
    #[default]
    RepeatableRead,
    /// Every read (each `get`, each `range` call) sees the data committed before it started,
    /// plus the transaction's own writes.
    ReadCommitted,
}

/// A transaction: writes that become visible all together at [`commit`](Self::commit), or not
/// at all.
///
/// **Writes** change the table in place at once: [`put`](Self::put) and
/// [`delete`](Self::delete) lock the row's key, append the version they replace to the
/// transaction's undo log, and change the row (a delete only delete-marks it; purge removes it
/// once no reader can need it). Until commit every other reader rebuilds the rows the
/// transaction changed from its undo log, so nobody sees any of them; the transaction's own
/// reads see them. [`rollback`](Self::rollback) — or dropping the transaction, or its choice as
/// a deadlock victim — applies the undo log, newest change first. A crash rolls back every
/// transaction that had not committed when the engine next opens.
///
/// **Row locks.** `put`, `delete` and [`get_for_update`](Self::get_for_update) take an
/// exclusive lock on the row's key (InnoDB's record locks), held until commit or rollback; a
/// row locked by another transaction makes the request wait, first come first served. A wait
/// longer than the lock wait timeout fails the request with [`Error::LockWaitTimeout`] (the
/// transaction stays usable); a wait that would close a cycle of waiting transactions is a
/// deadlock, and its victim, the lightest transaction of the cycle, is rolled back with
/// [`Error::Deadlock`]. Plain reads take no lock. Two transactions writing different rows run
/// concurrently; each row's change is one short redo unit.
///
/// **Reads** ([`get`](Self::get), [`range`](Self::range)) see committed data as the
/// [`IsolationLevel`] says, plus the transaction's own writes.
pub struct Transaction<'e> {
    engine: &'e Engine,
    isolation: IsolationLevel,
    /// Its id and row locks from its first locking call, its undo log from its first write.
    writer: Option<Writer>,
    /// Set when the transaction was rolled back as a deadlock victim: (table, trx id, why).
    deadlock_victim: Option<(String, u64, String)>,
    /// The read view of a repeatable-read transaction, from its first read.
    view: Mutex<Option<Arc<ReadView>>>,
    finished: bool,
}

/// What a transaction that locks or writes holds.
struct Writer {
    id: u64,
    locks: TrxLocks,
    log: Option<UndoLog>,
    /// The tables it wrote to: a commit after one of them was dropped is refused.
    tables: Vec<Arc<TableInner>>,
    written: u64,
    deleted: u64,
}

impl Writer {
    /// Counts a row written (or deleted) and weighs the transaction for deadlock victims.
    fn count(&mut self, written: bool) {
        self.locks.add_weight(1);
        if written {
            self.written += 1;
        } else {
            self.deleted += 1;
        }
    }

    /// Counts `rows` rows written at once (a run of `put_many`): one update of the shared
    /// weight instead of one per row.
    fn count_written(&mut self, rows: usize) {
        let rows = rows as u64;
        if rows > 0 {
            self.locks.add_weight(rows);
            self.written += rows;
        }
    }
}

impl<'e> Transaction<'e> {
    pub(crate) fn new(engine: &'e Engine, isolation: IsolationLevel) -> Self {
        Self {
            engine,
            isolation,
            writer: None,
            deadlock_victim: None,
            view: Mutex::new(None),
            finished: false,
        }
    }

    /// The error every call returns once the transaction was rolled back as a deadlock victim.
    fn check_alive(&self) -> Result<()> {
        match &self.deadlock_victim {
            Some((table, trx, why)) => Err(Error::Deadlock {
                table: table.clone(),
                trx: *trx,
                why: why.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The transaction's id, once it has written or locked a row (ids are given then, as
    /// InnoDB gives them at the first write).
    pub fn id(&self) -> Option<u64> {
        self.writer.as_ref().map(|w| w.id)
    }

    /// Its isolation level.
    pub fn isolation(&self) -> IsolationLevel {
        self.isolation
    }

    /// Its writer state, started now if it has none: an id (active from now on) and an empty
    /// set of row locks.
    fn writer(&mut self) -> Result<&mut Writer> {
        if self.writer.is_none() {
            let inner = &self.engine.inner;
            self.engine.check_writable()?;
            let id = inner.mvcc.begin()?;
            if let Some(view) = self.view.get_mut() {
                view.set_creator(id);
            }
            let mut locks = inner.locks.begin(id);
            // Before any row carries the id: what others wait on for its implicit locks.
            locks.lock_own_transaction();
            self.writer = Some(Writer {
                id,
                locks,
                log: None,
                tables: Vec::new(),
                written: 0,
                deleted: 0,
            });
        }
        self.writer
            .as_mut()
            .ok_or_else(|| Error::Unsupported("transaction state lost".to_owned()))
    }

    /// Takes the exclusive lock on `key` of `table`, waiting as long as the lock wait timeout
    /// allows. A deadlock rolls the transaction back before the error is returned.
    fn lock_row(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        let writer = self.writer()?;
        let got = writer
            .locks
            .lock_exclusive(u64::from(table.space_id()), key);
        self.lock_outcome(table, got).map(|_| ())
    }

    /// Waits until transaction `trx_id`, which changed a row this one wants, ends (its
    /// implicit lock on the row), as long as the lock wait timeout allows; a deadlock rolls
    /// this transaction back before the error is returned.
    fn wait_for_transaction(&mut self, table: &Table, trx_id: u64) -> Result<()> {
        let writer = self.writer()?;
        let got = writer.locks.wait_for_transaction(trx_id);
        if self.lock_outcome(table, got)? == Acquired::Now {
            // It held no lock: it ended meanwhile (the caller retries and sees so), or it is a
            // transaction that never takes one and is about to end (a rollback that failed
            // turns the engine read-only, which the retry reports). Waited out politely,
            // within the lock wait timeout.
            let inner = &self.engine.inner;
            let deadline = Instant::now() + inner.locks.wait_timeout();
            while inner.mvcc.trx.is_active(trx_id) {
                self.engine.check_writable()?;
                if Instant::now() >= deadline {
                    return Err(Error::LockWaitTimeout {
                        table: table.name().to_owned(),
                        waited: inner.locks.wait_timeout(),
                    });
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// Waits for whoever `blocked` says may change the row of `key` now: queues for the row
    /// lock (then held until the end), or waits for the transaction that changed the row.
    fn wait_out(&mut self, table: &Table, key: &[u8], blocked: Blocked) -> Result<()> {
        match blocked {
            Blocked::RowLock => self.lock_row(table, key),
            Blocked::ByTransaction(trx_id) => self.wait_for_transaction(table, trx_id),
        }
    }

    /// A lock request's result as the engine reports it: a timeout fails the request only; a
    /// deadlock rolls the transaction back first.
    fn lock_outcome(
        &mut self,
        table: &Table,
        got: std::result::Result<Acquired, LockError>,
    ) -> Result<Acquired> {
        match got {
            Ok(acquired) => Ok(acquired),
            Err(LockError::Timeout { waited }) => Err(Error::LockWaitTimeout {
                table: table.name().to_owned(),
                waited,
            }),
            Err(LockError::Deadlock { trx, why }) => {
                let rolled_back = self.roll_back_now();
                self.engine
                    .inner
                    .counters
                    .rollbacks
                    .fetch_add(1, Ordering::Relaxed);
                rolled_back?;
                self.deadlock_victim = Some((table.name().to_owned(), trx, why));
                self.check_alive().map(|()| Acquired::Now)
            }
        }
    }

    /// Locks `key`, then reads it (InnoDB's `SELECT … FOR UPDATE`): the value read cannot
    /// change under this transaction until it ends, so a read-modify-write through it loses
    /// no update of another transaction. It reads the newest committed version (or this
    /// transaction's own), not the transaction's read view: that is the version its write
    /// will replace.
    pub fn get_for_update(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        check_key(self.engine, table, key)?;
        let tree = table.tree_of(self.engine)?.clone();
        self.lock_row(table, key)?;
        let table_err = |e| Error::table(table.name(), e);
        loop {
            // The lock is held: nobody changes the row from now on. It may carry the change
            // of a transaction that wrote it without a lock before (an implicit lock): wait
            // for that one to end, then read again.
            let current = tree.get_stored_to_change(key).map_err(table_err)?;
            let me = self.id().unwrap_or(0);
            match current {
                Some(row)
                    if row.sys.trx_id != me
                        && self.engine.inner.mvcc.trx.is_active(row.sys.trx_id) =>
                {
                    self.wait_for_transaction(table, row.sys.trx_id)?;
                }
                Some(row) if !row.sys.deleted => {
                    return tree.read_stored(&row.value).map(Some).map_err(table_err)
                }
                _ => return Ok(None),
            }
        }
    }

    /// The read view for a read now: the transaction's own (repeatable read), or a new one
    /// (read committed). Either sees the transaction's own writes.
    fn view_for_read(&self) -> Arc<ReadView> {
        let mvcc = &self.engine.inner.mvcc;
        let creator = self.id().unwrap_or(0);
        match self.isolation {
            IsolationLevel::ReadCommitted => Arc::new(mvcc.trx.read_view(creator)),
            IsolationLevel::RepeatableRead => self
                .view
                .lock()
                .get_or_insert_with(|| Arc::new(mvcc.trx.read_view(creator)))
                .clone(),
        }
    }

    /// Reads `key` as the transaction sees it: its own writes, and the data committed as its
    /// isolation level says. Takes no lock.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        let tree = table.tree_of(self.engine)?;
        let view = self.view_for_read();
        self.engine
            .inner
            .counters
            .rows_read
            .fetch_add(1, Ordering::Relaxed);
        self.engine
            .inner
            .mvcc
            .read_in(table.name(), tree, &view, key)
    }

    /// Iterates over the rows of `table` in `range` as the transaction sees them (see
    /// [`get`](Self::get)): its own writes included, each row of a repeatable-read transaction
    /// as of its read view. Takes no lock.
    pub fn range<'r, R: RangeBounds<&'r [u8]>>(&self, table: &Table, range: R) -> Result<Range> {
        self.check_alive()?;
        let tree = table.tree_of(self.engine)?;
        Ok(Range::new(
            table.name().to_owned(),
            tree.clone(),
            tree.range(range),
            self.view_for_read(),
            self.engine.inner.mvcc.clone(),
        ))
    }

    /// Calls `f` with each row of `table` in `range` as the transaction sees it (its own
    /// writes included, as [`range`](Self::range)), ascending, until it returns
    /// [`ControlFlow::Break`]; rows are lent in place, as
    /// [`Engine::scan`](crate::Engine::scan) lends them (`f` must not call the engine).
    pub fn scan<'r, R: RangeBounds<&'r [u8]>>(
        &self,
        table: &Table,
        range: R,
        mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<()>,
    ) -> Result<()> {
        self.check_alive()?;
        let tree = table.tree_of(self.engine)?;
        self.engine.inner.mvcc.scan_in_view(
            table.name(),
            tree,
            &self.view_for_read(),
            crate::visit::bounds(&range),
            &mut f,
        )
    }

    /// Number of row writes made (puts and deletes that changed a row).
    pub fn len(&self) -> usize {
        self.writer.as_ref().map_or(0, |w| {
            usize::try_from(w.written + w.deleted).unwrap_or(usize::MAX)
        })
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Commits: every write becomes visible at once to readers that start from now on, and
    /// durable as the engine's [`Durability`](crate::Durability) says (with `SyncEachCommit`
    /// the commit is synced before this returns). The row locks are released before the wait
    /// for the sync (as InnoDB does; a transaction that then reads a released row and commits
    /// gets a later LSN, so no crash can keep its commit and lose the one it read from), and no
    /// engine-wide lock is held during it, so concurrent commits share one `fsync`.
    ///
    /// A table written to and dropped since makes the commit fail with [`Error::StaleTable`]
    /// after rolling the rest back.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        self.check_alive()?;
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        let inner = &self.engine.inner;
        let Some(log) = writer.log.take() else {
            // Only locked rows: nothing to commit.
            inner.mvcc.trx.end_rolled_back(writer.id);
            return Ok(());
        };
        if let Some(dropped) = writer
            .tables
            .iter()
            .find(|t| t.dropped.load(Ordering::Acquire))
        {
            let name = dropped.name.clone();
            roll_back(inner, writer.id, LogToRollBack::Live(log))?;
            inner.counters.rollbacks.fetch_add(1, Ordering::Relaxed);
            return Err(Error::StaleTable(name));
        }
        // One mtr (no unit, no engine-wide lock): the log into the history list, or discarded
        // when nothing will need it. Failing part-way it leaves the pages it latched
        // poisoned, so the engine turns read-only.
        inner.check_writable_for_lone_mtr(512)?;
        let (commit_end, to_history) = inner.mvcc.commit(writer.id, log).inspect_err(|err| {
            inner.poison(format!("a commit failed part-way: {err}"));
        })?;
        let counters = &inner.counters;
        counters
            .rows_written
            .fetch_add(writer.written, Ordering::Relaxed);
        counters
            .rows_deleted
            .fetch_add(writer.deleted, Ordering::Relaxed);
        counters.commits.fetch_add(1, Ordering::Relaxed);
        writer.locks.release_all();
        if to_history {
            inner.purge_worker.nudge();
        }
        if let Some(end) = commit_end {
            inner.wait_committed(end)?;
        }
        Ok(())
    }

    /// Takes every write back (from the undo log, newest first) and releases the row locks.
    /// A failure to roll back turns the engine read-only (the next open finishes the rollback)
    /// and is returned.
    pub fn rollback(mut self) -> Result<()> {
        self.finished = true;
        self.engine
            .inner
            .counters
            .rollbacks
            .fetch_add(1, Ordering::Relaxed);
        self.roll_back_now()
    }

    /// Rolls the writes back, then lets the locks go.
    fn roll_back_now(&mut self) -> Result<()> {
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        let inner = &self.engine.inner;
        let result = if let Some(log) = writer.log.take() {
            roll_back(inner, writer.id, LogToRollBack::Live(log)).map(|_| ())
        } else {
            inner.mvcc.trx.end_rolled_back(writer.id);
            Ok(())
        };
        writer.locks.release_all();
        result
    }
}

impl Transaction<'_> {
    /// Leaves the transaction as a crash would: its rows and its undo log stay as they are (the
    /// log active, so the next open rolls it back); only its memory — row locks, handles — is
    /// let go. For the fuzzing shapes, which build the files a crash leaves behind;
    /// `mem::forget` did the same but leaked the engine it borrowed from (LeakSanitizer under
    /// `cargo fuzz` reported the pool's frames).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn abandon_as_if_crashed(mut self) {
        self.finished = true;
        if let Some(mut writer) = self.writer.take() {
            writer.locks.release_all();
        }
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.engine
                .inner
                .counters
                .rollbacks
                .fetch_add(1, Ordering::Relaxed);
            if let Err(err) = self.roll_back_now() {
                tracing::error!(%err, "rolling back a dropped transaction failed");
            }
        }
    }
}

pub(crate) fn check_key(engine: &Engine, table: &Table, key: &[u8]) -> Result<()> {
    let max = barracuda_btree::max_key_len(engine.page_size());
    if key.len() > max {
        return Err(Error::KeyTooLong {
            table: table.name().to_owned(),
            len: key.len(),
            max,
        });
    }
    Ok(())
}
