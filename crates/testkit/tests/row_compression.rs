//! The laws of row-format compression over generated pages: every index page the testkit
//! generates goes through a block of every size that holds it and back unchanged, with both
//! codecs; random changes logged beside the same changes to the frame always decompress to the
//! frame; a full log forces a recompression that empties it; adaptive padding grows while more
//! than 5 % of compressions fail and shrinks back after good rounds. A failure means the
//! compressor, the log, the trailer or the padding disagree with the page they describe.

use std::sync::atomic::{AtomicUsize, Ordering};

use barracuda_row_compression::{BlockSize, Codec, ROUND_LEN};
use barracuda_testkit::row_compression_laws::{self as laws, CODECS};
use barracuda_testkit::{proptest_config, strategy};
use proptest::prelude::*;

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![
        (1u8..=9).prop_map(|level| Codec::Zlib { level }),
        Just(Codec::Lz4),
    ]
}

fn block() -> impl Strategy<Value = BlockSize> {
    proptest::sample::select(BlockSize::ALL.to_vec())
}

/// Logged changes that were refused for a full log, over every case of
/// `logged_changes_decompress_to_the_frame`: the cases must reach the log's limit.
static LOG_FULL: AtomicUsize = AtomicUsize::new(0);
static LOGGED: AtomicUsize = AtomicUsize::new(0);

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn pages_round_trip_through_every_block_that_holds_them(
        case in strategy::page_size().prop_flat_map(strategy::index_page),
    ) {
        laws::law_row_compression_round_trip(&case)?;
    }

    #[test]
    fn a_full_log_forces_recompression(
        ps in strategy::page_size(),
        block in block(),
        codec in codec(),
        seed in any::<u64>(),
    ) {
        laws::law_full_log_forces_recompression(ps, block, codec, seed)?;
    }

    #[test]
    fn padding_grows_under_failures_and_shrinks_after_good_rounds(
        ps in strategy::any_page_size(),
        bad_rounds in 0u32..40,
        failures in (ROUND_LEN * 6 / 100 + 1)..=ROUND_LEN,
        good_failures in 0..=ROUND_LEN * 5 / 100,
        seed in any::<u64>(),
    ) {
        laws::law_padding_grows_and_shrinks(ps, bad_rounds, failures, good_failures, seed)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_config().cases / 2, ..proptest_config() })]

    // Not a #[test] itself: run by `logged_changes_reach_a_full_log`, which then checks what
    // the cases went through.
    fn logged_changes_decompress_to_the_frame(
        (case, ops) in strategy::page_size().prop_flat_map(|ps| {
            strategy::index_page(ps).prop_flat_map(move |case| {
                let ops = strategy::index_ops(ps, case.level, 80);
                (Just(case), ops)
            })
        }),
        block in block(),
        codec in codec(),
    ) {
        let run = laws::law_logged_changes_decompress_to_the_frame(&case, &ops, block, codec)?;
        LOG_FULL.fetch_add(run.log_full, Ordering::Relaxed);
        LOGGED.fetch_add(run.logged, Ordering::Relaxed);
    }
}

/// The random cases above must reach a full log now and then, or they test only the easy half.
#[test]
fn logged_changes_reach_a_full_log() {
    logged_changes_decompress_to_the_frame();
    let (full, logged) = (
        LOG_FULL.load(Ordering::Relaxed),
        LOGGED.load(Ordering::Relaxed),
    );
    assert!(logged > 100, "only {logged} changes logged");
    assert!(full > 0, "no change met a full log ({logged} logged)");
}

/// Real compressions drive the padding: a workload with one incompressible page in eight
/// grows it, compressible pages shrink it back.
#[test]
fn padding_follows_real_compression_failures() {
    for codec in CODECS {
        for (fail_every, rounds) in [(8, 2), (3, 1), (16, 3)] {
            laws::law_padding_follows_compression_failures(codec, fail_every, rounds)
                .unwrap_or_else(|e| panic!("{} one in {fail_every}: {e}", codec.name()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_config().cases / 4, ..proptest_config() })]

    /// Replaying the same changes from the same block gives the same blocks whatever the
    /// compressor did before (what lets recovery rebuild a block without its image in the log).
    #[test]
    fn replaying_the_same_changes_gives_the_same_blocks(
        (case, ops) in strategy::page_size().prop_flat_map(|ps| {
            strategy::index_page(ps).prop_flat_map(move |case| {
                let ops = strategy::index_ops(ps, case.level, 60);
                (Just(case), ops)
            })
        }),
        warm_up in prop::collection::vec(strategy::page_size().prop_flat_map(strategy::index_page), 1..4),
        block in block(),
        codec in codec(),
    ) {
        barracuda_testkit::row_compression_determinism::law_replay_gives_the_same_blocks(
            &case, &ops, block, codec, &warm_up,
        )?;
    }
}
