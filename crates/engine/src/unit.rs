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
    /// read-only, waits for the open unit to end if it already has many mtrs, then makes room
    /// in the log for about `redo_bytes`.
    ///
    /// A lone mtr appended while another thread's unit is open joins it, and the pages it
    /// changes cannot be written until the unit ends. In a small pool, threads committing
    /// small transactions around one long unit (a split that waits for frames, a purge batch)
    /// could fill every frame with such pages, and the unit would fail for want of one
    /// (`TransactionTooLarge`; the SIGKILL test found it with 32 frames). So a lone mtr joins
    /// a unit only while it has fewer than [`EngineInner::lone_join_limit`] mtrs — a sixteenth
    /// of the pool's frames, each mtr changing a few pages — and otherwise waits for its end
    /// (it holds no latch, and units never wait for row locks, so the wait cannot close a
    /// cycle). In a pool of thousands of frames the limit is never reached.
    pub(crate) fn check_writable_for_lone_mtr(&self, redo_bytes: u64) -> Result<()> {
        if let Some(why) = self.read_only_reason() {
            return Err(Error::ReadOnly(why));
        }
        if self.lone_mtr_must_wait() {
            drop(self.unit_lock.lock());
        }
        self.make_log_room(redo_bytes)
    }

    /// Whether a lone mtr must wait for the open unit to end before it starts (see
    /// [`check_writable_for_lone_mtr`](Self::check_writable_for_lone_mtr)).
    fn lone_mtr_must_wait(&self) -> bool {
        self.log.unit_mtrs() >= self.lone_join_limit
    }

    /// Waits until a commit whose last mini-transaction ended at `end` is as durable as the
    /// engine's durability promises (nothing to wait for with `Durability::None`). The mtr may
    /// have joined another thread's open unit: it is recoverable once that unit closes, and
    /// durable once the log is, up to the unit's end. A log that fails turns the engine
    /// read-only.
    pub(crate) fn wait_committed(&self, end: Lsn) -> Result<()> {
        let log = self.log.log();
        if log.durability() == barracuda_redo::Durability::None {
            return Ok(());
        }
        let Some(lsn) = self.log.wait_recoverable(end) else {
            return Err(Error::ReadOnly(self.read_only_reason().unwrap_or_else(
                || "a change failed part-way while this commit waited for it".to_owned(),
            )));
        };
        log.wait_for_commit(lsn).map_err(|e| {
            let err = Error::from(e);
            self.poison(format!("the redo log failed at commit: {err}"));
            err
        })
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

#[cfg(test)]
mod tests {
    use barracuda_page::PageSize;

    use crate::{Engine, EngineOptions};

    /// In a pool of 32 frames a lone mtr joins an open unit while the unit has fewer than two
    /// mtrs, then must wait for its end; with no unit open it never waits.
    #[test]
    fn lone_mtrs_stop_joining_a_unit_that_holds_many_pages() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = Engine::open(
            tmp.path(),
            EngineOptions::default()
                .page_size(PageSize::K4)
                .buffer_pool_bytes(32 * 4096)
                .background_purge(false),
        )
        .expect("open");
        let inner = &db.inner;
        assert_eq!(inner.lone_join_limit, 2);
        assert!(!inner.lone_mtr_must_wait(), "no unit open");
        let mtrs_in_unit = std::cell::Cell::new(Vec::new());
        let ((), _) = inner
            .in_unit(0, super::OnFailure::Close, || {
                let mut seen = vec![inner.lone_mtr_must_wait()];
                // Each raise of the id mark is one mtr appended to the unit.
                for to in [1_000, 2_000, 3_000] {
                    inner.mvcc.undo.raise_max_trx_id(to).expect("raise");
                    seen.push(inner.lone_mtr_must_wait());
                }
                mtrs_in_unit.set(seen);
                Ok(())
            })
            .expect("unit");
        assert_eq!(mtrs_in_unit.take(), vec![false, false, true, true]);
        assert!(!inner.lone_mtr_must_wait(), "the unit ended");
    }
}
