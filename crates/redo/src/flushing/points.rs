//! The flush points: how far the checkpoint age may grow before flushing must speed up, before
//! committers must flush themselves, and before the log is full.
//!
//! We follow MySQL 5.6/5.7's `log_calc_max_ages` (log0log.cc) rather than 8.0.30's soft/hard
//! capacity: 8.0.30's margins are derived from its 32-file layout (31 file headers, a next-file
//! margin of 10 % of one file), which our log does not have, while 5.7's derivation needs only the
//! usable capacity, and it is the capacity InnoDB's `pct_for_lsn` formula was tuned against. The
//! ratios (7/8, 15/16, 31/32) are the same in both.

use barracuda_page::Lsn;
use thiserror::Error;

/// InnoDB's `LOG_CHECKPOINT_FREE_PER_THREAD`, in pages: log space reserved per OS thread so that a
/// single query step can always log its records.
const FREE_PAGES_PER_THREAD: u64 = 4;
/// InnoDB's `LOG_CHECKPOINT_EXTRA_FREE`, in pages.
const EXTRA_FREE_PAGES: u64 = 8;
/// Threads InnoDB always reserves for beyond `innodb_thread_concurrency`.
const BASE_THREADS: u64 = 10;

/// The log is too small for the space that must stay free in it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "redo log capacity {capacity} bytes is too small: {reserved} bytes must stay free for \
     concurrent threads, which must be less than half the capacity after the 10% safety margin \
     ({usable} bytes)"
)]
pub struct LogTooSmall {
    /// The capacity given (log bytes minus file headers).
    pub capacity: u64,
    /// The capacity after InnoDB's 10 % safety margin.
    pub usable: u64,
    /// The space reserved for concurrent threads.
    pub reserved: u64,
}

/// The checkpoint-age limits of one log, all in LSN bytes.
///
/// Promises `max_modified_age_async < max_modified_age_sync < max_checkpoint_age_async <
/// max_checkpoint_age < log_capacity` for every value [`FlushPoints::for_log`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPoints {
    /// The log capacity after the 10 % safety margin (InnoDB's `log_get_capacity()`, against which
    /// `innodb_adaptive_flushing_lwm` is a percentage).
    pub log_capacity: u64,
    /// Age (current LSN − oldest modification) from which flushing must speed up: 7/8 of the margin.
    pub max_modified_age_async: u64,
    /// Age from which committers must flush pages themselves before writing more redo: 15/16.
    pub max_modified_age_sync: u64,
    /// Checkpoint age from which a checkpoint is written without waiting for the usual period: 31/32.
    pub max_checkpoint_age_async: u64,
    /// The hard limit: the checkpoint age may never exceed this, or the log overwrites itself.
    pub max_checkpoint_age: u64,
}

/// How urgently pages must be flushed for a given age of the oldest modification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlushUrgency {
    /// Below `max_modified_age_async`: the controller alone decides.
    None,
    /// At or above `max_modified_age_async`: flush faster (the controller's age term is at full
    /// strength even with adaptive flushing off).
    Async,
    /// At or above `max_modified_age_sync`: committers must flush the oldest pages themselves,
    /// regardless of `io_capacity`, until the age is back below the sync point.
    Sync,
}

/// How urgently a checkpoint must be written for a given checkpoint age.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckpointUrgency {
    /// Below `max_checkpoint_age_async`: the periodic checkpoint suffices.
    None,
    /// At or above `max_checkpoint_age_async`: write a checkpoint now, in the background.
    Async,
    /// At or above `max_checkpoint_age`: writers must wait for a checkpoint.
    Sync,
}

impl FlushPoints {
    /// The flush points of a log with `capacity` usable bytes (total file size minus file headers),
    /// for pages of `page_size` bytes and `thread_concurrency` concurrent threads (InnoDB's
    /// `innodb_thread_concurrency`, 0 = unlimited, which still reserves for 10 threads).
    ///
    // InnoDB: log_calc_max_ages (5.7 log0log.cc)
    pub fn for_log(
        capacity: u64,
        page_size: u64,
        thread_concurrency: u64,
    ) -> Result<Self, LogTooSmall> {
        let usable = capacity - capacity / 10;
        let reserved = page_size
            .saturating_mul(FREE_PAGES_PER_THREAD)
            .saturating_mul(BASE_THREADS.saturating_add(thread_concurrency))
            .saturating_add(page_size.saturating_mul(EXTRA_FREE_PAGES));
        if reserved >= usable / 2 {
            return Err(LogTooSmall {
                capacity,
                usable,
                reserved,
            });
        }
        let margin = usable - reserved;
        let margin = margin - margin / 10;
        Ok(Self {
            log_capacity: usable,
            max_modified_age_async: margin - margin / 8,
            max_modified_age_sync: margin - margin / 16,
            max_checkpoint_age_async: margin - margin / 32,
            max_checkpoint_age: margin,
        })
    }

    /// Classifies `age` = current LSN − oldest modification LSN of the flush list.
    pub fn flush_urgency(&self, age: u64) -> FlushUrgency {
        if age >= self.max_modified_age_sync {
            FlushUrgency::Sync
        } else if age >= self.max_modified_age_async {
            FlushUrgency::Async
        } else {
            FlushUrgency::None
        }
    }

    /// Classifies `age` = current LSN − LSN of the last checkpoint.
    pub fn checkpoint_urgency(&self, age: u64) -> CheckpointUrgency {
        if age >= self.max_checkpoint_age {
            CheckpointUrgency::Sync
        } else if age >= self.max_checkpoint_age_async {
            CheckpointUrgency::Async
        } else {
            CheckpointUrgency::None
        }
    }

    /// The LSN up to which committers must flush when the age is at the sync point: the oldest
    /// modification must move past `current_lsn − max_modified_age_sync`. `None` when the age is
    /// below the sync point.
    pub fn sync_flush_target(&self, current_lsn: Lsn, oldest_modification: Lsn) -> Option<Lsn> {
        let age = current_lsn.saturating_sub(oldest_modification);
        (self.flush_urgency(age) == FlushUrgency::Sync)
            .then(|| current_lsn - self.max_modified_age_sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_follow_log_calc_max_ages_by_hand() {
        // capacity 100 MiB = 104_857_600; usable = 104_857_600 − 10_485_760 = 94_371_840.
        // reserved = 16_384 × 4 × (10 + 0) + 16_384 × 8 = 655_360 + 131_072 = 786_432.
        // margin = 94_371_840 − 786_432 = 93_585_408; − 9_358_540 (÷10, truncated) = 84_226_868.
        // async = 84_226_868 − 10_528_358 = 73_698_510; sync = − 5_264_179 = 78_962_689;
        // checkpoint async = − 2_632_089 = 81_594_779; hard = 84_226_868.
        let p = FlushPoints::for_log(104_857_600, 16_384, 0).expect("100 MiB is enough");
        assert_eq!(
            p,
            FlushPoints {
                log_capacity: 94_371_840,
                max_modified_age_async: 73_698_510,
                max_modified_age_sync: 78_962_689,
                max_checkpoint_age_async: 81_594_779,
                max_checkpoint_age: 84_226_868,
            }
        );
    }

    #[test]
    fn thread_concurrency_reserves_more() {
        let unlimited = FlushPoints::for_log(104_857_600, 16_384, 0).expect("fits");
        let many = FlushPoints::for_log(104_857_600, 16_384, 64).expect("fits");
        // 64 more threads × 4 pages × 16 KiB = 4 MiB less margin, before the 10 % safety cut.
        assert_eq!(
            unlimited.max_checkpoint_age - many.max_checkpoint_age,
            4_194_304 - 419_430
        );
    }

    #[test]
    fn a_log_too_small_for_the_reserve_is_a_typed_error() {
        // reserved = 786_432 with 16 KiB pages; usable / 2 must exceed it: 1 MiB × 0.9 / 2 does not.
        let err = FlushPoints::for_log(1 << 20, 16_384, 0).expect_err("1 MiB is too small");
        assert_eq!(
            err,
            LogTooSmall {
                capacity: 1_048_576,
                usable: 943_719,
                reserved: 786_432
            }
        );
        assert!(err.to_string().contains("1048576 bytes is too small"));
        assert!(FlushPoints::for_log(0, 16_384, 0).is_err());
        assert!(
            FlushPoints::for_log(u64::MAX, u64::MAX, u64::MAX).is_err(),
            "saturates, no overflow"
        );
    }

    #[test]
    fn urgency_switches_exactly_at_the_points() {
        let p = FlushPoints::for_log(104_857_600, 16_384, 0).expect("fits");
        assert_eq!(p.flush_urgency(0), FlushUrgency::None);
        assert_eq!(
            p.flush_urgency(p.max_modified_age_async - 1),
            FlushUrgency::None
        );
        assert_eq!(
            p.flush_urgency(p.max_modified_age_async),
            FlushUrgency::Async
        );
        assert_eq!(
            p.flush_urgency(p.max_modified_age_sync - 1),
            FlushUrgency::Async
        );
        assert_eq!(p.flush_urgency(p.max_modified_age_sync), FlushUrgency::Sync);
        assert_eq!(
            p.checkpoint_urgency(p.max_checkpoint_age_async - 1),
            CheckpointUrgency::None
        );
        assert_eq!(
            p.checkpoint_urgency(p.max_checkpoint_age_async),
            CheckpointUrgency::Async
        );
        assert_eq!(
            p.checkpoint_urgency(p.max_checkpoint_age),
            CheckpointUrgency::Sync
        );
    }

    #[test]
    fn sync_flush_target_brings_the_age_back_to_the_sync_point() {
        let p = FlushPoints::for_log(104_857_600, 16_384, 0).expect("fits");
        let now = 500_000_000;
        assert_eq!(
            p.sync_flush_target(now, now - p.max_modified_age_sync + 1),
            None
        );
        let target = p.sync_flush_target(now, now - p.max_modified_age_sync - 1000);
        assert_eq!(target, Some(now - p.max_modified_age_sync));
        assert_eq!(
            p.sync_flush_target(now, now + 5),
            None,
            "an oldest LSN ahead of now is age 0"
        );
    }
}
