//! Fuzz target `doublewrite_file`: a doublewrite file (raw, its checksums optionally re-sealed)
//! read by recovery, its copies restored over data files of zero pages, then reopened for
//! writing. The logic is `barracuda_doublewrite::fuzzing::doublewrite_file`, shared with the
//! corpus replay test (crates/doublewrite/tests/fuzz_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run doublewrite_file -- -max_total_time=120 \
//!       -malloc_limit_mb=512
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_doublewrite::fuzzing::doublewrite_file(data);
});
