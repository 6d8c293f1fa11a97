//! One thread committing `COMMITS` (default 200,000) one-row transactions — each updates a random
//! row of a preloaded table of 100,000 rows with a fresh 180-byte value — at
//! `Durability::Background`: commits per second and CPU microseconds per commit.
//!
//! `cargo run --release -p barracuda-benches --example one_row_commits [COMMITS]`
//!
//! Made to compare the per-commit cost of two builds: under
//! `valgrind --tool=callgrind --callgrind-out-file=/dev/null` the instruction count it reports
//! at exit is repeatable whatever else the machine does (preload included, the same for both).

#![allow(
    clippy::unwrap_used,
    reason = "a measurement that fails should stop loudly"
)]

use std::time::Instant;

use barracuda::{Durability, Engine, EngineOptions, TableOptions};
use barracuda_benches::{be_key, cpu_seconds, Rng};

const ROWS: u64 = 100_000;

fn main() {
    let commits: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions::default()
        .buffer_pool_bytes(256 << 20)
        .durability(Durability::Background);
    let db = Engine::open(dir.path(), options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let value = [b'5'; 180];
    for batch in 0..ROWS / 1000 {
        let mut tx = db.begin();
        for i in batch * 1000..(batch + 1) * 1000 {
            tx.put(&t, &be_key(i), &value).unwrap();
        }
        tx.commit().unwrap();
    }
    let mut rng = Rng::new(7);
    let mut fresh = [b'0'; 180];
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    for n in 0..commits {
        fresh[..8].copy_from_slice(&n.to_le_bytes());
        let mut tx = db.begin();
        tx.put(&t, &be_key(rng.below(ROWS)), &fresh).unwrap();
        tx.commit().unwrap();
    }
    let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    println!(
        "{commits} one-row commits: {:.0} commits/s, {:.2} us CPU per commit",
        commits as f64 / wall,
        cpu * 1e6 / commits as f64
    );
    db.close().unwrap();
}
