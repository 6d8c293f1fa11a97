//! INFORMATION_SCHEMA.INNODB_CMP's counters, one row per block size: compressions tried and
//! succeeded, decompressions, and the time each took.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::BlockSize;

/// Counters of one block size (atomics: every thread that compresses adds to them).
#[derive(Debug, Default)]
struct Row {
    compress_ops: AtomicU64,
    compress_ops_ok: AtomicU64,
    compress_time_us: AtomicU64,
    uncompress_ops: AtomicU64,
    uncompress_time_us: AtomicU64,
}

/// The counters of every block size, shared by the threads that compress and decompress.
#[derive(Debug, Default)]
pub struct CompressionStats {
    rows: [Row; 5],
}

/// One block size's counters at one moment (INNODB_CMP's columns, times in microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmpRow {
    /// The block size.
    pub block_size: usize,
    /// Compressions tried: a page created or recompressed because its log was full.
    pub compress_ops: u64,
    /// Of those, the ones that fit the block (`compress_ops - compress_ops_ok` led to splits).
    pub compress_ops_ok: u64,
    /// Time spent compressing, failures included.
    pub compress_time_us: u64,
    /// Decompressions: a compressed page read without its uncompressed frame.
    pub uncompress_ops: u64,
    /// Time spent decompressing.
    pub uncompress_time_us: u64,
}

impl CompressionStats {
    /// All zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn row(&self, block: BlockSize) -> &Row {
        let i = BlockSize::ALL.iter().position(|&b| b == block).unwrap_or(0);
        self.rows.get(i).unwrap_or(&self.rows[0])
    }

    /// Counts one compression of a page into `block` that took `elapsed` and fitted or not.
    pub fn record_compress(&self, block: BlockSize, ok: bool, elapsed: Duration) {
        let row = self.row(block);
        row.compress_ops.fetch_add(1, Ordering::Relaxed);
        if ok {
            row.compress_ops_ok.fetch_add(1, Ordering::Relaxed);
        }
        row.compress_time_us
            .fetch_add(micros(elapsed), Ordering::Relaxed);
    }

    /// Counts one decompression of a `block`-byte page that took `elapsed`.
    pub fn record_uncompress(&self, block: BlockSize, elapsed: Duration) {
        let row = self.row(block);
        row.uncompress_ops.fetch_add(1, Ordering::Relaxed);
        row.uncompress_time_us
            .fetch_add(micros(elapsed), Ordering::Relaxed);
    }

    /// The counters now, one row per block size (1 KiB first).
    pub fn snapshot(&self) -> Vec<CmpRow> {
        BlockSize::ALL
            .iter()
            .zip(&self.rows)
            .map(|(b, r)| CmpRow {
                block_size: b.bytes(),
                compress_ops: r.compress_ops.load(Ordering::Relaxed),
                compress_ops_ok: r.compress_ops_ok.load(Ordering::Relaxed),
                compress_time_us: r.compress_time_us.load(Ordering::Relaxed),
                uncompress_ops: r.uncompress_ops.load(Ordering::Relaxed),
                uncompress_time_us: r.uncompress_time_us.load(Ordering::Relaxed),
            })
            .collect()
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
