//! `lab concurrent-writers`: commits per second of 1 and 2 threads writing different rows
//! (issue 11's target: 2 threads ≥ 1.6 × one thread's commits/s, non-durable).
//!
//! Before issue 11 an engine-wide commit lock applied one transaction at a time; now a
//! transaction writes its rows in place as it goes (row lock, undo record, row) and its commit
//! only moves its undo log to the history list. Each thread updates random rows of its own key
//! range of a preloaded table (no lock waits), in transactions of 1 and of 10 rows, under
//! `Durability::Background` (the figure is the engine's concurrency, not the disk's). The rows
//! each thread wrote last are read back at the end and must hold its last values.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, Table, TableOptions};
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::progress;
use crate::report::{median, TextTable};
use crate::LabResult;

/// The experiment.
pub struct ConcurrentWriters;

/// Rows per transaction of the phases.
const ROWS_PER_TRANSACTION: [u64; 2] = [1, 10];
/// Threads of the phases.
const THREADS: [usize; 2] = [1, 2];
/// Rounds of each (rows per transaction, threads) pair, interleaved 1, 2, 1, 2 …: this
/// machine's throughput drifts by 20-30 % between runs seconds apart, and a ratio of two
/// phases run once each measured the drift as much as the engine. Each pair's figure is the
/// median of its rounds.
const ROUNDS: usize = 3;
const VALUE_LEN: usize = 100;

/// One phase's result.
struct Phase {
    threads: usize,
    rows_per_txn: u64,
    commits: u64,
    elapsed: Duration,
}

impl Phase {
    fn commits_per_s(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl Experiment for ConcurrentWriters {
    fn name(&self) -> &'static str {
        "concurrent-writers"
    }

    fn about(&self) -> &'static str {
        "1 and 2 threads committing updates of different rows (1 and 10 rows per transaction, \
         Durability::Background): commits/s and the 2-thread / 1-thread ratio"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (200_000, 10.0),
            quick: (20_000, 2.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        crate::workload::fresh_dir(&ctx.dir)?;
        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default()
                .buffer_pool_bytes(512 << 20)
                .durability(Durability::Background),
        )?;
        let table = db.create_table("rows", TableOptions::default())?;
        let rows = ctx.rows.max(100);
        let mut tx = db.begin();
        for k in 0..rows {
            tx.put(&table, &key(k), &value(k, 0))?;
            if k % 1000 == 999 {
                tx.commit()?;
                tx = db.begin();
            }
        }
        tx.commit()?;
        let mut phases = Vec::new();
        let mut round = 1u64;
        let per_round = ctx.phase / ROUNDS as u32;
        for rows_per_txn in ROWS_PER_TRANSACTION {
            for _ in 0..ROUNDS {
                for threads in THREADS {
                    phases.push(phase(
                        &db,
                        &table,
                        rows,
                        threads,
                        rows_per_txn,
                        round,
                        per_round,
                    )?);
                    round += 1;
                }
            }
        }
        let status = db.status();
        db.close()?;

        let mut t = TextTable::new(&["rows/txn", "threads", "commits/s", "rows/s", "2 / 1"]);
        let mut results = serde_json::Map::new();
        for rows_per_txn in ROWS_PER_TRANSACTION {
            let rounds = |threads: usize| -> Vec<f64> {
                phases
                    .iter()
                    .filter(|p| p.threads == threads && p.rows_per_txn == rows_per_txn)
                    .map(Phase::commits_per_s)
                    .collect()
            };
            let of = |threads: usize| median(rounds(threads));
            let ratio = of(2) / of(1).max(1e-9);
            for threads in THREADS {
                t.row(vec![
                    rows_per_txn.to_string(),
                    threads.to_string(),
                    format!("{:.0}", of(threads)),
                    format!("{:.0}", of(threads) * rows_per_txn as f64),
                    if threads == 2 {
                        format!("{ratio:.2}")
                    } else {
                        String::new()
                    },
                ]);
            }
            results.insert(
                format!("rows_per_txn_{rows_per_txn}"),
                json!({
                    "commits_per_s_1": of(1),
                    "commits_per_s_2": of(2),
                    "ratio": ratio,
                    "rounds_1": rounds(1),
                    "rounds_2": rounds(2),
                }),
            );
        }
        let text = format!(
            "{rows} preloaded rows, each thread updating random rows of its own range, \
             Durability::Background; medians of {ROUNDS} interleaved rounds of {:.1} s\n{}",
            per_round.as_secs_f64(),
            t.render()
        );
        Ok(Outcome {
            text,
            results: serde_json::Value::Object(results),
            settings: json!({
                "rows": rows,
                "value_len": VALUE_LEN,
                "durability": "Background",
                "commits_total": status.commits,
            }),
            svg: None,
        })
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("row{k:012}").into_bytes()
}

fn value(k: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{round}:{k}:").into_bytes();
    v.resize(VALUE_LEN, b'.');
    v
}

/// `threads` threads, each committing `rows_per_txn`-row transactions over its own slice of
/// the keys, for `duration`; then each thread's last transaction is read back.
fn phase(
    db: &Engine,
    table: &Table,
    rows: u64,
    threads: usize,
    rows_per_txn: u64,
    round: u64,
    duration: Duration,
) -> LabResult<Phase> {
    let stop = AtomicBool::new(false);
    let slice = rows / threads as u64;
    let start = Instant::now();
    let results: Vec<LabResult<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                let base = slice * t as u64;
                s.spawn(move || writer(db, table, base, slice, rows_per_txn, round, stop))
            })
            .collect();
        progress::timed(
            &format!("{threads} threads, {rows_per_txn} rows per transaction"),
            duration,
        );
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut commits = 0;
    for r in results {
        commits += r?;
    }
    Ok(Phase {
        threads,
        rows_per_txn,
        commits,
        elapsed,
    })
}

/// One thread: updates random rows of `base..base + slice` until told to stop; checks its last
/// transaction's rows read back with its values.
fn writer(
    db: &Engine,
    table: &Table,
    base: u64,
    slice: u64,
    rows_per_txn: u64,
    round: u64,
    stop: &AtomicBool,
) -> LabResult<u64> {
    let mut rng = crate::workload::Rng::new(base ^ round.rotate_left(32));
    let mut commits = 0u64;
    let mut last = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        last.clear();
        let mut tx = db.begin();
        for _ in 0..rows_per_txn {
            let k = base + rng.below(slice);
            tx.put(table, &key(k), &value(k, round))?;
            last.push(k);
        }
        tx.commit()?;
        commits += 1;
    }
    for k in last {
        if db.get(table, &key(k))?.as_deref() != Some(&value(k, round)[..]) {
            return Err(
                format!("engine bug: row {k} does not hold its last committed value").into(),
            );
        }
    }
    Ok(commits)
}
