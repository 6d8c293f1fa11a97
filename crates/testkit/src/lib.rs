//! Reusable proptest strategies and laws for Barracuda's page formats, and the decode logic of
//! the fuzz targets.
//!
//! - [`strategy`]: `impl Strategy` generators for every format — page sizes and ids, file
//!   headers, keys, records within the limits, sorted record sets, whole index pages (bytes and
//!   model), sealed pages of any type, sequences of index-page operations, catalog pages, space
//!   headers, overflow pages, and mutated bytes for decoders;
//! - [`laws`]: `law_*` functions returning `Result<(), TestCaseError>`, to call inside
//!   `proptest!` with `?`: encode∘decode round trips, bit-flip detection, index operations
//!   against a `BTreeMap` model, splits preserving records, decoders total on arbitrary bytes;
//! - [`compression_laws`] and [`row_compression_laws`]: the laws of page compression (the
//!   envelope) and of row-format compression (blocks, modification log, adaptive padding), and
//!   [`row_compression_determinism`]: replaying the same changes gives the same blocks;
//! - [`model`]: owned records ([`OwnedRecord`]), the operations ([`IndexOp`]) and the model
//!   ([`IndexModel`]);
//! - [`fuzz_targets`]: what each target in `fuzz/fuzz_targets/` runs on its input, shared with
//!   the corpus replay in `tests/fuzz_corpus.rs`;
//! - [`corpus`]: the deterministic seed corpus checked in under `fuzz/corpus/`;
//! - [`crash`]: the `SIGKILL` crash-test harness — a test re-runs its own binary as a child that
//!   prints `ACK <n>` per durable step, kills it at a random moment and checks what survived.
//!
//! # Use from another crate's tests
//! Add `barracuda-testkit.workspace = true` (or a path dependency on `crates/testkit`) and
//! `proptest` to `[dev-dependencies]`, then compose the strategies and call the laws:
//!
//! ```
//! use barracuda_testkit::{laws, proptest_config, strategy};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     // In a test file, use `proptest_config()` and put `#[test]` on the function.
//!     #![proptest_config(ProptestConfig { cases: 8, ..proptest_config() })]
//!     fn splits_keep_every_record(
//!         (case, rec) in strategy::page_size()
//!             .prop_flat_map(strategy::index_page)
//!             .prop_flat_map(|c| {
//!                 let rec = strategy::record(c.page_size, c.level);
//!                 (Just(c), rec)
//!             })
//!     ) {
//!         laws::law_split_preserves_records(&case, &rec)?;
//!     }
//! }
//! splits_keep_every_record();
//! ```
//!
//! Outside `proptest!`, drive a law with a [`TestRunner`](proptest::test_runner::TestRunner):
//!
//! ```
//! use barracuda_page::PageSize;
//! use barracuda_testkit::{laws, strategy};
//! use proptest::test_runner::{Config, TestRunner};
//!
//! let mut runner = TestRunner::new(Config::with_cases(16));
//! runner
//!     .run(&strategy::space_header(PageSize::K4), |h| {
//!         laws::law_space_header_round_trip(&h)
//!     })
//!     .expect("the space header round-trips");
//! ```
//!
//! Strategies keep to 4 KiB and 16 KiB pages most of the time ([`strategy::page_size`]) so that
//! 256 cases per law stay fast in debug builds.

pub mod compression_laws;
pub mod corpus;
pub mod crash;
pub mod fuzz_targets;
pub mod laws;
pub mod model;
pub mod row_compression_determinism;
pub mod row_compression_laws;
pub mod strategy;

pub use model::{IndexModel, IndexOp, OwnedRecord, OwnedValue};
pub use strategy::{IndexPageCase, OverflowCase, SealedPage};

use proptest::test_runner::Config;

/// Cases per property when `PROPTEST_CASES` is not set.
pub const DEFAULT_CASES: u32 = 256;

/// The proptest configuration of Barracuda's property tests: proptest's defaults, with
/// [`DEFAULT_CASES`] cases unless the `PROPTEST_CASES` environment variable says otherwise.
pub fn proptest_config() -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = DEFAULT_CASES;
    }
    config
}
