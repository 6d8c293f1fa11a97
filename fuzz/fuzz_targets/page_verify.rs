//! Fuzz target `page_verify`: verify_page and FileHeader::read at every page size.
//! The logic is `barracuda_testkit::fuzz_targets::page_verify`, shared with the corpus replay test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_testkit::fuzz_targets::page_verify(data);
});
