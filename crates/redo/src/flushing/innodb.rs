//! InnoDB's adaptive-flushing controller, formula for formula (INNODB-FACTS §4.2; MySQL 5.7/8.0
//! `buf0flu.cc`).
//!
//! Deviations, each because our cleaner is driven differently, not to improve the formulas:
//! - InnoDB measures time in whole seconds; we take the elapsed time as a [`Duration`] and use its
//!   fractional seconds (still clamped to at least one second, as InnoDB does).
//! - InnoDB decides "idle" from the server's activity counter; we call a second idle when no redo
//!   was generated since the previous call, which is the same thing for a storage engine.
//! - With an empty flush list InnoDB 5.7 computes the age from LSN 0; we use age 0 (nothing to
//!   flush either way, but InnoDB's metrics then show a huge `pct_for_lsn`).

use super::{FlushController, FlushMetrics, FlushPoints, FlushRequest, FlushSettings, FlushState};
use barracuda_page::Lsn;
use std::time::Duration;

/// InnoDB's `buf_flush_lsn_scan_factor`: the LSN target looks this many seconds of redo ahead, and
/// the pages counted up to it are spread over as many seconds.
const LSN_SCAN_FACTOR: u64 = 3;

/// The dirty-page term, in percent of `io_capacity`.
///
/// `dirty_pct = 100 × dirty / (1 + pool)`. 0 when nothing is dirty; with
/// `max_dirty_pages_pct_lwm` = 0, 100 from `max_dirty_pages_pct` on and 0 below; otherwise
/// `dirty_pct × 100 / (max_dirty_pages_pct + 1)` from the low-water mark on, 0 below it.
///
// InnoDB: af_get_pct_for_dirty (buf0flu.cc), with buf_get_modified_ratio_pct's "1 +" denominator
pub fn pct_for_dirty(dirty_pages: u64, pool_pages: u64, settings: &FlushSettings) -> u64 {
    if dirty_pages == 0 {
        return 0;
    }
    let dirty_pct = 100.0 * dirty_pages as f64 / (1.0 + pool_pages as f64);
    let max = settings.max_dirty_pages_pct();
    let lwm = settings.max_dirty_pages_pct_lwm();
    if lwm <= 0.0 {
        if dirty_pct >= max {
            100
        } else {
            0
        }
    } else if dirty_pct >= lwm {
        (dirty_pct * 100.0 / (max + 1.0)) as u64
    } else {
        0
    }
}

/// The redo-age term, in percent of `io_capacity`, for `age` = current LSN − oldest modification.
///
/// 0 below `adaptive_flushing_lwm` percent of the log capacity, and 0 below
/// `max_modified_age_async` when adaptive flushing is off; otherwise, with
/// `f = age × 100 / max_modified_age_async` (integer), `(io_capacity_max / io_capacity) × f × √f /
/// 7.5`, the capacity ratio an integer division as in InnoDB. Non-decreasing in `age`.
///
// InnoDB: af_get_pct_for_lsn (buf0flu.cc)
pub fn pct_for_lsn(age: u64, points: &FlushPoints, settings: &FlushSettings) -> u64 {
    let lwm = u128::from(settings.adaptive_flushing_lwm()) * u128::from(points.log_capacity) / 100;
    if u128::from(age) < lwm {
        return 0;
    }
    let max_async = points.max_modified_age_async.max(1);
    if age < max_async && !settings.adaptive_flushing() {
        return 0;
    }
    let factor = (u128::from(age) * 100 / u128::from(max_async)) as f64;
    let ratio = (settings.io_capacity_max() / settings.io_capacity()) as f64;
    // `as` saturates on overflow, which only an age far beyond the log's capacity could reach.
    (ratio * (factor * factor.sqrt()) / 7.5) as u64
}

/// InnoDB's adaptive-flushing controller. Holds the running averages InnoDB keeps in
/// `page_cleaner_flush_pages_recommendation`'s statics; one controller per page cleaner.
#[derive(Debug, Clone, Default)]
pub struct InnoDbController {
    /// The LSN at the last averaging point (InnoDB's `prev_lsn`); `None` before the first call.
    avg_start_lsn: Option<Lsn>,
    /// The LSN at the previous call, for telling an idle second.
    last_call_lsn: Lsn,
    /// Time since the last averaging point (InnoDB's `curr_time − prev_time`).
    since_avg: Duration,
    /// Pages flushed since the last averaging point.
    sum_pages: u64,
    /// Active calls since the last averaging point.
    n_iterations: u32,
    avg_page_rate: u64,
    lsn_avg_rate: u64,
    total_pages: u64,
}

impl InnoDbController {
    /// A controller with no history: its first call only records the starting LSN.
    pub fn new() -> Self {
        Self::default()
    }

    fn metrics(&self) -> FlushMetrics {
        FlushMetrics {
            buffer_flush_avg_page_rate: self.avg_page_rate,
            buffer_flush_lsn_avg_rate: self.lsn_avg_rate,
            buffer_flush_adaptive_total_pages: self.total_pages,
            ..FlushMetrics::default()
        }
    }

    /// Folds the pages and redo of the last `flushing_avg_loops` calls (or seconds) into the averages.
    fn update_averages(&mut self, current_lsn: Lsn, start_lsn: Lsn) {
        let secs = self.since_avg.as_secs_f64().max(1.0);
        self.avg_page_rate =
            f64::midpoint(self.sum_pages as f64 / secs, self.avg_page_rate as f64) as u64;
        let lsn_rate = (current_lsn.saturating_sub(start_lsn) as f64 / secs) as u64;
        self.lsn_avg_rate = self.lsn_avg_rate.midpoint(lsn_rate);
        self.avg_start_lsn = Some(current_lsn);
        self.since_avg = Duration::ZERO;
        self.n_iterations = 0;
        self.sum_pages = 0;
    }
}

impl FlushController for InnoDbController {
    fn name(&self) -> &'static str {
        "innodb"
    }

    // InnoDB: page_cleaner_flush_pages_recommendation (buf0flu.cc), idle branch from
    // buf_flush_page_cleaner_coordinator
    fn recommend(&mut self, state: &FlushState<'_>, settings: &FlushSettings) -> FlushRequest {
        let current = state.current_lsn;
        let Some(start_lsn) = self.avg_start_lsn else {
            self.avg_start_lsn = Some(current);
            self.last_call_lsn = current;
            return FlushRequest {
                pages: 0,
                lsn_limit: None,
                metrics: self.metrics(),
            };
        };
        self.since_avg = self.since_avg.saturating_add(state.elapsed);
        let idle = current <= self.last_call_lsn;
        self.last_call_lsn = self.last_call_lsn.max(current);
        if idle {
            // Background flushing, not adaptive: InnoDB counts it apart from
            // buffer_flush_adaptive_total_pages, and so do we.
            let pages = settings
                .pct_io(u64::from(settings.idle_flush_pct()))
                .min(state.dirty_pages);
            return FlushRequest {
                pages,
                lsn_limit: None,
                metrics: self.metrics(),
            };
        }

        self.sum_pages = self.sum_pages.saturating_add(state.pages_flushed);
        self.n_iterations = self.n_iterations.saturating_add(1);
        let loops = settings.flushing_avg_loops();
        if self.n_iterations >= loops || self.since_avg.as_secs_f64() >= f64::from(loops) {
            self.update_averages(current, start_lsn);
        }

        let pct_dirty = pct_for_dirty(state.dirty_pages, state.pool_pages, settings);
        let pct_lsn = pct_for_lsn(state.age(), &state.points, settings);
        let pct_total = pct_dirty.max(pct_lsn);

        let oldest = state.oldest_modification.unwrap_or(current);
        let target = oldest.saturating_add(self.lsn_avg_rate.saturating_mul(LSN_SCAN_FACTOR));
        let cap = settings.io_capacity_max().saturating_mul(2);
        // Counting further than the cap can use would only lengthen the cleaner's walk.
        let counted = state
            .flush_list
            .count_oldest_at_most(target, cap.saturating_mul(LSN_SCAN_FACTOR));
        let by_age = (counted / LSN_SCAN_FACTOR).max(1);
        let pages_for_lsn = by_age.min(cap);

        let pages = (settings
            .pct_io(pct_total)
            .saturating_add(self.avg_page_rate)
            .saturating_add(pages_for_lsn)
            / 3)
        .min(settings.io_capacity_max());
        self.total_pages = self.total_pages.saturating_add(pages);

        FlushRequest {
            pages,
            lsn_limit: None,
            metrics: FlushMetrics {
                buffer_flush_n_to_flush_requested: pages,
                buffer_flush_pct_for_dirty: pct_dirty,
                buffer_flush_pct_for_lsn: pct_lsn,
                buffer_flush_n_to_flush_by_age: by_age,
                ..self.metrics()
            },
        }
    }
}

#[cfg(test)]
#[path = "innodb_tests.rs"]
mod tests;
