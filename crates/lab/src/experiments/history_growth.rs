//! `lab history-growth`: the table's and the undo file's sizes over a steady update workload —
//! does purge keep up, so that the table stays the size it was loaded at?
//!
//! Every update writes the row in place and appends the version it replaces to an undo log;
//! a delete only delete-marks the row. Once no read view can need them, purge frees the undo
//! logs and removes the delete-marked rows. If it falls behind, the history list (the
//! committed undo logs not purged yet) grows, the undo file grows with it, and delete-marked
//! rows pile up in the leaves, which split: the table grows although it holds the same rows —
//! InnoDB's classic "ibdata1 / the table keeps growing under updates" complaint.
//!
//! The table is loaded with `--rows` rows of 200-byte values; then `--threads` threads commit
//! small transactions for `--seconds` (`Durability::Background`): 5 uniform random rows each,
//! locked in key order (no deadlocks), each given a new random value of the same length; one
//! transaction in ten deletes one of its rows instead, and that thread's next transaction
//! re-inserts it, so delete-marks are made and purged all along. Every second the experiment
//! samples the table's file size and pages (`Engine::status`), the size of `undo.ibu` on disk,
//! the history list length, the rows and undo logs purged and the commits so far. At the end it
//! waits for purge to empty the history list (at most 60 s), checks the tree
//! (`Engine::check_table`: records and delete-marked records) and counts the rows with a full
//! scan: every row deleted was re-inserted, so the count must be the rows loaded, or the run
//! fails.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, EngineStatus, Error, Table, TableOptions};
use serde::Serialize;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind, Series};
use crate::progress::Progress;
use crate::report::TextTable;
use crate::workload::{self, Rng};
use crate::LabResult;

/// The experiment.
pub struct HistoryGrowth;

/// Bytes of a value.
const VALUE_BYTES: usize = 200;
/// Rows a transaction updates.
const ROWS_PER_TXN: usize = 5;
/// One transaction in this many deletes one of its rows (re-inserted by the thread's next).
const DELETE_ONE_IN: u64 = 10;
/// Rows per load transaction.
const LOAD_BATCH: u64 = 1000;
/// Time between samples.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Every this many samples goes in the text table (all of them in the JSON).
const PRINT_EVERY: usize = 10;
/// The longest wait for purge to empty the history list after the workload.
const DRAIN_LIMIT: Duration = Duration::from_mins(1);
/// The undo tablespace's file name in the database directory.
const UNDO_FILE: &str = "undo.ibu";

/// One sample of the run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Sample {
    /// Seconds since the workload started.
    t_s: f64,
    /// Transactions committed by the workload so far.
    commits: u64,
    /// The table's file length.
    table_file_bytes: u64,
    /// The table's size in pages (high-water mark).
    table_size_pages: u32,
    /// Bytes the table's file occupies on disk.
    table_allocated_bytes: u64,
    /// `undo.ibu`'s length.
    undo_file_bytes: u64,
    /// Bytes `undo.ibu` occupies on disk.
    undo_allocated_bytes: u64,
    /// Committed undo logs not purged yet.
    history_list_length: u64,
    /// Delete-marked rows purge removed since open.
    rows_purged: u64,
    /// Undo logs purged since open.
    logs_purged: u64,
}

/// What one updating thread did.
#[derive(Clone, Copy, Debug, Default)]
struct Worker {
    commits: u64,
    rows_updated: u64,
    deletes: u64,
    reinserts: u64,
    /// Transactions that failed on a lock (deadlock or timeout) and were retried.
    retries: u64,
}

impl Experiment for HistoryGrowth {
    fn name(&self) -> &'static str {
        "history-growth"
    }

    fn about(&self) -> &'static str {
        "table and undo sizes, history list length and purge over a steady update workload \
         (5-row transactions, 1 in 10 deleting a row the next re-inserts): does purge keep the \
         table size stable?"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (100_000, 300.0),
            quick: (5_000, 10.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let rows = ctx.rows;
        workload::fresh_dir(&ctx.dir)?;
        // The table (≈ 230 bytes a row at the load's fill) and its undo fit in the pool: the
        // figure is purge's, not the disk's.
        let pool_bytes = (64usize << 20).max(rows as usize * 800);
        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .durability(Durability::Background),
        )?;
        let table = db.create_table(workload::TABLE, TableOptions::default())?;
        load(&db, &table, rows)?;
        let loaded = db.check_table(&table)?;
        let base = db.status();
        let start = Instant::now();
        let stop = AtomicBool::new(false);
        let mut samples = vec![sample(&db, &table, &base, Duration::ZERO)?];
        let (results, sampled) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..ctx.threads)
                .map(|t| {
                    let (db, table, stop) = (&db, &table, &stop);
                    s.spawn(move || updater(db, table, rows, t as u64, stop))
                })
                .collect();
            let sampled = sample_until(&db, &table, &base, start, ctx.phase, &mut samples);
            stop.store(true, Ordering::Relaxed);
            let results: Vec<LabResult<Worker>> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("an updating thread panicked".into()))
                })
                .collect();
            (results, sampled)
        });
        let elapsed = start.elapsed();
        sampled?;
        let mut total = Worker::default();
        for result in results {
            let w = result?;
            total.commits += w.commits;
            total.rows_updated += w.rows_updated;
            total.deletes += w.deletes;
            total.reinserts += w.reinserts;
            total.retries += w.retries;
        }
        let at_stop = sample(&db, &table, &base, elapsed)?;
        samples.push(at_stop);

        // After the workload: purge catches up, then the tree and the row count are checked.
        let drain_start = Instant::now();
        let drained = wait_for_purge(&db, DRAIN_LIMIT);
        let drain_s = drain_start.elapsed().as_secs_f64();
        let after_drain = sample(&db, &table, &base, start.elapsed())?;
        let tree = db.check_table(&table)?;
        let mut counted = 0u64;
        for row in db.range(&table, ..)? {
            row?;
            counted += 1;
        }
        db.close()?;
        if counted != rows {
            return Err(format!(
                "engine bug: {rows} rows were loaded and every row deleted was re-inserted, \
                 but a full scan counts {counted}"
            )
            .into());
        }
        let closed_table = std::fs::metadata(
            ctx.dir
                .join("tables")
                .join(format!("{}.ibd", workload::TABLE)),
        )
        .map(|m| m.len())
        .ok();
        let closed_undo = std::fs::metadata(ctx.dir.join(UNDO_FILE))
            .map(|m| m.len())
            .ok();

        // The summary is of the run's samples (not of the drain after it): 10% into the run
        // against its end.
        let early = samples.get(samples.len() / 10).copied().unwrap_or_default();
        let growth_pct =
            (at_stop.table_file_bytes as f64 / (early.table_file_bytes as f64).max(1.0) - 1.0)
                * 100.0;
        let growth_pages_pct = (f64::from(at_stop.table_size_pages)
            / f64::from(early.table_size_pages).max(1.0)
            - 1.0)
            * 100.0;
        let max_history = samples
            .iter()
            .map(|s| s.history_list_length)
            .max()
            .unwrap_or(0);
        let max_undo = samples.iter().map(|s| s.undo_file_bytes).max().unwrap_or(0);
        let tps = total.commits as f64 / elapsed.as_secs_f64().max(1e-9);

        let mut t = TextTable::new(&[
            "t s",
            "commits",
            "commits/s",
            "table MiB",
            "table pages",
            "undo MiB",
            "history",
            "rows purged",
            "logs purged",
        ]);
        let mib = |b: u64| format!("{:.2}", b as f64 / f64::from(1u32 << 20));
        let mut previous: Option<Sample> = None;
        let last = samples.len().saturating_sub(1);
        for (i, s) in samples.iter().enumerate() {
            if !i.is_multiple_of(PRINT_EVERY) && i != last {
                continue;
            }
            let rate = previous.map_or_else(
                || "-".to_owned(),
                |p| {
                    format!(
                        "{:.0}",
                        (s.commits - p.commits) as f64 / (s.t_s - p.t_s).max(1e-9)
                    )
                },
            );
            t.row(vec![
                format!("{:.1}", s.t_s),
                s.commits.to_string(),
                rate,
                mib(s.table_file_bytes),
                s.table_size_pages.to_string(),
                mib(s.undo_file_bytes),
                s.history_list_length.to_string(),
                s.rows_purged.to_string(),
                s.logs_purged.to_string(),
            ]);
            previous = Some(*s);
        }
        let text = format!(
            "{rows} rows of {VALUE_BYTES}-byte values, {} updating threads for {:.1} s \
             ({ROWS_PER_TXN} rows a transaction, 1 in {DELETE_ONE_IN} deleting a row the \
             next re-inserts; Durability::Background); every {PRINT_EVERY}th sample of {} \
             and the last\n{}\
             {} commits ({tps:.0}/s): {} rows updated, {} deleted, {} re-inserted, {} retried \
             on a lock\n\
             table at 10% of the run ({:.1} s): {} MiB, {} pages; at the end: {} MiB, {} pages: \
             {growth_pct:+.1}% bytes, {growth_pages_pct:+.1}% pages\n\
             history list: max {max_history}, {} at the end; undo file: {} MiB at the end (max \
             {} MiB)\n\
             after the workload: purge {} in {drain_s:.1} s (history {}), {} rows purged in \
             all; tree: {} records, {} delete-marked, {} leaf pages (just loaded: {} records, \
             {} leaf pages); full scan: {counted} rows (loaded {rows}); after close: table {} \
             MiB, undo {} MiB\n",
            ctx.threads,
            elapsed.as_secs_f64(),
            samples.len(),
            t.render(),
            total.commits,
            total.rows_updated,
            total.deletes,
            total.reinserts,
            total.retries,
            early.t_s,
            mib(early.table_file_bytes),
            early.table_size_pages,
            mib(at_stop.table_file_bytes),
            at_stop.table_size_pages,
            at_stop.history_list_length,
            mib(at_stop.undo_file_bytes),
            mib(max_undo),
            if drained {
                "emptied the history list"
            } else {
                "did NOT empty the history list"
            },
            after_drain.history_list_length,
            after_drain.rows_purged,
            tree.records,
            tree.delete_marked,
            tree.leaf_pages,
            loaded.records,
            loaded.leaf_pages,
            closed_table.map_or_else(|| "-".to_owned(), mib),
            closed_undo.map_or_else(|| "-".to_owned(), mib),
        );
        let svg = figure(&samples)?;
        Ok(Outcome {
            text,
            results: json!({
                "samples": samples,
                "summary": {
                    "elapsed_s": elapsed.as_secs_f64(),
                    "commits": total.commits,
                    "commits_per_s": tps,
                    "rows_updated": total.rows_updated,
                    "deletes": total.deletes,
                    "reinserts": total.reinserts,
                    "lock_retries": total.retries,
                    "table_bytes_at_10pct": early.table_file_bytes,
                    "table_pages_at_10pct": early.table_size_pages,
                    "table_bytes_at_end": at_stop.table_file_bytes,
                    "table_pages_at_end": at_stop.table_size_pages,
                    "table_growth_pct": growth_pct,
                    "table_pages_growth_pct": growth_pages_pct,
                    "max_history_list_length": max_history,
                    "history_list_length_at_end": at_stop.history_list_length,
                    "undo_bytes_at_end": at_stop.undo_file_bytes,
                    "undo_bytes_max": max_undo,
                },
                "after": {
                    "purge_drained": drained,
                    "drain_s": drain_s,
                    "sample": after_drain,
                    "tree_records": tree.records,
                    "tree_delete_marked": tree.delete_marked,
                    "tree_leaf_pages": tree.leaf_pages,
                    "tree_internal_pages": tree.internal_pages,
                    "tree_overflow_pages": tree.overflow_pages,
                    "loaded_records": loaded.records,
                    "loaded_leaf_pages": loaded.leaf_pages,
                    "rows_counted": counted,
                    "table_bytes_after_close": closed_table,
                    "undo_bytes_after_close": closed_undo,
                },
            }),
            settings: json!({
                "value_bytes": VALUE_BYTES,
                "rows_per_transaction": ROWS_PER_TXN,
                "delete_one_in": DELETE_ONE_IN,
                "sample_every_s": SAMPLE_EVERY.as_secs_f64(),
                "pool_bytes": pool_bytes,
                "durability": "Background",
            }),
            svg: Some(svg),
        })
    }
}

/// A value of [`VALUE_BYTES`] printable bytes from `rng`.
fn random_value(rng: &mut Rng) -> Vec<u8> {
    (0..VALUE_BYTES)
        .map(|_| b'a' + rng.below(26) as u8)
        .collect()
}

/// Loads rows `0..rows` in key order, [`LOAD_BATCH`] per transaction.
fn load(db: &Engine, table: &Table, rows: u64) -> LabResult<()> {
    let mut rng = Rng::new(0x10AD);
    let mut progress = Progress::new("loading", rows, "rows");
    let mut id = 0;
    while id < rows {
        let end = (id + LOAD_BATCH).min(rows);
        let mut tx = db.begin();
        for k in id..end {
            tx.put(table, &workload::key(k), &random_value(&mut rng))?;
        }
        tx.commit()?;
        id = end;
        progress.set(id);
    }
    progress.finish();
    Ok(())
}

/// One sample, `t` into the run; commits counted from `base`.
fn sample(db: &Engine, table: &Table, base: &EngineStatus, t: Duration) -> LabResult<Sample> {
    let status = db.status();
    let ts = status
        .tables
        .iter()
        .find(|s| s.name == table.name())
        .ok_or_else(|| format!("table {} is missing from the status", table.name()))?;
    let (undo_file_bytes, undo_allocated_bytes) = undo_size(db)?;
    Ok(Sample {
        t_s: t.as_secs_f64(),
        commits: status.commits - base.commits,
        table_file_bytes: ts.file_bytes,
        table_size_pages: ts.size_pages,
        table_allocated_bytes: ts.allocated_bytes,
        undo_file_bytes,
        undo_allocated_bytes,
        history_list_length: status.mvcc.history_list_length,
        rows_purged: status.mvcc.rows_purged,
        logs_purged: status.mvcc.logs_purged,
    })
}

/// `undo.ibu`'s length and the bytes it occupies on disk.
fn undo_size(db: &Engine) -> LabResult<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let path = db.dir().join(UNDO_FILE);
    let m = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((m.len(), m.blocks() * 512))
}

/// Samples every [`SAMPLE_EVERY`] from `start` while less than `duration` has passed, then
/// sleeps out the rest (the caller takes the last sample when the updaters have stopped).
fn sample_until(
    db: &Engine,
    table: &Table,
    base: &EngineStatus,
    start: Instant,
    duration: Duration,
    samples: &mut Vec<Sample>,
) -> LabResult<()> {
    let every = SAMPLE_EVERY.as_secs_f64();
    // The sample times strictly inside the run: 1 s, 2 s … before its end.
    let ticks = ((duration.as_secs_f64() / every).ceil() as u32).saturating_sub(1);
    let mut progress = Progress::new("updating", u64::from(ticks) + 1, "s");
    for tick in 1..=ticks {
        let due = SAMPLE_EVERY * tick;
        if let Some(left) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(left);
        }
        samples.push(sample(db, table, base, start.elapsed())?);
        progress.set(u64::from(tick));
    }
    if let Some(left) = duration.checked_sub(start.elapsed()) {
        std::thread::sleep(left);
    }
    progress.set(u64::from(ticks) + 1);
    progress.finish();
    Ok(())
}

/// What a transaction does to one row.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    /// A new value (an update, or the re-insert of a row this thread deleted).
    Put,
    /// Delete the row.
    Delete,
}

/// One thread: small update transactions until told to stop, then the re-insert of a row it
/// deleted last, if any.
fn updater(
    db: &Engine,
    table: &Table,
    rows: u64,
    thread: u64,
    stop: &AtomicBool,
) -> LabResult<Worker> {
    let mut rng = Rng::new(0x0415_70A7 ^ (thread << 32));
    let mut w = Worker::default();
    // A row this thread deleted and has not re-inserted yet.
    let mut pending: Option<u64> = None;
    let mut writes: Vec<(u64, Write)> = Vec::with_capacity(ROWS_PER_TXN + 1);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if stopping && pending.is_none() {
            break;
        }
        writes.clear();
        if !stopping {
            writes.extend((0..ROWS_PER_TXN).map(|_| (rng.below(rows), Write::Put)));
        }
        let delete = !stopping && pending.is_none() && rng.below(DELETE_ONE_IN) == 0;
        if delete {
            if let Some(first) = writes.first_mut() {
                first.1 = Write::Delete;
            }
        }
        if let Some(id) = pending {
            writes.push((id, Write::Put));
        }
        // Key order: every transaction locks its rows in the same order, so none deadlocks.
        // A row twice: the put wins (the re-insert must happen).
        writes.sort_unstable_by_key(|&(id, write)| (id, write == Write::Delete));
        writes.dedup_by_key(|(id, _)| *id);
        match transaction(db, table, &writes, &mut rng) {
            Ok(()) => {}
            Err(Error::Deadlock { .. } | Error::LockWaitTimeout { .. }) => {
                w.retries += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        w.commits += 1;
        for &(id, write) in &writes {
            match write {
                Write::Put if pending == Some(id) => w.reinserts += 1,
                Write::Put => w.rows_updated += 1,
                Write::Delete => w.deletes += 1,
            }
        }
        pending = writes
            .iter()
            .find(|(_, write)| *write == Write::Delete)
            .map(|(id, _)| *id);
    }
    Ok(w)
}

/// Applies `writes` in one transaction and commits it.
fn transaction(
    db: &Engine,
    table: &Table,
    writes: &[(u64, Write)],
    rng: &mut Rng,
) -> barracuda::Result<()> {
    let mut tx = db.begin();
    for &(id, write) in writes {
        let key = workload::key(id);
        match write {
            Write::Put => tx.put(table, &key, &random_value(rng))?,
            Write::Delete => tx.delete(table, &key)?,
        }
    }
    tx.commit()
}

/// Waits until the history list is empty, at most `limit`; returns whether it emptied.
fn wait_for_purge(db: &Engine, limit: Duration) -> bool {
    let start = Instant::now();
    while db.status().mvcc.history_list_length > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

fn figure(samples: &[Sample]) -> LabResult<String> {
    let series = |name: &str, f: &dyn Fn(&Sample) -> f64| Series {
        name: name.to_owned(),
        points: samples.iter().map(|s| (s.t_s, f(s))).collect(),
    };
    let mib = f64::from(1u32 << 20);
    plot::render(
        "history-growth: a steady update workload, table and undo sizes",
        &[
            Panel {
                title: "file sizes".into(),
                x_desc: "seconds".into(),
                y_desc: "MiB".into(),
                kind: PanelKind::Lines {
                    series: vec![
                        series("table file", &|s| s.table_file_bytes as f64 / mib),
                        series("undo.ibu", &|s| s.undo_file_bytes as f64 / mib),
                    ],
                    y_log: false,
                    x_nines: false,
                },
            },
            Panel {
                title: "history list length".into(),
                x_desc: "seconds".into(),
                y_desc: "committed undo logs not purged".into(),
                kind: PanelKind::Lines {
                    series: vec![series("history list length", &|s| {
                        s.history_list_length as f64
                    })],
                    y_log: false,
                    x_nines: false,
                },
            },
        ],
    )
}
