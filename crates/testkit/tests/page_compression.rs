//! The laws of page compression over generated pages: zeroing unused bytes keeps an index
//! page's records, and every sealed page — index, overflow, space header, of every page size,
//! compressible or not — survives the compressed envelope unchanged, for both codecs and
//! several file-system block sizes. A failure means the compressor and decompressor disagree
//! (envelope fields, sealing, rounding) or that zeroing touched a live byte.

use barracuda_page_compression::Algorithm;
use barracuda_testkit::{compression_laws, proptest_config, strategy};
use proptest::prelude::*;

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        (1u8..=9).prop_map(|level| Algorithm::Zlib { level }),
        Just(Algorithm::Lz4),
    ]
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn zeroing_unused_space_keeps_the_records(
        (case, remove) in strategy::page_size().prop_flat_map(|ps| {
            (strategy::index_page(ps), prop::collection::vec(any::<usize>(), 0..6))
        }),
    ) {
        compression_laws::law_zeroing_unused_space_keeps_the_records(&case, &remove)?;
    }

    #[test]
    fn pages_round_trip_through_the_envelope(
        page in strategy::any_page_size().prop_flat_map(strategy::sealed_page),
        algorithm in algorithm(),
        block in prop_oneof![Just(512u32), Just(4096u32)],
    ) {
        compression_laws::law_page_compression_round_trip(&page, algorithm, block)?;
    }
}
