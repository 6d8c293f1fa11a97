//! A split keeps every record in order: `split_point` + `split_off` + the insert of the
//! pending record leave two valid pages whose concatenation is the old page plus the record.
//! A failure means a split that loses, duplicates or reorders records, or picks a point where
//! the pending record does not fit.

use barracuda_testkit::{laws, proptest_config, strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn split_preserves_records(
        (case, rec) in strategy::page_size()
            .prop_flat_map(strategy::index_page)
            .prop_flat_map(|case| {
                let rec = strategy::record(case.page_size, case.level);
                (Just(case), rec)
            }),
    ) {
        laws::law_split_preserves_records(&case, &rec)?;
    }
}
