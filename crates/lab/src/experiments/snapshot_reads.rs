//! `lab snapshot-reads`: what reading through a read view costs against a plain read, on a table
//! that fits in the buffer pool (so the reads are CPU-bound and the figure is the read path's).
//!
//! A [`Snapshot`] pins one read view: every read through it checks each row's transaction id
//! against the view and, when the row changed after the view was taken, rebuilds the version
//! the view sees from the undo log. A plain `Engine::get` reads the newest committed version
//! (one comparison tells it that no view is needed when the row's last writer has ended); a
//! plain `Engine::range` takes a fresh read view per call. While no row changed since the
//! snapshot was taken, the view check is the only extra work, so a snapshot read should cost
//! about what a plain one does (the target: at most 1.15× the plain cost). Once rows
//! changed after it (an *old* snapshot) the changed ones are rebuilt from undo; that case is
//! measured and reported separately, against plain reads of the same table.
//!
//! Four cases on the freshly loaded table, single thread: (a) point gets on uniform random keys
//! with `Engine::get`, (b) the same through a snapshot taken once, (c) 100-row scans from a
//! uniform random start with `Engine::range`, (d) the same through the snapshot. Then a snapshot
//! is taken, every 10th row is updated (committed after it), and (e) gets / (f) 100-row scans
//! through that old snapshot are measured against plain gets and scans of the updated table.
//! Each plain / snapshot pair is measured in 3 rounds of `--seconds`; within a round one thread
//! alternates batches of ~0.5 ms of plain reads and of snapshot reads (which goes first flips
//! every batch) and times each reader's batches apart, both reading the same key sequence, so
//! that a slow moment of the machine falls on both and does not fake a ratio. The median round
//! of each is reported. Afterwards an untimed pass checks that the old snapshot returns the
//! values from before the update and plain reads the new ones; a mismatch fails the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, Snapshot, Table, TableOptions};
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind};
use crate::progress::{self, Progress};
use crate::report::TextTable;
use crate::workload::{self, Rng};
use crate::LabResult;

/// The experiment.
pub struct SnapshotReads;

/// The table's name.
const TABLE: &str = "snapshot_reads";
/// Bytes of a key: the row id as 16 decimal digits (fixed width keeps numeric order).
const KEY_BYTES: usize = 16;
/// Bytes of a value.
const VALUE_BYTES: usize = 100;
/// Rows a scan reads.
const SCAN_ROWS: usize = 100;
/// Rounds of every plain / snapshot pair.
const ROUNDS: usize = 3;
/// One row in this many is updated after the old snapshot is taken (10 %).
const UPDATE_EVERY: u64 = 10;
/// Rows per transaction, for the load and the update.
const BATCH: u64 = 1000;
/// The target: snapshot cost / plain cost.
const TARGET_RATIO: f64 = 1.15;
/// Point gets per batch (~0.5 ms): plain and snapshot batches alternate within a phase.
const GET_BATCH: u64 = 1000;
/// Scans per batch (~0.5 ms).
const SCAN_BATCH: u64 = 20;
/// Rows the untimed correctness pass reads.
const VERIFY_ROWS: u64 = 2000;

/// The key of row `id`: its 16 decimal digits.
fn key(id: u64) -> [u8; KEY_BYTES] {
    let mut buf = [b'0'; KEY_BYTES];
    let mut n = id;
    for digit in buf.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    buf
}

/// The value of row `id` after `version` updates: printable bytes from a seeded generator.
fn value(id: u64, version: u64) -> Vec<u8> {
    let mut rng = Rng::new(id ^ (version << 48) ^ 0x5A9_5407);
    (0..VALUE_BYTES)
        .map(|_| b'a' + rng.below(26) as u8)
        .collect()
}

/// What a phase reads with.
#[derive(Clone, Copy)]
enum Reader<'s, 'e> {
    /// `Engine::get` / `Engine::range`.
    Plain,
    /// `Snapshot::get` / `Snapshot::range`.
    Snapshot(&'s Snapshot<'e>),
}

/// What a phase does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Point gets of uniform random keys.
    Get,
    /// Scans of [`SCAN_ROWS`] rows from a uniform random start.
    Scan,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Scan => "scan100",
        }
    }
}

/// One timed phase: operations done and the time they took.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    ops: u64,
    elapsed: Duration,
}

impl Sample {
    fn ns_per_op(self) -> f64 {
        self.elapsed.as_secs_f64() * 1e9 / self.ops.max(1) as f64
    }
}

/// The rounds of one plain / snapshot pair.
#[derive(Default)]
struct Pair {
    plain: Vec<Sample>,
    snapshot: Vec<Sample>,
}

impl Pair {
    fn plain_ns(&self) -> f64 {
        median(&self.plain)
    }

    fn snapshot_ns(&self) -> f64 {
        median(&self.snapshot)
    }

    fn ratio(&self) -> f64 {
        self.snapshot_ns() / self.plain_ns().max(1e-9)
    }

    fn json(&self) -> serde_json::Value {
        let ns = |s: &[Sample]| s.iter().map(|s| s.ns_per_op()).collect::<Vec<_>>();
        json!({
            "plain_ns": self.plain_ns(),
            "snapshot_ns": self.snapshot_ns(),
            "ratio": self.ratio(),
            "plain_ops_per_s": 1e9 / self.plain_ns().max(1e-9),
            "snapshot_ops_per_s": 1e9 / self.snapshot_ns().max(1e-9),
            "rounds_plain_ns": ns(&self.plain),
            "rounds_snapshot_ns": ns(&self.snapshot),
            // Plain and snapshot batches alternate: both did the same operations each round.
            "rounds_ops": self.plain.iter().map(|s| s.ops).collect::<Vec<_>>(),
        })
    }
}

/// The median ns/op of the rounds.
fn median(samples: &[Sample]) -> f64 {
    let mut ns: Vec<f64> = samples.iter().map(|s| s.ns_per_op()).collect();
    ns.sort_by(f64::total_cmp);
    ns.get(ns.len() / 2).copied().unwrap_or(0.0)
}

impl Experiment for SnapshotReads {
    fn name(&self) -> &'static str {
        "snapshot-reads"
    }

    fn about(&self) -> &'static str {
        "point gets and 100-row scans through a Snapshot against plain reads, single thread, \
         table in the buffer pool; then through a snapshot older than an update of 10% of the \
         rows: ns per operation and snapshot / plain ratios (interleaved, median of 3 rounds)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (200_000, 5.0),
            quick: (20_000, 1.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let rows = ctx.rows.max(SCAN_ROWS as u64);
        workload::fresh_dir(&ctx.dir)?;
        // The whole table and the update's undo in the pool, with room to spare: the reads
        // measured are CPU-bound.
        let pool_bytes = (64usize << 20).max(rows as usize * 600);
        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .durability(Durability::Background),
        )?;
        let table = db.create_table(TABLE, TableOptions::default())?;
        load(&db, &table, rows)?;
        // One full scan: checks the load and leaves every leaf hot in the pool.
        let counted = count_rows(&db, &table)?;
        if counted != rows {
            return Err(
                format!("engine bug: a scan counts {counted} rows, {rows} were loaded").into(),
            );
        }
        // The load's undo purged first, so that purge does not run during the timed phases.
        let drained_after_load = wait_for_purge(&db, Duration::from_mins(1));

        // (a)-(d): a snapshot of the table as loaded; no row changes after it.
        let fresh = db.snapshot();
        let (get, scan) = run_rounds(&db, &table, &fresh, rows, ctx.phase, "")?;
        drop(fresh);

        // (e)/(f): a snapshot, then every 10th row updated and committed after it.
        let old = db.snapshot();
        let updated = update(&db, &table, rows)?;
        let history_after_update = db.status().mvcc.history_list_length;
        let (old_get, old_scan) = run_rounds(&db, &table, &old, rows, ctx.phase, "old ")?;
        let verified = verify(&db, &table, &old, rows)?;
        drop(old);
        let end = db.status();
        db.close()?;

        let mut t = TextTable::new(&[
            "case",
            "reader",
            "round 1 ns",
            "round 2 ns",
            "round 3 ns",
            "median ns/op",
            "ops/s",
            "ns/row",
            "vs plain",
        ]);
        let mut add = |case: &str, reader: &str, samples: &[Sample], op: Op, ratio: Option<f64>| {
            let ns = median(samples);
            let mut cells = vec![case.to_owned(), reader.to_owned()];
            for i in 0..ROUNDS {
                cells.push(
                    samples
                        .get(i)
                        .map_or_else(|| "-".to_owned(), |s| format!("{:.0}", s.ns_per_op())),
                );
            }
            cells.push(format!("{ns:.0}"));
            cells.push(format!("{:.0}", 1e9 / ns.max(1e-9)));
            let per_row = if op == Op::Scan {
                ns / SCAN_ROWS as f64
            } else {
                ns
            };
            cells.push(format!("{per_row:.0}"));
            cells.push(ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}x")));
            t.row(cells);
        };
        add("(a) get", "plain", &get.plain, Op::Get, None);
        add(
            "(b) get",
            "snapshot",
            &get.snapshot,
            Op::Get,
            Some(get.ratio()),
        );
        add("(c) scan100", "plain", &scan.plain, Op::Scan, None);
        add(
            "(d) scan100",
            "snapshot",
            &scan.snapshot,
            Op::Scan,
            Some(scan.ratio()),
        );
        add("get, 10% updated", "plain", &old_get.plain, Op::Get, None);
        add(
            "(e) get, 10% updated",
            "old snapshot",
            &old_get.snapshot,
            Op::Get,
            Some(old_get.ratio()),
        );
        add(
            "scan100, 10% updated",
            "plain",
            &old_scan.plain,
            Op::Scan,
            None,
        );
        add(
            "(f) scan100, 10% updated",
            "old snapshot",
            &old_scan.snapshot,
            Op::Scan,
            Some(old_scan.ratio()),
        );
        let met = get.ratio() <= TARGET_RATIO && scan.ratio() <= TARGET_RATIO;
        let text = format!(
            "{rows} rows ({KEY_BYTES}-byte keys, {VALUE_BYTES}-byte values) in a {} MiB pool, \
             single thread; each pair in {ROUNDS} rounds of {:.1} s, plain and snapshot batches \
             interleaved within a round (median round shown)\n{}\
             snapshot / plain: get {:.3}x, scan100 {:.3}x (target <= {TARGET_RATIO}x: {})\n\
             old snapshot (taken before {updated} rows = 1 in {UPDATE_EVERY} were updated; \
             history list {history_after_update}) / plain of the same table: get {:.3}x, \
             scan100 {:.3}x\n\
             verified: {verified} rows read through the old snapshot show the values from \
             before the update, plain reads the new ones\n",
            pool_bytes >> 20,
            ctx.phase.as_secs_f64(),
            t.render(),
            get.ratio(),
            scan.ratio(),
            if met { "met" } else { "MISSED" },
            old_get.ratio(),
            old_scan.ratio(),
        );
        let svg = figure(&get, &scan, &old_get, &old_scan)?;
        Ok(Outcome {
            text,
            results: json!({
                "get": get.json(),
                "scan100": scan.json(),
                "old_snapshot": {
                    "rows_updated": updated,
                    "history_list_length": history_after_update,
                    "get": old_get.json(),
                    "scan100": old_scan.json(),
                },
                "target_ratio": TARGET_RATIO,
                "target_met": met,
                "verified_rows": verified,
            }),
            settings: json!({
                "key_bytes": KEY_BYTES,
                "value_bytes": VALUE_BYTES,
                "scan_rows": SCAN_ROWS,
                "rounds": ROUNDS,
                "update_every": UPDATE_EVERY,
                "pool_bytes": pool_bytes,
                "durability": "Background",
                "threads": 1,
                "purge_drained_after_load": drained_after_load,
                "rows_purged_total": end.mvcc.rows_purged,
                "logs_purged_total": end.mvcc.logs_purged,
            }),
            svg: Some(svg),
        })
    }
}

/// Loads rows `0..rows` in key order, [`BATCH`] per transaction.
fn load(db: &Engine, table: &Table, rows: u64) -> LabResult<()> {
    let mut progress = Progress::new("loading", rows, "rows");
    let mut id = 0;
    while id < rows {
        let end = (id + BATCH).min(rows);
        let mut tx = db.begin();
        for k in id..end {
            tx.put(table, &key(k), &value(k, 0))?;
        }
        tx.commit()?;
        id = end;
        progress.set(id);
    }
    progress.finish();
    Ok(())
}

/// Updates every [`UPDATE_EVERY`]th row to its version 1; returns how many rows it updated.
fn update(db: &Engine, table: &Table, rows: u64) -> LabResult<u64> {
    let total = rows.div_ceil(UPDATE_EVERY);
    let mut progress = Progress::new("updating 10% of the rows", total, "rows");
    let mut done = 0;
    let mut id = 0;
    while id < rows {
        let mut tx = db.begin();
        let mut n = 0;
        while id < rows && n < BATCH {
            tx.put(table, &key(id), &value(id, 1))?;
            id += UPDATE_EVERY;
            n += 1;
        }
        tx.commit()?;
        done += n;
        progress.set(done);
    }
    progress.finish();
    Ok(done)
}

/// Rows a full plain scan returns.
fn count_rows(db: &Engine, table: &Table) -> LabResult<u64> {
    let mut n = 0;
    for row in db.range(table, ..)? {
        row?;
        n += 1;
    }
    Ok(n)
}

/// Waits until the history list is empty, at most `limit`; returns whether it emptied.
fn wait_for_purge(db: &Engine, limit: Duration) -> bool {
    let start = Instant::now();
    while db.status().mvcc.history_list_length > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// [`ROUNDS`] rounds of gets, then [`ROUNDS`] rounds of scans, each round `phase` long with
/// plain and snapshot reads interleaved in it.
fn run_rounds(
    db: &Engine,
    table: &Table,
    snap: &Snapshot<'_>,
    rows: u64,
    phase: Duration,
    label: &str,
) -> LabResult<(Pair, Pair)> {
    let mut get = Pair::default();
    let mut scan = Pair::default();
    for (op, pair) in [(Op::Get, &mut get), (Op::Scan, &mut scan)] {
        for round in 0..ROUNDS {
            // A new key sequence every round (the same for both readers of a round).
            let seed = 0x5_4A95 ^ ((round as u64) << 40);
            let (plain, snapshot) = measure(
                db,
                table,
                snap,
                op,
                rows,
                phase,
                seed,
                &format!("{} round {}: plain / {label}snapshot", op.name(), round + 1),
            )?;
            pair.plain.push(plain);
            pair.snapshot.push(snapshot);
        }
    }
    Ok((get, scan))
}

/// Runs `op` on one thread for `duration`, alternating batches of plain reads and reads
/// through `snap` (which goes first flips every batch), and times each reader's batches apart.
/// Both readers read the same key sequence. Returns `(plain, snapshot)`.
#[expect(
    clippy::too_many_arguments,
    reason = "one phase: engine, table, snapshot, operation, sizes, seed and its label"
)]
fn measure(
    db: &Engine,
    table: &Table,
    snap: &Snapshot<'_>,
    op: Op,
    rows: u64,
    duration: Duration,
    seed: u64,
    label: &str,
) -> LabResult<(Sample, Sample)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        let handle = s.spawn(move || {
            let mut plain = (Rng::new(seed), Sample::default());
            let mut snapshot = (Rng::new(seed), Sample::default());
            let mut batch = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let snapshot_first = !batch.is_multiple_of(2);
                for use_snapshot in [snapshot_first, !snapshot_first] {
                    let (reader, (rng, sample)) = if use_snapshot {
                        (Reader::Snapshot(snap), &mut snapshot)
                    } else {
                        (Reader::Plain, &mut plain)
                    };
                    let t0 = Instant::now();
                    let ops = match op {
                        Op::Get => gets(db, table, reader, rows, rng)?,
                        Op::Scan => scans(db, table, reader, rows, rng)?,
                    };
                    sample.elapsed += t0.elapsed();
                    sample.ops += ops;
                }
                batch += 1;
            }
            Ok((plain.1, snapshot.1))
        });
        progress::timed(label, duration);
        stop.store(true, Ordering::Relaxed);
        handle
            .join()
            .unwrap_or_else(|_| Err("a reading thread panicked".into()))
    })
}

/// One batch of [`GET_BATCH`] point gets of uniform random keys; returns the gets done.
fn gets(
    db: &Engine,
    table: &Table,
    reader: Reader<'_, '_>,
    rows: u64,
    rng: &mut Rng,
) -> LabResult<u64> {
    for _ in 0..GET_BATCH {
        let id = rng.below(rows);
        let k = key(id);
        let found = match reader {
            Reader::Plain => db.get(table, &k)?,
            Reader::Snapshot(snap) => snap.get(table, &k)?,
        };
        if found.is_none() {
            return Err(format!("engine bug: key {id} of {rows} loaded rows is not found").into());
        }
    }
    Ok(GET_BATCH)
}

/// One batch of [`SCAN_BATCH`] scans of [`SCAN_ROWS`] rows from uniform random starts;
/// returns the scans done.
fn scans(
    db: &Engine,
    table: &Table,
    reader: Reader<'_, '_>,
    rows: u64,
    rng: &mut Rng,
) -> LabResult<u64> {
    let starts = rows - SCAN_ROWS as u64 + 1;
    for _ in 0..SCAN_BATCH {
        let id = rng.below(starts);
        let k = key(id);
        let iter = match reader {
            Reader::Plain => db.range(table, k.as_slice()..)?,
            Reader::Snapshot(snap) => snap.range(table, k.as_slice()..)?,
        };
        let mut n = 0;
        for row in iter.take(SCAN_ROWS) {
            row?;
            n += 1;
        }
        if n != SCAN_ROWS {
            return Err(format!(
                "engine bug: a scan from row {id} of {rows} returned {n} rows, not {SCAN_ROWS}"
            )
            .into());
        }
    }
    Ok(SCAN_BATCH)
}

/// Untimed: `old` (taken before the update) must show every row's original value, plain reads
/// the updated one, by point get and by scan. Returns the rows checked.
fn verify(db: &Engine, table: &Table, old: &Snapshot<'_>, rows: u64) -> LabResult<u64> {
    let mut rng = Rng::new(0x001D_5EED);
    let mut checked = 0;
    let expect = |id: u64, got: Option<Vec<u8>>, version: u64, how: &str| -> LabResult<()> {
        if got.as_deref() == Some(value(id, version).as_slice()) {
            Ok(())
        } else {
            Err(format!(
                "engine bug: {how} of row {id} does not return its version {version} ({})",
                got.map_or_else(|| "absent".to_owned(), |v| format!("{} bytes", v.len()))
            )
            .into())
        }
    };
    let current = |id: u64| u64::from(id.is_multiple_of(UPDATE_EVERY));
    for _ in 0..VERIFY_ROWS.min(rows) {
        let id = rng.below(rows);
        expect(id, old.get(table, &key(id))?, 0, "an old-snapshot get")?;
        expect(id, db.get(table, &key(id))?, current(id), "a plain get")?;
        checked += 1;
    }
    let from = rng.below(rows - SCAN_ROWS as u64 + 1);
    let k = key(from);
    for (i, row) in old
        .range(table, k.as_slice()..)?
        .take(SCAN_ROWS)
        .enumerate()
    {
        let (got_key, got) = row?;
        let id = from + i as u64;
        if got_key != key(id) {
            return Err(
                format!("engine bug: an old-snapshot scan skips or repeats row {id}").into(),
            );
        }
        expect(id, Some(got), 0, "an old-snapshot scan")?;
        checked += 1;
    }
    for (i, row) in db.range(table, k.as_slice()..)?.take(SCAN_ROWS).enumerate() {
        let (got_key, got) = row?;
        let id = from + i as u64;
        if got_key != key(id) {
            return Err(format!("engine bug: a plain scan skips or repeats row {id}").into());
        }
        expect(id, Some(got), current(id), "a plain scan")?;
        checked += 1;
    }
    Ok(checked)
}

fn figure(get: &Pair, scan: &Pair, old_get: &Pair, old_scan: &Pair) -> LabResult<String> {
    let bars = |fresh: &Pair, old: &Pair, scale: f64| {
        vec![
            ("plain".to_owned(), fresh.plain_ns() / scale, 0),
            ("snapshot".to_owned(), fresh.snapshot_ns() / scale, 1),
            ("plain, 10% updated".to_owned(), old.plain_ns() / scale, 2),
            (
                "old snapshot, 10% updated".to_owned(),
                old.snapshot_ns() / scale,
                3,
            ),
        ]
    };
    plot::render(
        "snapshot-reads: reading through a read view vs plain reads (median of 3 rounds)",
        &[
            Panel {
                title: "point get".into(),
                x_desc: "reader".into(),
                y_desc: "ns per get".into(),
                kind: PanelKind::Bars {
                    bars: bars(get, old_get, 1.0),
                },
            },
            Panel {
                title: format!("{SCAN_ROWS}-row scan"),
                x_desc: "reader".into(),
                y_desc: "us per scan".into(),
                kind: PanelKind::Bars {
                    bars: bars(scan, old_scan, 1000.0),
                },
            },
        ],
    )
}
