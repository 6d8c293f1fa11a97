//! Fuzz target `row_compressed_decode`: a ROW_FORMAT=COMPRESSED block (FORMATS §15) read,
//! verified and decompressed; whatever decompresses must be a sealed, valid index page that
//! compresses back to a block giving the same page, and changes logged on the block must
//! decompress to the same changes made to the page. The logic is
//! `barracuda_row_compression::fuzzing::row_compressed_decode`, shared with the corpus replay
//! test (crates/row-compression/tests/fuzz_corpus.rs).
//!
//!   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run row_compressed_decode -- -max_total_time=240 \
//!       -malloc_limit_mb=512
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_row_compression::fuzzing::row_compressed_decode(data);
});
