//! Redo commit units: the changes that must reach disk together or not at all.
//!
//! A change made of several mini-transactions — a row write that splits a page or needs a new
//! undo page, an undo log started in a newly allocated page, a step of a rollback, a step of
//! purge — runs as one unit ([`EngineInner::in_unit`]): the redo log applies a unit whole or not
//! at all after a crash, and no page holding part of an open unit is written. Units do not
//! interleave in the log, so one runs at a time, under the engine's unit lock. A change that is
//! one mini-transaction (most row writes, every commit, a log started in a cached page) needs no
//! unit and takes no engine-wide lock: it is atomic by itself, and if it is appended while
//! another thread's unit is open it becomes part of that unit (a commit then waits for the
//! unit's end before it is durable: `RedoSink::wait_recoverable`). Transactions are atomic
//! across units and mtrs through their undo logs (a crash rolls back every transaction that had
//! not committed).

use barracuda_page::Lsn;

use crate::engine::EngineInner;
use crate::error::{Error, Result};

/// What a failed change leaves behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnFailure {
    /// The change failed before changing anything that matters (a B-tree operation fails
    /// before its first change; an undo record it may have appended is ignored by rollback and
    /// purge, since no row points to it): the unit is closed and the engine stays writable.
    Close,
    /// The change may be half done in memory: the unit stays open, so none of its pages is
    /// written, and the engine turns read-only; the next open recovers without it.
    Poison,
}

impl EngineInner {
    /// Before a lone mini-transaction (no unit, no unit lock): fails if the engine turned
    /// read-only, then makes room in the log for about `redo_bytes`.
    pub(crate) fn check_writable_for_lone_mtr(&self, redo_bytes: u64) -> Result<()> {
        if let Some(why) = self.read_only_reason() {
            return Err(Error::ReadOnly(why));
        }
        self.make_log_room(redo_bytes)
    }

    /// Runs `change` as one redo commit unit under the unit lock, after making room in the log
    /// for about `redo_bytes`. Returns its result and the LSN a commit must wait for (`None`
    /// when the unit logged nothing).
    pub(crate) fn in_unit<T>(
        &self,
        redo_bytes: u64,
        on_failure: OnFailure,
        change: impl FnOnce() -> Result<T>,
    ) -> Result<(T, Option<Lsn>)> {
        let _unit = self.unit_lock.lock();
        // Checked under the lock: a unit that failed part-way left the engine read-only, and
        // nothing may be appended after it.
        if let Some(why) = self.read_only_reason() {
            return Err(Error::ReadOnly(why));
        }
        self.make_log_room(redo_bytes)?;
        self.log.begin_unit();
        match change() {
            Ok(value) => {
                let end = self.log.end_unit().map_err(|e| {
                    let err = Error::from(e);
                    self.poison(format!("the redo log refused a change: {err}"));
                    err
                })?;
                Ok((value, end))
            }
            Err(err) => {
                match on_failure {
                    OnFailure::Close => {
                        if let Err(log_err) = self.log.end_unit() {
                            self.poison(format!("the redo log refused a change: {log_err}"));
                        }
                    }
                    OnFailure::Poison => self.poison(format!("a change failed part-way: {err}")),
                }
                Err(err)
            }
        }
    }
}
