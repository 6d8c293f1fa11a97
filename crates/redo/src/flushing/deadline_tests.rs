//! Hand-computed deadline plans, the rate estimator, the sync-point target, and the law that
//! the planned rate meets every deadline (up to the probes' resolution).

use super::*;
use crate::flushing::SortedAges;
use proptest::prelude::*;

fn plan(
    ages: &[Lsn],
    current_lsn: Lsn,
    lsn_rate: u64,
    max_age: u64,
    horizon_ms: u64,
) -> DeadlinePlan {
    let list = SortedAges::new(ages).expect("tests pass sorted lists");
    deadline_plan(&DeadlineInput {
        current_lsn,
        oldest_modification: ages.first().copied(),
        dirty_pages: ages.len() as u64,
        lsn_rate,
        max_age,
        horizon: Duration::from_millis(horizon_ms),
        flush_list: &list,
    })
}

/// 1,000 pages with oldest modifications 0, 1,000, …, 999,000.
fn uniform() -> Vec<Lsn> {
    (0..1_000).map(|i| i * 1_000).collect()
}

#[test]
fn evenly_spread_pages_need_dirty_times_rate_over_the_limit() {
    // Age 1,000,000 of a limit of 2,000,000, 100,000 B/s of redo: nothing due within 0.1 s
    // (1,010,000 < 2,000,000). The tightest prefix is the whole list: 1,000 pages due when the
    // LSN reaches 999,000 + 2,000,000, 19.99 s away; the last probe (the current LSN, all 1,000
    // pages, 20 s) gives 50 = 1,000 × 100,000 / 2,000,000.
    let p = plan(&uniform(), 1_000_000, 100_000, 2_000_000, 100);
    assert_eq!(
        p,
        DeadlinePlan {
            due_pages: 0,
            pages_per_s: 50
        }
    );
    // The same rate at any age: the steady state does not depend on where the age is.
    let young: Vec<Lsn> = (0..1_000).map(|i| 900_000 + i * 100).collect();
    assert_eq!(
        plan(&young, 1_000_000, 100_000, 2_000_000, 100).pages_per_s,
        50
    );
}

#[test]
fn a_cold_start_sees_the_common_deadline_long_before_the_limit() {
    // Every page first dirtied within the first 1,000 bytes of redo (random updates right after
    // a cold start): all 1,000 fall due together when the LSN passes ~1,000,000, 9 s from now at
    // 100,000 B/s, while the age is a tenth of the limit. First probe: LSN 6,250 (0 + 100,000 ×
    // 1/16) holds all 1,000, with 906,250 bytes = 9.0625 s left: 110.3 → 111 pages/s, against
    // the 100 an even spread would need.
    let ages: Vec<Lsn> = (0..1_000).collect();
    let p = plan(&ages, 100_000, 100_000, 1_000_000, 100);
    assert_eq!(
        p,
        DeadlinePlan {
            due_pages: 0,
            pages_per_s: 111
        }
    );
}

#[test]
fn pages_falling_due_within_the_horizon_are_due_now() {
    // Limit 950,000, 0.5 s ahead = 50,000 bytes: pages with oldest ≤ 1,050,000 − 950,000 =
    // 100,000 are due: 0, 1,000, …, 100,000 = 101. The rest: 899 pages by the last probe, with
    // 950,000 bytes = 9.5 s left → 94.6 → 95 pages/s (the rate rises with the probe's LSN here).
    let p = plan(&uniform(), 1_000_000, 100_000, 950_000, 500);
    assert_eq!(
        p,
        DeadlinePlan {
            due_pages: 101,
            pages_per_s: 95
        }
    );
    // A 100 ms round writes the due pages and a tenth of the rate, rounded up: 101 + 10.
    assert_eq!(p.pages_for(Duration::from_millis(100)), 111);
}

#[test]
fn without_redo_only_pages_already_past_the_limit_are_due() {
    // Age 1,000,000 over a limit of 950,000: pages with oldest ≤ 50,000 are past it (51).
    let p = plan(&uniform(), 1_000_000, 0, 950_000, 100);
    assert_eq!(
        p,
        DeadlinePlan {
            due_pages: 51,
            pages_per_s: 0
        }
    );
    assert_eq!(
        plan(&uniform(), 1_000_000, 0, 2_000_000, 100),
        DeadlinePlan::default()
    );
}

#[test]
fn nothing_dirty_needs_nothing() {
    assert_eq!(
        plan(&[], 1_000_000, 100_000, 10, 100),
        DeadlinePlan::default()
    );
}

#[test]
fn the_rate_averages_the_last_second_rises_at_once_and_falls_with_the_time_constant() {
    let ms = Duration::from_millis;
    let mut r = RedoRate::new();
    assert_eq!(r.get(), 0);
    assert_eq!(r.observe(100, Duration::ZERO), 0, "no time, no measurement");
    assert_eq!(r.observe(100_000, ms(100)), 1_000_000);
    // 300,000 in the next 100 ms: the window's average is 400,000 / 0.2 s.
    assert_eq!(
        r.observe(300_000, ms(100)),
        2_000_000,
        "a rise is taken at once"
    );
    // Eight more rounds of 200,000 per 100 ms fill the second: (400,000 + 1,600,000) / 1 s.
    for _ in 0..8 {
        r.observe(200_000, ms(100));
    }
    assert_eq!(r.get(), 2_000_000);
    // The next round pushes the first out of the window: (300,000 + 1,800,000) / 1 s.
    assert_eq!(r.observe(200_000, ms(100)), 2_100_000);
    // A second without redo empties the window: 2,100,000 × e^−1 = 772,546.
    assert_eq!(r.observe(0, Duration::from_secs(1)), 772_546);
    // Redo resuming after the pause is measured alone, not diluted by it: 500,000 in 0.5 s.
    assert_eq!(r.observe(500_000, ms(500)), 1_000_000);
    // Idle rounds before a cold start do not dilute it either.
    let mut cold = RedoRate::new();
    for _ in 0..10 {
        cold.observe(0, ms(100));
    }
    assert_eq!(cold.get(), 0);
    assert_eq!(cold.observe(300_000, ms(100)), 3_000_000);
}

const POINTS: FlushPoints = FlushPoints {
    log_capacity: 4_000_000,
    max_modified_age_async: 2_000_000,
    max_modified_age_sync: 2_500_000,
    max_checkpoint_age_async: 2_750_000,
    max_checkpoint_age: 3_000_000,
};

#[test]
fn a_sync_flush_looks_three_seconds_ahead_but_stops_at_the_async_point() {
    // At 10,000,000 the committers need the oldest modification past 7,500,001.
    let need = 7_500_001;
    let current = 10_000_000;
    assert_eq!(
        sync_flush_lsn(need, current, 100_000, &POINTS),
        7_800_001,
        "3 × 100,000 ahead"
    );
    assert_eq!(
        sync_flush_lsn(need, current, 1_000_000, &POINTS),
        8_000_000,
        "3,000,000 ahead would pass the async point (10,000,000 − 2,000,000)"
    );
    assert_eq!(
        sync_flush_lsn(need, current, 0, &POINTS),
        need,
        "no rate known: what is needed"
    );
    assert_eq!(
        sync_flush_lsn(8_100_000, current, 1_000_000, &POINTS),
        8_100_000,
        "never below what is needed (a commit larger than sync − async)"
    );
}

proptest! {
    /// Written oldest first at the planned rate (the due pages at once), each page is written
    /// by its deadline, give or take what the probes cannot see: `span / (16 × rate)` seconds,
    /// where `span` is the age above the due pages.
    #[test]
    fn the_planned_rate_meets_every_deadline_up_to_the_probe_resolution(
        mut ages in prop::collection::vec(0u64..1_000_000, 1..400),
        current_above in 0u64..1_000_000,
        lsn_rate in 1u64..10_000_000,
        max_age in 1u64..3_000_000,
        horizon_ms in 0u64..1_000,
    ) {
        ages.sort_unstable();
        let (Some(&oldest), Some(&newest)) = (ages.first(), ages.last()) else {
            unreachable!("at least one age")
        };
        let current = newest + current_above;
        let p = plan(&ages, current, lsn_rate, max_age, horizon_ms);
        let ahead = (lsn_rate as f64 * horizon_ms as f64 / 1000.0) as u64;
        let low = (current + ahead).checked_sub(max_age).map_or(oldest, |l| l.max(oldest));
        let slack_per_probe = current.saturating_sub(low) as f64 / PROBES as f64 / lsn_rate as f64;
        let due = p.due_pages as usize;
        prop_assert!(ages.iter().take(due).all(|&l| l + max_age <= current + ahead));
        for (rank, &l) in ages.iter().enumerate().skip(due) {
            let written_at = (rank + 1 - due) as f64 / p.pages_per_s.max(1) as f64;
            let deadline = (l + max_age).saturating_sub(current) as f64 / lsn_rate as f64;
            prop_assert!(
                written_at <= deadline + slack_per_probe + 1e-9 * (1.0 + deadline),
                "page {rank} (oldest {l}) written at {written_at} s, deadline {deadline} s"
            );
        }
    }

}
