//! Adaptive flushing: how many dirty pages the page cleaner should write in the next second so
//! that the checkpoint age stays clear of the log's capacity (issue "Redo log" §6).
//!
//! A [`FlushController`] is a pure function of measured state plus its own averages: once a second
//! the page cleaner hands it a [`FlushState`] and the current [`FlushSettings`] and gets back a
//! [`FlushRequest`]. Nothing here reads a clock, a lock or a file, so every decision can be replayed
//! in a test. [`InnoDbController`] is InnoDB's controller, formula for formula; [`PiController`] is
//! a simpler one of ours to compare it against. [`FlushPoints`] are the async/sync limits the engine
//! enforces on top of any controller: [`deadline_plan`] is the page-write rate that keeps the age
//! under the async point at the measured redo rate ([`RedoRate`]), and [`sync_flush_lsn`] how far
//! a flush for committers past the sync point goes.

mod deadline;
mod innodb;
mod pi;
mod points;
mod settings;

pub use deadline::{deadline_plan, sync_flush_lsn, DeadlineInput, DeadlinePlan, RedoRate};
pub use innodb::{pct_for_dirty, pct_for_lsn, InnoDbController};
pub use pi::{PiController, PiSettings};
pub use points::{CheckpointUrgency, FlushPoints, FlushUrgency, LogTooSmall};
pub use settings::{FlushSettings, FlushSettingsError};

use barracuda_page::Lsn;
use std::time::Duration;

/// Answers "how many dirty pages have their oldest modification at or below this LSN?".
///
/// The flush list is ordered by oldest modification, so the page cleaner answers by walking it from
/// the oldest end and stopping at the first page past `lsn` — or after `limit` pages, which is why
/// the limit exists: a controller states how many it can use, and the walk never costs more.
pub trait FlushListAges {
    /// The number of dirty pages whose oldest modification is `≤ lsn`, or `limit` if there are
    /// at least that many.
    fn count_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64;
}

/// A snapshot of the flush list's oldest-modification LSNs, sorted ascending (oldest first): what
/// a cleaner that copies the list's ages, or a test, hands the controller.
#[derive(Debug, Clone, Copy)]
pub struct SortedAges<'a>(&'a [Lsn]);

impl<'a> SortedAges<'a> {
    /// Wraps `ages`, or `None` if they are not in ascending order (counting by binary search would
    /// then give wrong answers).
    pub fn new(ages: &'a [Lsn]) -> Option<Self> {
        ages.windows(2)
            .all(|w| w.first() <= w.last())
            .then_some(Self(ages))
    }
}

impl FlushListAges for SortedAges<'_> {
    fn count_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64 {
        (self.0.partition_point(|&oldest| oldest <= lsn) as u64).min(limit)
    }
}

/// What the page cleaner measured for one call of the controller.
#[derive(Clone, Copy)]
pub struct FlushState<'a> {
    /// The current LSN: the end of the redo generated so far.
    pub current_lsn: Lsn,
    /// The oldest modification LSN on the flush list, `None` when no page is dirty.
    pub oldest_modification: Option<Lsn>,
    /// The log's flush points (its capacity and the async/sync ages).
    pub points: FlushPoints,
    /// Pages on the flush list.
    pub dirty_pages: u64,
    /// Pages in the pool that could be dirty (InnoDB: LRU list plus free list).
    pub pool_pages: u64,
    /// Pages the cleaner wrote since the previous call.
    pub pages_flushed: u64,
    /// Time since the previous call (the first call's value is ignored).
    pub elapsed: Duration,
    /// The flush list's ages, for counting pages up to an LSN target.
    pub flush_list: &'a dyn FlushListAges,
}

impl FlushState<'_> {
    /// Current LSN − oldest modification; 0 when nothing is dirty.
    pub fn age(&self) -> u64 {
        self.oldest_modification
            .map_or(0, |oldest| self.current_lsn.saturating_sub(oldest))
    }
}

/// The metrics one call computed, with the names of InnoDB's `INFORMATION_SCHEMA.INNODB_METRICS`
/// counters (the 2012 seed's graphs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushMetrics {
    /// Pages requested for the next second (`n_pages`).
    pub buffer_flush_n_to_flush_requested: u64,
    /// Average pages flushed per second, as the controller saw it.
    pub buffer_flush_avg_page_rate: u64,
    /// Average redo generated per second, in LSN bytes.
    pub buffer_flush_lsn_avg_rate: u64,
    /// The dirty-page term, in percent of `io_capacity`.
    pub buffer_flush_pct_for_dirty: u64,
    /// The redo-age term, in percent of `io_capacity`.
    pub buffer_flush_pct_for_lsn: u64,
    /// Pages the LSN-rate term asked for (before its cap of 2 × `io_capacity_max`).
    pub buffer_flush_n_to_flush_by_age: u64,
    /// Cumulative pages requested by this controller (the cleaner adds what it actually wrote to
    /// its own counters).
    pub buffer_flush_adaptive_total_pages: u64,
}

/// A controller's answer for the next second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRequest {
    /// Pages to write from the oldest end of the flush list.
    pub pages: u64,
    /// Stop at the first page whose oldest modification is above this LSN; `None` = no age limit.
    pub lsn_limit: Option<Lsn>,
    /// What the controller computed on the way.
    pub metrics: FlushMetrics,
}

/// Decides, once a second, how many dirty pages to flush in the next second.
///
/// Implementations keep only their own running averages; everything measured comes in `state`, and
/// the settings come in per call so that they can change between calls.
pub trait FlushController {
    /// The controller's name, for reports.
    fn name(&self) -> &'static str;

    /// The request for the next second, given what was measured since the previous call.
    fn recommend(&mut self, state: &FlushState<'_>, settings: &FlushSettings) -> FlushRequest;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sorted_snapshot_counts_up_to_the_lsn_inclusive_and_stops_at_the_limit() {
        let ages = SortedAges::new(&[10, 20, 20, 30, 40]).expect("sorted");
        assert_eq!(ages.count_oldest_at_most(5, 100), 0);
        assert_eq!(ages.count_oldest_at_most(20, 100), 3);
        assert_eq!(ages.count_oldest_at_most(25, 100), 3);
        assert_eq!(ages.count_oldest_at_most(40, 100), 5);
        assert_eq!(ages.count_oldest_at_most(40, 2), 2);
        assert!(SortedAges::new(&[2, 1]).is_none());
        assert!(SortedAges::new(&[]).is_some());
    }
}
