//! Index-page mutations agree with a `BTreeMap` model: inserts (at the right and at wrong
//! positions), replaces, removes and compactions give exactly the outcome the model predicts,
//! failures leave the page unchanged, and the page stays valid with the model's contents, byte
//! usage and search answers. A failure means lost or duplicated records, broken ordering,
//! wrong space accounting, or a mutation that corrupts the page.

use barracuda_testkit::{laws, proptest_config, strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn index_ops_agree_with_the_model(
        (case, ops) in strategy::page_size()
            .prop_flat_map(strategy::index_page)
            .prop_flat_map(|case| {
                let ops = strategy::index_ops(case.page_size, case.level, 160);
                (Just(case), ops)
            }),
    ) {
        laws::law_index_ops_agree_with_model(&case, &ops)?;
    }

    /// From an empty page, so that long runs of inserts fill it up to `PageFull`.
    #[test]
    fn index_ops_from_an_empty_page_agree_with_the_model(
        (case, ops) in (strategy::page_size(), strategy::level())
            .prop_filter_map("empty page", |(ps, level)| {
                strategy::IndexPageCase::build(
                    ps, barracuda_page::PageId::new(1, 4), level, 9,
                    barracuda_page::FIL_NULL, barracuda_page::FIL_NULL, 0, Vec::new(),
                ).ok()
            })
            .prop_flat_map(|case| {
                let ops = strategy::index_ops(case.page_size, case.level, 240);
                (Just(case), ops)
            }),
    ) {
        laws::law_index_ops_agree_with_model(&case, &ops)?;
    }
}
