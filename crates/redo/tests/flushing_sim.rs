//! A miniature of the seed's figure (adaptive flushing on and off): a workload generating redo at
//! a constant offered rate, random single-page updates over a data set that fits in the pool, a
//! simulated flush list ordered by oldest modification, a device with a fixed page-write rate, and
//! the engine's sync point (committers flush themselves and commit nothing meanwhile). Time is
//! simulated in 10 ms ticks; nothing reads a clock, and the random stream is seeded.

use barracuda_redo::flushing::{
    FlushController, FlushListAges, FlushPoints, FlushRequest, FlushSettings, FlushState,
    FlushUrgency, InnoDbController, PiController, PiSettings,
};
use std::collections::VecDeque;
use std::time::Duration;

type Lsn = u64;

/// Pool pages: large enough that dirty pages stay under 10 % (no dirty-page pressure).
const POOL_PAGES: u64 = 2_500_000;
/// Offered load, transactions per second, each one page update.
const OFFERED_TPS: u64 = 4_000;
/// Redo bytes per transaction.
const REDO_PER_TXN: u64 = 250;
/// Pages the device can write per second (cleaner and sync flushing share it).
const DEVICE_PAGES_PER_S: u64 = 3_000;
const TICKS_PER_S: u64 = 100;
const SECONDS: usize = 300;
const LOG_CAPACITY: u64 = 64 << 20;
const PAGE_SIZE: u64 = 16 << 10;

/// The flush list: (oldest modification, page), oldest first.
struct FlushList(VecDeque<(Lsn, u64)>);

impl FlushListAges for FlushList {
    fn count_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64 {
        (self.0.partition_point(|&(oldest, _)| oldest <= lsn) as u64).min(limit)
    }
}

struct Outcome {
    tps: Vec<u64>,
    max_age: u64,
    sync_ticks: u64,
    final_age: u64,
}

impl Outcome {
    fn min_tps(&self) -> u64 {
        self.tps.iter().copied().min().unwrap_or(0)
    }

    fn median_tps(&self) -> u64 {
        let mut sorted = self.tps.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or(0)
    }
}

/// splitmix64: deterministic, dependency-free.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn flush_oldest(list: &mut FlushList, dirty: &mut [bool], pages: u64) -> u64 {
    let mut done = 0;
    while done < pages {
        let Some((_, page)) = list.0.pop_front() else {
            break;
        };
        if let Some(flag) = dirty.get_mut(page as usize) {
            *flag = false;
        }
        done += 1;
    }
    done
}

fn simulate(
    controller: &mut dyn FlushController,
    settings: &FlushSettings,
    data_pages: u64,
) -> Outcome {
    let points = FlushPoints::for_log(LOG_CAPACITY, PAGE_SIZE, 0).expect("64 MiB fits the reserve");
    let mut rng = 0x5EED_u64;
    let mut lsn: Lsn = 8_192;
    let mut dirty = vec![false; data_pages as usize];
    let mut list = FlushList(VecDeque::new());
    let mut out = Outcome {
        tps: Vec::new(),
        max_age: 0,
        sync_ticks: 0,
        final_age: 0,
    };
    let mut cleaner_pages = 0;
    let age = |list: &FlushList, lsn: Lsn| list.0.front().map_or(0, |&(oldest, _)| lsn - oldest);
    for _ in 0..SECONDS {
        let state = FlushState {
            current_lsn: lsn,
            oldest_modification: list.0.front().map(|&(oldest, _)| oldest),
            points,
            dirty_pages: list.0.len() as u64,
            pool_pages: POOL_PAGES,
            pages_flushed: cleaner_pages,
            elapsed: Duration::from_secs(1),
            flush_list: &list,
        };
        let FlushRequest {
            pages: mut to_flush,
            ..
        } = controller.recommend(&state, settings);
        cleaner_pages = 0;
        let mut committed = 0;
        for tick in 0..TICKS_PER_S {
            let budget = DEVICE_PAGES_PER_S / TICKS_PER_S;
            if points.flush_urgency(age(&list, lsn)) == FlushUrgency::Sync {
                // Committers flush the oldest pages themselves and commit nothing this tick.
                flush_oldest(&mut list, &mut dirty, budget);
                out.sync_ticks += 1;
                continue;
            }
            let share = to_flush.div_ceil(TICKS_PER_S - tick).min(budget);
            let done = flush_oldest(&mut list, &mut dirty, share);
            to_flush -= done.min(to_flush);
            cleaner_pages += done;
            for _ in 0..OFFERED_TPS / TICKS_PER_S {
                let page = next_random(&mut rng) % data_pages;
                if let Some(flag) = dirty.get_mut(page as usize) {
                    if !*flag {
                        *flag = true;
                        list.0.push_back((lsn, page));
                    }
                }
                lsn += REDO_PER_TXN;
                committed += 1;
            }
            let now = age(&list, lsn);
            out.max_age = out.max_age.max(now);
        }
        out.tps.push(committed);
    }
    out.final_age = age(&list, lsn);
    out
}

fn report(name: &str, o: &Outcome, points: &FlushPoints) {
    println!(
        "{name:>12}: min_tps {:>5} median_tps {:>5} max_age {:>9} ({:.2} of async) final_age {:>9} sync_ticks {}",
        o.min_tps(),
        o.median_tps(),
        o.max_age,
        o.max_age as f64 / points.max_modified_age_async as f64,
        o.final_age,
        o.sync_ticks,
    );
}

fn points() -> FlushPoints {
    FlushPoints::for_log(LOG_CAPACITY, PAGE_SIZE, 0).expect("fits")
}

/// 50,000 hot pages at 4,000 updates/s and 1 MB/s of redo: enough that holding the age below the
/// async point needs more than 1,000 page writes per second, within `io_capacity_max`.
const HOT_PAGES: u64 = 50_000;

fn adaptive_off() -> FlushSettings {
    let mut off = FlushSettings::default();
    off.set_adaptive_flushing(false);
    off
}

#[test]
fn innodb_adaptive_flushing_levels_the_age_off_below_the_async_point() {
    let on = simulate(
        &mut InnoDbController::new(),
        &FlushSettings::default(),
        HOT_PAGES,
    );
    report("innodb on", &on, &points());
    assert!(
        on.max_age < points().max_modified_age_async,
        "max age {} reached async",
        on.max_age
    );
    assert!(
        on.final_age < on.max_age,
        "the cold-start overshoot settles"
    );
    assert_eq!(on.sync_ticks, 0);
    assert_eq!(on.min_tps(), OFFERED_TPS, "no second loses throughput");
}

#[test]
fn without_adaptive_flushing_the_age_reaches_the_sync_point_and_commits_stall() {
    let off = simulate(&mut InnoDbController::new(), &adaptive_off(), HOT_PAGES);
    report("innodb off", &off, &points());
    assert!(off.max_age >= points().max_modified_age_sync);
    assert!(off.sync_ticks > 0);
    assert!(
        off.min_tps() < OFFERED_TPS,
        "the seed's cliff: seconds with fewer commits"
    );
}

#[test]
fn the_pi_controller_settles_at_its_target_without_overshoot() {
    let o = simulate(
        &mut PiController::new(PiSettings::default()),
        &FlushSettings::default(),
        HOT_PAGES,
    );
    report("pi", &o, &points());
    let target = points().max_modified_age_async / 2;
    assert!(
        o.max_age < target + target / 10,
        "no overshoot from the cold start: {}",
        o.max_age
    );
    assert_eq!(o.sync_ticks, 0);
    assert!(
        o.final_age.abs_diff(target) < target / 10,
        "final age {} vs target {target}",
        o.final_age
    );
}

/// The comparison for the report (`cargo test -p barracuda-redo --test flushing_sim -- --nocapture`):
/// the three settings over hot sets from 20,000 to 200,000 pages. Whatever the hot set, adaptive
/// flushing never stalls committers for longer than having it off does.
#[test]
fn comparison_across_hot_set_sizes() {
    let p = points();
    println!(
        "async point {} bytes, sync point {} bytes",
        p.max_modified_age_async, p.max_modified_age_sync
    );
    for hot in [20_000u64, 50_000, 100_000, 150_000, 200_000] {
        println!("hot pages {hot}");
        let on = simulate(&mut InnoDbController::new(), &FlushSettings::default(), hot);
        let off = simulate(&mut InnoDbController::new(), &adaptive_off(), hot);
        let pi = simulate(
            &mut PiController::new(PiSettings::default()),
            &FlushSettings::default(),
            hot,
        );
        report("innodb on", &on, &p);
        report("innodb off", &off, &p);
        report("pi", &pi, &p);
        assert!(
            on.sync_ticks <= off.sync_ticks,
            "hot {hot}: on {} > off {}",
            on.sync_ticks,
            off.sync_ticks
        );
    }
}
