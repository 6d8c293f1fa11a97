//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use barracuda_buffer_pool::testing::MemStore;
use barracuda_buffer_pool::{BufferPool, ExclusiveGuard, PoolConfig, PoolStats};
use barracuda_page::{set_page_lsn, Lsn, PageId, PageSize};

/// A store with space 1 of `pages` pages and a pool over it.
pub fn setup(config: PoolConfig, pages: u32) -> (Arc<MemStore>, Arc<BufferPool>) {
    let store = Arc::new(MemStore::new(config.configured_page_size()));
    store.create_space(1, pages);
    let pool = BufferPool::new(config, store.clone()).expect("pool");
    (store, pool)
}

/// A 4 KiB-page config of `pages` frames with read-ahead off.
pub fn small_config(pages: usize) -> PoolConfig {
    PoolConfig::new(PageSize::K4)
        .capacity_pages(pages)
        .read_ahead(barracuda_buffer_pool::ReadAhead::OFF)
}

pub fn pid(page_no: u32) -> PageId {
    PageId::new(1, page_no)
}

/// Records a change made under `g` at `lsn` as a mini-transaction commit does: the page LSN in
/// the header (which the store's WAL check reads), then the page marked dirty.
pub fn commit_change(g: &mut ExclusiveGuard<'_>, lsn: Lsn) {
    set_page_lsn(g, lsn);
    g.mark_dirty(lsn);
}

/// Fails if the store ever wrote a page before the log was durable up to its LSN.
pub fn assert_wal_rule_kept(store: &MemStore) {
    let violations = store.wal_violations();
    if let Some(first) = violations.first() {
        panic!("WAL rule broken {} times, first: {first}", violations.len());
    }
}

/// Waits (bounded) until `cond` holds on the pool's stats.
pub fn wait_for(pool: &BufferPool, what: &str, cond: impl Fn(&PoolStats) -> bool) -> PoolStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = pool.stats();
        if cond(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {stats}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// xorshift64*: a deterministic generator for tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Reads the little-endian u64 at `at`.
pub fn read_u64(page: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"))
}
