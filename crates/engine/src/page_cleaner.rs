//! The page cleaner (InnoDB: `buf_flush_page_cleaner_coordinator`) and the log's free-space
//! check at commit (InnoDB: `log_free_check`).
//!
//! Once a second the cleaner measures the redo and the flush list, asks the flushing controller
//! (a pure function, `barracuda_redo::flushing`) how many pages to write in the next second,
//! writes them oldest first, and moves the checkpoint (a fuzzy checkpoint: no page is written
//! for it). When the oldest dirty page falls behind the log's async point it does not wait for
//! the next second. A committer that finds the age past the sync point flushes and checkpoints
//! itself before it appends anything — counted and timed as a synchronous flush wait, which
//! adaptive flushing exists to avoid.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use barracuda_page::Lsn;
use barracuda_redo::flushing::{
    FlushController, FlushListAges, FlushMetrics, FlushPoints, FlushSettings, FlushState,
    InnoDbController, PiController, PiSettings,
};

use crate::engine::EngineInner;
use crate::error::Result;

/// How often the cleaner runs when nothing is urgent (InnoDB: once a second).
const PERIOD: Duration = Duration::from_secs(1);
/// How often it runs while the age is past the async point.
const URGENT_PERIOD: Duration = Duration::from_millis(50);
/// Pages written per call of the pool while flushing (so that a stop request or a checkpoint
/// is not held up behind one huge batch).
const CHUNK: usize = 128;

/// Which controller decides how many pages the cleaner writes per second; switchable at run time
/// with [`Engine::set_flush_controller`](crate::Engine::set_flush_controller).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushControllerKind {
    /// InnoDB's adaptive flushing, formula for formula (`af_get_pct_for_dirty`,
    /// `af_get_pct_for_lsn`, `page_cleaner_flush_pages_recommendation`). Default.
    #[default]
    InnoDb,
    /// A proportional-integral controller of ours that holds the redo age at a set point.
    Pi,
}

/// The page cleaner's counters and its controller's last metrics, for
/// [`EngineStatus::flushing`](crate::EngineStatus).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushStatus {
    /// The controller in force.
    pub controller: FlushControllerKind,
    /// The controller's last metrics (InnoDB's `INNODB_METRICS` names:
    /// `buffer_flush_n_to_flush_requested`, `buffer_flush_avg_page_rate`,
    /// `buffer_flush_lsn_avg_rate`, …).
    pub metrics: FlushMetrics,
    /// Pages the cleaner wrote because the controller asked for them
    /// (`buffer_flush_adaptive_total_pages`).
    pub buffer_flush_adaptive_total_pages: u64,
    /// Commits that found the redo age past the sync point and flushed pages themselves.
    pub sync_flush_waits: u64,
    /// Time those commits spent flushing, in microseconds.
    pub sync_flush_wait_us: u64,
    /// Pages written by those commits.
    pub sync_flush_pages: u64,
    /// The log's flush points (async/sync ages, capacity) in LSN bytes.
    pub points: FlushPoints,
}

/// What the cleaner, the committers and `status()` share.
pub(crate) struct Flushing {
    pub(crate) points: FlushPoints,
    settings: Mutex<FlushSettings>,
    controller: Mutex<FlushControllerKind>,
    metrics: Mutex<FlushMetrics>,
    adaptive_pages: AtomicU64,
    sync_waits: AtomicU64,
    sync_wait_us: AtomicU64,
    sync_pages: AtomicU64,
    /// Serialises committers' synchronous flushes (one flushes, the others re-check after).
    sync_flush: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Flushing {
    pub(crate) fn new(points: FlushPoints, settings: FlushSettings) -> Self {
        Self {
            points,
            settings: Mutex::new(settings),
            controller: Mutex::new(FlushControllerKind::default()),
            metrics: Mutex::new(FlushMetrics::default()),
            adaptive_pages: AtomicU64::new(0),
            sync_waits: AtomicU64::new(0),
            sync_wait_us: AtomicU64::new(0),
            sync_pages: AtomicU64::new(0),
            sync_flush: Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    pub(crate) fn set_settings(&self, settings: FlushSettings) {
        *self.settings.lock() = settings;
    }

    pub(crate) fn settings(&self) -> FlushSettings {
        self.settings.lock().clone()
    }

    pub(crate) fn set_controller(&self, kind: FlushControllerKind) {
        *self.controller.lock() = kind;
    }

    pub(crate) fn status(&self) -> FlushStatus {
        FlushStatus {
            controller: *self.controller.lock(),
            metrics: *self.metrics.lock(),
            buffer_flush_adaptive_total_pages: self.adaptive_pages.load(Ordering::Relaxed),
            sync_flush_waits: self.sync_waits.load(Ordering::Relaxed),
            sync_flush_wait_us: self.sync_wait_us.load(Ordering::Relaxed),
            sync_flush_pages: self.sync_pages.load(Ordering::Relaxed),
            points: self.points,
        }
    }

    /// Asks the cleaner thread to exit at its next wake-up, and wakes it.
    pub(crate) fn request_stop(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
    }

    /// Sleeps up to `period`; `true` when asked to stop.
    fn sleep(&self, period: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            // A periodic wait is the point here; a stop request ends it early.
            let _ = self.wake.wait_for(&mut stop, period);
        }
        *stop
    }
}

/// Starts the page cleaner thread of `engine`. It holds the engine only weakly, between rounds.
pub(crate) fn spawn(engine: &Arc<EngineInner>) -> Result<JoinHandle<()>> {
    let weak: Weak<EngineInner> = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name("barracuda-page-cleaner".into())
        .spawn(move || run(&weak))
        .map_err(|e| crate::error::Error::fs("page cleaner thread", e))
}

fn run(weak: &Weak<EngineInner>) {
    let mut innodb = InnoDbController::new();
    let mut pi = PiController::new(PiSettings::default());
    let mut last = Instant::now();
    let mut woke = last;
    let mut flushed_since = 0u64;
    let mut period = PERIOD;
    loop {
        let Some(flushing) = weak.upgrade().map(|e| e.flushing.clone()) else {
            return;
        };
        if flushing.sleep(sleep_before_next_round(woke.elapsed(), period)) {
            return;
        }
        woke = Instant::now();
        let Some(engine) = weak.upgrade() else {
            return;
        };
        if engine.read_only_reason().is_some() {
            continue;
        }
        let elapsed = last.elapsed();
        last = Instant::now();
        let controller: &mut dyn FlushController = match *engine.flushing.controller.lock() {
            FlushControllerKind::InnoDb => &mut innodb,
            FlushControllerKind::Pi => &mut pi,
        };
        match engine.clean_once(controller, elapsed, flushed_since) {
            Ok((written, urgent)) => {
                flushed_since = written;
                period = if urgent { URGENT_PERIOD } else { PERIOD };
            }
            Err(err) => {
                tracing::warn!(%err, "page cleaner round failed");
                flushed_since = 0;
                period = PERIOD;
            }
        }
    }
}

/// How long the cleaner sleeps before its next round, `since_round_start` after the previous
/// one began: the rest of `period`, nothing if the round took longer. The controller's request
/// is pages per second, so a round's own duration must count toward its period — sleeping a
/// whole period after each round delivered `request / (1 s + round time)` pages per second,
/// which fell behind the redo whenever rounds were slow (seen: rounds of 0.3–1 s under load,
/// and the redo age reaching the sync point with the controller's request unmet).
// InnoDB: pc_sleep_if_needed (buf0flu.cc), next_loop_time = round start + 1000 ms
fn sleep_before_next_round(since_round_start: Duration, period: Duration) -> Duration {
    period.saturating_sub(since_round_start)
}

/// The flush list seen through the pool, for the controller's LSN-target estimate.
struct PoolAges<'a>(&'a EngineInner);

impl FlushListAges for PoolAges<'_> {
    fn count_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64 {
        self.0.pool.dirty_pages_oldest_at_most(lsn, limit)
    }
}

impl EngineInner {
    /// One cleaner round: ask the controller, write what it asks (oldest first), checkpoint.
    /// Returns the pages written and whether the age is still past the async point.
    fn clean_once(
        &self,
        controller: &mut dyn FlushController,
        elapsed: Duration,
        flushed_since: u64,
    ) -> Result<(u64, bool)> {
        let points = self.flushing.points;
        let settings = self.flushing.settings();
        let stats = self.pool.stats();
        let state = FlushState {
            current_lsn: self.log.log().current_lsn(),
            oldest_modification: self.pool.oldest_modification(),
            points,
            dirty_pages: stats.dirty_pages as u64,
            pool_pages: stats.capacity_pages as u64,
            pages_flushed: flushed_since,
            elapsed,
            flush_list: &PoolAges(self),
        };
        let request = controller.recommend(&state, &settings);
        *self.flushing.metrics.lock() = request.metrics;
        let limit = request.lsn_limit.unwrap_or(Lsn::MAX);
        let written = self.flush_oldest(request.pages, limit)?;
        self.flushing
            .adaptive_pages
            .fetch_add(written, Ordering::Relaxed);
        self.fuzzy_checkpoint()?;
        let age = self
            .log
            .log()
            .current_lsn()
            .saturating_sub(self.pool.oldest_modification().unwrap_or(Lsn::MAX));
        Ok((written, age >= points.max_modified_age_async))
    }

    /// Writes up to `pages` pages from the oldest end of the flush list, stopping at the first
    /// whose oldest modification is at or above `limit`, or when a batch writes nothing (the
    /// rest are held by an open commit unit or being written by others).
    fn flush_oldest(&self, pages: u64, limit: Lsn) -> Result<u64> {
        let mut written = 0u64;
        while written < pages {
            let chunk = usize::try_from(pages - written).map_or(CHUNK, |n| n.min(CHUNK));
            let n = self.pool.flush_list_batch_below(chunk, limit)?;
            if n == 0 {
                break;
            }
            written += n as u64;
        }
        Ok(written)
    }

    /// The log's free-space check, before a commit appends anything (InnoDB: `log_free_check`,
    /// `log_checkpoint_margin`): past the sync point the committer writes the oldest pages and
    /// moves the checkpoint itself until the age is back under it. Called under the commit
    /// lock, so no commit unit is open and every dirty page can be written.
    ///
    /// `unit_bytes` is an estimate of the redo the commit will append: its unit cannot be
    /// checkpointed before it is complete, so the room is made for it up front. A commit whose
    /// estimate exceeds the log's hard limit is refused here, before anything is applied.
    pub(crate) fn make_log_room(&self, unit_bytes: u64) -> Result<()> {
        let points = self.flushing.points;
        if unit_bytes >= points.max_checkpoint_age {
            return Err(crate::error::Error::TransactionTooLarge {
                what: format!(
                    "about {unit_bytes} bytes of redo, more than the {} bytes a redo log of \
                     {} bytes can hold before its checkpoint must move; split the transaction \
                     or open the database with a larger redo_log_capacity",
                    points.max_checkpoint_age,
                    self.log.log().capacity()
                ),
            });
        }
        let log = self.log.log();
        let past_sync = || {
            let current = log.current_lsn();
            let oldest = self.pool.oldest_modification().unwrap_or(current);
            current - oldest + unit_bytes >= points.max_modified_age_sync
                || log.checkpoint_age() + unit_bytes >= points.max_checkpoint_age_async
        };
        if !past_sync() {
            return Ok(());
        }
        let _one_flusher = self.flushing.sync_flush.lock();
        let started = Instant::now();
        let mut pages = 0u64;
        while past_sync() {
            let current = log.current_lsn();
            let target = (current + unit_bytes).saturating_sub(points.max_modified_age_sync);
            let written = self.flush_oldest(u64::MAX, target.max(1))?;
            pages += written;
            let before = log.checkpoint_lsn();
            self.fuzzy_checkpoint()?;
            if written == 0 && log.checkpoint_lsn() == before {
                // Nothing more can be written or checkpointed now; the append reports a full
                // log if it really is.
                break;
            }
        }
        self.flushing.sync_waits.fetch_add(1, Ordering::Relaxed);
        self.flushing
            .sync_wait_us
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        self.flushing.sync_pages.fetch_add(pages, Ordering::Relaxed);
        tracing::debug!(pages, "synchronous flush at the redo sync point");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounds_own_duration_counts_toward_its_period() {
        let ms = Duration::from_millis;
        assert_eq!(sleep_before_next_round(ms(0), PERIOD), PERIOD);
        assert_eq!(sleep_before_next_round(ms(300), PERIOD), ms(700));
        assert_eq!(
            sleep_before_next_round(ms(1500), PERIOD),
            Duration::ZERO,
            "a round longer than its period is followed by the next at once"
        );
        assert_eq!(sleep_before_next_round(ms(20), URGENT_PERIOD), ms(30));
    }
}
