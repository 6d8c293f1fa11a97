//! Write transactions: atomic batches with read-your-writes and row locks.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use barracuda_lock::{LockError, TrxLocks};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::table::{Table, TableInner};

/// Staged rows of one table: key → new value (`None` = delete).
type StagedRows = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// A batch of writes applied all together at [`commit`](Self::commit), or not at all.
///
/// Reads through the transaction see its own writes first. Until commit nothing is visible to
/// others. Commits are applied one batch at a time; a reader running while a batch is applied
/// may see part of it (there is no MVCC yet — it comes with undo logs). The batch's page changes
/// form one commit unit of the redo log: after a crash the batch is wholly present or wholly
/// absent, and no page holding part of it is written before the whole unit is in the log.
/// A row that fails after an earlier row of the batch was applied leaves the batch half applied
/// in memory with no undo to take it back: the engine turns read-only, writes nothing more, and
/// the next open recovers without the batch. A batch whose first row fails changed nothing and
/// the engine stays writable.
///
/// **Row locks.** [`put`](Self::put), [`delete`](Self::delete) and
/// [`get_for_update`](Self::get_for_update) take an exclusive lock on the row's key at once
/// (InnoDB's `SELECT … FOR UPDATE` / `UPDATE` record locks), held until the transaction
/// commits or rolls back; a row locked by another transaction makes the request wait, first
/// come first served. A wait longer than the lock wait timeout fails the request with
/// [`Error::LockWaitTimeout`] (the transaction stays usable); a wait that would close a cycle
/// of waiting transactions is a deadlock, and its victim, the lightest transaction of the
/// cycle, is rolled back with [`Error::Deadlock`]. Plain reads take no lock.
pub struct Transaction<'e> {
    engine: &'e Engine,
    /// Per table (keyed by name, holding its handle), key → new value (`None` = delete).
    writes: BTreeMap<String, (Arc<TableInner>, StagedRows)>,
    /// The row locks held, from the first locking call on.
    locks: Option<TrxLocks>,
    /// Set when the transaction was rolled back as a deadlock victim: (table, trx id, why).
    deadlock_victim: Option<(String, u64, String)>,
    finished: bool,
}

impl<'e> Transaction<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            writes: BTreeMap::new(),
            locks: None,
            deadlock_victim: None,
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

    /// The transaction's id, once it has locked a row (ids are given at the first lock, as
    /// InnoDB gives them at the first write).
    pub fn id(&self) -> Option<u64> {
        self.locks.as_ref().map(TrxLocks::id)
    }

    /// Takes the exclusive lock on `key` of `table`, waiting as long as the lock wait timeout
    /// allows. A deadlock rolls the transaction back before the error is returned.
    fn lock_row(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        let inner = &self.engine.inner;
        let locks = self.locks.get_or_insert_with(|| {
            inner
                .locks
                .begin(inner.next_trx_id.fetch_add(1, Ordering::Relaxed))
        });
        match locks.lock_exclusive(u64::from(table.space_id()), key) {
            Ok(_) => Ok(()),
            Err(LockError::Timeout { waited }) => Err(Error::LockWaitTimeout {
                table: table.name().to_owned(),
                waited,
            }),
            Err(LockError::Deadlock { trx, why }) => {
                locks.release_all();
                self.writes.clear();
                inner.counters.rollbacks.fetch_add(1, Ordering::Relaxed);
                let victim = (table.name().to_owned(), trx, why);
                self.deadlock_victim = Some(victim);
                self.check_alive()
            }
        }
    }

    fn table_writes(&mut self, table: &Table) -> Result<&mut StagedRows> {
        table.tree_of(self.engine)?;
        let entry = self
            .writes
            .entry(table.name().to_owned())
            .or_insert_with(|| (table.inner.clone(), BTreeMap::new()));
        if !Arc::ptr_eq(&entry.0, &table.inner) {
            return Err(Error::StaleTable(table.name().to_owned()));
        }
        Ok(&mut entry.1)
    }

    /// Locks `key` and stages `key → value`. Keys and values over the limits are refused now,
    /// not at commit.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_alive()?;
        check_key(self.engine, table, key)?;
        let (len, max) = (value.len() as u64, barracuda_btree::MAX_VALUE_LEN);
        if len > max {
            return Err(Error::ValueTooLong {
                table: table.name().to_owned(),
                len,
                max,
            });
        }
        self.table_writes(table)?;
        self.lock_row(table, key)?;
        self.table_writes(table)?
            .insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    /// Locks `key` and stages its deletion.
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        self.check_alive()?;
        check_key(self.engine, table, key)?;
        self.table_writes(table)?;
        self.lock_row(table, key)?;
        self.table_writes(table)?.insert(key.to_vec(), None);
        Ok(())
    }

    /// Locks `key`, then reads it (InnoDB's `SELECT … FOR UPDATE`): the value read cannot
    /// change under this transaction until it ends, so a read-modify-write through it loses
    /// no update of another transaction.
    pub fn get_for_update(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        check_key(self.engine, table, key)?;
        table.tree_of(self.engine)?;
        self.lock_row(table, key)?;
        self.get(table, key)
    }

    /// Reads `key`, seeing this transaction's own staged writes first. Takes no lock.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        if let Some((_, writes)) = self.writes.get(table.name()) {
            if let Some(staged) = writes.get(key) {
                return Ok(staged.clone());
            }
        }
        self.engine.get(table, key)
    }

    /// Number of staged writes.
    pub fn len(&self) -> usize {
        self.writes.values().map(|(_, w)| w.len()).sum()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies every staged write and logs them as one commit unit. On success all of them are
    /// visible, and durable as the engine's [`Durability`](crate::Durability) says: with
    /// `SyncEachCommit` the unit is synced before this returns. The engine's commit lock is
    /// released before the wait for the sync, so concurrent commits share one `fsync`.
    ///
    /// The row locks are released once the writes are applied, before the wait for the sync
    /// (as InnoDB does): a transaction that then reads a released row and commits gets a later
    /// LSN, so no crash can keep its commit and lose the one it read from.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        self.check_alive()?;
        // Dropped on every return below: that releases the locks.
        let mut locks = self.locks.take();
        let writes = std::mem::take(&mut self.writes);
        if writes.is_empty() {
            return Ok(());
        }
        let inner = &self.engine.inner;
        let commit_lsn = {
            let _commit = inner.commit_lock.lock();
            self.engine.check_writable()?;
            // Validate all handles before applying anything.
            for (name, (table, _)) in &writes {
                if table.dropped.load(Ordering::Acquire) {
                    return Err(Error::StaleTable(name.clone()));
                }
            }
            inner.make_log_room(redo_estimate(&writes))?;
            inner.log.begin_unit();
            let (written, deleted) = apply(inner, &writes)?;
            let end = inner.log.end_unit().map_err(|e| {
                let err = Error::from(e);
                inner.poison(format!("the redo log refused a commit: {err}"));
                err
            })?;
            inner
                .counters
                .rows_written
                .fetch_add(written, Ordering::Relaxed);
            inner
                .counters
                .rows_deleted
                .fetch_add(deleted, Ordering::Relaxed);
            inner.counters.commits.fetch_add(1, Ordering::Relaxed);
            end
        };
        if let Some(locks) = &mut locks {
            locks.release_all();
        }
        if let Some(lsn) = commit_lsn {
            inner.log.log().wait_for_commit(lsn).map_err(|e| {
                let err = Error::from(e);
                inner.poison(format!("the redo log failed at commit: {err}"));
                err
            })?;
        }
        Ok(())
    }

    /// Discards every staged write and releases the row locks.
    pub fn rollback(mut self) {
        self.finished = true;
        self.writes.clear();
        self.locks = None;
        self.engine
            .inner
            .counters
            .rollbacks
            .fetch_add(1, Ordering::Relaxed);
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
        }
    }
}

/// Applies the rows of a commit inside its open unit; returns (rows written, rows deleted).
///
/// On an error after a row was applied, the unit stays open on purpose: the engine is poisoned,
/// and the open unit keeps every page holding part of the batch from being written, while
/// recovery discards the unit's frames. On an error before any row was applied the unit is
/// closed (what it holds, if anything, is whole: pages allocated and freed again).
fn apply(
    inner: &crate::engine::EngineInner,
    writes: &BTreeMap<String, (Arc<TableInner>, StagedRows)>,
) -> Result<(u64, u64)> {
    let (mut written, mut deleted) = (0u64, 0u64);
    for (name, (table, rows)) in writes {
        for (key, value) in rows {
            let result = match value {
                Some(value) => table.tree.put(key, value).map(|_| written += 1),
                None => table.tree.delete(key).map(|_| deleted += 1),
            };
            if let Err(err) = result {
                let err = Error::table(name, err);
                if written + deleted > 0 {
                    inner.poison(format!("a commit failed part-way: {err}"));
                } else if let Err(log_err) = inner.log.end_unit() {
                    inner.poison(format!("the redo log refused a commit: {log_err}"));
                }
                return Err(err);
            }
        }
    }
    Ok((written, deleted))
}

/// An estimate of the redo a commit appends, to make room for it and to refuse up front a
/// commit that cannot fit: measured redo per row is about 1.15 × the row's bytes for
/// sequential keys and 2 × for random ones (splits included); this takes 1.25 × plus a per-row
/// allowance for headers. A commit that needs more than estimated and overflows the log fails
/// part-way (the engine turns read-only; recovery discards it).
fn redo_estimate(writes: &BTreeMap<String, (Arc<TableInner>, StagedRows)>) -> u64 {
    writes
        .values()
        .flat_map(|(_, rows)| rows.iter())
        .map(|(key, value)| {
            let bytes = (key.len() + value.as_ref().map_or(0, Vec::len)) as u64;
            bytes + bytes / 4 + 64
        })
        .sum()
}

fn check_key(engine: &Engine, table: &Table, key: &[u8]) -> Result<()> {
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
