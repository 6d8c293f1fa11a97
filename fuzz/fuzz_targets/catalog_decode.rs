//! Fuzz target `catalog_decode`: CatalogPage::read, then write-read of an accepted page.
//! The logic is `barracuda_testkit::fuzz_targets::catalog_decode`, shared with the corpus replay test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_testkit::fuzz_targets::catalog_decode(data);
});
