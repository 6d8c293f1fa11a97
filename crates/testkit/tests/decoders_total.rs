//! Decoders never panic on arbitrary bytes, and what they accept is self-consistent: the fuzz
//! targets' logic run on random, mutated and truncated pages. A failure is a decoder crash (a
//! denial of service on a corrupt file) or a decoder accepting a structure its own invariants
//! forbid.

use barracuda_testkit::{laws, proptest_config, strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn decoders_never_panic(bytes in strategy::arbitrary_page_bytes()) {
        laws::law_decoders_never_panic(&bytes)?;
    }
}
