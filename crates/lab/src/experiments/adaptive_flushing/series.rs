//! The per-second series of `lab adaptive-flushing`: what is sampled, how a run is summarised,
//! and the CSV and figure made from it.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Engine, EngineStatus};
use serde::Serialize;

use crate::plot::{self, Panel, PanelKind, Series};
use crate::progress::Progress;
use crate::LabResult;

/// How often the engine is sampled. A second's ages are the largest of its ten samples (a peak
/// between two once-a-second samples would otherwise be missed); the other gauges are its last.
pub const SAMPLE: Duration = Duration::from_millis(100);

/// What one second of a run measured. `second` = s covers (s − 1, s] after the start.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PerSecond {
    /// 1-based.
    pub second: u64,
    /// Transactions committed in the second (filled in from the update threads' own counts).
    pub tps: u64,
    /// Longest commit that ended in the second, ms.
    pub max_commit_ms: f64,
    /// Largest `current_lsn − checkpoint_lsn` sampled, bytes.
    pub checkpoint_age: u64,
    /// Largest `current_lsn − oldest modification` sampled, bytes (what the flush points limit).
    pub modified_age: u64,
    /// Pages on the flush list at the end of the second.
    pub dirty_pages: u64,
    /// Pages written in the second, by anyone.
    pub pages_flushed: u64,
    /// Of them, pages the page cleaner's regular rounds wrote (the controller's request and
    /// the dirty pages' deadlines).
    pub cleaner_pages: u64,
    /// Of those, pages written beyond the controller's request for the deadlines.
    pub deadline_pages: u64,
    /// Of them, pages the page cleaner wrote for committers waiting at the sync point.
    pub sync_flush_pages: u64,
    /// Commits that found the age past the sync point and waited.
    pub sync_flush_waits: u64,
    /// Time those commits waited, ms.
    pub sync_flush_ms: f64,
    /// Pages the controller asked for in the second (it is asked once a second).
    pub requested_pages: u64,
    /// The redo rate the page cleaner measured at the end of the second, bytes per second.
    pub lsn_rate: u64,
    /// The page-write rate the dirty pages' deadlines asked for at the end of the second.
    pub deadline_pages_per_s: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// The controller's redo-age term at the end of the second (`buffer_flush_pct_for_lsn`;
    /// for the Pi controller its gain × 100).
    pub pct_for_lsn: u64,
    /// Redo generated, bytes of LSN.
    pub redo_bytes: u64,
    /// Redo log `fdatasync` calls.
    pub redo_fsyncs: u64,
    /// MiB written to the block device holding the database, by every process on the machine
    /// (`/proc/diskstats`; 0 where it cannot be read).
    pub disk_write_mib: f64,
    /// Percent of the second that device had I/O in flight.
    pub disk_busy_pct: f64,
}

/// The engine's cumulative counters at one sample.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    pages_written: u64,
    cleaner_pages: u64,
    deadline_pages: u64,
    sync_pages: u64,
    sync_waits: u64,
    sync_wait_us: u64,
    requested: u64,
    checkpoints: u64,
    lsn: u64,
    redo_fsyncs: u64,
}

impl Counters {
    fn of(s: &EngineStatus) -> Self {
        Self {
            pages_written: s.pool.pages_written_flush_list
                + s.pool.pages_written_lru
                + s.pool.pages_written_single_page,
            cleaner_pages: s.flushing.buffer_flush_adaptive_total_pages,
            deadline_pages: s.flushing.deadline_pages,
            sync_pages: s.flushing.sync_flush_pages,
            sync_waits: s.flushing.sync_flush_waits,
            sync_wait_us: s.flushing.sync_flush_wait_us,
            requested: s.flushing.metrics.buffer_flush_adaptive_total_pages,
            checkpoints: s.checkpoints,
            lsn: s.current_lsn,
            redo_fsyncs: s.redo.fsyncs,
        }
    }
}

/// Cumulative counters of one block device (`/proc/diskstats`): sectors written and
/// milliseconds with I/O in flight. They tell a stall caused by the disk being busy — with
/// this engine's writes or with another process's — from one the engine causes by itself.
#[derive(Clone, Copy, Debug, Default)]
struct Disk {
    sectors_written: u64,
    io_ms: u64,
}

impl Disk {
    /// The counters of the device holding `path`, if the platform shows them.
    fn of(device: Option<(u64, u64)>) -> Option<Self> {
        let (major, minor) = device?;
        let stats = std::fs::read_to_string("/proc/diskstats").ok()?;
        stats.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let is_it =
                f.first()?.parse::<u64>().ok()? == major && f.get(1)?.parse::<u64>().ok()? == minor;
            is_it.then_some(())?;
            Some(Self {
                sectors_written: f.get(9)?.parse().ok()?,
                io_ms: f.get(12)?.parse().ok()?,
            })
        })
    }
}

/// `(major, minor)` of the device holding `path`.
#[cfg(unix)]
pub fn device_of(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    // glibc's gnu_dev_major / gnu_dev_minor.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Some((major, minor))
}

/// `(major, minor)` of the device holding `path`: not known on this platform.
#[cfg(not(unix))]
pub fn device_of(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// Samples `db` every [`SAMPLE`] from `start` until `phase` has passed or `stop` is set.
/// Returns one [`PerSecond`] per whole second (commit counts are the caller's to fill in).
pub fn sample(
    db: &Engine,
    device: Option<(u64, u64)>,
    start: Instant,
    phase: Duration,
    stop: &AtomicBool,
    label: &str,
) -> Vec<PerSecond> {
    let ticks_per_second = (Duration::from_secs(1).as_millis() / SAMPLE.as_millis()) as u64;
    let total_ticks = (phase.as_millis() / SAMPLE.as_millis()) as u64;
    let mut progress = Progress::new(label, phase.as_secs(), "s");
    let mut seconds: Vec<PerSecond> = Vec::new();
    let mut prev = Counters::of(&db.status());
    let mut prev_disk = Disk::of(device);
    let mut current = PerSecond::default();
    for tick in 1..=total_ticks {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Sampling at fixed times is the measurement's clock, not a wait for a condition.
        let at = start + SAMPLE * u32::try_from(tick).unwrap_or(u32::MAX);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let status = db.status();
        current.checkpoint_age = current.checkpoint_age.max(status.redo.checkpoint_age);
        current.modified_age = current.modified_age.max(status.redo.modified_age);
        if tick % ticks_per_second != 0 {
            continue;
        }
        let now = Counters::of(&status);
        let disk = Disk::of(device);
        current.second = tick / ticks_per_second;
        current.dirty_pages = status.pool.dirty_pages as u64;
        current.pages_flushed = now.pages_written - prev.pages_written;
        current.cleaner_pages = now.cleaner_pages - prev.cleaner_pages;
        current.deadline_pages = now.deadline_pages - prev.deadline_pages;
        current.sync_flush_pages = now.sync_pages - prev.sync_pages;
        current.sync_flush_waits = now.sync_waits - prev.sync_waits;
        current.sync_flush_ms = (now.sync_wait_us - prev.sync_wait_us) as f64 / 1000.0;
        current.requested_pages = now.requested - prev.requested;
        current.checkpoints = now.checkpoints - prev.checkpoints;
        current.pct_for_lsn = status.flushing.metrics.buffer_flush_pct_for_lsn;
        current.lsn_rate = status.flushing.lsn_rate;
        current.deadline_pages_per_s = status.flushing.deadline_pages_per_s;
        current.redo_bytes = now.lsn - prev.lsn;
        current.redo_fsyncs = now.redo_fsyncs - prev.redo_fsyncs;
        if let (Some(d), Some(p)) = (disk, prev_disk) {
            current.disk_write_mib =
                (d.sectors_written - p.sectors_written) as f64 * 512.0 / f64::from(1u32 << 20);
            current.disk_busy_pct = (d.io_ms - p.io_ms) as f64 / 10.0;
        }
        seconds.push(current);
        progress.set(current.second);
        prev = now;
        prev_disk = disk;
        current = PerSecond::default();
    }
    if !stop.load(Ordering::Relaxed) {
        std::thread::sleep(phase.saturating_sub(start.elapsed()));
    }
    progress.finish();
    seconds
}

/// A run's throughput summary: the figures and the target.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Summary {
    /// Commits in the slowest whole second.
    pub min_tps: u64,
    /// Median of the per-second commits.
    pub median_tps: f64,
    /// Commits in the fastest second.
    pub max_tps: u64,
    /// Mean of the per-second commits.
    pub mean_tps: f64,
    /// `min_tps / median_tps`.
    pub min_over_median: f64,
    /// The second with the fewest commits (the first of several).
    pub slowest_second: u64,
    /// Largest checkpoint age sampled, bytes.
    pub max_checkpoint_age: u64,
    /// Largest `current_lsn − oldest modification` sampled, bytes.
    pub max_modified_age: u64,
    /// Commits that waited at the sync point.
    pub sync_flush_waits: u64,
    /// Time they waited, ms.
    pub sync_flush_wait_ms: f64,
    /// Pages the page cleaner wrote for them.
    pub sync_flush_pages: u64,
    /// Pages the page cleaner's regular rounds wrote.
    pub cleaner_pages: u64,
    /// Of those, pages beyond the controller's request, for the deadlines.
    pub deadline_pages: u64,
    /// Pages written by anyone.
    pub pages_flushed: u64,
    /// Seconds in which commits waited at the sync point.
    pub seconds_with_sync_flush: u64,
    /// The target: `min_over_median ≥ 0.8` and no synchronous flush.
    pub meets_target: bool,
}

impl Summary {
    /// Summarises whole seconds; every one counts, the slowest included.
    pub fn of(seconds: &[PerSecond]) -> Self {
        let mut tps: Vec<u64> = seconds.iter().map(|s| s.tps).collect();
        tps.sort_unstable();
        let n = tps.len();
        let median_tps = match (tps.get(n / 2), n % 2) {
            (None, _) => 0.0,
            (Some(&mid), 1) => mid as f64,
            (Some(&high), _) => {
                let low = tps.get(n / 2 - 1).copied().unwrap_or(high);
                (low + high) as f64 / 2.0
            }
        };
        let min_tps = tps.first().copied().unwrap_or(0);
        let min_over_median = if median_tps > 0.0 {
            min_tps as f64 / median_tps
        } else {
            0.0
        };
        let sync_flush_waits = seconds.iter().map(|s| s.sync_flush_waits).sum();
        Self {
            min_tps,
            median_tps,
            max_tps: tps.last().copied().unwrap_or(0),
            mean_tps: tps.iter().sum::<u64>() as f64 / n.max(1) as f64,
            min_over_median,
            slowest_second: seconds
                .iter()
                .find(|s| s.tps == min_tps)
                .map_or(0, |s| s.second),
            max_checkpoint_age: seconds.iter().map(|s| s.checkpoint_age).max().unwrap_or(0),
            max_modified_age: seconds.iter().map(|s| s.modified_age).max().unwrap_or(0),
            sync_flush_waits,
            sync_flush_wait_ms: seconds.iter().map(|s| s.sync_flush_ms).sum(),
            sync_flush_pages: seconds.iter().map(|s| s.sync_flush_pages).sum(),
            cleaner_pages: seconds.iter().map(|s| s.cleaner_pages).sum(),
            deadline_pages: seconds.iter().map(|s| s.deadline_pages).sum(),
            pages_flushed: seconds.iter().map(|s| s.pages_flushed).sum(),
            seconds_with_sync_flush: seconds.iter().filter(|s| s.sync_flush_waits > 0).count()
                as u64,
            meets_target: min_over_median >= 0.8 && sync_flush_waits == 0,
        }
    }
}

/// The series of every run as CSV, one line per (second, setting).
pub fn csv(runs: &[(&str, &[PerSecond])]) -> String {
    let mut out = String::from(
        "second,setting,tps,max_commit_ms,checkpoint_age,modified_age,dirty_pages,\
         pages_flushed,cleaner_pages,deadline_pages,sync_flush_pages,sync_flush_waits,sync_flush_ms,\
         requested_pages,lsn_rate,deadline_pages_per_s,checkpoints,pct_for_lsn,redo_bytes,redo_fsyncs,disk_write_mib,\
         disk_busy_pct\n",
    );
    for (name, seconds) in runs {
        for s in *seconds {
            let _ = writeln!(
                out,
                "{},{name},{},{:.3},{},{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{:.1},{:.1}",
                s.second,
                s.tps,
                s.max_commit_ms,
                s.checkpoint_age,
                s.modified_age,
                s.dirty_pages,
                s.pages_flushed,
                s.cleaner_pages,
                s.deadline_pages,
                s.sync_flush_pages,
                s.sync_flush_waits,
                s.sync_flush_ms,
                s.requested_pages,
                s.lsn_rate,
                s.deadline_pages_per_s,
                s.checkpoints,
                s.pct_for_lsn,
                s.redo_bytes,
                s.redo_fsyncs,
                s.disk_write_mib,
                s.disk_busy_pct
            );
        }
    }
    out
}

/// Bytes to MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// The seed's figure — tps and checkpoint age per second of every run, the age with the log's
/// async and sync points — and the pages written per second.
pub fn figure(
    title: &str,
    runs: &[(&str, &[PerSecond])],
    limits: &[(&str, u64)],
) -> LabResult<String> {
    let per_second = |f: &dyn Fn(&PerSecond) -> f64| -> Vec<Series> {
        runs.iter()
            .map(|(name, seconds)| Series {
                name: (*name).to_owned(),
                points: seconds.iter().map(|s| (s.second as f64, f(s))).collect(),
            })
            .collect()
    };
    let mut ages = per_second(&|s| mib(s.checkpoint_age));
    let last = runs.iter().map(|(_, s)| s.len()).max().unwrap_or(1) as f64;
    for &(name, age) in limits {
        ages.push(Series {
            name: name.to_owned(),
            points: vec![(1.0, mib(age)), (last, mib(age))],
        });
    }
    let lines = |series| PanelKind::Lines {
        series,
        y_log: false,
        x_nines: false,
    };
    plot::render(
        title,
        &[
            Panel {
                title: "transactions per second (one-row updates)".into(),
                x_desc: "second".into(),
                y_desc: "tps".into(),
                kind: lines(per_second(&|s| s.tps as f64)),
            },
            Panel {
                title: "checkpoint age (largest of the second's samples)".into(),
                x_desc: "second".into(),
                y_desc: "MiB".into(),
                kind: lines(ages),
            },
            Panel {
                title: "pages written per second (page cleaner and committers)".into(),
                x_desc: "second".into(),
                y_desc: "pages".into(),
                kind: lines(per_second(&|s| s.pages_flushed as f64)),
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(tps: &[u64]) -> Vec<PerSecond> {
        (1..)
            .zip(tps)
            .map(|(second, &tps)| PerSecond {
                second,
                tps,
                ..PerSecond::default()
            })
            .collect()
    }

    #[test]
    fn the_slowest_second_counts_and_the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let s = Summary::of(&seconds(&[100, 90, 10, 110]));
        assert_eq!((s.min_tps, s.slowest_second, s.max_tps), (10, 3, 110));
        assert!((s.median_tps - 95.0).abs() < 1e-9);
        assert!((s.min_over_median - 10.0 / 95.0).abs() < 1e-9);
        assert!(!s.meets_target);
        let odd = Summary::of(&seconds(&[100, 90, 85]));
        assert!((odd.median_tps - 90.0).abs() < 1e-9);
        assert!(odd.meets_target, "85 / 90 ≥ 0.8 and no sync flush");
    }

    #[test]
    fn one_synchronous_flush_misses_the_target_however_flat_the_throughput() {
        let mut s = seconds(&[100, 100, 100]);
        if let Some(second) = s.get_mut(1) {
            second.sync_flush_waits = 1;
        }
        let summary = Summary::of(&s);
        assert_eq!(summary.seconds_with_sync_flush, 1);
        assert!(!summary.meets_target);
    }

    #[test]
    fn csv_has_one_line_per_second_and_setting_under_its_header() {
        let on = seconds(&[5, 6]);
        let off = seconds(&[7]);
        let text = csv(&[("on", &on), ("off", &off)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines
            .first()
            .is_some_and(|h| h.starts_with("second,setting,tps,")));
        assert!(lines.get(1).is_some_and(|l| l.starts_with("1,on,5,")));
        assert!(lines.get(3).is_some_and(|l| l.starts_with("1,off,7,")));
        let columns = |l: &&str| l.split(',').count();
        let header = lines.first().map_or(0, columns);
        assert!(lines.iter().all(|l| columns(l) == header));
    }
}
