//! `lab adaptive-flushing`: Dimitri Kravtchuk's figure (*Improved Adaptive Flushing in
//! 5.6-labs*, 2012): throughput and checkpoint age per second of a write workload whose redo
//! log wraps many times, with adaptive flushing on and off. Without it the age climbs until the
//! log is nearly full, then flushing is urgent and committers wait while the page cleaner
//! flushes for them regardless of `io_capacity_max` (the sync point) — the seed's throughput
//! cliffs; with it the page cleaner flushes in proportion to the redo age (and, in this engine,
//! as fast as the dirty pages' deadlines at the async point need) and the throughput stays flat.
//!
//! Set-up: a table is loaded into a database created with a small redo log and closed; each run
//! reopens it (a cold start: no dirty page, the checkpoint at the end of the log), reads every
//! row once (a read is not flushing: the pool, twice the table, then holds all of it), and runs
//! several threads of one-row updates of random existing keys, each a transaction, with
//! `Durability::SyncEverySecond` (the log is written at each commit and synced once a second, so
//! the log's space, not `fdatasync`, limits the commits). Sampled every 100 ms.
//!
//! **The log's size** is [`REDO_BYTES_PER_ROW`] bytes per row, about 1/6 of the table. Uniform
//! random updates dirty every page of the table within about a second, so the flush list is
//! the whole table and its oldest modifications are spread evenly over the age: holding the age
//! at `A` takes `dirty pages × redo rate / A` page writes a second. At the async point of this
//! log (69 % of it, about 1/9 of the table) that is at most 9 × redo bytes per second / 16 KiB —
//! about 1,500 pages/s for the ~3 MB/s of redo these updates make here. Adaptive flushing off
//! writes `(io_capacity × pct_for_dirty + avg rate + pages for the LSN target) / 3`, a few
//! hundred pages a second with the pool half dirty, so the age reaches the async point within
//! seconds of the cold start — the seed's cliff — and the log wraps 4–6 times a minute.
//! With the log a fixed fraction of the table, `--rows` changes the run's length, not its shape.

mod series;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{
    Durability, Engine, EngineOptions, EngineStatus, FlushControllerKind, FlushSettings, Table,
};
use hdrhistogram::Histogram;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::report::TextTable;
use crate::workload::{self, Percentiles, Rng};
use crate::LabResult;
use series::{mib, PerSecond, Summary};

/// The experiment.
pub struct AdaptiveFlushing;

/// Redo log bytes per loaded row (see the module documentation).
const REDO_BYTES_PER_ROW: u64 = 32;
/// The smallest log the experiment makes (InnoDB's reserve for concurrent threads needs under
/// half of the log; 4 MiB keeps most of it usable).
const MIN_REDO: u64 = 4 << 20;
/// Buffer pool size / table size: the pool holds the whole table with room to spare, so no page
/// is evicted and every page write is for the checkpoint, as in the seed's runs.
const POOL_TO_TABLE: u64 = 2;

/// One run's configuration.
#[derive(Clone, Copy, Debug)]
struct Setting {
    /// Key in the JSON and the CSV.
    name: &'static str,
    controller: FlushControllerKind,
    /// `innodb_adaptive_flushing`.
    adaptive: bool,
    /// Our deadline flushing on top of the controller (with adaptive flushing on).
    deadlines: bool,
    /// `innodb_io_capacity` and `innodb_io_capacity_max`.
    io_capacity: (u64, u64),
}

/// The seed's `innodb_io_capacity` / `innodb_io_capacity_max` for its figures (2000 / 4000).
/// InnoDB's defaults (200 / 2000) are a spinning disk's; this machine's disk does thousands of
/// syncs a second. The `on-io200` run shows what the defaults do.
const SEED_IO_CAPACITY: (u64, u64) = (2000, 4000);

/// The settings compared, in the order they run: adaptive flushing on (the engine's default:
/// InnoDB's controller and the deadlines), InnoDB's controller alone (`innodb`: the deadlines
/// off, as InnoDB has it), adaptive flushing off, our PI controller (with the deadlines), and
/// the default `on` with InnoDB's default capacities.
const SETTINGS: [Setting; 5] = [
    Setting {
        name: "on",
        controller: FlushControllerKind::InnoDb,
        adaptive: true,
        deadlines: true,
        io_capacity: SEED_IO_CAPACITY,
    },
    Setting {
        name: "innodb",
        controller: FlushControllerKind::InnoDb,
        adaptive: true,
        deadlines: false,
        io_capacity: SEED_IO_CAPACITY,
    },
    Setting {
        name: "off",
        controller: FlushControllerKind::InnoDb,
        adaptive: false,
        deadlines: false,
        io_capacity: SEED_IO_CAPACITY,
    },
    Setting {
        name: "pi",
        controller: FlushControllerKind::Pi,
        adaptive: true,
        deadlines: true,
        io_capacity: SEED_IO_CAPACITY,
    },
    Setting {
        name: "on-io200",
        controller: FlushControllerKind::InnoDb,
        adaptive: true,
        deadlines: true,
        io_capacity: (200, 2000),
    },
];

/// One setting's run.
struct Run {
    setting: Setting,
    seconds: Vec<PerSecond>,
    commits: u64,
    elapsed: Duration,
    latency: Histogram<u64>,
    end: EngineStatus,
}

impl Experiment for AdaptiveFlushing {
    fn name(&self) -> &'static str {
        "adaptive-flushing"
    }

    fn about(&self) -> &'static str {
        "random one-row updates from a cold start, redo log 1/6 of the table, pool 2x the \
         table: tps and checkpoint age per second with adaptive flushing on, InnoDB's \
         controller alone, off, the Pi controller and InnoDB's default io_capacity; sync-flush \
         stalls (CSV + plot)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (1_000_000, 60.0),
            quick: (100_000, 10.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let redo_capacity = redo_capacity(ctx.rows);
        workload::fresh_dir(&ctx.dir)?;
        let table_bytes = load(&ctx.dir, ctx.rows, redo_capacity)?;
        let page_bytes = barracuda::PageSize::K16.bytes() as u64;
        let pool_bytes = (table_bytes * POOL_TO_TABLE).max(256 * page_bytes) as usize;

        let mut runs = Vec::new();
        for (index, setting) in (0u64..).zip(SETTINGS) {
            runs.push(run_one(ctx, setting, index, pool_bytes, redo_capacity)?);
        }
        let points = runs
            .first()
            .map(|r| r.end.flushing.points)
            .ok_or("no run")?;

        let mut t = TextTable::new(&[
            "setting",
            "io cap",
            "min tps",
            "median tps",
            "min/median",
            "slowest s",
            "max ckpt age MiB",
            "sync waits",
            "s with sync",
            "sync ms",
            "cleaner pages",
            "deadline pages",
            "p99 ms",
            "max ms",
        ]);
        let mut results = serde_json::Map::new();
        for run in &runs {
            let s = Summary::of(&run.seconds);
            let p = Percentiles::of(&run.latency);
            let (io, io_max) = run.setting.io_capacity;
            t.row(vec![
                run.setting.name.to_owned(),
                format!("{io}/{io_max}"),
                s.min_tps.to_string(),
                format!("{:.0}", s.median_tps),
                format!("{:.3}", s.min_over_median),
                s.slowest_second.to_string(),
                format!("{:.1}", mib(s.max_checkpoint_age)),
                s.sync_flush_waits.to_string(),
                s.seconds_with_sync_flush.to_string(),
                format!("{:.0}", s.sync_flush_wait_ms),
                s.cleaner_pages.to_string(),
                s.deadline_pages.to_string(),
                format!("{:.2}", p.p99_ns as f64 / 1e6),
                format!("{:.2}", p.max_ns as f64 / 1e6),
            ]);
            let mut entry = serde_json::to_value(s)?;
            if let Some(map) = entry.as_object_mut() {
                map.insert(
                    "controller".into(),
                    json!(format!("{:?}", run.setting.controller)),
                );
                map.insert("adaptive_flushing".into(), json!(run.setting.adaptive));
                map.insert("deadline_flushing".into(), json!(run.setting.deadlines));
                map.insert("io_capacity".into(), json!(io));
                map.insert("io_capacity_max".into(), json!(io_max));
                map.insert("commits".into(), json!(run.commits));
                map.insert("elapsed_s".into(), json!(run.elapsed.as_secs_f64()));
                map.insert("latency".into(), json!(p));
                map.insert("checkpoints".into(), json!(run.end.checkpoints));
                map.insert("redo_fsyncs".into(), json!(run.end.redo.fsyncs));
                map.insert("per_second".into(), serde_json::to_value(&run.seconds)?);
            }
            results.insert(run.setting.name.to_owned(), entry);
        }
        let text = format!(
            "table {:.1} MiB, buffer pool {:.1} MiB, redo log {:.0} MiB (async point {:.1} MiB, \
             sync point {:.1} MiB), {} threads, one-row updates, SyncEverySecond, {:.0} s per \
             setting\n{}min tps is the slowest whole second, every second counted (a partial \
             last second is left out); per-second series in adaptive-flushing.csv\n",
            mib(table_bytes),
            mib(pool_bytes as u64),
            mib(redo_capacity),
            mib(points.max_modified_age_async),
            mib(points.max_modified_age_sync),
            ctx.threads,
            ctx.phase.as_secs_f64(),
            t.render()
        );

        let series: Vec<(&str, &[PerSecond])> = runs
            .iter()
            .map(|r| (r.setting.name, r.seconds.as_slice()))
            .collect();
        write_csv(&ctx.out, &series::csv(&series))?;
        let svg = series::figure(
            &format!(
                "adaptive-flushing: table {:.0} MiB, pool {:.0} MiB, redo log {:.0} MiB, {} \
                 threads",
                mib(table_bytes),
                mib(pool_bytes as u64),
                mib(redo_capacity),
                ctx.threads
            ),
            &series,
            &[
                ("async point", points.max_modified_age_async),
                ("sync point", points.max_modified_age_sync),
            ],
        )?;
        let defaults = FlushSettings::default();
        Ok(Outcome {
            text,
            results: serde_json::Value::Object(results),
            settings: json!({
                "table_bytes": table_bytes,
                "buffer_pool_bytes": pool_bytes,
                "redo_log_capacity": redo_capacity,
                "redo_bytes_per_row": REDO_BYTES_PER_ROW,
                "flush_points": {
                    "log_capacity": points.log_capacity,
                    "max_modified_age_async": points.max_modified_age_async,
                    "max_modified_age_sync": points.max_modified_age_sync,
                    "max_checkpoint_age_async": points.max_checkpoint_age_async,
                    "max_checkpoint_age": points.max_checkpoint_age,
                },
                "flushing_avg_loops": defaults.flushing_avg_loops(),
                "adaptive_flushing_lwm": defaults.adaptive_flushing_lwm(),
                "max_dirty_pages_pct": defaults.max_dirty_pages_pct(),
                "max_dirty_pages_pct_lwm": defaults.max_dirty_pages_pct_lwm(),
                "durability": "SyncEverySecond",
                "rows_per_transaction": 1,
                "sample_ms": series::SAMPLE.as_millis() as u64,
                "settings": SETTINGS.iter().map(|s| s.name).collect::<Vec<_>>(),
                "csv": "adaptive-flushing.csv",
            }),
            svg: Some(svg),
        })
    }
}

/// The redo log capacity for `rows` rows: [`REDO_BYTES_PER_ROW`] each, in whole MiB, at least
/// [`MIN_REDO`].
fn redo_capacity(rows: u64) -> u64 {
    (rows.saturating_mul(REDO_BYTES_PER_ROW))
        .div_ceil(1 << 20)
        .saturating_mul(1 << 20)
        .max(MIN_REDO)
}

/// Creates the database in `dir` with a redo log of `redo_capacity` bytes, loads `rows` rows
/// in key order and closes it; returns the table's B-tree size in bytes.
fn load(dir: &Path, rows: u64, redo_capacity: u64) -> LabResult<u64> {
    let options = EngineOptions::default()
        .redo_log_capacity(redo_capacity)
        .durability(Durability::SyncEverySecond);
    workload::load_with(dir, rows, options, workload::value)
}

/// Opens the database cold with `setting`, reads every row once, then runs the update threads
/// for `ctx.phase` while sampling the engine.
///
/// `index` seeds the threads' generators: a run repeating the previous run's keys and values
/// would write rows that already hold those bytes, and log next to nothing.
fn run_one(
    ctx: &Context,
    setting: Setting,
    index: u64,
    pool_bytes: usize,
    redo_capacity: u64,
) -> LabResult<Run> {
    let mut flush = FlushSettings::default();
    flush.set_adaptive_flushing(setting.adaptive);
    flush.set_deadline_flushing(setting.deadlines);
    // The maximum first, then the capacity, then the maximum exactly: each setter keeps
    // io_capacity ≤ io_capacity_max.
    flush.set_io_capacity_max(setting.io_capacity.1.max(flush.io_capacity_max()))?;
    flush.set_io_capacity(setting.io_capacity.0)?;
    flush.set_io_capacity_max(setting.io_capacity.1)?;
    let options = EngineOptions::default()
        .buffer_pool_bytes(pool_bytes)
        .durability(Durability::SyncEverySecond)
        .flush_settings(flush)
        .create_if_missing(false);
    let db = Engine::open(&ctx.dir, options)?;
    db.set_flush_controller(setting.controller);
    let capacity = db.status().redo.capacity;
    if capacity != redo_capacity {
        return Err(format!(
            "{}: the redo log holds {capacity} bytes, the experiment made it {redo_capacity}",
            ctx.dir.display()
        )
        .into());
    }
    let table = db.table(workload::TABLE)?;
    let warmed = db.range(&table, ..)?.count() as u64;
    if warmed != ctx.rows {
        return Err(format!("engine bug: a scan found {warmed} of {} rows", ctx.rows).into());
    }
    let device = series::device_of(&ctx.dir);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (results, mut seconds) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ctx.threads)
            .map(|t| {
                let (db, table, stop) = (&db, &table, &stop);
                s.spawn(move || {
                    let seed = 0xF1_0551 ^ (index << 48) ^ ((t as u64) << 32);
                    let result = updates(db, table, ctx.rows, seed, start, stop);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        let label = format!("updates, {}", setting.name);
        let seconds = series::sample(&db, device, start, ctx.phase, &stop, &label);
        stop.store(true, Ordering::Relaxed);
        let results: Vec<LabResult<Updates>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("an update thread panicked".into()))
            })
            .collect();
        (results, seconds)
    });
    let elapsed = start.elapsed();
    let mut latency = workload::new_histogram()?;
    let mut commits = 0;
    for result in results {
        let updates = result?;
        commits += updates.commits;
        latency.add(&updates.latency)?;
        // The sampler made one entry per whole second; a thread's partial last second has none.
        for (second, (n, max_ns)) in seconds.iter_mut().zip(updates.per_second) {
            second.tps += n;
            second.max_commit_ms = second.max_commit_ms.max(max_ns as f64 / 1e6);
        }
    }
    let end = db.status();
    db.close()?;
    Ok(Run {
        setting,
        seconds,
        commits,
        elapsed,
        latency,
        end,
    })
}

/// What one update thread measured.
struct Updates {
    commits: u64,
    /// Commit latency, ns.
    latency: Histogram<u64>,
    /// Per second since the start (by commit end): commits, longest commit in ns.
    per_second: Vec<(u64, u64)>,
}

/// One thread of one-row update transactions on random existing keys until `stop`.
fn updates(
    db: &Engine,
    table: &Table,
    rows: u64,
    seed: u64,
    start: Instant,
    stop: &AtomicBool,
) -> LabResult<Updates> {
    let mut rng = Rng::new(seed);
    let mut out = Updates {
        commits: 0,
        latency: workload::new_histogram()?,
        per_second: Vec::new(),
    };
    while !stop.load(Ordering::Relaxed) {
        let id = rng.below(rows);
        // A new random value, like sysbench's update_non_index: the redo carries the row's
        // bytes, not a counter's.
        let value = workload::value(rng.next_u64());
        let t0 = Instant::now();
        db.put(table, &workload::key(id), &value)?;
        let t1 = Instant::now();
        let ns = u64::try_from((t1 - t0).as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        out.latency.saturating_record(ns);
        let second =
            usize::try_from(t1.saturating_duration_since(start).as_secs()).unwrap_or(usize::MAX);
        if out.per_second.len() <= second {
            out.per_second.resize(second + 1, (0, 0));
        }
        if let Some(b) = out.per_second.get_mut(second) {
            b.0 += 1;
            b.1 = b.1.max(ns);
        }
        out.commits += 1;
    }
    Ok(out)
}

fn write_csv(out: &Path, csv: &str) -> LabResult<()> {
    std::fs::create_dir_all(out)?;
    let path = out.join("adaptive-flushing.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_32_bytes_a_row_in_whole_mib_and_never_under_4_mib() {
        assert_eq!(
            redo_capacity(1_000_000),
            31 << 20,
            "32,000,000 B → 30.5 MiB → 31 MiB"
        );
        assert_eq!(redo_capacity(100_000), MIN_REDO);
        assert_eq!(redo_capacity(0), MIN_REDO);
        assert!(
            redo_capacity(u64::MAX) >= MIN_REDO,
            "saturates, no overflow"
        );
    }
}
