//! Fuzz target `index_page_decode`: IndexPage::open, then every accessor and mutation of an accepted page.
//! The logic is `barracuda_testkit::fuzz_targets::index_page_decode`, shared with the corpus replay test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_testkit::fuzz_targets::index_page_decode(data);
});
