//! The purge thread: removes what committed transactions left behind once no read view can
//! need it (delete-marked rows, replaced off-page values, undo logs), oldest log first.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::engine::EngineInner;
use crate::error::{Error, Result};

/// How often an idle purge thread looks for work (commits also wake it).
const TICK: Duration = Duration::from_millis(20);
/// Logs purged per wake-up before the thread yields the commit lock to committers for good.
const BATCH: usize = 64;

/// The purge thread's stop flag and wake-up.
#[derive(Default)]
pub(crate) struct PurgeWorker {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PurgeWorker {
    /// Wakes the thread (after a commit added a log to the history list).
    pub(crate) fn nudge(&self) {
        self.wake.notify_one();
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
            worker.wake.wait_for(&mut stop, TICK);
            if *stop {
                return;
            }
        }
        let Some(engine) = weak.upgrade() else {
            return;
        };
        if let Err(err) = purge_batch(&engine) {
            tracing::error!(%err, "purge failed");
        }
    }
}

/// Purges up to [`BATCH`] logs, each inside its own commit unit under the commit lock: a crash
/// in the middle of one leaves it whole in the history list, to be purged again. Returns how
/// many were purged.
pub(crate) fn purge_batch(engine: &EngineInner) -> Result<usize> {
    let mut purged = 0;
    while purged < BATCH {
        let _commit = engine.unit_lock.lock();
        // Checked under the commit lock, as commits do: a commit that failed part-way left its
        // unit open and the engine read-only, and nothing may be appended after it.
        if engine.read_only_reason().is_some() {
            return Ok(purged);
        }
        let trees: HashMap<u32, barracuda_btree::BTree> = engine
            .tables
            .read()
            .values()
            .map(|t| (t.tree.space(), t.tree.clone()))
            .collect();
        engine.log.begin_unit();
        match engine.mvcc.purge_one(&|space| trees.get(&space).cloned()) {
            Ok(done) => {
                engine.log.end_unit().map_err(|e| {
                    let err = Error::from(e);
                    engine.poison(format!("the redo log refused a purge: {err}"));
                    err
                })?;
                if !done {
                    return Ok(purged);
                }
                purged += 1;
            }
            Err(err) => {
                // Part of the log may be purged in memory: the unit stays open so none of it
                // reaches disk, and the engine stops writing (recovery purges it again).
                let err = Error::table("(purge)", err);
                engine.poison(format!("purge failed part-way: {err}"));
                return Err(err);
            }
        }
    }
    Ok(purged)
}
