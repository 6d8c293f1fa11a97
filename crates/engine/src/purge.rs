//! The purge thread: removes what committed transactions left behind once no read view can
//! need it (delete-marked rows, replaced off-page values, undo logs), oldest log first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::engine::EngineInner;
use crate::error::{Error, Result};
use crate::unit::OnFailure;

/// How often a busy purge thread looks for work (commits also wake it).
const TICK: Duration = Duration::from_millis(20);
/// The longest an idle purge thread sleeps: each look that finds nothing to purge doubles its
/// sleep from [`TICK`] up to this, and a wake-up or a purged log brings it back to `TICK`. On
/// an engine that only reads, a 20 ms tick was 50 wake-ups a second, each taking a core from
/// a reader on a small machine.
const MAX_IDLE_SLEEP: Duration = Duration::from_secs(1);
/// Logs purged per wake-up at most.
const BATCH: usize = 256;
/// Logs purged inside one commit unit at most; fewer in a small pool (see [`logs_per_unit`]).
const LOGS_PER_UNIT: usize = 16;

/// Logs per unit for a pool of `frames`: a unit's pages stay in the pool until it ends, and a
/// log's purge touches a few leaves and undo pages, so one log per 256 frames.
fn logs_per_unit(frames: usize) -> usize {
    (frames / 256).clamp(1, LOGS_PER_UNIT)
}

/// Commits between two wake-ups of the purge thread (besides its tick): waking it at every
/// commit cost a futex wake-up and a context switch per commit — a quarter of the CPU time of
/// two threads committing one-row transactions (perf).
const NUDGE_EVERY: u64 = 64;

/// The purge thread's stop flag and wake-up.
#[derive(Default)]
pub(crate) struct PurgeWorker {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Commits since open, for [`nudge`](Self::nudge).
    commits: AtomicU64,
}

impl PurgeWorker {
    /// Counts a commit (which added a log to the history list) and wakes the thread every
    /// [`NUDGE_EVERY`] of them.
    pub(crate) fn nudge(&self) {
        if self.commits.fetch_add(1, Ordering::Relaxed) % NUDGE_EVERY == NUDGE_EVERY - 1 {
            self.wake.notify_one();
        }
    }

    /// Stops the thread and waits for it (idempotent). Not from the purge thread itself.
    pub(crate) fn stop(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
        if let Some(handle) = self.thread.lock().take() {
            if handle.join().is_err() {
                tracing::error!("the purge thread panicked");
            }
        }
    }
}

/// Starts the purge thread of `engine`.
pub(crate) fn spawn(engine: &Arc<EngineInner>) -> Result<()> {
    let weak: Weak<EngineInner> = Arc::downgrade(engine);
    let handle = std::thread::Builder::new()
        .name("barracuda-purge".into())
        .spawn(move || run(&weak))
        .map_err(|e| Error::fs("purge thread", e))?;
    *engine.purge_worker.thread.lock() = Some(handle);
    Ok(())
}

fn run(weak: &Weak<EngineInner>) {
    let mut more = false;
    let mut sleep = TICK;
    loop {
        {
            let Some(engine) = weak.upgrade() else {
                return;
            };
            let worker = &engine.purge_worker;
            let mut stop = worker.stop.lock();
            if *stop {
                return;
            }
            // A full batch may have left more: go on at once.
            if !more && !worker.wake.wait_for(&mut stop, sleep).timed_out() {
                sleep = TICK;
            }
            if *stop {
                return;
            }
        }
        let Some(engine) = weak.upgrade() else {
            return;
        };
        more = match purge_batch(&engine) {
            Ok(purged) => {
                sleep = if purged == 0 {
                    (sleep * 2).min(MAX_IDLE_SLEEP)
                } else {
                    TICK
                };
                purged >= BATCH
            }
            Err(err) => {
                tracing::error!(%err, "purge failed");
                false
            }
        };
    }
}

/// Purges up to [`BATCH`] logs, up to [`LOGS_PER_UNIT`] inside each commit unit (under the unit
/// lock, which writers whose change needs a unit take too: one acquisition for many logs keeps
/// purge from competing with them for it at every log) and removed from the history list
/// together (committers take the transaction system page at every commit: purge taking it
/// once per log made two one-row writers 1.07x one, once per 16 logs about 1.5x). A crash in the middle of a unit leaves its logs
/// whole in the history list, to be purged again. Returns how many were purged.
pub(crate) fn purge_batch(engine: &EngineInner) -> Result<usize> {
    let mut purged = 0;
    while purged < BATCH {
        let trees: HashMap<u32, barracuda_btree::BTree> = engine
            .tables
            .read()
            .values()
            .map(|t| (t.tree.space(), t.tree.clone()))
            .collect();
        let per_unit = logs_per_unit(engine.pool.capacity_pages());
        // About what a log of a few rows logs when purged: its rows removed, its pages freed.
        let redo = per_unit as u64 * 16 * 1024;
        let unit = engine.in_unit(redo, OnFailure::Poison, || {
            engine
                .mvcc
                .purge_logs(&|space| trees.get(&space).cloned(), per_unit)
                .map_err(|err| Error::table("(purge)", err))
        });
        let n = match unit {
            Ok((n, _)) => n,
            // A unit that failed part-way made the engine read-only: nothing more to do.
            Err(Error::ReadOnly(_)) => return Ok(purged),
            Err(err) => return Err(err),
        };
        purged += n;
        if n < per_unit {
            break;
        }
    }
    Ok(purged)
}
