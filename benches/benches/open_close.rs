//! Opening and closing an empty database with buffer pools of 64 MiB to 32 GiB (issue 7 §5):
//! both should take milliseconds whatever the pool size, because the frames are reserved, not
//! allocated, and memory is only backed as pages are used.
//!
//! `cargo bench -p barracuda-benches --bench open_close`. Pool sizes in MiB:
//! `BARRACUDA_BENCH_POOL_MIB` (comma-separated, default `64,1024,8192,32768`; 32 GiB needs only
//! address space, not memory).
//!
//! Two measurements per size: `open` (Engine::open on an empty directory: creating the files,
//! the pool and its threads) and `open_close` (the same, then `close`: checkpoint, stopping the
//! threads, releasing the frames).

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark that fails should stop loudly"
)]
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::time::{Duration, Instant};

use barracuda::{Engine, EngineOptions};
use criterion::{criterion_group, criterion_main, Criterion};

fn pool_sizes_mib() -> Vec<usize> {
    let Ok(sizes) = std::env::var("BARRACUDA_BENCH_POOL_MIB") else {
        return vec![64, 1024, 8192, 32768];
    };
    sizes
        .split(',')
        .map(|s| {
            s.trim().parse().unwrap_or_else(|e| {
                panic!("BARRACUDA_BENCH_POOL_MIB: {s:?} is not a size in MiB: {e}")
            })
        })
        .collect()
}

fn label(mib: usize) -> String {
    if mib.is_multiple_of(1024) {
        format!("{}GiB", mib / 1024)
    } else {
        format!("{mib}MiB")
    }
}

/// Opens a database in a fresh empty directory, timing the open; closes it, timing the close
/// only if `time_close`.
fn open_close(mib: usize, time_close: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions::default().buffer_pool_bytes(mib << 20);
    let start = Instant::now();
    let db = Engine::open(dir.path(), options).unwrap();
    let mut took = start.elapsed();
    let start = Instant::now();
    db.close().unwrap();
    if time_close {
        took += start.elapsed();
    }
    took
}

fn open_and_close(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for mib in pool_sizes_mib() {
        for (name, time_close) in [("open", false), ("open_close", true)] {
            group.bench_function(format!("{name}/{}", label(mib)), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| open_close(mib, time_close)).sum());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, open_and_close);
criterion_main!(benches);
