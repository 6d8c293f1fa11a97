//! `lab group-commit`: durable one-row commits per second from 1, 4 and 16 committing threads,
//! beside the rate at which this disk can `fdatasync` at all.
//!
//! With `Durability::SyncEachCommit` a commit returns only once its redo is synced. One thread
//! can therefore commit at most as often as the disk syncs; many threads commit faster only if
//! one sync serves every commit waiting for it (group commit: the engine's commit lock is
//! released before the wait, and the log writer syncs once for all waiters). The figures that
//! show it are commits per second against the thread count, and commits per log `fdatasync`.
//!
//! The baseline is measured, not assumed: 512-byte writes each followed by `fdatasync`, for one
//! second, into a file in the database directory that was written whole first (a preallocated,
//! overwritten file, like the redo log, whose syncs never change the file's size). It is taken
//! before the engine opens and again after it closes, and the ratio uses their mean: on a shared
//! disk the rate moves from one second to the next, and the bracket shows by how much.

use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, EngineStatus, Table};
use hdrhistogram::Histogram;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind, Series};
use crate::progress;
use crate::report::{ms, us, TextTable};
use crate::workload::{self, Percentiles, Rng};
use crate::LabResult;

/// The experiment.
pub struct GroupCommit;

/// Committing threads of the phases, in the order they run.
const THREAD_COUNTS: [usize; 3] = [1, 4, 16];
/// Size of the baseline's file: written whole before the measurement so that no sync of the
/// measurement allocates a block.
const PROBE_FILE_BYTES: u64 = 4 << 20;
/// Bytes written before each `fdatasync` of the baseline.
const PROBE_WRITE_BYTES: usize = 512;
/// How long the baseline runs.
const PROBE_TIME: Duration = Duration::from_secs(1);
/// The targets: one thread at this share of the disk's sync rate ...
const TARGET_ONE_THREAD_TO_DISK: f64 = 0.8;
/// ... and 16 threads at this multiple of one thread.
const TARGET_16_TO_1: f64 = 10.0;

/// One phase: `threads` threads committing for the phase's length.
struct Phase {
    threads: usize,
    commits: u64,
    elapsed: Duration,
    latency: Histogram<u64>,
    /// Log `fdatasync` calls during the phase (the engine's counter; checkpoints included).
    fsyncs: u64,
    /// Log write calls during the phase.
    log_writes: u64,
    /// Redo record bytes appended during the phase.
    record_bytes: u64,
    /// Commits that found the redo age past the sync point and flushed pages themselves.
    sync_flush_waits: u64,
}

impl Phase {
    fn commits_per_s(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn commits_per_fsync(&self) -> f64 {
        self.commits as f64 / self.fsyncs.max(1) as f64
    }
}

/// The disk's own sync rate (see the module comment).
struct Baseline {
    syncs: u64,
    elapsed: Duration,
}

impl Baseline {
    fn per_s(&self) -> f64 {
        self.syncs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "fdatasync_per_s": self.per_s(),
            "syncs": self.syncs,
            "elapsed_s": self.elapsed.as_secs_f64(),
        })
    }
}

impl Experiment for GroupCommit {
    fn name(&self) -> &'static str {
        "group-commit"
    }

    fn about(&self) -> &'static str {
        "durable one-row transactions (SyncEachCommit, 180-byte values) from 1, 4 and 16 \
         committing threads: commits/s, latency and log fsyncs per phase, beside this disk's \
         own fdatasync/s on a preallocated file"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (100_000, 10.0),
            quick: (20_000, 2.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        workload::fresh_dir(&ctx.dir)?;
        // The whole table in the pool, so a commit waits for its sync, not for a read; the
        // default redo capacity is the pool's size, ample for a phase of one-row commits.
        let pool_bytes = (256usize << 20).max(ctx.rows as usize * 450);
        let table_bytes = workload::load(&ctx.dir, ctx.rows, pool_bytes)?;
        let before = fdatasync_baseline(&ctx.dir)?;

        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .durability(Durability::SyncEachCommit),
        )?;
        let table = db.table(workload::TABLE)?;
        let mut warm = 0u64;
        for row in db.range(&table, ..)? {
            row?;
            warm += 1;
        }
        if warm != ctx.rows {
            return Err(format!(
                "engine bug: scan returned {warm} rows, {} were loaded",
                ctx.rows
            )
            .into());
        }
        let mut phases = Vec::new();
        for threads in THREAD_COUNTS {
            phases.push(commit_phase(&db, &table, ctx.rows, threads, ctx.phase)?);
        }
        let end = db.status();
        db.close()?;
        let after = fdatasync_baseline(&ctx.dir)?;
        let disk_per_s = f64::midpoint(before.per_s(), after.per_s());

        let one = phases.first().map_or(0.0, Phase::commits_per_s);
        let sixteen = phases.last().map_or(0.0, Phase::commits_per_s);
        let ratio_16_to_1 = sixteen / one.max(1e-9);
        let one_to_disk = one / disk_per_s.max(1e-9);

        let mut t = TextTable::new(&[
            "threads",
            "commits/s",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "max ms",
            "log fsyncs",
            "fsyncs/s",
            "commits/fsync",
            "redo B/commit",
            "sync-flush waits",
        ]);
        let mut results = serde_json::Map::new();
        for phase in &phases {
            let p = Percentiles::of(&phase.latency);
            let secs = phase.elapsed.as_secs_f64().max(1e-9);
            let redo_per_commit = phase.record_bytes as f64 / phase.commits.max(1) as f64;
            t.row(vec![
                phase.threads.to_string(),
                format!("{:.0}", phase.commits_per_s()),
                us(p.p50_ns),
                us(p.p99_ns),
                us(p.p999_ns),
                ms(p.max_ns),
                phase.fsyncs.to_string(),
                format!("{:.0}", phase.fsyncs as f64 / secs),
                format!("{:.2}", phase.commits_per_fsync()),
                format!("{redo_per_commit:.0}"),
                phase.sync_flush_waits.to_string(),
            ]);
            results.insert(
                phase.threads.to_string(),
                json!({
                    "threads": phase.threads,
                    "commits": phase.commits,
                    "elapsed_s": secs,
                    "commits_per_s": phase.commits_per_s(),
                    "p50_us": p.p50_ns as f64 / 1000.0,
                    "p99_us": p.p99_ns as f64 / 1000.0,
                    "p999_us": p.p999_ns as f64 / 1000.0,
                    "max_us": p.max_ns as f64 / 1000.0,
                    "latency": p,
                    "fsyncs": phase.fsyncs,
                    "fsyncs_per_s": phase.fsyncs as f64 / secs,
                    "commits_per_fsync": phase.commits_per_fsync(),
                    "log_writes": phase.log_writes,
                    "redo_record_bytes": phase.record_bytes,
                    "redo_bytes_per_commit": redo_per_commit,
                    "sync_flush_waits": phase.sync_flush_waits,
                    "distribution": workload::distribution(&phase.latency),
                }),
            );
        }
        let text = format!(
            "table {:.1} MiB, buffer pool {:.0} MiB, redo log {:.0} MiB (preallocated), \
             one-row updates of random rows, SyncEachCommit, {:.1} s per phase\n\
             disk baseline: {disk_per_s:.0} fdatasync/s ({:.0} before the phases, {:.0} after; \
             {PROBE_WRITE_BYTES}-byte overwrites of a preallocated {} MiB file in {}, 1 s each)\n{}\
             16 threads / 1 thread: {ratio_16_to_1:.2}x (target >= {TARGET_16_TO_1}x)\n\
             1 thread / disk baseline: {one_to_disk:.2} (target >= {TARGET_ONE_THREAD_TO_DISK})\n",
            mib(table_bytes),
            mib(pool_bytes as u64),
            mib(end.redo.capacity),
            ctx.phase.as_secs_f64(),
            before.per_s(),
            after.per_s(),
            PROBE_FILE_BYTES >> 20,
            ctx.dir.display(),
            t.render()
        );
        let svg = figure(&phases, disk_per_s)?;
        Ok(Outcome {
            text,
            results: serde_json::Value::Object(results),
            settings: json!({
                "table_bytes": table_bytes,
                "buffer_pool_bytes": pool_bytes,
                "redo_log_capacity": end.redo.capacity,
                "durability": "SyncEachCommit",
                "rows_per_transaction": 1,
                "value_bytes": workload::VALUE_BYTES,
                "thread_counts": THREAD_COUNTS,
                // Measured, like the phases, so that the 0.8x target reads off one run.
                "disk_baseline": {
                    "fdatasync_per_s": disk_per_s,
                    "before": before.json(),
                    "after": after.json(),
                    "write_bytes": PROBE_WRITE_BYTES,
                    "file_bytes": PROBE_FILE_BYTES,
                },
                "ratio_16_to_1_threads": ratio_16_to_1,
                "ratio_1_thread_to_disk": one_to_disk,
            }),
            svg: Some(svg),
        })
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// Measures the disk's `fdatasync` rate on a preallocated, overwritten file in `dir` (the file
/// is removed afterwards).
fn fdatasync_baseline(dir: &Path) -> LabResult<Baseline> {
    let path = dir.join("fdatasync-baseline.tmp");
    let fail = |what: &str, e: std::io::Error| format!("{}: {what}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| fail("create", e))?;
    // Written, not `set_len`: a sparse file would allocate blocks during the measurement.
    let chunk = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < PROBE_FILE_BYTES {
        file.write_all_at(&chunk, at)
            .map_err(|e| fail("preallocate", e))?;
        at += chunk.len() as u64;
    }
    file.sync_all().map_err(|e| fail("fsync", e))?;
    let block = [0xA5u8; PROBE_WRITE_BYTES];
    let mut offset = 0u64;
    let mut syncs = 0u64;
    let start = Instant::now();
    while start.elapsed() < PROBE_TIME {
        file.write_all_at(&block, offset)
            .map_err(|e| fail("write", e))?;
        file.sync_data().map_err(|e| fail("fdatasync", e))?;
        syncs += 1;
        // Move along the file like a log does, wrapping inside what was preallocated.
        offset = (offset + PROBE_WRITE_BYTES as u64) % PROBE_FILE_BYTES;
    }
    let elapsed = start.elapsed();
    drop(file);
    std::fs::remove_file(&path).map_err(|e| fail("remove", e))?;
    Ok(Baseline { syncs, elapsed })
}

/// Runs `threads` threads of one-row update transactions for `duration`, timing each from
/// `begin` to the return of `commit`.
fn commit_phase(
    db: &Engine,
    table: &Table,
    rows: u64,
    threads: usize,
    duration: Duration,
) -> LabResult<Phase> {
    let before = db.status();
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let results: Vec<LabResult<(u64, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || committer(db, table, rows, t as u64, stop))
            })
            .collect();
        progress::timed(&format!("commits, {threads} threads"), duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a committing thread panicked".into()))
            })
            .collect()
    });
    // After the join: every commit counted has returned inside the elapsed time.
    let elapsed = start.elapsed();
    let after = db.status();
    let mut latency = workload::new_histogram()?;
    let mut commits = 0;
    for result in results {
        let (n, h) = result?;
        commits += n;
        latency.add(&h)?;
    }
    let engine_commits = after.commits - before.commits;
    if engine_commits != commits {
        return Err(format!(
            "engine bug: {commits} commits returned Ok, the engine counted {engine_commits}"
        )
        .into());
    }
    let delta = |f: fn(&EngineStatus) -> u64| f(&after) - f(&before);
    Ok(Phase {
        threads,
        commits,
        elapsed,
        latency,
        fsyncs: delta(|s| s.redo.fsyncs),
        log_writes: delta(|s| s.redo.writes),
        record_bytes: delta(|s| s.redo.record_bytes),
        sync_flush_waits: delta(|s| s.flushing.sync_flush_waits),
    })
}

/// One committing thread: a fresh 180-byte value for a random row, one row per transaction.
fn committer(
    db: &Engine,
    table: &Table,
    rows: u64,
    thread: u64,
    stop: &AtomicBool,
) -> LabResult<(u64, Histogram<u64>)> {
    let mut rng = Rng::new(0x6C0_77E5 ^ (thread << 32));
    let mut latency = workload::new_histogram()?;
    let mut commits = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let id = rng.below(rows);
        let value = workload::value(rng.next_u64());
        let t0 = Instant::now();
        let mut tx = db.begin();
        tx.put(table, &workload::key(id), &value)?;
        tx.commit()?;
        let ns = u64::try_from(t0.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        latency.saturating_record(ns);
        commits += 1;
    }
    Ok((commits, latency))
}

/// Latency distributions per thread count, and throughput against the disk's sync rate.
fn figure(phases: &[Phase], disk_per_s: f64) -> LabResult<String> {
    let dist = phases
        .iter()
        .map(|p| Series {
            name: format!("{} threads", p.threads),
            points: workload::distribution(&p.latency)
                .into_iter()
                .filter(|(q, _)| *q < 100.0)
                .map(|(q, ns)| (plot::nines(q), ns as f64 / 1000.0))
                .collect(),
        })
        .collect();
    let mut bars: Vec<(String, f64, usize)> = phases
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("{} threads", p.threads), p.commits_per_s(), i))
        .collect();
    bars.push(("disk fdatasync/s".into(), disk_per_s, phases.len()));
    plot::render(
        "group-commit: durable one-row commits (SyncEachCommit)",
        &[
            Panel {
                title: "commits per second, and the disk's fdatasync rate".into(),
                x_desc: String::new(),
                y_desc: "per second".into(),
                kind: PanelKind::Bars { bars },
            },
            Panel {
                title: "commit latency distribution".into(),
                x_desc: "percentile".into(),
                y_desc: "latency (us, log)".into(),
                kind: PanelKind::Lines {
                    series: dist,
                    y_log: true,
                    x_nines: true,
                },
            },
        ],
    )
}
