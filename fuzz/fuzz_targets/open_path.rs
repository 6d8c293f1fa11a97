//! Fuzz target `open_path`: a database directory built from the input (a generated database
//! under mutations, or raw files) is checked offline, opened, and every table checked, scanned
//! both ways and probed; then it is closed. The logic is `barracuda::fuzzing::open_path`, shared
//! with the corpus replay test (crates/engine/tests/fuzz_open_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run open_path -- -timeout=10 -rss_limit_mb=2048 \
//!       -malloc_limit_mb=512 -max_total_time=900
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda::fuzzing::open_path(data);
});
