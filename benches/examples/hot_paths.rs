//! One-threaded loops over the read hot paths, for profilers (`perf record`, `valgrind
//! --tool=callgrind`): loads `ROWS` rows (default 1,000,000; 8-byte big-endian keys, 180-byte
//! values) in transactions of 1000, then runs each phase named in `PHASES` (default `get,scan`;
//! also `get_with`, `scan_with`: the lending reads; `view`: a snapshot taken and dropped;
//! `update` / `update1`: puts of random loaded rows, 10 / 1 a transaction;
//! `load` alone: only the load) for `OPS` operations (default 2,000,000 gets / 200,000 scans)
//! and prints the nanoseconds per operation. `get_quarter` reopens with a pool a quarter of the
//! table and prints the latency percentiles and the reader's context switches.
//!
//! `cargo run --release -p barracuda-benches --example hot_paths [ROWS] [PHASES] [OPS]`
//!
//! Environment: `HOT_PATHS_POLICY=legacy|backoff|eager` picks the free-page policy (default
//! eager); `HOT_PATHS_PAGE=4|8|16|32|64` the page size in KiB (default 16);
//! `HOT_PATHS_LOAD=random` loads the keys shuffled; `HOT_PATHS_PUT=many` loads each batch with
//! one `Transaction::put_many` instead of a `put` per row, `HOT_PATHS_PUT=sorted` the whole table
//! with one `Engine::load_sorted` (keys in order only); `HOT_PATHS_LOAD_POOL_PCT` sizes the pool for
//! the load (percent of the data, default 300); `HOT_PATHS_POOL_STATUS=1` prints the engine's
//! status after the load (phase `load`) and the pool's after `get_quarter`. The load also
//! prints the loading thread's own CPU time and context switches.
//!
//! The database directory is `HOT_PATHS_DIR` if set (kept, and loaded only if empty: profile
//! the reads without the load), else a temporary directory.

#![allow(
    clippy::unwrap_used,
    reason = "a measurement that fails should stop loudly"
)]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order"
)]

use std::hint::black_box;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use barracuda::{Durability, Engine, EngineOptions, FreePagePolicy, PageSize, Table, TableOptions};

const BATCH: u64 = 1000;
const VALUE_LEN: usize = 180;

/// xorshift64*: a fast, reproducible key stream.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn open(dir: &Path, pool_bytes: usize) -> Engine {
    let policy = match std::env::var("HOT_PATHS_POLICY").as_deref() {
        Ok("legacy") => FreePagePolicy::Legacy,
        Ok("backoff") => FreePagePolicy::Backoff,
        _ => FreePagePolicy::Eager,
    };
    let page = match std::env::var("HOT_PATHS_PAGE").as_deref() {
        Ok("4") => PageSize::K4,
        Ok("8") => PageSize::K8,
        Ok("32") => PageSize::K32,
        Ok("64") => PageSize::K64,
        _ => PageSize::K16,
    };
    let options = EngineOptions::default()
        .page_size(page)
        .buffer_pool_bytes(pool_bytes)
        .free_page_policy(policy)
        .durability(Durability::Background);
    Engine::open(dir, options).unwrap()
}

/// Loads keys `0..rows` in ascending order, or shuffled with `HOT_PATHS_LOAD=random`.
fn load(db: &Engine, t: &Table, rows: u64) {
    let mut keys: Vec<u64> = (0..rows).collect();
    if std::env::var("HOT_PATHS_LOAD").as_deref() == Ok("random") {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for i in (1..keys.len()).rev() {
            keys.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
    }
    let value_of = |k: u64| {
        let mut value = [b'7'; VALUE_LEN];
        value[..8].copy_from_slice(&k.wrapping_mul(2_654_435_761).to_le_bytes());
        value
    };
    let put = std::env::var("HOT_PATHS_PUT");
    if put.as_deref() == Ok("sorted") {
        assert!(
            keys.is_sorted(),
            "HOT_PATHS_PUT=sorted loads keys in order only"
        );
        db.load_sorted(t, keys.iter().map(|&k| (k.to_be_bytes(), value_of(k))))
            .unwrap();
        return;
    }
    let put_many = put.as_deref() == Ok("many");
    for batch in keys.chunks(BATCH as usize) {
        let mut tx = db.begin();
        if put_many {
            let rows: Vec<([u8; 8], [u8; VALUE_LEN])> = batch
                .iter()
                .map(|&k| (k.to_be_bytes(), value_of(k)))
                .collect();
            tx.put_many(t, rows.iter().map(|(k, v)| (&k[..], &v[..])))
                .unwrap();
        } else {
            for &k in batch {
                tx.put(t, &k.to_be_bytes(), &value_of(k)).unwrap();
            }
        }
        tx.commit().unwrap();
    }
}

fn report(phase: &str, ops: u64, started: Instant) {
    let ns = started.elapsed().as_nanos() as f64 / ops as f64;
    println!("{phase}: {ops} ops, {ns:.0} ns/op");
}

fn gets(db: &Engine, t: &Table, rows: u64, ops: u64, phase: &str) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let started = Instant::now();
    let mut found = 0u64;
    for _ in 0..ops {
        let k = rng.next() % rows;
        found += u64::from(db.get(t, &k.to_be_bytes()).unwrap().is_some());
    }
    report(phase, ops, started);
    assert_eq!(found, ops, "every key read was loaded");
}

/// Updates of random loaded rows, `per_txn` puts a transaction (the value's first byte changed,
/// so each is a real update): the write path on rows other transactions committed.
fn updates(db: &Engine, t: &Table, rows: u64, ops: u64, per_txn: u64) {
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    let mut value = [b'u'; VALUE_LEN];
    let started = Instant::now();
    let mut done = 0;
    while done < ops {
        let mut tx = db.begin();
        for _ in 0..per_txn {
            let k = rng.next() % rows;
            value[0] = value[0].wrapping_add(1);
            tx.put(t, &k.to_be_bytes(), &value).unwrap();
        }
        tx.commit().unwrap();
        done += per_txn;
    }
    report(&format!("update_{per_txn}_a_txn"), done, started);
}

/// Gets with each one's latency recorded: the miss path's tail.
fn gets_timed(db: &Engine, t: &Table, rows: u64, ops: u64) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    let switches_before = context_switches();
    let started = Instant::now();
    for _ in 0..ops {
        let k = rng.next() % rows;
        let one = Instant::now();
        let found = db.get_with(t, &k.to_be_bytes(), <[u8]>::len).unwrap();
        hist.saturating_record(one.elapsed().as_nanos() as u64);
        assert_eq!(found, Some(VALUE_LEN));
    }
    report("get_quarter", ops, started);
    println!(
        "  latency ns: p50 {} p99 {} p99.9 {} p99.99 {} max {}",
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99),
        hist.value_at_quantile(0.999),
        hist.value_at_quantile(0.9999),
        hist.max()
    );
    let (voluntary, involuntary) = context_switches();
    println!(
        "  this thread's context switches: {} voluntary (it blocked), {} involuntary (preempted)",
        voluntary - switches_before.0,
        involuntary - switches_before.1
    );
}

/// Nanoseconds this thread has run on a CPU so far (Linux's `schedstat`; 0 elsewhere).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// This thread's voluntary and involuntary context switches so far (Linux; zeros elsewhere).
fn context_switches() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

fn gets_with(db: &Engine, t: &Table, rows: u64, ops: u64) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let started = Instant::now();
    let mut bytes = 0usize;
    for _ in 0..ops {
        let k = rng.next() % rows;
        bytes += db
            .get_with(t, &k.to_be_bytes(), |v| black_box(v).len())
            .unwrap()
            .unwrap_or(0);
    }
    report("get_with", ops, started);
    assert_eq!(
        bytes as u64,
        ops * VALUE_LEN as u64,
        "every key read was loaded"
    );
}

fn scans_with(db: &Engine, t: &Table, rows: u64, ops: u64) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let started = Instant::now();
    let mut bytes = 0usize;
    for _ in 0..ops {
        let start = (rng.next() % (rows - 100)).to_be_bytes();
        let mut n = 0;
        db.scan(t, start.as_slice().., |_, v| {
            bytes += black_box(v).len();
            n += 1;
            if n == 100 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    }
    report("scan_with_100", ops, started);
    assert_eq!(bytes as u64, ops * 100 * VALUE_LEN as u64);
}

fn scans(db: &Engine, t: &Table, rows: u64, ops: u64) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let started = Instant::now();
    let mut bytes = 0usize;
    for _ in 0..ops {
        let start = (rng.next() % (rows - 100)).to_be_bytes();
        for row in db.range(t, start.as_slice()..).unwrap().take(100) {
            bytes += black_box(row.unwrap()).1.len();
        }
    }
    report("scan_100", ops, started);
    assert_eq!(bytes as u64, ops * 100 * VALUE_LEN as u64);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let phases = args.next().unwrap_or_else(|| "get,scan".to_owned());
    let ops: Option<u64> = args.next().and_then(|a| a.parse().ok());
    let temp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("HOT_PATHS_DIR").map_or_else(|| temp.path().to_owned(), Into::into);
    std::fs::create_dir_all(&dir).unwrap();
    let data_bytes = rows * (8 + VALUE_LEN as u64);
    // The pool while loading: three times the data (nothing evicted), or `HOT_PATHS_LOAD_POOL_PCT`
    // percent of it (dirty pages flushed from the LRU tail as the load goes).
    let load_pool_pct: u64 = std::env::var("HOT_PATHS_LOAD_POOL_PCT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(300);
    let db = open(&dir, (data_bytes * load_pool_pct / 100) as usize);
    let t = if db.list_tables().iter().any(|n| n == "t") {
        db.table("t").unwrap()
    } else {
        let t = db.create_table("t", TableOptions::default()).unwrap();
        let started = Instant::now();
        let cpu_before = thread_cpu_ns();
        let switches_before = context_switches();
        load(&db, &t, rows);
        report("load (rows)", rows, started);
        let switches = context_switches();
        // The loading thread's own CPU time: on two cores the background threads (log
        // writer, page cleaner) take turns with it, and wall time alone varies by a third
        // from run to run.
        println!(
            "  the loading thread on a CPU: {:.0} ns/row; context switches: {} voluntary, {} \
             involuntary",
            thread_cpu_ns().saturating_sub(cpu_before) as f64 / rows as f64,
            switches.0 - switches_before.0,
            switches.1 - switches_before.1
        );
        db.checkpoint().unwrap();
        t
    };
    if phases == "load" {
        if std::env::var_os("HOT_PATHS_POOL_STATUS").is_some() {
            println!("{}", db.status());
        }
        // Only the load (profile it without the reads).
        db.close().unwrap();
        return;
    }
    // Warm the pool.
    gets(&db, &t, rows, rows, "warm-up get");
    for phase in phases.split(',') {
        match phase {
            "get" => gets(&db, &t, rows, ops.unwrap_or(2_000_000), "get_warm"),
            "scan" => scans(&db, &t, rows, ops.unwrap_or(200_000)),
            "get_with" => gets_with(&db, &t, rows, ops.unwrap_or(2_000_000)),
            "update" => updates(&db, &t, rows, ops.unwrap_or(1_000_000), 10),
            "update1" => updates(&db, &t, rows, ops.unwrap_or(1_000_000), 1),
            "view" => {
                // What a consistent read's view costs by itself (every `range` and `scan`
                // takes one).
                let n = ops.unwrap_or(2_000_000);
                let started = Instant::now();
                for _ in 0..n {
                    black_box(db.snapshot());
                }
                report("read_view", n, started);
            }
            "scan_with" => scans_with(&db, &t, rows, ops.unwrap_or(200_000)),
            "get_quarter" => {}
            other => panic!("unknown phase {other}"),
        }
    }
    db.close().unwrap();
    if phases.split(',').any(|p| p == "get_quarter") {
        let file = std::fs::metadata(dir.join("tables/t.ibd")).unwrap().len();
        let db = open(&dir, (file / 4) as usize);
        let t = db.table("t").unwrap();
        gets(&db, &t, rows, rows / 2, "warm-up get (quarter pool)");
        gets_timed(&db, &t, rows, ops.unwrap_or(2_000_000));
        if std::env::var_os("HOT_PATHS_POOL_STATUS").is_some() {
            println!("{}", db.status().pool);
        }
        db.close().unwrap();
    }
}
