//! Fuzz target `space_decode`: SpaceHeader, AllocationBitmap and OverflowPage decoders.
//! The logic is `barracuda_testkit::fuzz_targets::space_decode`, shared with the corpus replay test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_testkit::fuzz_targets::space_decode(data);
});
