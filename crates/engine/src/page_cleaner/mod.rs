//! The page cleaner (InnoDB: `buf_flush_page_cleaner_coordinator`) and the log's free-space
//! check at commit (InnoDB: `log_free_check`).
//!
//! The cleaner runs a round every [`TICK`]. Once a second a round asks the flushing controller
//! (a pure function, `barracuda_redo::flushing`) how many pages to write in the next second,
//! and the rounds of that second write its request in equal shares, oldest pages first. While
//! adaptive flushing is on (and [`FlushSettings::deadline_flushing`], ours, is not turned off),
//! each round also writes what the dirty pages' deadlines need to keep
//! the redo age under the log's async point at the redo rate it measures
//! ([`deadline_plan`](barracuda_redo::flushing::deadline_plan)) — from the first round, so a
//! cold start does not wait for the controller's averages — and then moves the checkpoint (a
//! fuzzy checkpoint: no page is written for it).
//!
//! A committer that finds the age past the sync point asks the cleaner to flush (the
//! [`handshake`]) and waits — counted and timed as a synchronous flush wait, which adaptive
//! flushing exists to avoid. The cleaner serves the request before anything else, with batches
//! not limited by `io_capacity_max` (InnoDB's "furious flushing"), and checkpoints; only it
//! writes pages and checkpoints for committers, so there is one checkpoint at a time and no
//! committer syncs every tablespace.

mod handshake;
mod rounds;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use barracuda_redo::flushing::{FlushMetrics, FlushPoints, FlushSettings};

use crate::engine::EngineInner;
use crate::error::Result;
use handshake::{Event, Handshake};
use rounds::Rounds;

/// How often the cleaner runs a round. Short enough that the checkpoint follows the pages
/// written closely (the log's checkpoint-age limit is only 3/32 of its margin above the async
/// point, a fraction of a second of redo under a heavy load) and that a second's request is
/// written in even shares rather than in one burst.
const TICK: Duration = Duration::from_millis(100);
/// How often the controller is asked for the next second's pages (InnoDB: once a second).
const PERIOD: Duration = Duration::from_secs(1);

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
    /// Pages the cleaner's regular rounds wrote: for the controller's request and for the
    /// deadlines (`buffer_flush_adaptive_total_pages`).
    pub buffer_flush_adaptive_total_pages: u64,
    /// Of those, pages written beyond the controller's request because the dirty pages'
    /// deadlines needed them (adaptive flushing on).
    pub deadline_pages: u64,
    /// The write rate the deadlines asked for in the last round, pages per second.
    pub deadline_pages_per_s: u64,
    /// The redo rate the cleaner measured in its last round, bytes per second.
    pub lsn_rate: u64,
    /// Commits that found the redo age past the sync point and waited for the cleaner
    /// (`buffer_flush_sync_waits`).
    pub sync_flush_waits: u64,
    /// Time those commits waited, in microseconds.
    pub sync_flush_wait_us: u64,
    /// Pages the cleaner wrote for committers at the sync point.
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
    deadline_pages: AtomicU64,
    deadline_rate: AtomicU64,
    lsn_rate: AtomicU64,
    sync_waits: AtomicU64,
    sync_wait_us: AtomicU64,
    sync_pages: AtomicU64,
    handshake: Handshake,
}

impl Flushing {
    pub(crate) fn new(points: FlushPoints, settings: FlushSettings) -> Self {
        Self {
            points,
            settings: Mutex::new(settings),
            controller: Mutex::new(FlushControllerKind::default()),
            metrics: Mutex::new(FlushMetrics::default()),
            adaptive_pages: AtomicU64::new(0),
            deadline_pages: AtomicU64::new(0),
            deadline_rate: AtomicU64::new(0),
            lsn_rate: AtomicU64::new(0),
            sync_waits: AtomicU64::new(0),
            sync_wait_us: AtomicU64::new(0),
            sync_pages: AtomicU64::new(0),
            handshake: Handshake::new(),
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
            deadline_pages: self.deadline_pages.load(Ordering::Relaxed),
            deadline_pages_per_s: self.deadline_rate.load(Ordering::Relaxed),
            lsn_rate: self.lsn_rate.load(Ordering::Relaxed),
            sync_flush_waits: self.sync_waits.load(Ordering::Relaxed),
            sync_flush_wait_us: self.sync_wait_us.load(Ordering::Relaxed),
            sync_flush_pages: self.sync_pages.load(Ordering::Relaxed),
            points: self.points,
        }
    }

    /// Asks the cleaner thread to exit at its next wake-up, and wakes it.
    pub(crate) fn request_stop(&self) {
        self.handshake.request_stop();
    }
}

/// Starts the page cleaner thread of `engine`. It holds the engine only weakly, between rounds.
pub(crate) fn spawn(engine: &Arc<EngineInner>) -> Result<JoinHandle<()>> {
    let weak: Weak<EngineInner> = Arc::downgrade(engine);
    let flushing = engine.flushing.clone();
    let waker = flushing.clone();
    engine
        .pool
        .set_write_behind_waker(Some(Arc::new(move || waker.handshake.wake_write_behind())));
    std::thread::Builder::new()
        .name("barracuda-page-cleaner".into())
        .spawn(move || {
            // However the thread ends (stop, engine gone, panic), committers waiting for it
            // must not wait for ever.
            let _exit = ExitNotice(flushing);
            run(&weak);
        })
        .map_err(|e| crate::error::Error::fs("page cleaner thread", e))
}

/// Tells waiting committers, when dropped, that the cleaner thread is gone.
struct ExitNotice(Arc<Flushing>);

impl Drop for ExitNotice {
    fn drop(&mut self) {
        self.0.handshake.exited();
    }
}

/// How long a serving that made no progress (every page it needed was being written by
/// another thread, or latched) waits before the next: the other writer finishes in about a
/// page write, and the waiting committer asks again at once, which without a pause would spin.
const NO_PROGRESS_PAUSE: Duration = Duration::from_millis(1);

fn run(weak: &Weak<EngineInner>) {
    let mut rounds = Rounds::new(Instant::now());
    let mut next_round = Instant::now() + TICK;
    loop {
        let Some(flushing) = weak.upgrade().map(|e| e.flushing.clone()) else {
            return;
        };
        let event = flushing.handshake.next_event(next_round);
        let Some(engine) = weak.upgrade() else {
            return;
        };
        match event {
            Event::Stop => return,
            Event::Sync { need, seq } => match engine.serve_sync_request(need, rounds.lsn_rate()) {
                Ok(true) => flushing.handshake.progressed(),
                Ok(false) => {
                    flushing.handshake.progressed();
                    std::thread::sleep(NO_PROGRESS_PAUSE);
                }
                Err(err) => {
                    tracing::warn!(%err, "page cleaner failed at the sync point");
                    flushing.handshake.failed(seq, err);
                }
            },
            Event::Tick => {
                let started = Instant::now();
                if engine.read_only_reason().is_none() {
                    match rounds.round(&engine, started) {
                        // Waiting committers may have room now.
                        Ok(true) => flushing.handshake.progressed(),
                        Ok(false) => {}
                        Err(err) => tracing::warn!(%err, "page cleaner round failed"),
                    }
                    write_behind(&engine);
                }
                next_round = next_round_at(started);
            }
            Event::WriteBehind => {
                if engine.read_only_reason().is_none() {
                    write_behind(&engine);
                }
            }
        }
    }
}

/// Pages one write-behind pass writes at most, so that a committer's sync request, served
/// between passes, waits for no more than this.
const WRITE_BEHIND_PASS: usize = 4 * barracuda_buffer_pool::WRITE_BEHIND_BATCH;

/// Writes the pages queued for write-behind that can be written now (up to
/// [`WRITE_BEHIND_PASS`]); a failure is logged, and the pages are left to the checkpoint.
fn write_behind(engine: &EngineInner) {
    if !engine.flushing.settings().write_behind() {
        // Turned off: the hints keep coming, and the pages are the checkpoints' now.
        engine.pool.discard_write_behind();
        return;
    }
    if let Err(err) = engine.pool.write_behind(WRITE_BEHIND_PASS) {
        tracing::warn!(%err, "page cleaner: write-behind failed");
    }
}

/// When the round that began at `started` is followed by the next: a [`TICK`] after it
/// began, at once if it took longer. A round's own duration counts toward its period — sleeping
/// a whole period after each round delivered `request / (period + round time)`, which fell
/// behind the redo whenever rounds were slow (seen: rounds of 0.3–1 s under load, and the redo
/// age reaching the sync point with the controller's request unmet) — and only toward its own
/// period: counting it twice ran rounds more often than every [`TICK`], and each wrote its
/// full share (seen: 14 rounds a second, the deadlines' rate written 1.4 times over).
// InnoDB: pc_sleep_if_needed (buf0flu.cc), next_loop_time = round start + 1000 ms
fn next_round_at(started: Instant) -> Instant {
    started + TICK
}
