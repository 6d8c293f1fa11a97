//! Wall and CPU time of a load: `ROWS` rows (default 300,000) of 8-byte keys and 180-byte
//! values, in transactions of 1000, sequential then random keys, each into a fresh database
//! with a 1 GiB pool and `Durability::Background` (the redo log written and synced by its
//! background thread, no fsync per commit: what `benches/engine.rs` measures by default).
//!
//! `cargo run --release -p barracuda-benches --example load_cpu [ROWS]`
//!
//! CPU time (user + system of the whole process, every engine thread included, from
//! `/proc/self/stat`) is what this is for: on a machine other work keeps busy, wall time
//! measures the neighbours, while the CPU a load costs stays comparable between two builds.

#![allow(
    clippy::unwrap_used,
    reason = "a measurement that fails should stop loudly"
)]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order"
)]

use std::time::Instant;

use barracuda::{Durability, Engine, EngineOptions, TableOptions};
use barracuda_benches::cpu_seconds;

const BATCH: u64 = 1000;

fn main() {
    let rows: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300_000);
    let value = [b'7'; 180];
    for random in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let options = EngineOptions::default()
            .buffer_pool_bytes(1 << 30)
            .durability(Durability::Background);
        let db = Engine::open(dir.path(), options).unwrap();
        let t = db.create_table("t", TableOptions::default()).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        for batch in 0..rows / BATCH {
            let mut tx = db.begin();
            for i in 0..BATCH {
                let k = if random {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                } else {
                    batch * BATCH + i
                };
                let mut v = value;
                v[..8].copy_from_slice(&k.to_le_bytes());
                tx.put(&t, &k.to_be_bytes(), &v).unwrap();
            }
            tx.commit().unwrap();
        }
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!(
            "{} load, {rows} rows: {:.0} rows/s wall, {:.2} us CPU per row ({wall:.2} s wall, {cpu:.2} s CPU)",
            if random { "random" } else { "sequential" },
            rows as f64 / wall,
            cpu * 1e6 / rows as f64,
        );
        db.close().unwrap();
    }
}
