//! Fuzz target `undo_decode`: UndoPage and TrxSysPage decoders.
//! The logic is `barracuda_testkit::fuzz_targets::undo_decode`, shared with the corpus replay test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    barracuda_testkit::fuzz_targets::undo_decode(data);
});
