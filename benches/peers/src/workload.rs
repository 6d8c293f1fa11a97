//! The workloads' data and their measuring loops: keys and values, load batches, and the timed
//! multi-thread loop with a latency histogram per thread.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use crate::engines::{BoxError, PeerDb, Result};

/// Bytes of a key: a `u64` row number, big-endian, so that byte order is numeric order.
pub const KEY_LEN: usize = 8;
/// Bytes of a value.
pub const VALUE_LEN: usize = 180;
/// Bytes of one row as the engines are given it (key and value; no engine overhead).
pub const ROW_LEN: usize = KEY_LEN + VALUE_LEN;
/// Rows per write transaction / write batch in the load phases.
pub const BATCH_ROWS: usize = 1000;
/// Rows read by one operation of `scan_100`.
pub const SCAN_ROWS: usize = 100;

/// The repeating part of every value; the key is mixed into it so that no two values are equal.
const VALUE_PATTERN: &[u8] =
    b"Barracuda peer benchmark: the same 180-byte value pattern, mixed with its key. ";

/// The key of row `n`.
#[expect(
    clippy::big_endian_bytes,
    reason = "keys are compared as bytes, and big-endian makes byte order numeric order; this is \
              not an on-disk integer of Barracuda's formats"
)]
pub fn key(n: u64) -> [u8; KEY_LEN] {
    n.to_be_bytes()
}

/// [`VALUE_PATTERN`] repeated to a value's length.
const PATTERN_BYTES: [u8; VALUE_LEN] = {
    let mut out = [0; VALUE_LEN];
    let mut i = 0;
    while i < VALUE_LEN {
        out[i] = VALUE_PATTERN[i % VALUE_PATTERN.len()];
        i += 1;
    }
    out
};

/// Writes the value of row `n` into `out` (deterministic: the pattern, each byte plus a byte of
/// the row number). Made of whole-array steps the compiler vectorises: generating values is
/// the harness's own work, timed with every engine's load, and a byte loop with a division per
/// byte was 13-15 % of a Barracuda load's samples — a constant that pulls every load ratio
/// towards 1.
pub fn fill_value(n: u64, out: &mut [u8; VALUE_LEN]) {
    let mix = n.to_le_bytes();
    let mut mixed = [0u8; VALUE_LEN];
    let mut chunks = mixed.chunks_exact_mut(mix.len());
    for chunk in &mut chunks {
        chunk.copy_from_slice(&mix);
    }
    let tail = chunks.into_remainder();
    let tail_len = tail.len();
    tail.copy_from_slice(&mix[..tail_len]);
    for ((byte, pattern), mix) in out.iter_mut().zip(PATTERN_BYTES).zip(mixed) {
        *byte = pattern.wrapping_add(mix);
    }
}

/// The value of row `n`.
pub fn value(n: u64) -> [u8; VALUE_LEN] {
    let mut out = [0; VALUE_LEN];
    fill_value(n, &mut out);
    out
}

/// Row numbers `0..rows` in a random order, the same for every engine and round.
pub fn permutation(rows: u64, seed: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..rows).collect();
    keys.shuffle(&mut StdRng::seed_from_u64(seed));
    keys
}

/// Up to [`BATCH_ROWS`] rows to write in one transaction (one write batch).
#[derive(Default)]
pub struct Batch {
    keys: Vec<[u8; KEY_LEN]>,
    values: Vec<[u8; VALUE_LEN]>,
}

impl Batch {
    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
    }

    /// Adds row `n`.
    pub fn push(&mut self, n: u64) {
        self.keys.push(key(n));
        self.values.push(value(n));
    }

    /// The rows, as `(key, value)` slices, in the order they were pushed.
    pub fn rows(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.keys
            .iter()
            .zip(&self.values)
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// How many rows the batch holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// One measured figure of one phase: a rate, and latencies where the phase has them.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Figures {
    /// Rows per second (loads), operations per second (gets) or scans per second, all threads.
    pub per_s: f64,
    /// Operations done.
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Median latency of one operation, µs (timed read phases only).
    pub p50_us: Option<f64>,
    /// 99th percentile latency, µs.
    pub p99_us: Option<f64>,
    /// 99.9th percentile latency, µs.
    pub p999_us: Option<f64>,
}

/// Loads the rows `order` yields into `db` in transactions of [`BATCH_ROWS`] rows, the last one
/// marked as the last ([`PeerDb::write_batch`]); returns rows/s over the whole load (the last
/// commit included).
pub fn load(db: &dyn PeerDb, order: impl Iterator<Item = u64>) -> Result<Figures> {
    let mut order = order.peekable();
    let mut batch = Batch::default();
    let mut written = 0_u64;
    let start = Instant::now();
    while let Some(n) = order.next() {
        batch.push(n);
        let last = order.peek().is_none();
        if batch.len() == BATCH_ROWS || last {
            db.write_batch(&batch, last)?;
            written += batch.len() as u64;
            batch.clear();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Figures {
        per_s: written as f64 / seconds,
        ops: written,
        seconds,
        ..Figures::default()
    })
}

/// Loads rows `0..rows` into the empty `db` by its own bulk path ([`PeerDb::bulk_load`]);
/// returns rows/s.
pub fn bulk_load(db: &dyn PeerDb, rows: u64) -> Result<Figures> {
    let start = Instant::now();
    db.bulk_load(rows)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Figures {
        per_s: rows as f64 / seconds,
        ops: rows,
        seconds,
        ..Figures::default()
    })
}

/// Runs `op` on `threads` threads for `duration`, each thread with its own random generator
/// (seeded from `seed` and its index), timing every call; returns the calls per second of all
/// threads and the latency percentiles of all calls.
pub fn timed<F>(threads: usize, duration: Duration, seed: u64, op: F) -> Result<Figures>
where
    F: Fn(&mut StdRng) -> Result<()> + Sync,
{
    let threads = threads.max(1);
    let barrier = Barrier::new(threads);
    let per_thread: Vec<Result<(Histogram<u64>, u64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (barrier, op) = (&barrier, &op);
                s.spawn(move || -> Result<(Histogram<u64>, u64, f64)> {
                    let mut rng = StdRng::seed_from_u64(
                        seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    // 1 ns to 100 s, 3 significant digits.
                    let mut hist = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3)?;
                    barrier.wait();
                    let start = Instant::now();
                    let deadline = start + duration;
                    let mut ops = 0_u64;
                    let mut now = start;
                    while now < deadline {
                        op(&mut rng)?;
                        let end = Instant::now();
                        hist.saturating_record((end - now).as_nanos() as u64);
                        ops += 1;
                        now = end;
                    }
                    Ok((hist, ops, (now - start).as_secs_f64()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BoxError::from("a measuring thread panicked")))
            })
            .collect()
    });
    let mut all = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3)?;
    let (mut ops, mut per_s, mut seconds) = (0_u64, 0.0_f64, 0.0_f64);
    for result in per_thread {
        let (hist, n, secs) = result?;
        all.add(&hist)?;
        ops += n;
        per_s += n as f64 / secs;
        seconds = seconds.max(secs);
    }
    let us = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    Ok(Figures {
        per_s,
        ops,
        seconds,
        p50_us: Some(us(0.5)),
        p99_us: Some(us(0.99)),
        p999_us: Some(us(0.999)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_pattern_plus_the_row_number_bytes() {
        let n = 0x0102_0304_0506_0708_u64;
        let value = value(n);
        let mix = n.to_le_bytes();
        for (i, &byte) in value.iter().enumerate() {
            let pattern = VALUE_PATTERN[i % VALUE_PATTERN.len()];
            assert_eq!(byte, pattern.wrapping_add(mix[i % 8]), "byte {i}");
        }
    }

    #[test]
    fn keys_sort_as_numbers_and_values_differ() {
        assert!(key(255) < key(256));
        assert!(key(1 << 40) > key((1 << 40) - 1));
        assert_ne!(value(1), value(2));
        assert_eq!(value(7), value(7));
    }

    #[test]
    fn permutation_is_a_permutation() {
        let mut p = permutation(1000, 42);
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<_>>());
    }
}
