//! Undo logs through a buffer pool: records read back by roll pointer in both orders across
//! pages, logs found active until they commit, the history list in commit order, and pages
//! given back when a log is purged or discarded (its header page kept for the next log).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, PlaceholderLog};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{PageSize, UndoKind};
use barracuda_undo::{RollPtr, UndoSpace, ROLLBACK_SEGMENTS};

const SPACE: u32 = 9;
/// Pages a new undo tablespace allocates: its rollback segment pages.
const RSEGS: u64 = ROLLBACK_SEGMENTS as u64;

struct Fixture {
    pool: Arc<BufferPool>,
    alloc: Arc<MemAllocator>,
    log: Arc<PlaceholderLog>,
}

impl Fixture {
    fn new() -> Self {
        let ps = PageSize::K4;
        let store = Arc::new(MemStore::new(ps));
        store.create_space(SPACE, u32::MAX);
        Self {
            pool: BufferPool::new(PoolConfig::new(ps).capacity_pages(64), store).unwrap(),
            alloc: Arc::new(MemAllocator::new()),
            log: Arc::new(PlaceholderLog::default()),
        }
    }

    fn create(&self) -> UndoSpace {
        UndoSpace::create(
            self.pool.clone(),
            self.alloc.clone(),
            self.log.clone(),
            SPACE,
        )
        .unwrap()
    }

    fn reopen(&self) -> (UndoSpace, barracuda_undo::UndoSpaceState) {
        UndoSpace::open(
            self.pool.clone(),
            self.alloc.clone(),
            self.log.clone(),
            SPACE,
        )
        .unwrap()
    }
}

#[test]
fn records_read_back_by_roll_pointer_across_pages_and_in_order() {
    let fx = Fixture::new();
    let undo = fx.create();
    let mut log = undo.begin_log(5).unwrap();
    let mut written = Vec::new();
    // 300-byte payloads: a 4 KiB page holds about a dozen, so the log spans several pages.
    for i in 0..60u32 {
        let kind = if i % 3 == 0 {
            UndoKind::Insert
        } else {
            UndoKind::Update
        };
        let payload = vec![i as u8; if kind == UndoKind::Insert { 8 } else { 300 }];
        let ptr = undo.append(&mut log, kind, 77, &payload).unwrap();
        assert_eq!(ptr.insert, kind == UndoKind::Insert);
        written.push((ptr, kind, payload));
    }
    assert_eq!(log.records(), 60);
    let pages: std::collections::BTreeSet<u32> = written.iter().map(|(p, ..)| p.page_no).collect();
    assert!(pages.len() >= 4, "spans pages: {pages:?}");
    for (i, (ptr, kind, payload)) in written.iter().enumerate() {
        let record = undo.record(*ptr).unwrap();
        assert_eq!(
            (record.kind, record.space, record.undo_no, &record.payload),
            (*kind, 77, i as u32, payload)
        );
    }
    let all = undo.records_oldest_first(log.first_page()).unwrap();
    assert_eq!(
        all.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        written.iter().map(|(p, ..)| *p).collect::<Vec<_>>()
    );
    // Page by page: every record in order, or only the kinds asked for, uncopied otherwise.
    let log_pages = undo.log_pages(log.first_page()).unwrap();
    assert_eq!(log_pages.len(), pages.len());
    let (mut every, mut updates) = (Vec::new(), Vec::new());
    for &page in &log_pages {
        let on_page = undo.records_on_page(log.first_page(), page).unwrap();
        every.extend(on_page.iter().map(|(p, r)| (*p, r.kind)));
        let of_kind = undo
            .records_on_page_of_kind(log.first_page(), page, |k| k == UndoKind::Update)
            .unwrap();
        updates.extend(of_kind.iter().map(|(p, r)| (*p, r.kind)));
    }
    let expected: Vec<_> = written.iter().map(|(p, k, _)| (*p, *k)).collect();
    assert_eq!(every, expected);
    let expected_updates: Vec<_> = expected
        .iter()
        .copied()
        .filter(|&(_, k)| k == UndoKind::Update)
        .collect();
    assert_eq!(updates, expected_updates);
    assert_eq!(updates.len(), 40);
    // A pointer at no record is an error naming the page, not a panic.
    let bad = RollPtr {
        page_no: written[0].0.page_no,
        offset: 2,
        insert: false,
    };
    let err = undo.record(bad).unwrap_err().to_string();
    assert!(err.contains("no undo record at 2"), "{err}");
}

#[test]
fn a_log_is_active_until_commit_then_in_the_history_in_commit_order() {
    let fx = Fixture::new();
    let undo = fx.create();
    let mut a = undo.begin_log(10).unwrap();
    let mut b = undo.begin_log(11).unwrap();
    undo.append(&mut a, UndoKind::Insert, 1, b"a").unwrap();
    undo.append(&mut b, UndoKind::Insert, 1, b"b").unwrap();
    let (a_first, b_first) = (a.first_page(), b.first_page());
    // One thread's logs go to its rollback segment.
    let r = a.rseg();
    assert_eq!(b.rseg(), r);
    let (_, state) = fx.reopen();
    let mut active = state.active_logs.clone();
    active.sort_unstable();
    assert_eq!(active, vec![(a_first, 10), (b_first, 11)]);
    assert_eq!(state.history_len, 0);

    undo.commit(b, 20).unwrap();
    undo.commit(a, 21).unwrap();
    let (_, state) = fx.reopen();
    assert!(state.active_logs.is_empty());
    assert_eq!(state.history_len, 2);
    let head = undo.history_head(r).unwrap().unwrap();
    assert_eq!(
        (head.first_page, head.trx_id, head.trx_no),
        (b_first, 11, 20)
    );
    undo.remove_history_head(r, b_first).unwrap();
    let head = undo.history_head(r).unwrap().unwrap();
    assert_eq!((head.first_page, head.trx_no), (a_first, 21));
    assert!(
        undo.remove_history_head(r, b_first).is_err(),
        "not the head any more"
    );
    undo.remove_history_head(r, a_first).unwrap();
    assert_eq!(undo.history_head(r).unwrap(), None);
    assert_eq!(undo.history_len().unwrap(), 0);
    // The rollback segment pages, and the two purged logs' header pages in the cache.
    assert_eq!(fx.alloc.allocated_pages(SPACE), RSEGS + 2);
    assert_eq!(undo.cached_header_pages(), 2);
}

/// Purge keeps a removed log's header page (its other pages freed) for the next log, which
/// starts in it without allocating; the cache survives a reopen; beyond its limit purge frees.
#[test]
fn purged_header_pages_are_cached_and_reused_by_new_logs() {
    let fx = Fixture::new();
    let undo = fx.create();
    assert_eq!(
        undo.begin_cached_log(1).unwrap().map(|l| l.first_page()),
        None
    );
    // A log of several pages: only its header page is kept.
    let mut big = undo.begin_log(2).unwrap();
    for _ in 0..20 {
        undo.append(&mut big, UndoKind::Update, 1, &[7u8; 500])
            .unwrap();
    }
    let (big_first, r) = (big.first_page(), big.rseg());
    undo.commit(big, 3).unwrap();
    assert!(fx.alloc.allocated_pages(SPACE) > RSEGS + 1);
    undo.remove_history_head(r, big_first).unwrap();
    assert_eq!(fx.alloc.allocated_pages(SPACE), RSEGS + 1);
    assert_eq!(undo.cached_header_pages(), 1);

    // Reopened, the cache is still there; a new log starts in the cached page, empty.
    let (undo, _) = fx.reopen();
    assert_eq!(undo.cached_header_pages(), 1);
    let mut log = undo.begin_cached_log(4).unwrap().unwrap();
    assert_eq!(log.first_page(), big_first);
    assert_eq!(undo.cached_header_pages(), 0);
    assert_eq!(
        fx.alloc.allocated_pages(SPACE),
        RSEGS + 1,
        "nothing allocated"
    );
    assert!(undo.records_oldest_first(big_first).unwrap().is_empty());
    let header = undo.log_header(big_first).unwrap();
    assert_eq!(
        (
            header.trx_id,
            header.state,
            header.records,
            header.cache_depth
        ),
        (4, barracuda_page::UndoLogState::Active, 0, 0)
    );
    let ptr = undo.append(&mut log, UndoKind::Insert, 1, b"k").unwrap();
    assert_eq!(undo.record(ptr).unwrap().payload, b"k");
    let (_, state) = fx.reopen();
    assert_eq!(state.active_logs, vec![(big_first, 4)]);
    assert_eq!(
        undo.begin_cached_log(5).unwrap().map(|l| l.first_page()),
        None
    );

    // Past the limit, purged header pages are freed.
    let limit = barracuda_undo::CACHED_HEADER_PAGES;
    undo.discard(log).unwrap();
    let logs: Vec<_> = (0..=limit)
        .map(|i| undo.begin_log(100 + u64::from(i)).unwrap())
        .collect();
    let firsts: Vec<_> = logs
        .iter()
        .map(barracuda_undo::UndoLog::first_page)
        .collect();
    for (i, log) in logs.into_iter().enumerate() {
        undo.commit(log, 1000 + i as u64).unwrap();
    }
    for first in firsts {
        undo.remove_history_head(r, first).unwrap();
    }
    assert_eq!(undo.cached_header_pages(), limit);
    assert_eq!(fx.alloc.allocated_pages(SPACE), RSEGS + u64::from(limit));
    let (undo, _) = fx.reopen();
    assert_eq!(undo.cached_header_pages(), limit);
}

#[test]
fn a_discarded_log_frees_its_slot_and_pages() {
    let fx = Fixture::new();
    let undo = fx.create();
    let mut log = undo.begin_log(3).unwrap();
    for _ in 0..40 {
        undo.append(&mut log, UndoKind::Update, 1, &[1u8; 500])
            .unwrap();
    }
    assert!(fx.alloc.allocated_pages(SPACE) > RSEGS + 1);
    undo.discard(log).unwrap();
    // The header page stays, cached for the next log.
    assert_eq!(fx.alloc.allocated_pages(SPACE), RSEGS + 1);
    assert_eq!(undo.cached_header_pages(), 1);
    assert!(fx.reopen().1.active_logs.is_empty());
}

#[test]
fn a_recovered_active_log_is_discarded_by_its_page() {
    let fx = Fixture::new();
    let undo = fx.create();
    let mut log = undo.begin_log(8).unwrap();
    undo.append(&mut log, UndoKind::Insert, 1, b"k").unwrap();
    // The process "dies" here: the handle is never committed or discarded, only the pages
    // know about the log.
    let first = log.first_page();
    let (undo, state) = fx.reopen();
    assert_eq!(state.active_logs, vec![(first, 8)]);
    let records = undo.records_oldest_first(first).unwrap();
    assert_eq!(records.len(), 1);
    undo.discard_recovered(first).unwrap();
    assert!(fx.reopen().1.active_logs.is_empty());
    assert_eq!(
        fx.alloc.allocated_pages(SPACE),
        RSEGS + 1,
        "its header page is cached"
    );
    assert_eq!(undo.cached_header_pages(), 1);
}

#[test]
fn the_id_high_water_mark_only_rises() {
    let fx = Fixture::new();
    let undo = fx.create();
    assert_eq!(fx.reopen().1.max_trx_id, 1);
    undo.raise_max_trx_id(300).unwrap();
    undo.raise_max_trx_id(200).unwrap();
    assert_eq!(fx.reopen().1.max_trx_id, 300);
}
