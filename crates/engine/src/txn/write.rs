//! A transaction's writes: `put`, `delete` and `put_many` — write the rows in place with their
//! undo records, a leaf's run or a row at a time, waiting wherever a row is another active
//! transaction's (see `mvcc.rs` on implicit locks).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use barracuda_btree::{BTree, InPlaceOutcome};
use barracuda_lock::Acquired;

use super::{check_key, Transaction};
use crate::error::{Error, Result};
use crate::mvcc::{Applied, Blocked};
use crate::table::Table;
use crate::unit::OnFailure;

impl Transaction<'_> {
    /// Writes `key → value` in place, its previous version kept in the transaction's undo
    /// log; waits first while another active transaction has changed or locked the row. The
    /// row is this transaction's until it ends (the row carries its id: an implicit lock, as
    /// an InnoDB insert takes). Keys and values over the limits are refused.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        check_value(table, value)?;
        self.write_row(table, key, Some(value))
    }

    /// Locks `key` and delete-marks its row (deleting an absent key is not an error; the key
    /// stays locked, so no other transaction puts it until this one ends).
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        self.write_row(table, key, None)
    }

    fn write_row(&mut self, table: &Table, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.check_alive()?;
        check_key(self.engine, table, key)?;
        let tree = table.tree_of(self.engine)?.clone();
        if value.is_none() {
            self.lock_row(table, key)?;
        }
        while let Some(blocked) = self.write_claimed_row(table, &tree, key, value)? {
            self.wait_out(table, key, blocked)?;
        }
        Ok(())
    }

    /// Puts every row of `rows` as that many [`put`](Self::put) calls would, a later row of a
    /// key winning over an earlier one — and faster: the rows are written in key order, as
    /// many rows as a leaf takes (up to 128) in one mini-transaction with their undo records,
    /// so one descent, one leaf latch and one redo append serve them all (RocksDB's
    /// `WriteBatch` is the nearest peer). A row its leaf cannot take in place (a split, an
    /// overflow chain) is written as `put` writes it; a row another transaction has changed
    /// or locked is waited for, then written.
    ///
    /// Every key and value is checked before anything is written. On an error after that,
    /// the rows before the failing one may have been written: they are the transaction's,
    /// and a [`rollback`](Self::rollback) undoes them as any other.
    pub fn put_many<'r, I>(&mut self, table: &Table, rows: I) -> Result<()>
    where
        I: IntoIterator<Item = (&'r [u8], &'r [u8])>,
    {
        self.check_alive()?;
        let mut rows: Vec<(&[u8], &[u8])> = rows.into_iter().collect();
        for &(key, value) in &rows {
            check_value(table, value)?;
            check_key(self.engine, table, key)?;
        }
        // Reversed, then sorted stably: the first row of each key is the last one given.
        rows.reverse();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        rows.dedup_by(|later, first| later.0 == first.0);
        let tree = table.tree_of(self.engine)?.clone();
        // The redo estimates of the rows before each one: a run's estimate (the rows a leaf
        // may take, up to `MAX_RUN_ROWS`) is then a difference. Summed per run, random keys
        // (a run of about one row each) summed 128 rows a row.
        let mut redo_before = Vec::with_capacity(rows.len() + 1);
        let mut total = 0;
        redo_before.push(total);
        for &(key, value) in &rows {
            total += redo_estimate(key, Some(value)) - REDO_ESTIMATE_SLACK;
            redo_before.push(total);
        }
        let mut at = 0;
        while let Some(rest) = rows.get(at..).filter(|r| !r.is_empty()) {
            let end = (at + barracuda_btree::MAX_RUN_ROWS).min(rows.len());
            let redo = match (redo_before.get(end), redo_before.get(at)) {
                (Some(end), Some(start)) => end - start,
                _ => total,
            };
            let (written, blocked) = self.write_claimed_run(table, &tree, rest, redo)?;
            at += written;
            let Some(&(key, value)) = rest.get(written) else {
                break;
            };
            if let Some(blocked) = blocked {
                self.wait_out(table, key, blocked)?;
            } else if written == 0 {
                match self.write_claimed_row(table, &tree, key, Some(value))? {
                    Some(blocked) => self.wait_out(table, key, blocked)?,
                    None => at += 1,
                }
            }
        }
        Ok(())
    }

    /// Writes the rows of `run` (keys ascending) that the first one's leaf takes in place, in
    /// one mini-transaction; returns how many (0: none, the first row takes the general path)
    /// and, when the run stopped at a row another transaction may change, why. `redo` is the
    /// rows' redo estimate beyond [`REDO_ESTIMATE_SLACK`], for the first `MAX_RUN_ROWS`.
    fn write_claimed_run(
        &mut self,
        table: &Table,
        tree: &BTree,
        run: &[(&[u8], &[u8])],
        redo: u64,
    ) -> Result<(usize, Option<Blocked>)> {
        let inner = &self.engine.inner;
        self.note_table_and_start_log(table)?;
        inner.check_writable_for_lone_mtr(redo + REDO_ESTIMATE_SLACK)?;
        let writer = self.writer()?;
        let Some(log) = &mut writer.log else {
            return Ok((0, None));
        };
        let (written, blocked) = inner
            .mvcc
            .write_run_in_place(tree, log, &writer.locks, writer.id, run)
            .map_err(|e| Error::table(table.name(), e))?;
        writer.count_written(written);
        Ok((written, blocked))
    }

    /// Notes that the transaction writes `table` and starts its undo log if it has none.
    fn note_table_and_start_log(&mut self, table: &Table) -> Result<()> {
        let inner = &self.engine.inner;
        let writer = self.writer()?;
        if !writer.tables.iter().any(|t| Arc::ptr_eq(t, &table.inner)) {
            writer.tables.push(table.inner.clone());
        }
        if writer.log.is_none() {
            // The first write starts the undo log, named by a slot of the transaction system
            // page: in a header page purge left in the cache (one mtr), or else in a page
            // allocated and formatted in a unit of its own (several mtrs that must not be split
            // by a crash, or the page would leak).
            inner.check_writable_for_lone_mtr(4096)?;
            writer.log = match inner.mvcc.start_cached_log(writer.id)? {
                Some(log) => Some(log),
                None => Some(
                    inner
                        .in_unit(4096, OnFailure::Close, || inner.mvcc.start_log(writer.id))?
                        .0,
                ),
            };
        }
        Ok(())
    }

    /// Writes `key → value` (`None`: delete-marks it): in place when the leaf takes it, else
    /// in a redo unit of its own (splits, overflow chains). Returns, having changed nothing,
    /// who may change the row now when that is another transaction.
    fn write_claimed_row(
        &mut self,
        table: &Table,
        tree: &BTree,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<Option<Blocked>> {
        self.note_table_and_start_log(table)?;
        let engine = self.engine;
        let inner = &engine.inner;
        let table_err = |e| Error::table(table.name(), e);
        let writer = self.writer()?;
        if let Some(log) = &mut writer.log {
            // The common case: no unit, no engine-wide lock (see `Mvcc::write_in_place`).
            inner.check_writable_for_lone_mtr(redo_estimate(key, value))?;
            let (outcome, blocked) = inner
                .mvcc
                .write_in_place(tree, log, &writer.locks, writer.id, key, value)
                .map_err(table_err)?;
            if blocked.is_some() {
                return Ok(blocked);
            }
            match outcome {
                InPlaceOutcome::Done => {
                    writer.count(value.is_some());
                    return Ok(None);
                }
                InPlaceOutcome::Unchanged => return Ok(None),
                InPlaceOutcome::NotHere => {}
            }
        }
        // The general path reads the row, then changes it, in two steps: between them only the
        // row's lock (or the row being this transaction's already) keeps others off it.
        let space = u64::from(table.space_id());
        let locked = writer.locks.try_lock_exclusive(space, key);
        if locked.is_none() {
            // Another transaction holds the lock. If the row is this one's already, the holder
            // locked it after this transaction changed it and waits for this one: go on.
            let current = tree.get_stored_to_change(key).map_err(table_err)?;
            if current.is_none_or(|row| row.sys.trx_id != writer.id) {
                return Ok(Some(Blocked::RowLock));
            }
        }
        let applied = inner.in_unit(redo_estimate(key, value), OnFailure::Close, || {
            if table.inner.dropped.load(Ordering::Acquire) {
                return Err(Error::StaleTable(table.name().to_owned()));
            }
            let log = match &mut writer.log {
                Some(log) => log,
                None => writer.log.insert(inner.mvcc.start_log(writer.id)?),
            };
            inner
                .mvcc
                .apply_row(tree, log, writer.id, key, value)
                .map_err(table_err)
        });
        if value.is_some() && locked == Some(Acquired::Now) {
            // The lock only bridged the read and the change: the row now carries this
            // transaction's id (its implicit lock), or was left as it was. Held on, it would
            // send every later put of the transaction through the lock table (an explicit lock
            // held anywhere is what makes writers look there).
            writer.locks.unlock(space, key);
        }
        let (applied, _) = applied?;
        match applied {
            Applied::Changed => writer.count(value.is_some()),
            Applied::Unchanged => {}
            Applied::Blocked(blocked) => return Ok(Some(blocked)),
        }
        Ok(None)
    }
}

/// An estimate of the redo one row write appends, to make room for it and to refuse a row the
/// log cannot hold: the row about 1.25 × over (splits included, measured ≤ 2 × for random
/// keys), the version it replaces in its undo record (at most a page's share of inline bytes,
/// or a reference), and framing.
fn redo_estimate(key: &[u8], value: Option<&[u8]>) -> u64 {
    let bytes = (key.len() + value.map_or(0, <[u8]>::len)) as u64;
    bytes + bytes / 4 + 2 * key.len() as u64 + REDO_ESTIMATE_SLACK
}

/// The part of [`redo_estimate`] that does not grow with the row (an mtr's framing, a split's
/// pages): counted once for a run of rows.
const REDO_ESTIMATE_SLACK: u64 = 4096;

pub(crate) fn check_value(table: &Table, value: &[u8]) -> Result<()> {
    let (len, max) = (value.len() as u64, barracuda_btree::MAX_VALUE_LEN);
    if len > max {
        return Err(Error::ValueTooLong {
            table: table.name().to_owned(),
            len,
            max,
        });
    }
    Ok(())
}
