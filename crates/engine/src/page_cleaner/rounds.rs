//! What the cleaner does in a round and for a committer at the sync point, and the committers'
//! side of the sync point ([`EngineInner::make_log_room`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use barracuda_page::Lsn;
use barracuda_redo::flushing::{
    deadline_plan, sync_flush_lsn, DeadlineInput, FlushController, FlushListAges, FlushPoints,
    FlushRequest, FlushState, InnoDbController, PiController, PiSettings, RedoRate,
};

use super::handshake::SyncPointError;
use super::{FlushControllerKind, PERIOD, TICK};
use crate::engine::EngineInner;
use crate::error::{Error, Result};

/// Pages written per call of the pool while flushing (so that a stop request, a sync-point
/// request or a checkpoint is not held up behind one huge batch).
const CHUNK: usize = 128;
/// How long a committer at the sync point waits with no report at all from the cleaner before
/// it gives up with an error. A slow disk is not a reason: every batch the cleaner writes is a
/// report, and restarts the count. This bounds only a cleaner stuck for good (an I/O call that
/// never returns), which would otherwise hold the committer — and, through the commit lock,
/// every other — for ever.
const SYNC_STALL_LIMIT: Duration = Duration::from_secs(30);
/// How often a waiting committer checks its room even without a report (other threads write
/// pages too: the LRU manager, a checkpoint).
const SYNC_RECHECK: Duration = Duration::from_millis(100);

/// The cleaner's state between rounds: its controllers' averages, the redo rate it measures,
/// and the current second's request.
pub(super) struct Rounds {
    innodb: InnoDbController,
    pi: PiController,
    rate: RedoRate,
    last_round: Instant,
    last_lsn: Option<Lsn>,
    second: Option<Second>,
    /// Pages the cleaner had written (rounds and the sync point) at the controller's last call.
    pages_at_last_call: u64,
    last_checkpoint: Instant,
}

/// The controller's request for the second that began at `started`, and what the rounds of
/// that second wrote.
struct Second {
    started: Instant,
    request: FlushRequest,
    written: u64,
}

impl Rounds {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            innodb: InnoDbController::new(),
            pi: PiController::new(PiSettings::default()),
            rate: RedoRate::new(),
            last_round: now,
            last_lsn: None,
            second: None,
            pages_at_last_call: 0,
            last_checkpoint: now,
        }
    }

    /// The redo rate measured, bytes per second.
    pub(super) fn lsn_rate(&self) -> u64 {
        self.rate.get()
    }

    /// One round at `now`: measure the redo rate; once a second ask the controller; write this
    /// round's share of its request and what the deadlines need, oldest first; checkpoint.
    /// Returns whether it wrote pages or moved the checkpoint.
    pub(super) fn round(&mut self, engine: &EngineInner, now: Instant) -> Result<bool> {
        let flushing = &engine.flushing;
        let points = flushing.points;
        let settings = flushing.settings();
        let log = engine.log.log();
        let current = log.current_lsn();
        let elapsed = now.saturating_duration_since(self.last_round);
        self.last_round = now;
        let rate = match self.last_lsn.replace(current) {
            Some(previous) => self.rate.observe(current.saturating_sub(previous), elapsed),
            None => self.rate.get(),
        };
        flushing.lsn_rate.store(rate, Ordering::Relaxed);
        let ages = PoolAges(engine);
        let stats = engine.pool.stats();

        let call_due = self
            .second
            .as_ref()
            .is_none_or(|s| now.saturating_duration_since(s.started) >= PERIOD);
        if call_due {
            let since = self
                .second
                .as_ref()
                .map_or(PERIOD, |s| now.saturating_duration_since(s.started));
            let pages_so_far = flushing.adaptive_pages.load(Ordering::Relaxed)
                + flushing.sync_pages.load(Ordering::Relaxed);
            let state = FlushState {
                current_lsn: current,
                oldest_modification: engine.pool.oldest_modification(),
                points,
                dirty_pages: stats.dirty_pages as u64,
                pool_pages: stats.capacity_pages as u64,
                pages_flushed: pages_so_far.saturating_sub(self.pages_at_last_call),
                elapsed: since,
                flush_list: &ages,
            };
            self.pages_at_last_call = pages_so_far;
            let controller: &mut dyn FlushController = match *flushing.controller.lock() {
                FlushControllerKind::InnoDb => &mut self.innodb,
                FlushControllerKind::Pi => &mut self.pi,
            };
            let request = controller.recommend(&state, &settings);
            *flushing.metrics.lock() = request.metrics;
            self.second = Some(Second {
                started: now,
                request,
                written: 0,
            });
        }
        let Some(second) = self.second.as_mut() else {
            return Ok(false);
        };
        let share = controller_share(
            second.request.pages,
            now.saturating_duration_since(second.started),
            second.written,
        );

        let for_deadlines = if settings.adaptive_flushing() && settings.deadline_flushing() {
            let plan = deadline_plan(&DeadlineInput {
                current_lsn: current,
                oldest_modification: engine.pool.oldest_modification(),
                dirty_pages: stats.dirty_pages as u64,
                lsn_rate: rate,
                max_age: deadline_age(&points),
                // A page due before the round after next cannot wait for it.
                horizon: 2 * TICK,
                flush_list: &ages,
            });
            flushing
                .deadline_rate
                .store(plan.pages_per_s, Ordering::Relaxed);
            plan.pages_for(TICK)
        } else {
            flushing.deadline_rate.store(0, Ordering::Relaxed);
            0
        };
        let by_deadline = engine.flush_oldest(for_deadlines, Lsn::MAX)?;
        let limit = second.request.lsn_limit.unwrap_or(Lsn::MAX);
        let rest = engine.flush_oldest(share.saturating_sub(by_deadline), limit)?;
        let written = by_deadline + rest;
        second.written += written;
        flushing
            .adaptive_pages
            .fetch_add(written, Ordering::Relaxed);
        flushing
            .deadline_pages
            .fetch_add(written.saturating_sub(share), Ordering::Relaxed);

        let pressing = log.checkpoint_age() >= points.max_modified_age_async;
        let checkpoint_before = log.checkpoint_lsn();
        if written > 0 || pressing || now.saturating_duration_since(self.last_checkpoint) >= PERIOD
        {
            engine.fuzzy_checkpoint()?;
            self.last_checkpoint = now;
        }
        Ok(written > 0 || log.checkpoint_lsn() > checkpoint_before)
    }
}

/// The age the deadlines keep every dirty page under: below the async point by as much as the
/// sync point is above it. Aimed at the async point itself, the age rode it with half its
/// peaks above (a rate that rose within a round, a round that came late), and the gap from
/// there to the sync point is a sixteenth of the log's margin — 0.2 s of redo in the
/// experiment's log; the headroom costs a fifteenth more page writes (they go as 1 / age).
fn deadline_age(points: &FlushPoints) -> u64 {
    let gap = points
        .max_modified_age_sync
        .saturating_sub(points.max_modified_age_async);
    points.max_modified_age_async.saturating_sub(gap)
}

/// The pages a round writes for the controller's per-second request of `requested` pages,
/// `since_start` into that second, `written` already: what the second's rounds should have
/// written by the end of this one — an equal share per round, rounded up — less what they did.
/// After the second (a round that came late) the whole request.
fn controller_share(requested: u64, since_start: Duration, written: u64) -> u64 {
    let fraction = ((since_start + TICK).as_secs_f64() / PERIOD.as_secs_f64()).min(1.0);
    let due = (requested as f64 * fraction).ceil() as u64;
    due.min(requested).saturating_sub(written)
}

/// The flush list seen through the pool, for the controller's and the deadlines' counts.
struct PoolAges<'a>(&'a EngineInner);

impl FlushListAges for PoolAges<'_> {
    fn count_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64 {
        self.0.pool.dirty_pages_oldest_at_most(lsn, limit)
    }
}

impl EngineInner {
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

    /// The cleaner's service to committers past the sync point: writes every page whose oldest
    /// modification is below [`sync_flush_lsn`] (at least `need`), in batches not limited by
    /// `io_capacity_max`, reporting each batch to the waiters; checkpoints as soon as the
    /// oldest modification has reached `need` (that is what gives the waiters room), and again
    /// at the end. Returns whether anything moved (pages written or the checkpoint).
    pub(super) fn serve_sync_request(&self, need: Lsn, lsn_rate: u64) -> Result<bool> {
        let log = self.log.log();
        let target = sync_flush_lsn(need, log.current_lsn(), lsn_rate, &self.flushing.points);
        let checkpoint_before = log.checkpoint_lsn();
        let mut pages = 0u64;
        let mut room_made = false;
        loop {
            let n = self.pool.flush_list_batch_below(CHUNK, target)? as u64;
            if n == 0 {
                break;
            }
            pages += n;
            self.flushing.sync_pages.fetch_add(n, Ordering::Relaxed);
            if !room_made && self.pool.oldest_modification().is_none_or(|o| o >= need) {
                self.fuzzy_checkpoint()?;
                room_made = true;
            }
            self.flushing.handshake.progressed();
        }
        self.fuzzy_checkpoint()?;
        tracing::debug!(
            pages,
            need,
            target,
            "page cleaner flushed at the sync point"
        );
        Ok(pages > 0 || log.checkpoint_lsn() > checkpoint_before)
    }

    /// The LSN the oldest modification must reach before a commit appending about
    /// `unit_bytes` of redo may start, or `None` when it has room: the redo age with the commit
    /// below the sync point, and the checkpoint age below its async limit.
    fn room_needed(&self, unit_bytes: u64) -> Option<Lsn> {
        let points = self.flushing.points;
        let log = self.log.log();
        // Every dirty page's oldest change is at or after the checkpoint, so a checkpoint age
        // under both limits answers without the flush list's mutex (which every mtr's pages
        // take) — and without the log's (which every append takes): writers call this at every
        // row. The estimate may lag the exact age by a few frames in flight; both limits sit
        // far below the log's capacity, which the append itself enforces under the mutex.
        let age = log.checkpoint_age_estimate() + unit_bytes;
        if age < points.max_modified_age_sync && age < points.max_checkpoint_age_async {
            return None;
        }
        let current = log.current_lsn();
        let oldest = self.pool.oldest_modification().unwrap_or(current);
        let past_sync = current.saturating_sub(oldest) + unit_bytes >= points.max_modified_age_sync;
        let past_checkpoint_limit =
            log.checkpoint_age() + unit_bytes >= points.max_checkpoint_age_async;
        (past_sync || past_checkpoint_limit)
            .then(|| (current + unit_bytes + 1).saturating_sub(points.max_modified_age_sync))
    }

    /// The log's free-space check, before a commit appends anything (InnoDB: `log_free_check`,
    /// `log_checkpoint_margin`): past the sync point the committer asks the page cleaner to
    /// write the oldest pages and checkpoint, and waits until the age is back under it. Called
    /// under the commit lock, so no commit unit is open and every dirty page can be written;
    /// the cleaner needs neither the commit lock nor a page latch a committer holds (its
    /// batches skip X-latched pages), so the wait cannot close a cycle.
    ///
    /// `unit_bytes` is an estimate of the redo the commit will append: its unit cannot be
    /// checkpointed before it is complete, so the room is made for it up front. A commit whose
    /// estimate exceeds the log's hard limit is refused here, before anything is applied. A
    /// cleaner that fails (a page write, an `fsync`) hands its error to the waiting committer,
    /// whose commit then fails with nothing applied; a cleaner that is gone, or reports nothing
    /// for [`SYNC_STALL_LIMIT`], fails it with [`Error::Redo`].
    pub(crate) fn make_log_room(&self, unit_bytes: u64) -> Result<()> {
        let points = self.flushing.points;
        if unit_bytes >= points.max_checkpoint_age {
            return Err(Error::TransactionTooLarge {
                what: format!(
                    "one change of about {unit_bytes} bytes of redo, more than the {} bytes a \
                     redo log of {} bytes can hold before its checkpoint must move; write a \
                     smaller value or open the database with a larger redo_log_capacity",
                    points.max_checkpoint_age,
                    self.log.log().capacity()
                ),
            });
        }
        if self.room_needed(unit_bytes).is_none() {
            return Ok(());
        }
        let started = Instant::now();
        let result = self.wait_for_room(unit_bytes, started);
        let flushing = &self.flushing;
        flushing.sync_waits.fetch_add(1, Ordering::Relaxed);
        flushing.sync_wait_us.fetch_add(
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        result
    }

    fn wait_for_room(&self, unit_bytes: u64, started: Instant) -> Result<()> {
        let handshake = &self.flushing.handshake;
        let mut ticket = None;
        let mut last_report = (handshake.progress(), Instant::now());
        loop {
            if let Some(why) = self.read_only_reason() {
                return Err(Error::ReadOnly(why));
            }
            // Read before the check: a report that comes between the check and the wait ends
            // the wait at once.
            let seen = handshake.progress();
            let Some(need) = self.room_needed(unit_bytes) else {
                return Ok(());
            };
            if seen != last_report.0 {
                last_report = (seen, Instant::now());
            }
            let stalled = last_report.1.elapsed();
            if stalled >= SYNC_STALL_LIMIT {
                let log = self.log.log();
                let oldest = self.pool.oldest_modification().unwrap_or(log.current_lsn());
                return Err(SyncPointError::TimedOut {
                    waited: started.elapsed(),
                    age: log.current_lsn().saturating_sub(oldest) + unit_bytes,
                    sync_point: self.flushing.points.max_modified_age_sync,
                }
                .into());
            }
            let timeout = SYNC_RECHECK.min(SYNC_STALL_LIMIT.saturating_sub(stalled));
            handshake.request_and_wait(need, &mut ticket, seen, timeout)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadlines_keep_below_the_async_point_by_the_gap_to_the_sync_point() {
        let points = FlushPoints::for_log(31 << 20, 16_384, 0).unwrap();
        let gap = points.max_modified_age_sync - points.max_modified_age_async;
        assert_eq!(deadline_age(&points), points.max_modified_age_async - gap);
        // 13/16 of the margin, with the 5.7 ratios (async 14/16, sync 15/16).
        let sixteenth = points.max_checkpoint_age / 16;
        assert!(
            deadline_age(&points).abs_diff(13 * sixteenth) <= 16,
            "integer division"
        );
    }

    #[test]
    fn a_seconds_request_is_written_in_equal_shares_per_round() {
        let ms = Duration::from_millis;
        // 1,000 pages a second, 10 rounds of 100 ms: 100 by the end of the first round.
        assert_eq!(controller_share(1_000, ms(0), 0), 100);
        assert_eq!(controller_share(1_000, ms(100), 100), 100);
        // A round that wrote less leaves the rest to the next: 500 due by 500 ms, 250 written.
        assert_eq!(controller_share(1_000, ms(400), 250), 250);
        // A round that came late writes what is due by its end; past the second, the rest.
        assert_eq!(controller_share(1_000, ms(850), 300), 650);
        assert_eq!(controller_share(1_000, ms(1_500), 600), 400);
        // More than due already written (the deadlines wrote them): nothing.
        assert_eq!(controller_share(1_000, ms(0), 400), 0);
        // Shares are rounded up: 7 pages a second is 1 by the first round, all 7 by the last.
        assert_eq!(controller_share(7, ms(0), 0), 1);
        assert_eq!(controller_share(7, ms(900), 6), 1);
        assert_eq!(controller_share(0, ms(0), 0), 0);
    }
}
