//! Dirty pages reach the store with their content, oldest modification first, and never before
//! the log is durable up to their LSN (the WAL rule, checked by the store at each write);
//! `flush_all` leaves nothing dirty; `discard_space` drops pages without writing.
mod common;

use barracuda_buffer_pool::FreePagePolicy;
use barracuda_page::page_lsn;
use common::{assert_wal_rule_kept, commit_change, pid, read_u64, setup, small_config, wait_for};

#[test]
fn dirty_page_written_back_on_eviction() {
    for policy in [
        FreePagePolicy::Eager,
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
    ] {
        let (store, pool) = setup(small_config(16).policy(policy), 500);
        {
            let mut g = pool.get_exclusive(pid(0)).unwrap();
            g[100..108].copy_from_slice(&0xdead_beef_u64.to_le_bytes());
            commit_change(&mut g, 77);
        }
        // Clean victims are preferred; the dirty page is written by an LRU batch (or a
        // single-page flush) while the working set keeps cycling.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut p = 1;
        while read_u64(&store.page(pid(0)).unwrap(), 100) != 0xdead_beef {
            assert!(
                std::time::Instant::now() < deadline,
                "{policy}: never written back"
            );
            drop(pool.get_shared(pid(p)).unwrap());
            p = p % 499 + 1;
        }
        for p in 200..240 {
            drop(pool.get_shared(pid(p)).unwrap());
        }
        let img = store.page(pid(0)).unwrap();
        assert_eq!(read_u64(&img, 100), 0xdead_beef, "{policy}");
        assert_eq!(
            page_lsn(&img),
            Some(77),
            "{policy}: the store checked LSN 77"
        );
        assert_wal_rule_kept(&store);
        let g = pool.get_shared(pid(0)).unwrap();
        assert_eq!(read_u64(&g, 100), 0xdead_beef);
        assert_eq!(store.reads_of(pid(0)), 2, "{policy}: evicted and read back");
        let stats = pool.stats();
        assert!(stats.pages_written() >= 1, "{stats}");
        assert!(stats.evictions() > 0);
    }
}

#[test]
fn flush_list_is_ordered_by_oldest_modification() {
    let (store, pool) = setup(small_config(64), 100);
    for (p, lsn) in [(1, 30), (2, 10), (3, 20)] {
        let mut g = pool.get_exclusive(pid(p)).unwrap();
        g[200] = p as u8;
        commit_change(&mut g, lsn);
    }
    {
        // Re-dirtying keeps the oldest modification.
        let mut g = pool.get_exclusive(pid(2)).unwrap();
        commit_change(&mut g, 40);
        assert_eq!(g.newest_modification(), 40);
        assert!(g.is_dirty());
    }
    assert_eq!(pool.oldest_modification(), Some(10));
    assert_eq!(pool.flush_list_batch(1).unwrap(), 1);
    let img = store.page(pid(2)).unwrap();
    assert_eq!(img[200], 2);
    assert_eq!(
        page_lsn(&img),
        Some(40),
        "written with its newest LSN, which the log had to reach first"
    );
    assert_eq!(store.page(pid(1)).unwrap()[200], 0);
    assert_eq!(pool.oldest_modification(), Some(20));
    assert_eq!(pool.flush_list_batch(1).unwrap(), 1);
    assert_eq!(store.page(pid(3)).unwrap()[200], 3);
    assert_eq!(pool.oldest_modification(), Some(30));
    assert_eq!(pool.stats().dirty_pages, 1);
    assert_wal_rule_kept(&store);
}

#[test]
fn flush_all_leaves_no_dirty_pages() {
    // 50 pages: one batch, written by the calling thread; 700: six batches, taken in turn by
    // the calling thread and its helper.
    for (frames, pages) in [(64, 50), (1024, 700)] {
        let (store, pool) = setup(small_config(frames), 1000);
        for p in 0..pages {
            let mut g = pool.get_exclusive(pid(p)).unwrap();
            g[300] = 0xaa;
            commit_change(&mut g, u64::from(p) + 1);
        }
        assert_eq!(pool.stats().dirty_pages, pages as usize);
        pool.flush_all().unwrap();
        let stats = pool.stats();
        assert_eq!(stats.dirty_pages, 0);
        assert_eq!(pool.oldest_modification(), None);
        assert_eq!(stats.pages_written_flush_list, u64::from(pages));
        assert_eq!(
            store.pages_written(),
            u64::from(pages),
            "each page written once"
        );
        for p in 0..pages {
            let img = store.page(pid(p)).unwrap();
            assert_eq!(img[300], 0xaa);
            assert_eq!(page_lsn(&img), Some(u64::from(p) + 1));
        }
        assert_wal_rule_kept(&store);
    }
}

#[test]
fn discard_space_drops_pages_without_writing() {
    let (store, pool) = setup(small_config(64), 100);
    store.create_space(2, 100);
    for p in 0..10 {
        let mut g = pool
            .get_exclusive(barracuda_page::PageId::new(2, p))
            .unwrap();
        g[0] = 0xff;
        commit_change(&mut g, 5);
    }
    drop(pool.get_shared(pid(1)).unwrap());
    // A pinned page of the space is dropped too, once unpinned.
    let pinned = pool.get_shared(barracuda_page::PageId::new(2, 50)).unwrap();
    pool.discard_space(2);
    drop(pinned);
    let stats = pool.stats();
    assert_eq!(stats.dirty_pages, 0);
    assert_eq!(pool.oldest_modification(), None);
    pool.flush_all().unwrap();
    assert_eq!(
        store.pages_written(),
        0,
        "discarded pages are never written"
    );
    let reads = store.reads();
    drop(pool.get_shared(barracuda_page::PageId::new(2, 3)).unwrap());
    assert_eq!(store.reads(), reads + 1, "discarded page is read again");
    assert_eq!(
        pool.get_shared(barracuda_page::PageId::new(2, 3)).unwrap()[0],
        2,
        "stamp, not the lost change"
    );
    drop(pool.get_shared(pid(1)).unwrap());
    assert_eq!(store.reads(), reads + 1, "other spaces untouched");
    let _ = wait_for(&pool, "frames reclaimed", |s| {
        s.free_pages + s.lru_len == 64
    });
}
