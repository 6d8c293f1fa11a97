//! Hand-computed values of InnoDB's formulas, edge cases, and monotonicity laws.

use super::*;
use crate::flushing::{FlushListAges, SortedAges};
use proptest::prelude::*;

/// Round numbers, so the arithmetic in the comments stays short: lwm 10 % of 4,000,000 = 400,000.
const POINTS: FlushPoints = FlushPoints {
    log_capacity: 4_000_000,
    max_modified_age_async: 7_000_000,
    max_modified_age_sync: 7_500_000,
    max_checkpoint_age_async: 7_750_000,
    max_checkpoint_age: 8_000_000,
};

fn settings(edit: impl FnOnce(&mut FlushSettings)) -> FlushSettings {
    let mut s = FlushSettings::default();
    edit(&mut s);
    s
}

fn state<'a>(
    current_lsn: Lsn,
    list: &'a [Lsn],
    pool_pages: u64,
    pages_flushed: u64,
) -> FlushState<'a> {
    // Leaked so the state can borrow it for 'a; a few hundred bytes per test.
    let flush_list: &'a SortedAges<'a> = Box::leak(Box::new(
        SortedAges::new(list).expect("tests pass sorted lists"),
    ));
    FlushState {
        current_lsn,
        oldest_modification: list.first().copied(),
        points: POINTS,
        dirty_pages: list.len() as u64,
        pool_pages,
        pages_flushed,
        elapsed: Duration::from_secs(1),
        flush_list,
    }
}

#[test]
fn pct_for_dirty_by_hand() {
    let s = FlushSettings::default();
    // pool 999 → dirty_pct = 100 × dirty / 1000.
    assert_eq!(pct_for_dirty(0, 999, &s), 0, "nothing dirty");
    assert_eq!(
        pct_for_dirty(99, 999, &s),
        0,
        "9.9 % is below the lwm of 10"
    );
    assert_eq!(
        pct_for_dirty(100, 999, &s),
        10,
        "10 × 100 / 91 = 10.99 → 10"
    );
    assert_eq!(pct_for_dirty(500, 999, &s), 54, "50 × 100 / 91 = 54.9 → 54");
    assert_eq!(pct_for_dirty(900, 999, &s), 98, "90 × 100 / 91 = 98.9 → 98");
    // An empty pool does not divide by 0: 100 × 5 / (1 + 0) = 500 % → 500 × 100 / 91 = 549.
    assert_eq!(pct_for_dirty(5, 0, &s), 549);
}

#[test]
fn pct_for_dirty_with_lwm_zero_is_all_or_nothing_at_the_max() {
    let s = settings(|s| s.set_max_dirty_pages_pct_lwm(0.0).expect("valid"));
    assert_eq!(pct_for_dirty(899, 999, &s), 0, "89.9 % < 90");
    assert_eq!(pct_for_dirty(900, 999, &s), 100, "90 % reaches the max");
}

#[test]
fn pct_for_lsn_by_hand() {
    let s = FlushSettings::default();
    // lwm = 10 % × 4,000,000 = 400,000; ratio = 2000 / 200 = 10.
    assert_eq!(pct_for_lsn(0, &POINTS, &s), 0, "age 0");
    assert_eq!(pct_for_lsn(399_999, &POINTS, &s), 0, "below the lwm");
    // f = 400,000 × 100 / 7,000,000 = 5 (5.7); 10 × 5 × √5 / 7.5 = 10 × 11.18 / 7.5 = 14.9 → 14.
    assert_eq!(pct_for_lsn(400_000, &POINTS, &s), 14);
    // f = 50; 10 × 50 × 7.071 / 7.5 = 471.4 → 471.
    assert_eq!(pct_for_lsn(3_500_000, &POINTS, &s), 471);
    // f = 100 at the async point; 10 × 1000 / 7.5 = 1333.3 → 1333.
    assert_eq!(pct_for_lsn(7_000_000, &POINTS, &s), 1333);
}

#[test]
fn pct_for_lsn_truncates_the_capacity_ratio() {
    // 2000 / 300 = 6 (not 6.67): 6 × 50 × 7.071 / 7.5 = 282.8 → 282 (6.67 would give 314).
    let s = settings(|s| s.set_io_capacity(300).expect("valid"));
    assert_eq!(pct_for_lsn(3_500_000, &POINTS, &s), 282);
    // 2000 / 1500 = 1: 1 × 353.55 / 7.5 = 47.1 → 47.
    let s = settings(|s| s.set_io_capacity(1500).expect("valid"));
    assert_eq!(pct_for_lsn(3_500_000, &POINTS, &s), 47);
}

#[test]
fn pct_for_lsn_with_adaptive_off_waits_for_the_async_point() {
    let s = settings(|s| s.set_adaptive_flushing(false));
    assert_eq!(pct_for_lsn(3_500_000, &POINTS, &s), 0);
    assert_eq!(pct_for_lsn(6_999_999, &POINTS, &s), 0);
    assert_eq!(
        pct_for_lsn(7_000_000, &POINTS, &s),
        1333,
        "same as on, from the async point"
    );
}

#[test]
fn pct_for_lsn_with_lwm_zero_starts_at_age_zero() {
    let s = settings(|s| s.set_adaptive_flushing_lwm(0).expect("valid"));
    assert_eq!(pct_for_lsn(0, &POINTS, &s), 0, "f = 0");
    assert_eq!(
        pct_for_lsn(69_999, &POINTS, &s),
        0,
        "f = 6,999,900 / 7,000,000 = 0"
    );
    assert_eq!(
        pct_for_lsn(70_000, &POINTS, &s),
        1,
        "f = 1: 10 × 1 / 7.5 = 1.33 → 1"
    );
    assert_eq!(
        pct_for_lsn(u64::MAX, &POINTS, &s),
        u64::MAX,
        "saturates, no panic"
    );
}

#[test]
fn first_call_only_records_the_start() {
    let mut c = InnoDbController::new();
    let list: Vec<Lsn> = vec![1_000];
    let r = c.recommend(&state(5_000_000, &list, 999, 0), &FlushSettings::default());
    assert_eq!(r.pages, 0);
    assert_eq!(r.metrics, FlushMetrics::default());
}

#[test]
fn recommendation_by_hand_with_averaging_every_call() {
    let s = settings(|s| s.set_flushing_avg_loops(1).expect("valid"));
    let mut c = InnoDbController::new();
    // 100 dirty pages, oldest modifications 1,000,000 + 6,000 × i (the last at 1,594,000).
    let list: Vec<Lsn> = (0..100).map(|i| 1_000_000 + 6_000 * i).collect();
    c.recommend(&state(1_000_000, &list, 999, 0), &s);

    // 600,000 bytes of redo and 90 pages in 1 s. Averages (loops = 1): avg_page_rate = (90 + 0) / 2
    // = 45; lsn_avg_rate = (0 + 600,000) / 2 = 300,000. Age 600,000 ≥ lwm 400,000: f = 8 (8.57);
    // pct_for_lsn = 10 × 8 × 2.828 / 7.5 = 30.2 → 30; pct_for_dirty = 10 % → 10 × 100 / 91 = 10.
    // PCT_IO(30) = 60. Target = 1,000,000 + 3 × 300,000 = 1,900,000: all 100 pages → 100 / 3 = 33.
    // n_pages = (60 + 45 + 33) / 3 = 46.
    let r = c.recommend(&state(1_600_000, &list, 999, 90), &s);
    let expected = FlushMetrics {
        buffer_flush_n_to_flush_requested: 46,
        buffer_flush_avg_page_rate: 45,
        buffer_flush_lsn_avg_rate: 300_000,
        buffer_flush_pct_for_dirty: 10,
        buffer_flush_pct_for_lsn: 30,
        buffer_flush_n_to_flush_by_age: 33,
        buffer_flush_adaptive_total_pages: 46,
    };
    assert_eq!(
        r,
        FlushRequest {
            pages: 46,
            lsn_limit: None,
            metrics: expected
        }
    );

    // Another 600,000 bytes and 200 pages: avg_page_rate = (200 + 45) / 2 = 122 (122.5);
    // lsn_avg_rate = (300,000 + 600,000) / 2 = 450,000. Age 1,200,000: f = 17 (17.1);
    // 10 × 17 × 4.123 / 7.5 = 93.5 → 93; PCT_IO(93) = 186. Target 2,350,000: 100 pages → 33.
    // n_pages = (186 + 122 + 33) / 3 = 113; total 46 + 113 = 159.
    let r = c.recommend(&state(2_200_000, &list, 999, 200), &s);
    assert_eq!(r.metrics.buffer_flush_avg_page_rate, 122);
    assert_eq!(r.metrics.buffer_flush_lsn_avg_rate, 450_000);
    assert_eq!(r.metrics.buffer_flush_pct_for_lsn, 93);
    assert_eq!(r.pages, 113);
    assert_eq!(r.metrics.buffer_flush_adaptive_total_pages, 159);
}

#[test]
fn the_dirty_term_wins_when_it_is_larger() {
    let s = settings(|s| s.set_flushing_avg_loops(1).expect("valid"));
    let mut c = InnoDbController::new();
    // 500 of 999 pool pages dirty (50 % → pct_for_dirty 54), at 1,000,000 + 1,200 × i.
    let list: Vec<Lsn> = (0..500).map(|i| 1_000_000 + 1_200 * i).collect();
    c.recommend(&state(1_000_000, &list, 999, 0), &s);
    // Age 300,000 < lwm 400,000 → pct_for_lsn 0. lsn_avg_rate = 300,000 / 2 = 150,000; target
    // 1,450,000 → i ≤ 375 → 376 pages → 125. PCT_IO(54) = 108. (108 + 0 + 125) / 3 = 77.
    let r = c.recommend(&state(1_300_000, &list, 999, 0), &s);
    assert_eq!(
        (
            r.metrics.buffer_flush_pct_for_dirty,
            r.metrics.buffer_flush_pct_for_lsn
        ),
        (54, 0)
    );
    assert_eq!(r.pages, 77);
}

#[test]
fn the_lsn_target_counts_only_pages_old_enough() {
    let s = settings(|s| s.set_flushing_avg_loops(1).expect("valid"));
    let mut c = InnoDbController::new();
    // Pages at 0, 1,000, …, 599,000. First averaging: 100,000 bytes of redo in 1 s →
    // lsn_avg_rate = 50,000; target = 0 + 150,000 → pages 0..=150 → 151 / 3 = 50.
    let list: Vec<Lsn> = (0..600).map(|i| 1_000 * i).collect();
    c.recommend(&state(500_000, &list, 100_000, 0), &s);
    let r = c.recommend(&state(600_000, &list, 100_000, 0), &s);
    assert_eq!(r.metrics.buffer_flush_lsn_avg_rate, 50_000);
    assert_eq!(r.metrics.buffer_flush_n_to_flush_by_age, 50);
    // Age 600,000: pct_for_lsn 30 (as above) → PCT_IO = 60; dirty 0.6 % → 0. (60 + 0 + 50) / 3 = 36.
    assert_eq!(r.pages, 36);
}

#[test]
fn averages_wait_for_flushing_avg_loops_calls() {
    let s = FlushSettings::default();
    let mut c = InnoDbController::new();
    let list: Vec<Lsn> = vec![0];
    c.recommend(&state(1_000_000, &list, 999, 0), &s);
    for call in 1..30u64 {
        let r = c.recommend(&state(1_000_000 + 10_000 * call, &list, 999, 60), &s);
        assert_eq!(
            (
                r.metrics.buffer_flush_avg_page_rate,
                r.metrics.buffer_flush_lsn_avg_rate
            ),
            (0, 0),
            "call {call}"
        );
    }
    // 30th call: 1,800 pages / 30 s = 60 → (60 + 0) / 2 = 30; 300,000 / 30 s = 10,000 → 5,000.
    let r = c.recommend(&state(1_300_000, &list, 999, 60), &s);
    assert_eq!(
        (
            r.metrics.buffer_flush_avg_page_rate,
            r.metrics.buffer_flush_lsn_avg_rate
        ),
        (30, 5_000)
    );
}

#[test]
fn averages_also_update_after_flushing_avg_loops_seconds() {
    let s = FlushSettings::default();
    let mut c = InnoDbController::new();
    let list: Vec<Lsn> = vec![0];
    c.recommend(&state(1_000_000, &list, 999, 0), &s);
    let mut late = state(1_310_000, &list, 999, 620);
    late.elapsed = Duration::from_secs(31);
    // One call after 31 s: 620 / 31 = 20 → 10; 310,000 / 31 = 10,000 → 5,000.
    let r = c.recommend(&late, &s);
    assert_eq!(
        (
            r.metrics.buffer_flush_avg_page_rate,
            r.metrics.buffer_flush_lsn_avg_rate
        ),
        (10, 5_000)
    );
}

#[test]
fn caps_pages_for_lsn_at_twice_and_n_pages_at_io_capacity_max() {
    let s = settings(|s| s.set_flushing_avg_loops(1).expect("valid"));
    let mut c = InnoDbController::new();
    // 20,000 pages all older than any target; the count stops at 3 × 4,000 → by_age = 4,000 (cap).
    let list: Vec<Lsn> = vec![1; 20_000];
    c.recommend(&state(1, &list, 1_000_000, 0), &s);
    // Age 7,000,000 = async point: pct_for_lsn 1333 → PCT_IO = 2,666; dirty 2 % → 0;
    // avg_page_rate 0. (2,666 + 0 + 4,000) / 3 = 2,222 → capped at 2,000.
    let r = c.recommend(&state(7_000_001, &list, 1_000_000, 0), &s);
    assert_eq!(r.metrics.buffer_flush_n_to_flush_by_age, 4_000);
    assert_eq!(r.metrics.buffer_flush_pct_for_lsn, 1333);
    assert_eq!(r.pages, 2_000);
}

/// A counter that ignores the limit, as a cleaner walking an unbounded list might.
struct Unbounded(u64);

impl FlushListAges for Unbounded {
    fn count_oldest_at_most(&self, _lsn: Lsn, _limit: u64) -> u64 {
        self.0
    }
}

#[test]
fn pages_for_lsn_is_capped_even_if_the_counter_ignores_its_limit() {
    let s = settings(|s| s.set_flushing_avg_loops(1).expect("valid"));
    let mut c = InnoDbController::new();
    let huge = Unbounded(1_000_000);
    let mut st = state(1, &[], 1_000_000, 0);
    st.flush_list = &huge;
    c.recommend(&st, &s);
    st.current_lsn = 2;
    // by_age = 1,000,000 / 3 = 333,333 (the metric is uncapped); pages_for_lsn = 4,000;
    // pct 0 (age 0, dirty 0), avg_page_rate 0 → 4,000 / 3 = 1,333.
    let r = c.recommend(&st, &s);
    assert_eq!(
        (r.metrics.buffer_flush_n_to_flush_by_age, r.pages),
        (333_333, 1_333)
    );
}

#[test]
fn with_nothing_dirty_and_no_history_the_request_is_zero() {
    let s = FlushSettings::default();
    let mut c = InnoDbController::new();
    let empty: Vec<Lsn> = Vec::new();
    c.recommend(&state(100, &empty, 999, 0), &s);
    // Age 0, dirty 0, averages 0; pages_for_lsn = max(0 / 3, 1) = 1 → (0 + 0 + 1) / 3 = 0.
    let r = c.recommend(&state(200, &empty, 999, 0), &s);
    assert_eq!((r.pages, r.metrics.buffer_flush_n_to_flush_by_age), (0, 1));
}

#[test]
fn an_idle_second_flushes_idle_flush_pct_of_io_capacity_outside_the_adaptive_total() {
    let s = FlushSettings::default();
    let mut c = InnoDbController::new();
    let list: Vec<Lsn> = (0..500).collect();
    c.recommend(&state(1_000, &list, 999, 0), &s);
    let active = c.recommend(&state(2_000, &list, 999, 0), &s);
    let idle = c.recommend(&state(2_000, &list, 999, 0), &s);
    assert_eq!(idle.pages, 200, "PCT_IO(100)");
    assert_eq!(
        idle.metrics.buffer_flush_adaptive_total_pages,
        active.metrics.buffer_flush_adaptive_total_pages
    );
    let few: Vec<Lsn> = (0..7).collect();
    assert_eq!(
        c.recommend(&state(2_000, &few, 999, 0), &s).pages,
        7,
        "no more than is dirty"
    );
    let quiet = settings(|s| s.set_idle_flush_pct(0).expect("valid"));
    assert_eq!(c.recommend(&state(2_000, &list, 999, 0), &quiet).pages, 0);
}

#[test]
fn settings_switch_between_calls() {
    let mut c = InnoDbController::new();
    let list: Vec<Lsn> = vec![1_000_000];
    let on = FlushSettings::default();
    let off = settings(|s| s.set_adaptive_flushing(false));
    c.recommend(&state(1_000_000, &list, 999, 0), &on);
    let r = c.recommend(&state(4_500_000, &list, 999, 0), &on);
    assert_eq!(
        r.metrics.buffer_flush_pct_for_lsn, 471,
        "age 3,500,000 as in pct_for_lsn_by_hand"
    );
    let r = c.recommend(&state(4_600_000, &list, 999, 0), &off);
    assert_eq!(r.metrics.buffer_flush_pct_for_lsn, 0);
}

/// The pages requested after `warmup` calls that averaged some history, on a fixed flush list.
fn requested(current_lsn: Lsn, dirty_pages: u64, loops: u32, flushed: u64) -> u64 {
    let s = settings(|s| s.set_flushing_avg_loops(loops).expect("valid"));
    let list: Vec<Lsn> = (0..400).map(|i| 10_000 * i).collect();
    let mut c = InnoDbController::new();
    for (i, lsn) in [4_000_000, 4_200_000, 4_500_000].into_iter().enumerate() {
        c.recommend(&state(lsn, &list, 999, flushed * i as u64), &s);
    }
    let mut last = state(current_lsn, &list, 999, flushed);
    last.dirty_pages = dirty_pages;
    c.recommend(&last, &s).pages
}

proptest! {
    #[test]
    fn more_age_never_fewer_pages(
        lsn in 4_500_001u64..20_000_000, more in 0u64..10_000_000, dirty in 0u64..1000,
        loops in 1u32..5, flushed in 0u64..3000,
    ) {
        prop_assert!(requested(lsn, dirty, loops, flushed) <= requested(lsn + more, dirty, loops, flushed));
    }

    #[test]
    fn more_dirty_never_fewer_pages(
        lsn in 4_500_001u64..20_000_000, dirty in 0u64..2000, more in 0u64..2000,
        loops in 1u32..5, flushed in 0u64..3000,
    ) {
        prop_assert!(requested(lsn, dirty, loops, flushed) <= requested(lsn, dirty + more, loops, flushed));
    }

    #[test]
    fn pct_for_lsn_is_monotone_for_any_settings(
        age in 0u64..50_000_000, more in 0u64..50_000_000, lwm in 0u32..=70, adaptive: bool,
        io in 100u64..5000, extra in 0u64..20_000,
    ) {
        let mut s = FlushSettings::default();
        // Lower io_capacity first, so any new maximum is at least the current capacity.
        s.set_io_capacity(100).expect("valid");
        s.set_io_capacity_max(io + extra).expect("valid");
        s.set_io_capacity(io).expect("valid");
        s.set_adaptive_flushing_lwm(lwm).expect("valid");
        s.set_adaptive_flushing(adaptive);
        prop_assert!(pct_for_lsn(age, &POINTS, &s) <= pct_for_lsn(age + more, &POINTS, &s));
    }

    #[test]
    fn the_request_never_exceeds_io_capacity_max(
        lsn in 1u64..u64::MAX / 2, dirty in 0u64..u64::MAX / 2, flushed: u64, io in 100u64..3000,
    ) {
        let mut s = FlushSettings::default();
        s.set_io_capacity(100).expect("valid");
        s.set_io_capacity_max(io).expect("valid");
        s.set_flushing_avg_loops(1).expect("valid");
        let list: Vec<Lsn> = vec![0; 50];
        let mut c = InnoDbController::new();
        c.recommend(&state(0, &list, 999, 0), &s);
        let mut st = state(lsn, &list, 999, flushed);
        st.dirty_pages = dirty;
        prop_assert!(c.recommend(&st, &s).pages <= s.io_capacity_max());
    }
}

#[test]
fn the_slice_counter_is_what_the_controller_uses() {
    // Guards the inclusive bound the InnoDB loop uses (`oldest_modification > target` stops).
    let list = SortedAges::new(&[100, 200, 300]).expect("sorted");
    assert_eq!(list.count_oldest_at_most(200, u64::MAX), 2);
}
