//! The logic of the redo log's fuzz targets (cargo feature `fuzzing`), shared by
//! `fuzz/fuzz_targets/{redo_records,redo_log_scan}.rs` and the corpus replay test
//! (`crates/redo/tests/fuzz_redo_corpus.rs`), so a crash the fuzzer finds replays in `cargo test`
//! once its input is in `fuzz/corpus/<target>/`.
//!
//! Both functions panic if, and only if, a decoder or replay misbehaves: a panic inside it, an
//! error of the wrong kind, or a broken invariant (below). Hangs and unbounded allocations are
//! caught by libFuzzer's `-timeout` and `-malloc_limit_mb`.
//!
//! # `redo_records`
//! Byte 0 selects the page size (bits 0..3, modulo 5: 4 to 64 KiB) and a valid index page to
//! replay onto (bit 3: its level, leaf or internal; bits 4..8: its record count, keys `k00`,
//! `k02`, `k04`, …); the rest is one mtr's bytes (`docs/FORMATS.md` §10). If the mtr decodes,
//! every record must lie inside the page, decoding must be deterministic, at most one record
//! per two bytes, and the records re-encoded by [`MtrWriter`](crate::record::MtrWriter) must
//! decode to the same records (where the writer accepts them). Then, for each of the first few
//! pages the mtr names, it is replayed with [`apply`](crate::record::apply) over the decoded
//! records and with [`apply_mtr`](crate::record::apply_mtr) over the bytes onto (a) a zero page,
//! (b) the index page of byte 0, (c) the raw input, padded or cut to a page: both must give the
//! same result and the same bytes, a failure must be a `RecordError::Invalid` naming the page,
//! and a successful replay of index-level records only (INDEX_*, OPTION) onto (b) must leave a
//! page that passes the full validation of [`IndexPage::open`]. If the mtr does not decode, the
//! error must be a `RecordError::Corrupt` inside the mtr, and `apply_mtr` must fail too.
//!
//! [`IndexPage::open`]: barracuda_page::IndexPage::open
//!
//! # `redo_log_scan`
//! Byte 0: bit 0 picks the mode; bit 1 re-seals the CRC of every frame the scan would read
//! (walking the frames from the checkpoint as the scan does), so mutations reach past the
//! frame check; `byte >> 2`, modulo 5, the page size the recovered mtrs are decoded with.
//!
//! **Odd: raw file.** Byte 1: bit 0 re-seals the header's and both checkpoint slots' CRCs. The
//! rest is the log file (`docs/FORMATS.md` §9), byte for byte.
//!
//! **Even: built file.** `[buffer: u8][capacity: u8][start: u8][checkpoint offset: u32]
//! [slots: u8]`, then the log bytes from the checkpoint on. A valid header is written with a
//! log buffer of `4096 × (1 + buffer % 4)` bytes, a capacity of 4 buffers plus
//! `4096 × (capacity % 8)`, and a start LSN of 8192, a few laps of the capacity, or near
//! `u64::MAX` (`start % 4`); the checkpoint is at `start + offset`; `slots` says which slots
//! hold it (bit 0: slot 0, bit 1: slot 1; a slot without its bit holds a checkpoint at the start
//! LSN) and their sequence numbers (bits 2..5 for slot 0, 5..8 for slot 1: 0, 1, 2, 3,
//! `u64::MAX - 1`, `u64::MAX`, 2^32, or 7 for a zero slot). The log bytes go into the circular
//! data area from the checkpoint's position on, wrapping at its end.
//!
//! The file is written into an in-memory [`FaultyFileSystem`](barracuda_io::FaultyFileSystem)
//! and opened with [`Recovery::open`](crate::Recovery::open), as the engine's recovery does; an
//! error must be a [`RedoError::Corrupt`](crate::RedoError::Corrupt). A log that opens must
//! yield contiguous frames from the checkpoint to [`end_lsn`](crate::Recovery::end_lsn), each
//! within the header's bounds; a second open must agree, its unchecked reads
//! ([`next_mtr_unchecked`](crate::Recovery::next_mtr_unchecked)) yielding the same frames with
//! matching CRCs; [`finish`](crate::Recovery::finish) must succeed, and a third open must find
//! the log ending where the first said it resumes.

#[path = "fuzzing_records.rs"]
mod records;
#[path = "fuzzing_scan.rs"]
mod scan;
#[path = "fuzzing_seeds.rs"]
mod seeds;
#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;

pub use records::redo_records;
pub use scan::redo_log_scan;
pub use seeds::{seeds, SeedError};

/// The `redo_records` target's name, which is also its corpus directory.
pub const REDO_RECORDS: &str = "redo_records";
/// The `redo_log_scan` target's name, which is also its corpus directory.
pub const REDO_LOG_SCAN: &str = "redo_log_scan";
/// Both targets, in the order of their corpus directories.
pub const TARGETS: [&str; 2] = [REDO_RECORDS, REDO_LOG_SCAN];

/// Runs one input through the target named `target` ([`REDO_RECORDS`] or [`REDO_LOG_SCAN`]);
/// `false` for another name.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        REDO_RECORDS => redo_records(data),
        REDO_LOG_SCAN => redo_log_scan(data),
        _ => return false,
    }
    true
}

/// A seed of a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The target, which names its corpus directory: [`REDO_RECORDS`] or [`REDO_LOG_SCAN`].
    pub target: &'static str,
    /// File name inside `fuzz/corpus/<target>/`.
    pub name: String,
    /// The input.
    pub bytes: Vec<u8>,
}
