//! Engine micro-benchmarks (issue 3): point gets warm and with a pool a quarter of the data,
//! sequential and random inserts in batches of 1000 (no fsync; a `put` per row, and one
//! `put_many` per batch), 100-row range scans; the
//! lending reads (`get_with`, `scan`: rows seen in place) beside the copying ones; and an
//! empty table loaded with 100,000 sorted rows by `load_sorted` beside the same rows by
//! `put_many` in batches of 1000.
//!
//! `cargo bench -p barracuda-benches --bench engine`. Sizes: `BARRACUDA_BENCH_ROWS`
//! (default 1,000,000 rows of 8-byte big-endian keys and 180-byte values, as sysbench's).
//! Durability of the commits: `BARRACUDA_BENCH_DURABILITY` = `background` (default: the redo
//! log is written and synced by its background thread, InnoDB's
//! `innodb_flush_log_at_trx_commit = 0`, so a batch pays no fsync), `second` (written at each
//! commit, synced once a second) or `sync` (synced at each commit). Page size:
//! `BARRACUDA_BENCH_PAGE_KIB` = 4, 8, 16 (default), 32 or 64.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark that fails should stop loudly"
)]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, PageSize, Table, TableOptions};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const VALUE_LEN: usize = 180;
const BATCH: u64 = 1000;

fn rows() -> u64 {
    std::env::var("BARRACUDA_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn value(k: u64) -> [u8; VALUE_LEN] {
    // sysbench-like: groups of digits and dashes; the first 8 bytes vary with the key. Built
    // from a template so the benchmark measures the engine, not the generator.
    const TEMPLATE: [u8; VALUE_LEN] = {
        let mut v = [b'-'; VALUE_LEN];
        let mut i = 0;
        while i < VALUE_LEN {
            if i % 12 != 11 {
                v[i] = b'0' + ((i * 7) % 10) as u8;
            }
            i += 1;
        }
        v
    };
    let mut v = TEMPLATE;
    v[..8].copy_from_slice(&k.wrapping_mul(2_654_435_761).to_le_bytes());
    v
}

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

fn load(db: &Engine, t: &Table, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut tx = db.begin();
        for k in start..(start + BATCH).min(n) {
            tx.put(t, &k.to_be_bytes(), &value(k)).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn durability() -> Durability {
    match std::env::var("BARRACUDA_BENCH_DURABILITY").as_deref() {
        Ok("sync") => Durability::SyncEachCommit,
        Ok("second") => Durability::SyncEverySecond,
        Ok("background") | Err(_) => Durability::Background,
        Ok(other) => {
            panic!("BARRACUDA_BENCH_DURABILITY={other}: expected sync, second or background")
        }
    }
}

fn page_size() -> PageSize {
    let kib = std::env::var("BARRACUDA_BENCH_PAGE_KIB").unwrap_or_else(|_| "16".to_owned());
    kib.parse::<usize>()
        .ok()
        .and_then(|kib| PageSize::from_bytes(kib * 1024))
        .unwrap_or_else(|| panic!("BARRACUDA_BENCH_PAGE_KIB={kib}: expected 4, 8, 16, 32 or 64"))
}

fn open(dir: &std::path::Path, pool_bytes: usize) -> Engine {
    let options = EngineOptions::default()
        .page_size(page_size())
        .buffer_pool_bytes(pool_bytes)
        .durability(durability());
    Engine::open(dir, options).unwrap()
}

fn point_get(c: &mut Criterion) {
    let n = rows();
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 1 << 30);
    let t = db.create_table("sbtest", TableOptions::default()).unwrap();
    let started = Instant::now();
    load(&db, &t, n);
    eprintln!("loaded {n} rows in {:?}", started.elapsed());
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(1));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Warm the pool once.
    for k in 0..n {
        black_box(db.get(&t, &k.to_be_bytes()).unwrap());
    }
    group.bench_function(format!("point_get_warm/{n}_rows"), |b| {
        b.iter(|| {
            let k = rng.next() % n;
            black_box(db.get(&t, &k.to_be_bytes()).unwrap())
        });
    });
    group.bench_function(format!("range_scan_100/{n}_rows"), |b| {
        b.iter(|| {
            let k = rng.next() % (n - 100);
            let start = k.to_be_bytes();
            let mut rows = 0usize;
            for kv in db.range(&t, start.as_slice()..).unwrap().take(100) {
                rows += black_box(kv.unwrap()).1.len();
            }
            black_box(rows)
        });
    });
    // The lending reads: the value, and each row of a scan, seen in place (no copy).
    group.bench_function(format!("point_get_with_warm/{n}_rows"), |b| {
        b.iter(|| {
            let k = rng.next() % n;
            black_box(
                db.get_with(&t, &k.to_be_bytes(), |v| black_box(v).len())
                    .unwrap(),
            )
        });
    });
    group.bench_function(format!("scan_with_100/{n}_rows"), |b| {
        b.iter(|| {
            let k = rng.next() % (n - 100);
            let (mut rows, mut bytes) = (0usize, 0usize);
            db.scan(&t, k.to_be_bytes().as_slice().., |_, v| {
                bytes += black_box(v).len();
                rows += 1;
                if rows == 100 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
            black_box(bytes)
        });
    });
    group.finish();
    db.close().unwrap();

    // The same gets with a pool a quarter of the data: misses read from the OS page cache.
    let data_bytes = std::fs::metadata(dir.path().join("tables/sbtest.ibd"))
        .unwrap()
        .len();
    let db = open(dir.path(), (data_bytes / 4) as usize);
    let t = db.table("sbtest").unwrap();
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(1));
    group.bench_function(format!("point_get_quarter_pool/{n}_rows"), |b| {
        b.iter(|| {
            let k = rng.next() % n;
            black_box(db.get(&t, &k.to_be_bytes()).unwrap())
        });
    });
    group.finish();
    eprintln!("quarter-pool status:\n{}", db.status().pool);
    db.close().unwrap();
}

fn inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(BATCH));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    for (random, many) in [(false, false), (true, false), (false, true), (true, true)] {
        let name = match (random, many) {
            (false, false) => "insert_sequential_batch_1000",
            (true, false) => "insert_random_batch_1000",
            (false, true) => "insert_sequential_put_many_1000",
            (true, true) => "insert_random_put_many_1000",
        };
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), 1 << 30);
        let t = db.create_table("sbtest", TableOptions::default()).unwrap();
        let mut next = 0u64;
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (0..BATCH)
                        .map(|_| {
                            next += 1;
                            let k = if random { rng.next() } else { next };
                            (k.to_be_bytes(), value(k))
                        })
                        .collect::<Vec<([u8; 8], [u8; VALUE_LEN])>>()
                },
                |rows| {
                    let mut tx = db.begin();
                    if many {
                        tx.put_many(&t, rows.iter().map(|(k, v)| (&k[..], &v[..])))
                            .unwrap();
                    } else {
                        for (k, v) in &rows {
                            tx.put(&t, k, v).unwrap();
                        }
                    }
                    tx.commit().unwrap();
                },
                BatchSize::SmallInput,
            );
        });
        db.close().unwrap();
    }
    group.finish();
}

/// Drops its table when dropped: criterion drops a routine's outputs outside the timing, so
/// each loaded table goes before the next load without the drop being measured.
struct DropsTable<'e>(&'e Engine, String);

impl Drop for DropsTable<'_> {
    fn drop(&mut self) {
        self.0.drop_table(&self.1).unwrap();
    }
}

fn loads(c: &mut Criterion) {
    const LOAD_ROWS: u64 = 100_000;
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(LOAD_ROWS));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 1 << 30);
    let rows: Vec<([u8; 8], [u8; VALUE_LEN])> = (0..LOAD_ROWS)
        .map(|k| (k.to_be_bytes(), value(k)))
        .collect();
    let mut tables = 0u64;
    for sorted in [true, false] {
        let name = if sorted {
            "load_sorted_100k"
        } else {
            "load_put_many_100k"
        };
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    tables += 1;
                    let name = format!("load{tables}");
                    let t = db.create_table(&name, TableOptions::default()).unwrap();
                    (t, DropsTable(&db, name))
                },
                |(t, dropper)| {
                    if sorted {
                        db.load_sorted(&t, rows.iter().map(|(k, v)| (&k[..], &v[..])))
                            .unwrap();
                    } else {
                        for batch in rows.chunks(BATCH as usize) {
                            let mut tx = db.begin();
                            tx.put_many(&t, batch.iter().map(|(k, v)| (&k[..], &v[..])))
                                .unwrap();
                            tx.commit().unwrap();
                        }
                    }
                    dropper
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
    db.close().unwrap();
}

criterion_group!(benches, point_get, inserts, loads);
criterion_main!(benches);
