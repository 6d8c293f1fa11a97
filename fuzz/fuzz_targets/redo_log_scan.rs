//! Fuzz target `redo_log_scan`: a redo log file (raw, or built from parameters and log bytes,
//! frames optionally re-sealed) opened, scanned, re-read unchecked, finished and re-opened as
//! recovery does. The logic is `barracuda_redo::fuzzing::redo_log_scan`, shared with the corpus
//! replay test (crates/redo/tests/fuzz_redo_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run redo_log_scan -- -max_total_time=600 \
//!       -malloc_limit_mb=512
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_redo::fuzzing::redo_log_scan(data);
});
