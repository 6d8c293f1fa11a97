//! Encode∘decode = id for every page format: file header, space header, catalog page, overflow
//! page and index page. A failure means a writer and its reader disagree on a field's offset,
//! width or byte order, or that a reader rejects what the writer produces.

use barracuda_testkit::{laws, proptest_config, strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn file_header_round_trips(
        header in strategy::file_header(),
        ps in strategy::any_page_size(),
    ) {
        laws::law_file_header_round_trip(&header, ps)?;
    }

    #[test]
    fn space_header_round_trips(
        header in strategy::any_page_size().prop_flat_map(strategy::space_header),
    ) {
        laws::law_space_header_round_trip(&header)?;
    }

    #[test]
    fn catalog_page_round_trips(
        (ps, id, page) in strategy::page_size().prop_flat_map(|ps| {
            (Just(ps), strategy::page_id(), strategy::catalog_page(ps))
        }),
    ) {
        laws::law_catalog_page_round_trip(ps, id, &page)?;
    }

    #[test]
    fn overflow_page_round_trips(
        case in strategy::page_size().prop_flat_map(strategy::overflow_page),
    ) {
        laws::law_overflow_page_round_trip(&case)?;
    }

    #[test]
    fn index_page_round_trips(
        (ps, level, records) in (strategy::page_size(), strategy::level())
            .prop_flat_map(|(ps, level)| {
                (Just(ps), Just(level), strategy::sorted_records(ps, level))
            }),
    ) {
        laws::law_index_page_round_trip(ps, level, &records)?;
    }
}
