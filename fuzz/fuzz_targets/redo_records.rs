//! Fuzz target `redo_records`: one mtr's bytes (after a byte choosing the page size and a base
//! index page) decoded, checked, re-encoded and replayed onto a zero page, a valid index page
//! and the raw input. The logic is `barracuda_redo::fuzzing::redo_records`, shared with the
//! corpus replay test (crates/redo/tests/fuzz_redo_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run redo_records -- -max_total_time=600
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_redo::fuzzing::redo_records(data);
});
