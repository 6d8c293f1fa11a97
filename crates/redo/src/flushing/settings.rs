//! The controller's settings, with InnoDB's names, defaults and documented ranges.
//!
//! Every setter validates, so a [`FlushSettings`] value is always usable by a controller: no
//! division by a zero `io_capacity`, no low-water mark above its high-water mark. The settings are
//! passed to the controller on each call, which is what makes them switchable at run time (InnoDB's
//! `SET GLOBAL innodb_...` equivalents).

use thiserror::Error;

/// A setting was given a value outside its documented range, or in conflict with another setting.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FlushSettingsError {
    /// The value is outside the range InnoDB documents for the variable.
    #[error("innodb_{setting} = {value} is out of range: expected {expected}")]
    OutOfRange {
        /// The setting's InnoDB name without the `innodb_` prefix.
        setting: &'static str,
        /// The rejected value, as given.
        value: String,
        /// The accepted range, in words.
        expected: &'static str,
    },
    /// `io_capacity` would exceed `io_capacity_max` (InnoDB refuses this too).
    #[error(
        "innodb_io_capacity {io_capacity} may not exceed innodb_io_capacity_max {io_capacity_max}"
    )]
    CapacityAboveMax {
        /// The requested or current `io_capacity`.
        io_capacity: u64,
        /// The requested or current `io_capacity_max`.
        io_capacity_max: u64,
    },
    /// `max_dirty_pages_pct_lwm` would exceed `max_dirty_pages_pct`.
    #[error(
        "innodb_max_dirty_pages_pct_lwm {lwm} may not exceed innodb_max_dirty_pages_pct {max}"
    )]
    DirtyLwmAboveMax {
        /// The requested or current low-water mark.
        lwm: f64,
        /// The requested or current high-water mark.
        max: f64,
    },
}

/// The adaptive-flushing settings (MySQL 8.0 defaults, INNODB-FACTS §4.1).
///
/// Construct with [`FlushSettings::default`] and change with the validating setters; the getters
/// return values that always satisfy the documented ranges and `io_capacity ≤ io_capacity_max`,
/// `max_dirty_pages_pct_lwm ≤ max_dirty_pages_pct`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlushSettings {
    io_capacity: u64,
    io_capacity_max: u64,
    flushing_avg_loops: u32,
    adaptive_flushing: bool,
    adaptive_flushing_lwm: u32,
    max_dirty_pages_pct: f64,
    max_dirty_pages_pct_lwm: f64,
    idle_flush_pct: u32,
    deadline_flushing: bool,
    write_behind: bool,
}

impl Default for FlushSettings {
    fn default() -> Self {
        Self {
            io_capacity: 200,
            io_capacity_max: 2000,
            flushing_avg_loops: 30,
            adaptive_flushing: true,
            adaptive_flushing_lwm: 10,
            max_dirty_pages_pct: 90.0,
            max_dirty_pages_pct_lwm: 10.0,
            idle_flush_pct: 100,
            deadline_flushing: true,
            write_behind: true,
        }
    }
}

/// InnoDB's lower bound for both capacity settings.
const MIN_IO_CAPACITY: u64 = 100;
/// InnoDB's upper bound for the dirty-page percentages.
const MAX_DIRTY_PCT: f64 = 99.999;

fn out_of_range(
    setting: &'static str,
    value: &dyn std::fmt::Display,
    expected: &'static str,
) -> FlushSettingsError {
    FlushSettingsError::OutOfRange {
        setting,
        value: value.to_string(),
        expected,
    }
}

impl FlushSettings {
    /// `innodb_io_capacity`: pages per second the background flushing may use normally (default 200).
    pub fn io_capacity(&self) -> u64 {
        self.io_capacity
    }

    /// `innodb_io_capacity_max`: the ceiling adaptive flushing may reach (default 2000).
    pub fn io_capacity_max(&self) -> u64 {
        self.io_capacity_max
    }

    /// `innodb_flushing_avg_loops`: the page and LSN rates are averaged every this many calls or
    /// seconds (default 30).
    pub fn flushing_avg_loops(&self) -> u32 {
        self.flushing_avg_loops
    }

    /// `innodb_adaptive_flushing`: whether the redo-age term works below the async point (default on).
    pub fn adaptive_flushing(&self) -> bool {
        self.adaptive_flushing
    }

    /// `innodb_adaptive_flushing_lwm`: percent of log capacity below which the redo-age term is 0
    /// (default 10).
    pub fn adaptive_flushing_lwm(&self) -> u32 {
        self.adaptive_flushing_lwm
    }

    /// `innodb_max_dirty_pages_pct`: the dirty-page percentage treated as the high-water mark
    /// (default 90).
    pub fn max_dirty_pages_pct(&self) -> f64 {
        self.max_dirty_pages_pct
    }

    /// `innodb_max_dirty_pages_pct_lwm`: the dirty-page percentage from which the dirty-page term
    /// starts; 0 means "only at the high-water mark" (default 10).
    pub fn max_dirty_pages_pct_lwm(&self) -> f64 {
        self.max_dirty_pages_pct_lwm
    }

    /// `innodb_idle_flush_pct`: percent of `io_capacity` flushed in a second with no redo generated
    /// (default 100).
    pub fn idle_flush_pct(&self) -> u32 {
        self.idle_flush_pct
    }

    /// Not InnoDB's: whether, while adaptive flushing is on, the page cleaner also writes what
    /// the dirty pages' deadlines need to keep the redo age under the async point at the redo
    /// rate it measures ([`deadline_plan`](super::deadline_plan)) — from its first round, where
    /// InnoDB's formulas know the rate only after `flushing_avg_loops` rounds (default on). Off
    /// leaves the controller alone, to compare it as InnoDB has it.
    pub fn deadline_flushing(&self) -> bool {
        self.deadline_flushing
    }

    /// Sets [`deadline_flushing`](Self::deadline_flushing); any value is valid.
    pub fn set_deadline_flushing(&mut self, on: bool) {
        self.deadline_flushing = on;
    }

    /// Not InnoDB's: whether the page cleaner writes, as soon as it can, the pages a load has
    /// finished with in the tablespaces that ask for it (page-compressed ones: the left page of
    /// a split that appended), so that their compression runs beside the load instead of in the
    /// next checkpoint (default on). Off leaves every page to the controller and checkpoints.
    pub fn write_behind(&self) -> bool {
        self.write_behind
    }

    /// Sets [`write_behind`](Self::write_behind); any value is valid.
    pub fn set_write_behind(&mut self, on: bool) {
        self.write_behind = on;
    }

    /// Sets `innodb_io_capacity` (at least 100, at most `io_capacity_max`).
    pub fn set_io_capacity(&mut self, value: u64) -> Result<(), FlushSettingsError> {
        if value < MIN_IO_CAPACITY {
            return Err(out_of_range("io_capacity", &value, "at least 100"));
        }
        if value > self.io_capacity_max {
            return Err(FlushSettingsError::CapacityAboveMax {
                io_capacity: value,
                io_capacity_max: self.io_capacity_max,
            });
        }
        self.io_capacity = value;
        Ok(())
    }

    /// Sets `innodb_io_capacity_max` (at least 100, at least `io_capacity`).
    pub fn set_io_capacity_max(&mut self, value: u64) -> Result<(), FlushSettingsError> {
        if value < MIN_IO_CAPACITY {
            return Err(out_of_range("io_capacity_max", &value, "at least 100"));
        }
        if value < self.io_capacity {
            return Err(FlushSettingsError::CapacityAboveMax {
                io_capacity: self.io_capacity,
                io_capacity_max: value,
            });
        }
        self.io_capacity_max = value;
        Ok(())
    }

    /// Sets `innodb_flushing_avg_loops` (1–1000).
    pub fn set_flushing_avg_loops(&mut self, value: u32) -> Result<(), FlushSettingsError> {
        if !(1..=1000).contains(&value) {
            return Err(out_of_range("flushing_avg_loops", &value, "1 to 1000"));
        }
        self.flushing_avg_loops = value;
        Ok(())
    }

    /// Sets `innodb_adaptive_flushing`; any value is valid.
    pub fn set_adaptive_flushing(&mut self, on: bool) {
        self.adaptive_flushing = on;
    }

    /// Sets `innodb_adaptive_flushing_lwm` (0–70 percent of log capacity).
    pub fn set_adaptive_flushing_lwm(&mut self, value: u32) -> Result<(), FlushSettingsError> {
        if value > 70 {
            return Err(out_of_range("adaptive_flushing_lwm", &value, "0 to 70"));
        }
        self.adaptive_flushing_lwm = value;
        Ok(())
    }

    /// Sets `innodb_max_dirty_pages_pct` (0–99.999, at least `max_dirty_pages_pct_lwm`).
    pub fn set_max_dirty_pages_pct(&mut self, value: f64) -> Result<(), FlushSettingsError> {
        if !(0.0..=MAX_DIRTY_PCT).contains(&value) {
            return Err(out_of_range("max_dirty_pages_pct", &value, "0 to 99.999"));
        }
        if value < self.max_dirty_pages_pct_lwm {
            return Err(FlushSettingsError::DirtyLwmAboveMax {
                lwm: self.max_dirty_pages_pct_lwm,
                max: value,
            });
        }
        self.max_dirty_pages_pct = value;
        Ok(())
    }

    /// Sets `innodb_max_dirty_pages_pct_lwm` (0–99.999, at most `max_dirty_pages_pct`).
    pub fn set_max_dirty_pages_pct_lwm(&mut self, value: f64) -> Result<(), FlushSettingsError> {
        if !(0.0..=MAX_DIRTY_PCT).contains(&value) {
            return Err(out_of_range(
                "max_dirty_pages_pct_lwm",
                &value,
                "0 to 99.999",
            ));
        }
        if value > self.max_dirty_pages_pct {
            return Err(FlushSettingsError::DirtyLwmAboveMax {
                lwm: value,
                max: self.max_dirty_pages_pct,
            });
        }
        self.max_dirty_pages_pct_lwm = value;
        Ok(())
    }

    /// Sets `innodb_idle_flush_pct` (0–100).
    pub fn set_idle_flush_pct(&mut self, value: u32) -> Result<(), FlushSettingsError> {
        if value > 100 {
            return Err(out_of_range("idle_flush_pct", &value, "0 to 100"));
        }
        self.idle_flush_pct = value;
        Ok(())
    }

    /// `PCT_IO(pct)`: `pct` percent of `io_capacity`, truncated as InnoDB's macro does.
    pub fn pct_io(&self, pct: u64) -> u64 {
        (self.io_capacity as f64 * (pct as f64 / 100.0)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_mysql_8_0s() {
        let s = FlushSettings::default();
        assert_eq!(
            (s.io_capacity(), s.io_capacity_max(), s.flushing_avg_loops()),
            (200, 2000, 30)
        );
        assert!(s.adaptive_flushing());
        assert_eq!(s.adaptive_flushing_lwm(), 10);
        assert!((s.max_dirty_pages_pct() - 90.0).abs() < f64::EPSILON);
        assert!((s.max_dirty_pages_pct_lwm() - 10.0).abs() < f64::EPSILON);
        assert_eq!(s.idle_flush_pct(), 100);
        assert!(s.deadline_flushing(), "ours, on by default");
        assert!(s.write_behind(), "ours, on by default");
    }

    #[test]
    fn setters_reject_out_of_range_and_conflicting_values_and_keep_the_old_value() {
        let mut s = FlushSettings::default();
        assert!(matches!(
            s.set_io_capacity(99),
            Err(FlushSettingsError::OutOfRange {
                setting: "io_capacity",
                ..
            })
        ));
        assert_eq!(
            s.set_io_capacity(2001),
            Err(FlushSettingsError::CapacityAboveMax {
                io_capacity: 2001,
                io_capacity_max: 2000
            })
        );
        assert_eq!(
            s.set_io_capacity_max(150),
            Err(FlushSettingsError::CapacityAboveMax {
                io_capacity: 200,
                io_capacity_max: 150
            })
        );
        assert!(s.set_flushing_avg_loops(0).is_err());
        assert!(s.set_flushing_avg_loops(1001).is_err());
        assert!(s.set_adaptive_flushing_lwm(71).is_err());
        assert!(
            s.set_max_dirty_pages_pct(5.0).is_err(),
            "below the lwm of 10"
        );
        assert!(
            s.set_max_dirty_pages_pct_lwm(95.0).is_err(),
            "above the max of 90"
        );
        assert!(s.set_max_dirty_pages_pct(100.0).is_err());
        assert!(s.set_idle_flush_pct(101).is_err());
        assert_eq!(s, FlushSettings::default());

        assert!(s.set_io_capacity_max(100).is_err(), "below io_capacity 200");
        s.set_io_capacity(100).expect("100 is the minimum");
        s.set_io_capacity_max(100)
            .expect("equal capacities are allowed");
        s.set_flushing_avg_loops(1000).expect("upper bound");
        s.set_adaptive_flushing_lwm(0).expect("0 disables the lwm");
        s.set_max_dirty_pages_pct_lwm(0.0)
            .expect("0 means: only at the max");
        assert_eq!(s.io_capacity_max(), 100);
    }

    #[test]
    fn error_messages_name_the_setting_and_the_range() {
        let mut s = FlushSettings::default();
        let e = s.set_flushing_avg_loops(0).expect_err("0 is out of range");
        assert_eq!(
            e.to_string(),
            "innodb_flushing_avg_loops = 0 is out of range: expected 1 to 1000"
        );
    }

    #[test]
    fn pct_io_truncates_like_innodb() {
        // PCT_IO(p) = (ulong)(io_capacity * (p / 100.0)): 200 × 0.33 = 66, 200 × 1.333 = 266.6 → 266.
        let s = FlushSettings::default();
        assert_eq!(s.pct_io(33), 66);
        assert_eq!(s.pct_io(133), 266);
        assert_eq!(s.pct_io(0), 0);
    }
}
