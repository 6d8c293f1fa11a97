//! Deadline flushing: the page-write rate that keeps every dirty page's age under a limit (the
//! log's async point) at the redo rate being measured, and the LSN a sync-point flush writes up
//! to. The page cleaner applies the first on top of whatever controller is in force while
//! adaptive flushing is on; committers past the sync point ask for the second.
//!
//! **Why deadlines.** A dirty page whose oldest modification is `l` holds the age at or above
//! `current − l`; it must be written before the current LSN passes `l + max_age`, which at a
//! redo rate `r` is `(l + max_age − current) / r` seconds away — its deadline. Writing oldest
//! first is writing earliest deadline first, and then every deadline is met at a write speed
//! `S` exactly when, for every `l`, the pages with oldest modification `≤ l` can be written
//! before `l`'s deadline: `N(l) ≤ S × (l + max_age − current) / r`. The least such `S` is
//! `max over l of N(l) × r / (l + max_age − current)` ([`deadline_plan`]).
//!
//! That is the feed-forward InnoDB's controller lacks after a cold start: it knows the redo rate
//! only after `innodb_flushing_avg_loops` rounds, while here the rate is measured from the first
//! round ([`RedoRate`]). And it looks at the whole flush list, not only at the pages due soon:
//! after a cold start under random updates nearly every page is first dirtied within the first
//! second, so every page falls due at about the same moment, seconds later. A cleaner that
//! reacts only once the age reaches the limit finds the whole pool overdue at once (the seed's
//! "furious flushing"); this one starts writing them at the rate their common deadline needs as
//! soon as the redo starts. In a steady state with the dirty pages' oldest modifications spread
//! evenly over the age, the rate is `dirty pages × r / max_age` whatever the age now is.

use std::time::Duration;

use super::{FlushListAges, FlushPoints};
use barracuda_page::Lsn;

/// Points of the flush list probed between the oldest modification and the current LSN.
/// Between two probes `N(l)` and the time left can only be bounded by the neighbouring
/// probes, so the rate found may be short of the exact maximum by at most one probe's share
/// of the dirty pages (1/16) spread over the time left at the probe.
const PROBES: u64 = 16;

/// InnoDB's `buf_flush_lsn_scan_factor`: a sync-point flush looks this many seconds of redo
/// beyond what the committers need (InnoDB: `buf_flush_request_force`).
const SYNC_LOOKAHEAD_SECONDS: u64 = 3;

/// What [`deadline_plan`] needs, all measured by the page cleaner.
#[derive(Clone, Copy)]
pub struct DeadlineInput<'a> {
    /// The current LSN.
    pub current_lsn: Lsn,
    /// The flush list's oldest modification, `None` when no page is dirty.
    pub oldest_modification: Option<Lsn>,
    /// Pages on the flush list.
    pub dirty_pages: u64,
    /// Redo generated per second, in LSN bytes ([`RedoRate`]).
    pub lsn_rate: u64,
    /// The age no dirty page may reach (the log's `max_modified_age_async`).
    pub max_age: u64,
    /// How far ahead the cleaner must look for pages to write at once: until its next round
    /// can act (a page falling due before then is due now).
    pub horizon: Duration,
    /// The flush list's ages.
    pub flush_list: &'a dyn FlushListAges,
}

/// What the dirty pages' deadlines ask of the page cleaner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeadlinePlan {
    /// Pages whose deadline falls within the horizon (or has passed): to write now.
    pub due_pages: u64,
    /// The write rate the other pages need, pages per second, from now on.
    pub pages_per_s: u64,
}

impl DeadlinePlan {
    /// Pages to write in a round that has `period` until the next: the due pages and the
    /// period's share of the rate (rounded up: a page short each round adds up).
    pub fn pages_for(&self, period: Duration) -> u64 {
        let share = (self.pages_per_s as f64 * period.as_secs_f64()).ceil() as u64;
        self.due_pages.saturating_add(share)
    }
}

/// The least write rate (oldest first) that keeps every dirty page's age below
/// `input.max_age` if the redo keeps coming at `input.lsn_rate`, and the pages due within
/// `input.horizon` (see the module documentation). With no redo coming only the pages already
/// past the limit are due, and no rate is needed.
pub fn deadline_plan(input: &DeadlineInput<'_>) -> DeadlinePlan {
    let Some(oldest) = input.oldest_modification else {
        return DeadlinePlan::default();
    };
    let current = input.current_lsn.max(oldest);
    let rate = input.lsn_rate;
    let ahead = (rate as f64 * input.horizon.as_secs_f64()) as u64;
    // Pages with their oldest modification at or below `due_lsn` reach the limit within the
    // horizon.
    let due_lsn = current.saturating_add(ahead).checked_sub(input.max_age);
    let due_pages = due_lsn.filter(|&lsn| lsn >= oldest).map_or(0, |lsn| {
        input.flush_list.count_oldest_at_most(lsn, u64::MAX)
    });
    if rate == 0 {
        return DeadlinePlan {
            due_pages,
            pages_per_s: 0,
        };
    }
    let low = due_lsn.map_or(oldest, |lsn| lsn.max(oldest));
    let span = current.saturating_sub(low);
    let mut pages_per_s = 0.0f64;
    for k in 1..=PROBES {
        let lsn = low + span * k / PROBES;
        // The last probe is the current LSN: every dirty page.
        let pages = if k == PROBES {
            input.dirty_pages.max(due_pages)
        } else {
            input.flush_list.count_oldest_at_most(lsn, u64::MAX)
        };
        let pages = pages.saturating_sub(due_pages);
        if pages == 0 {
            continue;
        }
        // Above `due_lsn` the time left is more than the horizon; never less than it, so a
        // probe at `low` does not divide by zero.
        let left_bytes = (lsn + input.max_age)
            .saturating_sub(current)
            .max(ahead)
            .max(1);
        let seconds = left_bytes as f64 / rate as f64;
        pages_per_s = pages_per_s.max(pages as f64 / seconds);
    }
    DeadlinePlan {
        due_pages,
        pages_per_s: pages_per_s.ceil() as u64,
    }
}

/// The redo rate as the page cleaner measures it: the redo of about the last second (since the
/// last round without any, if later) over its duration, quick to rise, slow to fall.
///
/// One round's redo (a tenth of a second) varies by tens of percent with the commits' own
/// bursts; the average over a [`RedoRate::WINDOW`] does not. A rise of that average is taken
/// at once, since under-estimating the rate lets pages pass their deadline before the next
/// round; a fall is followed with a time constant of [`RedoRate::TIME_CONSTANT`], so a pause of
/// a fraction of a second (a log sync, a committer waiting) does not make the cleaner stop
/// writing pages that the redo resuming right after will need written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RedoRate {
    /// The measurements of the window, oldest first: redo bytes and the time they took.
    window: std::collections::VecDeque<(u64, Duration)>,
    /// Bytes per second; `None` before the first measurement.
    rate: Option<f64>,
}

impl RedoRate {
    /// How much of the latest measurements the rate averages over.
    pub const WINDOW: Duration = Duration::from_secs(1);
    /// How long a fall in the rate takes to be followed to `1 − 1/e` (63 %) of its extent.
    pub const TIME_CONSTANT: Duration = Duration::from_secs(1);

    /// No measurement yet: the rate is 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds in `lsn_bytes` of redo generated in `elapsed` and returns the new rate in bytes
    /// per second. A zero `elapsed` changes nothing.
    pub fn observe(&mut self, lsn_bytes: u64, elapsed: Duration) -> u64 {
        if elapsed.is_zero() {
            return self.get();
        }
        self.window.push_back((lsn_bytes, elapsed));
        // Rounds without redo before the newest ones are a pause, not part of the rate the redo
        // is coming at now: a cold start measured over the idle second before it would be
        // under-estimated for a second (a fall is still followed, through the time constant).
        while self.window.len() > 1 && self.window.front().is_some_and(|&(b, _)| b == 0) {
            self.window.pop_front();
        }
        let mut span: Duration = self.window.iter().map(|&(_, t)| t).sum();
        // Drop the oldest measurements the window holds without.
        while let Some(&(_, oldest)) = self.window.front() {
            if self.window.len() == 1 || span.saturating_sub(oldest) < Self::WINDOW {
                break;
            }
            span -= oldest;
            self.window.pop_front();
        }
        let bytes: u64 = self.window.iter().map(|&(b, _)| b).sum();
        let measured = bytes as f64 / span.as_secs_f64();
        let secs = elapsed.as_secs_f64();
        self.rate = Some(match self.rate {
            Some(rate) if measured < rate => {
                let weight = 1.0 - (-secs / Self::TIME_CONSTANT.as_secs_f64()).exp();
                rate + (measured - rate) * weight
            }
            _ => measured,
        });
        self.get()
    }

    /// The rate in bytes per second (0 before the first measurement).
    pub fn get(&self) -> u64 {
        self.rate.map_or(0, |rate| rate as u64)
    }
}

/// The LSN a flush at the sync point writes up to (every page whose oldest modification is
/// below it): at least `need` (what the waiting committers need the oldest modification to
/// pass), plus three seconds (`SYNC_LOOKAHEAD_SECONDS`) of redo at `lsn_rate` so that the
/// next commits do not find the sync point again at once, but not beyond bringing the age back to the async point
/// (`current − max_modified_age_async`): below it the cleaner's regular rounds take over.
///
// InnoDB: buf_flush_request_force (5.7 buf0flu.cc), lsn_target = lsn_limit + lsn_avg_rate × 3
pub fn sync_flush_lsn(need: Lsn, current: Lsn, lsn_rate: u64, points: &FlushPoints) -> Lsn {
    let lookahead = need.saturating_add(lsn_rate.saturating_mul(SYNC_LOOKAHEAD_SECONDS));
    let at_async_point = current.saturating_sub(points.max_modified_age_async);
    need.max(lookahead.min(at_async_point))
}

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod tests;
