//! Any single flipped bit in a sealed page of any type and size is caught by `verify_page` as
//! corruption (trailer magic, LSN or checksum), never accepted and never mistaken for a
//! misplaced page. A failure means some byte of the page escapes the checksum or the trailer.

use barracuda_testkit::{laws, proptest_config, strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn a_flipped_bit_is_detected(
        page in strategy::page_size().prop_flat_map(strategy::sealed_page),
        bit in any::<usize>(),
    ) {
        laws::law_bit_flip_detected(&page, bit)?;
    }

    /// The bits next to the header/trailer boundaries, where an off-by-one in the checksummed
    /// range would hide.
    #[test]
    fn a_flipped_bit_at_a_boundary_is_detected(
        page in strategy::page_size().prop_flat_map(strategy::sealed_page),
        near_end in any::<bool>(),
        bit in 0..96 * 8usize,
    ) {
        let total = page.bytes.len() * 8;
        let bit = if near_end { total - 1 - bit } else { bit };
        laws::law_bit_flip_detected(&page, bit)?;
    }
}
