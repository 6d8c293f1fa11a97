//! The three free-page policies side by side (issue 3): point reads from several threads on a
//! table several times larger than the pool (so nearly every read needs a free frame), one run
//! per policy. Prints max and p99.9 read latency and `buffer_pool_wait_free` per policy.
//!
//! `cargo bench -p barracuda-benches --bench free_page_policies`. Sizes:
//! `BARRACUDA_BENCH_ROWS` (default 400,000), `BARRACUDA_BENCH_SECONDS` (default 10 per policy),
//! `BARRACUDA_BENCH_THREADS` (default 4).

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark that fails should stop loudly"
)]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]
#![allow(missing_docs, reason = "a benchmark binary")]

use std::time::{Duration, Instant};

use barracuda::{Engine, EngineOptions, FreePagePolicy, TableOptions};
use hdrhistogram::Histogram;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument other than ours means "not us".
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && a != "free_page_policies")
    {
        return;
    }
    let rows = env("BARRACUDA_BENCH_ROWS", 400_000);
    let seconds = env("BARRACUDA_BENCH_SECONDS", 10);
    let threads = env("BARRACUDA_BENCH_THREADS", 4);
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Engine::open(
            dir.path(),
            EngineOptions::default().buffer_pool_bytes(1 << 30),
        )
        .unwrap();
        let t = db.create_table("sbtest", TableOptions::default()).unwrap();
        for start in (0..rows).step_by(1000) {
            let mut tx = db.begin();
            for k in start..(start + 1000).min(rows) {
                tx.put(&t, &k.to_be_bytes(), &[b'x'; 180]).unwrap();
            }
            tx.commit().unwrap();
        }
        db.close().unwrap();
    }
    let data_bytes = std::fs::metadata(dir.path().join("tables/sbtest.ibd"))
        .unwrap()
        .len();
    let pool_bytes = (data_bytes / 8).max(4 << 20) as usize;
    println!(
        "{rows} rows, {:.1} MiB of data, pool {:.1} MiB, {threads} threads, {seconds} s per policy",
        data_bytes as f64 / 1_048_576.0,
        pool_bytes as f64 / 1_048_576.0
    );
    println!(
        "{:<8} {:>12} {:>10} {:>10} {:>12} {:>10} {:>14}",
        "policy", "reads/s", "p99 µs", "p99.9 µs", "max µs", "wait_free", "free wait max µs"
    );
    for policy in [
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
        FreePagePolicy::Eager,
    ] {
        let db = Engine::open(
            dir.path(),
            EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .free_page_policy(policy),
        )
        .unwrap();
        let t = db.table("sbtest").unwrap();
        let before = db.status().pool;
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let histograms: Vec<Histogram<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let (db, t) = (&db, &t);
                    s.spawn(move || {
                        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (i + 1);
                        while Instant::now() < deadline {
                            x ^= x >> 12;
                            x ^= x << 25;
                            x ^= x >> 27;
                            let k = x.wrapping_mul(0x2545_F491_4F6C_DD1D) % rows;
                            let t0 = Instant::now();
                            std::hint::black_box(db.get(t, &k.to_be_bytes()).unwrap());
                            h.saturating_record(t0.elapsed().as_micros() as u64);
                        }
                        h
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for h in &histograms {
            all.add(h).unwrap();
        }
        let after = db.status().pool;
        println!(
            "{:<8} {:>12.0} {:>10} {:>10} {:>12} {:>10} {:>14}",
            policy.to_string(),
            all.len() as f64 / seconds as f64,
            all.value_at_quantile(0.99),
            all.value_at_quantile(0.999),
            all.max(),
            after.wait_free - before.wait_free,
            after.free_wait.max_us,
        );
        db.close().unwrap();
    }
}
