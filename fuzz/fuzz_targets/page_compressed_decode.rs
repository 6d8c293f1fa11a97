//! Fuzz target `page_compressed_decode`: a page-compressed image (the envelope of FORMATS.md
//! §12) verified and decompressed; whatever is accepted must be a valid page that compresses
//! back to an envelope giving the same page. The logic is
//! `barracuda_page_compression::fuzzing::page_compressed_decode`, shared with the corpus replay
//! test (crates/page-compression/tests/fuzz_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run page_compressed_decode -- -max_total_time=120 \
//!       -malloc_limit_mb=512
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_page_compression::fuzzing::page_compressed_decode(data);
});
