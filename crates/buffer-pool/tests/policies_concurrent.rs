//! All three free-page policies under a pool much smaller than the working set: 4 reader
//! threads and 2 writer threads, the policy switched at run time while they work, then every
//! page's content checked. What would break: lost writes (a dirty page evicted unwritten), torn
//! reads, deadlocks between page latches and pool lists, or a policy switch stranding a waiter.
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use barracuda_buffer_pool::FreePagePolicy;
use common::{assert_wal_rule_kept, commit_change, pid, read_u64, setup, small_config, Rng};

const PAGES: u32 = 1000;
/// Operations (reads and writes, all threads) done under each policy before switching.
const OPS_PER_PHASE: u64 = 2000;
/// Past the page header, whose LSN field (bytes 16..24) the store's WAL check reads.
const COUNTER_AT: usize = 64;

#[test]
fn policies_switched_under_load_keep_every_write() {
    let (store, pool) = setup(small_config(64), PAGES);
    let expected: Arc<Vec<AtomicU64>> = Arc::new((0..PAGES).map(|_| AtomicU64::new(0)).collect());
    let lsn = Arc::new(AtomicU64::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let (pool, stop, ops, store) = (pool.clone(), stop.clone(), ops.clone(), store.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng::new(t + 1);
            while !stop.load(SeqCst) {
                let p = rng.below(u64::from(PAGES)) as u32;
                let g = pool.get_shared(pid(p)).unwrap();
                assert_eq!(&g[0..8], &store.stamp(pid(p))[0..8], "page identity");
                drop(g);
                ops.fetch_add(1, SeqCst);
            }
        }));
    }
    for t in 0..2u64 {
        let (pool, stop, ops) = (pool.clone(), stop.clone(), ops.clone());
        let (expected, lsn) = (expected.clone(), lsn.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng::new(100 + t);
            while !stop.load(SeqCst) {
                let a = rng.below(u64::from(PAGES - 1)) as u32;
                let b = a + 1 + rng.below(u64::from(PAGES - 1 - a)) as u32;
                // Hold an X latch while reading another page (ordered a < b, no AB-BA).
                let mut g = pool.get_exclusive(pid(a)).unwrap();
                let other = pool.get_shared(pid(b)).unwrap();
                assert_eq!(read_u64(&other, 4) >> 32, 0, "stamp bytes 8..12 stay zero");
                drop(other);
                let v = read_u64(&g, COUNTER_AT) + 1;
                g[COUNTER_AT..COUNTER_AT + 8].copy_from_slice(&v.to_le_bytes());
                commit_change(&mut g, lsn.fetch_add(1, SeqCst));
                expected[a as usize].fetch_add(1, SeqCst);
                drop(g);
                ops.fetch_add(1, SeqCst);
            }
        }));
    }
    let phases = [
        FreePagePolicy::Eager,
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
        FreePagePolicy::Eager,
        FreePagePolicy::Backoff,
        FreePagePolicy::Legacy,
    ];
    let mut last_ops = 0;
    for policy in phases {
        pool.set_free_page_policy(policy);
        assert_eq!(pool.free_page_policy(), policy);
        // Each phase lasts until the threads have done a good amount of work under it (Backoff
        // may stall up to the manager's one-second sleep, hence the generous deadline).
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while ops.load(SeqCst) < last_ops + OPS_PER_PHASE {
            assert!(
                std::time::Instant::now() < deadline,
                "{policy}: {} operations in 20 s",
                ops.load(SeqCst) - last_ops
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        last_ops = ops.load(SeqCst);
    }
    stop.store(true, SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    pool.flush_all().unwrap();
    let stats = pool.stats();
    assert_eq!(stats.dirty_pages, 0);
    for p in 0..PAGES {
        let want = expected[p as usize].load(SeqCst);
        assert_eq!(
            read_u64(&store.page(pid(p)).unwrap(), COUNTER_AT),
            want,
            "store, page {p}"
        );
        assert_eq!(
            read_u64(&pool.get_shared(pid(p)).unwrap(), COUNTER_AT),
            want,
            "pool, page {p}"
        );
    }
    println!("{stats}");
    assert!(stats.pages_written() > 0);
    assert!(stats.evictions() > 0);
    assert!(stats.free_list_empty > 0, "{stats}");
    assert_wal_rule_kept(&store);
}
