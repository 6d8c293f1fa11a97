//! Linear read-ahead prefetches the next extent on a sequential scan and not on random access;
//! random read-ahead (off by default) fills an extent whose pages are recently accessed; unused
//! prefetched pages are counted when evicted.
mod common;

use std::sync::Arc;

use barracuda_buffer_pool::testing::MemStore;
use barracuda_buffer_pool::{BufferPool, PoolConfig, ReadAhead};
use barracuda_page::{PageId, PageSize};
use common::{wait_for, Rng};

fn pool(read_ahead: ReadAhead) -> (Arc<MemStore>, Arc<BufferPool>) {
    let store = Arc::new(MemStore::new(PageSize::K16));
    store.create_space(1, 1024);
    store.create_space(2, 1024);
    let config = PoolConfig::new(PageSize::K16)
        .capacity_pages(512)
        .read_ahead(read_ahead);
    let pool = BufferPool::new(config, store.clone()).expect("pool");
    (store, pool)
}

fn read(pool: &BufferPool, space: u32, pages: impl IntoIterator<Item = u32>) {
    for p in pages {
        drop(pool.get_shared(PageId::new(space, p)).expect("page"));
    }
}

#[test]
fn sequential_scan_triggers_linear_read_ahead() {
    let (store, pool) = pool(ReadAhead::default());
    let extent = PageSize::K16.pages_per_extent();
    read(&pool, 1, 0..extent);
    let stats = wait_for(&pool, "read-ahead of the next extent", |s| {
        s.read_ahead_linear == u64::from(extent) && s.pending_read_ahead == 0
    });
    assert_eq!(stats.pages_read, u64::from(extent));
    // The next extent is served from the pool, read once (by read-ahead).
    read(&pool, 1, extent..2 * extent);
    for p in extent..2 * extent {
        assert_eq!(store.reads_of(PageId::new(1, p)), 1);
    }
    assert_eq!(
        pool.stats().pages_read,
        u64::from(extent),
        "no user-thread reads"
    );
    // Accessing the last page of the prefetched extent triggers the one after it.
    wait_for(&pool, "third extent", |s| {
        s.read_ahead_linear == 2 * u64::from(extent)
    });
}

#[test]
fn unused_read_ahead_pages_are_counted_when_evicted() {
    let extent = PageSize::K16.pages_per_extent();
    // The read-ahead decision is taken in the reading thread: right after the scan, either pages
    // are queued (or already served) or the scan did not trigger it. It did not, once in a CI
    // run, when the background LRU manager's evictions after the warm-up disturbed the scanned
    // extent (not yet understood; see the closing note of issue 7). So a scenario that did not
    // trigger is run again on a fresh pool, a bounded number of times, and must trigger once.
    let mut attempts = 0;
    let pool = loop {
        attempts += 1;
        let (_store, pool) = pool(ReadAhead::OFF);
        // Warm the pool first so that prefetched pages enter the old sublist (during warm-up
        // everything enters at the head, as in InnoDB below BUF_LRU_OLD_MIN_LEN).
        read(&pool, 2, 0..600);
        pool.set_read_ahead(ReadAhead::default());
        read(&pool, 1, 0..extent);
        let stats = pool.stats();
        if stats.pending_read_ahead > 0 || stats.read_ahead_linear > 0 {
            break pool;
        }
        assert!(
            attempts < 5,
            "a sequential scan never triggered read-ahead: {stats}"
        );
    };
    wait_for(&pool, "read-ahead", |s| {
        s.read_ahead_linear == u64::from(extent) && s.pending_read_ahead == 0
    });
    pool.set_read_ahead(ReadAhead::OFF);
    read(&pool, 2, 600..1024);
    let stats = pool.stats();
    assert!(stats.read_ahead_evicted > 0, "{stats}");
}

#[test]
fn descending_scan_reads_the_previous_extent() {
    let (_store, pool) = pool(ReadAhead::default());
    let extent = PageSize::K16.pages_per_extent();
    read(&pool, 1, (2 * extent..3 * extent).rev());
    let stats = wait_for(&pool, "previous extent", |s| {
        s.read_ahead_linear == u64::from(extent) && s.pending_read_ahead == 0
    });
    assert_eq!(stats.pages_read, u64::from(extent));
    read(&pool, 1, extent..2 * extent);
    assert_eq!(pool.stats().pages_read, u64::from(extent));
}

#[test]
fn random_access_does_not_trigger_linear_read_ahead() {
    let (_store, pool) = pool(ReadAhead::default());
    // Read-ahead is decided in the reading thread, which queues the pages for the background
    // reader. With the background threads stopped, whatever is queued stays queued, so after the
    // reads "never triggered" (nothing pending) cannot be mistaken for "not served yet".
    pool.shutdown();
    let mut rng = Rng::new(7);
    read(&pool, 1, (0..300).map(|_| rng.below(1024) as u32));
    let stats = pool.stats();
    assert_eq!(stats.pending_read_ahead, 0, "{stats}");
    assert_eq!(stats.read_ahead_linear, 0, "{stats}");
    assert_eq!(
        stats.read_ahead_random, 0,
        "random read-ahead is off by default"
    );
    // The same observation sees a trigger: a sequential pass over an extent queues the next one.
    let extent = PageSize::K16.pages_per_extent();
    read(&pool, 2, 0..extent);
    let stats = pool.stats();
    assert_eq!(stats.pending_read_ahead, extent as usize, "{stats}");
    assert_eq!(stats.read_ahead_linear, 0, "queued, not read: {stats}");
}

#[test]
fn random_read_ahead_fills_a_hot_extent() {
    let (_store, pool) = pool(ReadAhead {
        linear_threshold: None,
        random: true,
    });
    // 13 (= 5 + 64/8) pages of extent 3, out of order; the 14th miss triggers it.
    let pages = [
        200, 210, 195, 230, 250, 199, 205, 241, 222, 213, 194, 248, 233, 220,
    ];
    read(&pool, 1, pages);
    let stats = wait_for(&pool, "random read-ahead", |s| {
        s.read_ahead_random > 0 && s.pending_read_ahead == 0
    });
    assert_eq!(stats.read_ahead_linear, 0);
    assert!(
        stats.read_ahead_random >= 64 - pages.len() as u64,
        "{stats}"
    );
}
