//! The sysbench-like workload: rows of 8-byte big-endian keys and 180-byte values, loaded in key
//! order, and threads of uniform random point selects timed one by one.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Engine, EngineOptions, Table, TableOptions};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::progress::{self, Progress};
use crate::LabResult;

/// The table every experiment uses (sysbench's name).
pub const TABLE: &str = "sbtest1";
/// Bytes of a value: sysbench's `c CHAR(120)` and `pad CHAR(60)`.
pub const VALUE_BYTES: usize = 180;
/// Width of a timeline bucket.
pub const BUCKET: Duration = Duration::from_millis(100);
/// Rows per load transaction.
const LOAD_BATCH: u64 = 1000;

/// The key of row `id`: 8 bytes, big-endian so that byte order is numeric order.
#[expect(
    clippy::big_endian_bytes,
    reason = "keys are compared with memcmp: big-endian keeps numeric order"
)]
pub fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// SplitMix64: a small, fast, seedable generator (the workload needs speed, not quality).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; `n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// sysbench's value shape: groups of 11 random digits separated by `-`.
pub fn value(id: u64) -> Vec<u8> {
    let mut rng = Rng::new(id ^ 0x5EED);
    (0..VALUE_BYTES)
        .map(|i| {
            if i % 12 == 11 {
                b'-'
            } else {
                b'0' + (rng.below(10) as u8)
            }
        })
        .collect()
}

/// Creates the database in `dir` (which must not hold one) and loads `rows` rows into
/// [`TABLE`]; closes it. Returns the size of the table's B-tree in bytes.
pub fn load(dir: &Path, rows: u64, pool_bytes: usize) -> LabResult<u64> {
    load_with(
        dir,
        rows,
        EngineOptions::default().buffer_pool_bytes(pool_bytes),
        value,
    )
}

/// [`load`] with the engine opened with `options` and row `k` given the value `value(k)`:
/// batches of [`LOAD_BATCH`] rows in key order, the tree checked (every record there), then
/// closed. Returns the size of the table's B-tree in bytes.
pub fn load_with(
    dir: &Path,
    rows: u64,
    options: EngineOptions,
    value: impl Fn(u64) -> Vec<u8>,
) -> LabResult<u64> {
    let db = Engine::open(dir, options)?;
    let table = db.create_table(TABLE, TableOptions::default())?;
    let mut progress = Progress::new("loading", rows, "rows");
    let mut id = 0;
    while id < rows {
        let end = (id + LOAD_BATCH).min(rows);
        let mut tx = db.begin();
        for k in id..end {
            tx.put(&table, &key(k), &value(k))?;
        }
        tx.commit()?;
        id = end;
        progress.set(id);
    }
    progress.finish();
    // The B-tree's own pages (not the file's extent-rounded high-water mark); the walk also
    // checks the tree the experiment is about to measure.
    let tree = db.check_table(&table)?;
    if tree.records != rows {
        return Err(format!(
            "engine bug: {} records in the tree after loading {rows}",
            tree.records
        )
        .into());
    }
    let pages = tree.leaf_pages + tree.internal_pages + tree.overflow_pages;
    let bytes = pages * db.page_size().bytes() as u64;
    db.close()?;
    Ok(bytes)
}

/// Makes `dir` an empty directory, deleting a previous Barracuda database there (and refusing to
/// delete anything else).
pub fn fresh_dir(dir: &Path) -> LabResult<()> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)?.next().is_none();
        if !empty && !dir.join("system.ibs").exists() {
            return Err(format!(
                "{} exists and is not a Barracuda database: refusing to delete it",
                dir.display()
            )
            .into());
        }
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// One timeline bucket of a point-select run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Bucket {
    /// Queries started in the bucket.
    pub queries: u64,
    /// Longest of their latencies, ns.
    pub max_ns: u64,
}

/// Latency percentiles, ns.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Percentiles {
    /// Queries measured.
    pub count: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// 99.99th percentile, ns.
    pub p9999_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
}

impl Percentiles {
    /// Summarises a histogram of ns.
    pub fn of(h: &Histogram<u64>) -> Self {
        Self {
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
        }
    }
}

/// The result of [`point_selects`].
pub struct SelectRun {
    /// Queries done.
    pub queries: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Latency histogram, ns.
    pub hist: Histogram<u64>,
    /// Per 100 ms of the run: queries and max latency.
    pub timeline: Vec<Bucket>,
}

impl SelectRun {
    /// Queries per second.
    pub fn qps(&self) -> f64 {
        self.queries as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// A latency-distribution curve for plots: `(percentile, latency ns)` pairs.
    pub fn distribution(&self) -> Vec<(f64, u64)> {
        distribution(&self.hist)
    }
}

/// `(percentile, ns)` points from 0 % to 99.999 % and the max, spaced evenly in "nines".
pub fn distribution(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    let mut points = Vec::new();
    if h.is_empty() {
        return points;
    }
    for i in 0..=50 {
        // nines from 0 to 5 in steps of 0.1: q = 1 - 10^-nines
        let nines = f64::from(i) / 10.0;
        let q = 1.0 - 10f64.powf(-nines);
        points.push((q * 100.0, h.value_at_quantile(q)));
    }
    points.push((100.0, h.max()));
    points
}

/// A new latency histogram in ns (1 ns .. 1 h, 3 significant digits).
pub fn new_histogram() -> LabResult<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 3_600_000_000_000, 3)?)
}

/// Runs `threads` threads of uniform random point selects on `rows` rows for `duration`, timing
/// each query. A key that is not found fails the run: every key `0..rows` was loaded.
pub fn point_selects(
    db: &Engine,
    table: &Table,
    rows: u64,
    threads: usize,
    duration: Duration,
    label: &str,
) -> LabResult<SelectRun> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let results: Vec<LabResult<WorkerResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || worker(db, table, rows, t as u64, start, stop))
            })
            .collect();
        progress::timed(label, duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a point-select thread panicked".into()))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let mut hist = new_histogram()?;
    let mut timeline: Vec<Bucket> = Vec::new();
    let mut queries = 0;
    for result in results {
        let (n, h, buckets) = result?;
        queries += n;
        hist.add(&h)?;
        if timeline.len() < buckets.len() {
            timeline.resize(buckets.len(), Bucket::default());
        }
        for (into, b) in timeline.iter_mut().zip(&buckets) {
            into.queries += b.queries;
            into.max_ns = into.max_ns.max(b.max_ns);
        }
    }
    // Only whole buckets: the last, partial one would read as a drop in throughput.
    timeline.truncate((elapsed.as_millis() / BUCKET.as_millis()) as usize);
    Ok(SelectRun {
        queries,
        elapsed,
        hist,
        timeline,
    })
}

/// What one point-select thread measured: queries, latency histogram (ns), timeline.
type WorkerResult = (u64, Histogram<u64>, Vec<Bucket>);

fn worker(
    db: &Engine,
    table: &Table,
    rows: u64,
    thread: u64,
    start: Instant,
    stop: &AtomicBool,
) -> LabResult<WorkerResult> {
    let mut rng = Rng::new(0xBA44_AC0D ^ (thread << 32));
    let mut hist = new_histogram()?;
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut queries = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let id = rng.below(rows);
        let t0 = Instant::now();
        let found = db.get(table, &key(id))?;
        let t1 = Instant::now();
        if found.is_none() {
            return Err(format!("engine bug: key {id} of {rows} loaded rows is not found").into());
        }
        let ns = u64::try_from((t1 - t0).as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        hist.saturating_record(ns);
        let bucket =
            (t0.saturating_duration_since(start).as_millis() / BUCKET.as_millis()) as usize;
        if buckets.len() <= bucket {
            buckets.resize(bucket + 1, Bucket::default());
        }
        if let Some(b) = buckets.get_mut(bucket) {
            b.queries += 1;
            b.max_ns = b.max_ns.max(ns);
        }
        queries += 1;
    }
    Ok((queries, hist, buckets))
}
