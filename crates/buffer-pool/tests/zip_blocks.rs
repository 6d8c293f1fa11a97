//! Compressed pages' blocks in the pool: carved out of the pool's own frames, read with their
//! page, written in place of the page while in step with it, freed with it.
#![expect(clippy::unwrap_used, reason = "test helpers")]

mod common;

use std::sync::Arc;

use barracuda_buffer_pool::testing::MemStore;
use barracuda_buffer_pool::{BufferPool, ImageList, PageStore, PoolStats, ZipState};
use barracuda_page::{set_page_lsn, PageId};
use common::{assert_wal_rule_kept, small_config, wait_for};

const ZIP_SPACE: u32 = 2;
const BLOCK: usize = 1024;

fn zid(page_no: u32) -> PageId {
    PageId::new(ZIP_SPACE, page_no)
}

/// A 4 KiB pool of `frames` over a store with a plain space 1 and space 2 of 1 KiB blocks.
fn setup(frames: usize, block: usize) -> (Arc<MemStore>, Arc<BufferPool>) {
    let config = small_config(frames);
    let store = Arc::new(MemStore::new(config.configured_page_size()));
    store.create_space(1, 1000);
    store.create_zip_space(ZIP_SPACE, 1000, block);
    let pool = BufferPool::new(config, store.clone()).unwrap();
    (store, pool)
}

/// A block as the store keeps it: `fill` in every byte after a header with the page LSN.
fn stored_block(store: &MemStore, id: PageId, fill: u8, lsn: u64) {
    let mut block = vec![fill; BLOCK];
    set_page_lsn(&mut block, lsn);
    store.flush_log_up_to(lsn).unwrap();
    PageStore::write_pages(store, &mut ImageList::new(&[(id, &block)])).unwrap();
}

/// Every frame is on the free list, holds a page, or is lent to blocks.
fn frames_accounted(stats: &PoolStats) -> bool {
    stats.free_pages + stats.lru_len + stats.zip_frames == stats.capacity_pages
}

#[test]
fn a_page_read_from_a_compressed_space_comes_with_its_block() {
    let (store, pool) = setup(64, BLOCK);
    stored_block(&store, zid(3), 0xAB, 7);
    {
        let g = pool.get_exclusive(zid(3)).unwrap();
        assert_eq!(g.zip_state(), ZipState::Synced);
        let block = g.zip_block().unwrap();
        assert_eq!(block.len(), BLOCK);
        assert!(block[100..].iter().all(|&b| b == 0xAB));
        // The toy codec: the page is the block's bytes, then zeros.
        assert_eq!(g[100], 0xAB);
        assert_eq!(g[BLOCK + 1], 0);
    }
    // A page of the space stored whole has no block.
    let plain = store.stamp(zid(4));
    PageStore::write_pages(&*store, &mut ImageList::new(&[(zid(4), &plain)])).unwrap();
    assert_eq!(
        pool.get_exclusive(zid(4)).unwrap().zip_state(),
        ZipState::None
    );
    // A plain space's pages never have one.
    assert_eq!(
        pool.get_exclusive(PageId::new(1, 1)).unwrap().zip_state(),
        ZipState::None
    );
    let stats = pool.stats();
    assert_eq!(stats.zip_frames, 1, "one frame holds the 1 KiB block");
    assert_eq!(stats.zip_blocks[0].used, 1, "{:?}", stats.zip_blocks);
    wait_for(&pool, "every frame accounted for", frames_accounted);
}

#[test]
fn a_synced_block_is_written_in_place_of_the_page_and_a_stale_one_never() {
    let (store, pool) = setup(64, BLOCK);
    stored_block(&store, zid(5), 1, 3);
    {
        let mut g = pool.get_exclusive(zid(5)).unwrap();
        g.change_with_zip(|frame, block| {
            frame[200] = 9;
            block[200] = 9;
            (true, ())
        })
        .unwrap();
        assert!(g.has_unrecorded_change());
        // Not through `DerefMut`: that would be a change of the frame alone.
        g.stamp_page_lsn(10);
        assert_eq!(g.zip_state(), ZipState::Synced);
        g.mark_dirty(10);
    }
    pool.flush_all().unwrap();
    let block = store.block(zid(5)).expect("written as a block");
    assert_eq!(block[200], 9);
    assert_eq!(barracuda_page::page_lsn(&block), Some(10), "stamped too");
    {
        let mut g = pool.get_exclusive(zid(5)).unwrap();
        g[300] = 4; // the frame alone
        assert_eq!(g.zip_state(), ZipState::Stale);
        set_page_lsn(&mut g, 11);
        g.mark_dirty(11);
    }
    pool.flush_all().unwrap();
    assert_eq!(store.block(zid(5)), None, "written whole, not as a block");
    let page = store.page(zid(5)).unwrap();
    assert_eq!((page[200], page[300]), (9, 4));
    // Brought back in step, the block is what is written again.
    {
        let mut g = pool.get_exclusive(zid(5)).unwrap();
        let synced = g.sync_zip(|frame, block| {
            block.copy_from_slice(&frame[..BLOCK]);
            true
        });
        assert!(synced);
        assert_eq!(g.zip_state(), ZipState::Synced);
        g.stamp_page_lsn(12);
        g.mark_dirty(12);
    }
    pool.flush_all().unwrap();
    assert_eq!(store.block(zid(5)).unwrap()[300], 4);
    assert_wal_rule_kept(&store);
}

#[test]
fn a_block_that_cannot_be_synced_is_freed_and_the_page_stays_plain() {
    let (store, pool) = setup(64, BLOCK);
    stored_block(&store, zid(6), 2, 3);
    let mut g = pool.get_exclusive(zid(6)).unwrap();
    assert_eq!(g.change_with_zip(|_, _| (false, 5)), Some(5));
    assert!(
        !g.has_unrecorded_change(),
        "an attempt that changed nothing"
    );
    g[500] = 1;
    assert!(!g.sync_zip(|_, _| false));
    assert_eq!(g.zip_state(), ZipState::None);
    assert_eq!(
        pool.stats().zip_frames,
        0,
        "the allocator gave its frame back"
    );
    // A block can be given again (a page that fits once more).
    g.attach_zip(BLOCK).unwrap();
    assert_eq!(g.zip_state(), ZipState::Stale, "empty until synced");
    assert!(g.sync_zip(|_, block| {
        block.fill(3);
        true
    }));
    assert!(g.attach_zip(3000).is_err(), "not a block size");
    assert_eq!(
        g.zip_state(),
        ZipState::Synced,
        "a refused size changes nothing"
    );
    g.detach_zip();
    assert_eq!(g.zip_state(), ZipState::None);
    g.stamp_page_lsn(20);
    g.mark_dirty(20);
    drop(g);
    wait_for(&pool, "every frame accounted for", frames_accounted);
}

#[test]
fn blocks_of_a_whole_page_take_a_frame_each() {
    let (store, pool) = setup(64, 4096);
    let mut page = vec![7u8; 4096];
    set_page_lsn(&mut page, 2);
    store.flush_log_up_to(2).unwrap();
    PageStore::write_pages(&*store, &mut ImageList::new(&[(zid(1), &page)])).unwrap();
    let g = pool.get_shared(zid(1)).unwrap();
    assert_eq!(g[4000], 7);
    drop(g);
    let stats = pool.stats();
    assert_eq!(stats.zip_frames, 1);
    assert!(stats.zip_blocks.iter().all(|c| c.used == 0));
    wait_for(&pool, "every frame accounted for", frames_accounted);
}

#[test]
fn blocks_leave_with_their_pages_and_every_frame_is_accounted_for() {
    // 32 frames; 300 pages of 1 KiB blocks read over and over: pages and blocks are evicted
    // and the allocator's frames go back and forth between blocks and pages.
    let (store, pool) = setup(32, BLOCK);
    for p in 0..300 {
        stored_block(&store, zid(p), (p % 251) as u8, 1);
    }
    let mut rng = common::Rng::new(7);
    for _ in 0..5000 {
        let p = rng.below(300) as u32;
        let g = pool.get_shared(zid(p)).unwrap();
        assert_eq!(g[100], (p % 251) as u8, "page {p}");
    }
    // The counters are read one lock at a time while the LRU manager may be evicting: wait
    // for a snapshot taken between two changes, where every frame and every block has its
    // owner. (A page may sit in the pool without a block: read plain when its compressed-only
    // copy was freed between the miss and the read.)
    // `zip_pages` is the blocks in use less the compressed-only pages: more of them than pages
    // in the pool would be blocks without an owner.
    let stats = wait_for(&pool, "every frame and block accounted for", |s| {
        frames_accounted(s) && s.zip_pages <= s.lru_len
    });
    assert!(
        stats.evictions() > 0,
        "the pool was too small to hold them all"
    );
    assert!(stats.zip_frames > 0 && stats.zip_frames < 32, "{stats}");
}

#[test]
fn dropped_frames_leave_compressed_only_pages_that_are_read_back_without_io() {
    // 32 frames and 120 pages of 1 KiB blocks: the blocks of every page fit (8 frames), their
    // frames do not. The unzip LRU's rule keeps blocks while reads look I/O-bound.
    let (store, pool) = setup(32, BLOCK);
    for p in 0..120 {
        stored_block(&store, zid(p), (p % 251) as u8, 1);
    }
    let mut rng = common::Rng::new(11);
    for _ in 0..3000 {
        let p = rng.below(120) as u32;
        let g = pool.get_shared(zid(p)).unwrap();
        assert_eq!(g[100], (p % 251) as u8, "page {p}");
    }
    // Counters read one lock at a time: wait for a snapshot between two evictions.
    let stats = wait_for(&pool, "every frame and block accounted for", |s| {
        frames_accounted(s) && s.zip_pages <= s.lru_len
    });
    assert!(
        stats.frames_dropped_keeping_block > 0,
        "frames were dropped with their blocks kept: {stats:?}"
    );
    assert!(
        stats.zip_only_hits > 0,
        "compressed-only pages were read back by decompression: {stats:?}"
    );
    assert_eq!(
        stats.pages_read,
        store.reads(),
        "a compressed-only page decompressed in memory is not counted as a read"
    );
    assert!(
        store.reads() + stats.zip_only_hits > 120,
        "misses: {} store reads, {} compressed-only hits",
        store.reads(),
        stats.zip_only_hits
    );
}

#[test]
fn a_page_created_again_never_reads_back_its_old_compressed_only_copy() {
    // Pages touched twice become young at once, so the created pages (young) are pushed out
    // by the reads below.
    let config = small_config(32).old_blocks_time(std::time::Duration::ZERO);
    let store = Arc::new(MemStore::new(config.configured_page_size()));
    store.create_zip_space(ZIP_SPACE, 1000, BLOCK);
    let pool = BufferPool::new(config, store.clone()).unwrap();
    for p in 0..120 {
        stored_block(&store, zid(p), 0x11, 1);
    }
    // Read them all until some are compressed-only.
    for _ in 0..3 {
        for p in 0..120 {
            drop(pool.get_shared(zid(p)).unwrap());
        }
    }
    let stats = pool.stats();
    assert!(stats.zip_only_pages > 0, "{stats:?}");
    // Re-create a few pages that were just evicted (so compressed-only now: the newest of
    // them) with new contents and no block, and write them out; push them out of the pool,
    // then read them back: the new contents, never the old copy.
    let recreated = 100..108u32;
    for p in recreated.clone() {
        let mut g = pool.create(zid(p)).unwrap();
        g[100] = 0x22;
        set_page_lsn(&mut g, 5);
        g.mark_dirty(5);
    }
    store.flush_log_up_to(5).unwrap();
    pool.flush_all().unwrap();
    // A few pages, each touched twice (young), are enough to push the 8 out of 32 frames;
    // few enough that the old copies, the newest compressed-only pages, are not freed yet.
    for round in 0..3 {
        for p in (110..120).chain(60..70) {
            drop(pool.get_shared(zid(p)).unwrap());
            drop(pool.get_shared(zid(p)).unwrap());
        }
        for p in recreated.clone() {
            assert_eq!(
                pool.get_shared(zid(p)).unwrap()[100],
                0x22,
                "page {p}, round {round}"
            );
        }
    }
}
