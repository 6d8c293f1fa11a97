//! The public API's promises, one scenario each: locking, DDL, refusals with typed errors,
//! large values, persistence across clean close, status, run-time knobs.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{
    Engine, EngineOptions, Error, FreePagePolicy, IoErrorKind, PageCompression, PageSize,
    PoolStats, RowFormat, Table, TableOptions,
};

fn small(dir: &std::path::Path) -> Engine {
    Engine::open(
        dir,
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(64 * 4096),
    )
    .unwrap()
}

#[test]
fn a_second_opener_gets_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let err = Engine::open(dir.path(), EngineOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    db.close().unwrap();
    // Released at close.
    small(dir.path()).close().unwrap();
}

#[test]
fn ddl_create_list_drop_and_stale_handles() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let a = db.create_table("alpha", TableOptions::default()).unwrap();
    db.create_table("beta", TableOptions::default()).unwrap();
    assert!(matches!(
        db.create_table("alpha", TableOptions::default()),
        Err(Error::TableExists(_))
    ));
    assert!(matches!(
        db.create_table("no/slash", TableOptions::default()),
        Err(Error::InvalidTableName { .. })
    ));
    assert!(matches!(
        db.create_table("", TableOptions::default()),
        Err(Error::InvalidTableName { .. })
    ));
    assert_eq!(
        db.list_tables(),
        vec!["alpha".to_string(), "beta".to_string()]
    );
    db.put(&a, b"k", b"v").unwrap();
    db.drop_table("alpha").unwrap();
    assert!(!dir.path().join("tables/alpha.ibd").exists());
    assert!(matches!(db.get(&a, b"k"), Err(Error::StaleTable(_))));
    assert!(matches!(db.table("alpha"), Err(Error::NoSuchTable(_))));
    // A new table of the same name starts empty.
    let a2 = db.create_table("alpha", TableOptions::default()).unwrap();
    assert_eq!(db.get(&a2, b"k").unwrap(), None);
    db.close().unwrap();
    let db = small(dir.path());
    assert_eq!(
        db.list_tables(),
        vec!["alpha".to_string(), "beta".to_string()]
    );
    assert!(matches!(db.drop_table("gamma"), Err(Error::NoSuchTable(_))));
}

#[test]
fn compression_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let both = TableOptions::default()
        .row_format(RowFormat::compressed(8))
        .page_compression(Some(PageCompression::Lz4));
    assert!(matches!(
        db.create_table("c", both),
        Err(Error::InvalidOption(_))
    ));
    let too_big = TableOptions::default().row_format(RowFormat::compressed(32));
    assert!(matches!(
        db.create_table("c", too_big),
        Err(Error::InvalidOption(_))
    ));
    let bad_level =
        TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 12 }));
    assert!(matches!(
        db.create_table("z", bad_level),
        Err(Error::InvalidOption(_))
    ));
    assert!(db.list_tables().is_empty());
    let page = TableOptions::default().page_compression(Some(PageCompression::Lz4));
    let t = db.create_table("p", page).unwrap();
    assert_eq!(
        t.options().get_page_compression(),
        Some(PageCompression::Lz4)
    );
}

#[test]
fn keys_over_the_limit_are_refused_with_the_table_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let err = db.put(&t, &[0u8; 513], b"v").unwrap_err();
    assert!(
        matches!(&err, Error::KeyTooLong { table, len: 513, max: 512 } if table == "t"),
        "{err}"
    );
    db.put(&t, &[0u8; 512], b"v").unwrap();
}

#[test]
fn large_values_survive_reopen_through_a_tiny_pool() {
    let dir = tempfile::tempdir().unwrap();
    let sixty_four_mib: Vec<u8> = (0..64u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    {
        // One row's redo must fit in the log (a row write is one redo unit): 64 MiB of value
        // needs a larger log than a tiny pool's default. A smaller one refuses the row up
        // front.
        let small_log = Engine::open(
            dir.path(),
            EngineOptions::default()
                .page_size(PageSize::K4)
                .buffer_pool_bytes(64 * 4096),
        )
        .unwrap();
        let t = small_log
            .create_table("blobs", TableOptions::default())
            .unwrap();
        let refused = small_log.put(&t, b"huge", &sixty_four_mib).unwrap_err();
        assert!(
            matches!(refused, barracuda::Error::TransactionTooLarge { .. }),
            "{refused}"
        );
        small_log.close().unwrap();
        std::fs::remove_dir_all(dir.path()).unwrap();
        let db = Engine::open(
            dir.path(),
            EngineOptions::default()
                .page_size(PageSize::K4)
                .buffer_pool_bytes(64 * 4096)
                .redo_log_capacity(256 << 20),
        )
        .unwrap();
        let t = db.create_table("blobs", TableOptions::default()).unwrap();
        db.put(&t, b"huge", &sixty_four_mib).unwrap();
        db.put(&t, b"mid", &vec![5u8; 100_000]).unwrap();
        db.close().unwrap();
    }
    let options = || {
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(64 * 4096)
    };
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.table("blobs").unwrap();
    assert_eq!(db.get(&t, b"huge").unwrap().unwrap(), sixty_four_mib);
    assert_eq!(db.get(&t, b"mid").unwrap().unwrap(), vec![5u8; 100_000]);
    let file_bytes = std::fs::metadata(dir.path().join("tables/blobs.ibd"))
        .unwrap()
        .len();
    db.delete(&t, b"huge").unwrap();
    // Purge frees the 16,384-page chain inside one redo commit unit in a pool of 64 frames:
    // freeing changes only the allocation bitmaps (it once dirtied every chain page, which an
    // open unit cannot evict, and purge failed with TransactionTooLarge, turning the engine
    // read-only). Close purges everything (a slow shutdown) and reports such a failure.
    db.close().unwrap();
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(report.is_clean(), "{report}");

    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.table("blobs").unwrap();
    let stats = db.check_table(&t).unwrap();
    assert_eq!((stats.records, stats.delete_marked), (1, 0), "purged");
    assert_eq!(
        stats.overflow_pages, 25,
        "only the 100,000-byte value's chain is left"
    );
    // The freed pages are allocated again: a new 32 MiB value does not grow the file.
    db.put(&t, b"again", &sixty_four_mib[..32 << 20]).unwrap();
    assert_eq!(
        db.get(&t, b"again").unwrap().unwrap(),
        &sixty_four_mib[..32 << 20]
    );
    db.close().unwrap();
    let grown = std::fs::metadata(dir.path().join("tables/blobs.ibd"))
        .unwrap()
        .len();
    assert_eq!(grown, file_bytes, "freed pages were reused");
}

#[test]
fn data_larger_than_the_pool_is_evicted_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0u32..20_000 {
        db.put(&t, &i.to_be_bytes(), &[i as u8; 100]).unwrap();
    }
    let status = db.status();
    assert!(
        status.pool.evictions() > 0 && status.pool.pages_written() > 0,
        "{status}"
    );
    for i in (0u32..20_000).step_by(97) {
        assert_eq!(
            db.get(&t, &i.to_be_bytes()).unwrap().unwrap(),
            vec![i as u8; 100]
        );
    }
    let text = status.to_string();
    assert!(
        text.contains("BUFFER POOL AND MEMORY") && text.contains("ROW OPERATIONS"),
        "{text}"
    );
    assert_eq!(status.rows_written, 20_000);
}

/// 4 KiB pages, 1024 frames: large enough that a linear read-ahead area (256 pages at 4 KiB) is
/// allowed and that no knob value is clamped by the pool's size.
fn mid_options() -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(1024 * 4096)
}

/// Stores `rows` rows of 200 bytes under big-endian keys `0..rows`, in one transaction.
fn load(db: &Engine, t: &Table, rows: u32) {
    let mut tx = db.begin();
    for i in 0..rows {
        tx.put(t, &i.to_be_bytes(), &[i as u8; 200]).unwrap();
    }
    tx.commit().unwrap();
}

/// Polls the pool's stats until `cond` holds; fails after 30 s naming `what`.
fn wait_for(db: &Engine, what: &str, cond: impl Fn(&PoolStats) -> bool) -> PoolStats {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stats = db.status().pool;
        if cond(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {stats}"
        );
        std::thread::yield_now();
    }
}

/// Sets its flag when dropped, so that readers looping on it stop even when the thread that
/// would stop them panics (a scope joins its threads before passing the panic on).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn knobs_set_at_run_time_are_in_force_while_threads_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(dir.path(), mid_options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // ~850 pages: the LRU is longer than 512 pages, so it has an old sublist.
    load(&db, &t, 15_000);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let _stop_readers = SetOnDrop(&stop);
        for worker in 0..2u32 {
            let (db, t, stop) = (&db, &t, &stop);
            s.spawn(move || {
                let mut i = worker;
                while !stop.load(Ordering::Acquire) {
                    i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let k = i % 15_000;
                    assert_eq!(db.get(t, &k.to_be_bytes()).unwrap().unwrap().len(), 200);
                }
            });
        }
        for policy in [
            FreePagePolicy::Legacy,
            FreePagePolicy::Backoff,
            FreePagePolicy::Eager,
        ] {
            db.set_free_page_policy(policy);
            assert_eq!(db.status().pool.policy, policy);
        }
        // The depth in use is clamped to 100 ..= a quarter of the pool (256 here).
        for (set, in_force) in [(150, 150), (250, 250), (20, 100), (10_000, 256)] {
            db.set_lru_scan_depth(set);
            assert_eq!(db.status().pool.lru_scan_depth, in_force, "set {set}");
        }
        // The old sublist is resized at once to the new share (within InnoDB's tolerance).
        for pct in [20, 60, 37] {
            db.set_old_blocks_pct(pct).unwrap();
            let pool = db.status().pool;
            assert_eq!(pool.old_blocks_pct, pct);
            let share = pool.old_lru_len * 100 / pool.lru_len;
            assert!(
                share.abs_diff(pct as usize) <= 5,
                "old share {share}% for {pct}%: {pool}"
            );
        }
        for time in [
            Duration::from_millis(10),
            Duration::ZERO,
            Duration::from_secs(1),
        ] {
            db.set_old_blocks_time(time);
            assert_eq!(db.status().pool.old_blocks_time, time);
        }
        for (linear, random) in [(None, true), (Some(40), false), (Some(56), true)] {
            db.set_read_ahead(linear, random);
            let pool = db.status().pool;
            assert_eq!(
                (pool.read_ahead_threshold, pool.random_read_ahead),
                (linear, random)
            );
        }
    });
    let text = db.status().to_string();
    assert!(
        text.contains("old_blocks_pct 37") && text.contains("read_ahead_threshold 56"),
        "{text}"
    );
    // A refused value leaves the one in force.
    assert!(matches!(
        db.set_old_blocks_pct(99),
        Err(Error::InvalidOption(_))
    ));
    assert_eq!(db.status().pool.old_blocks_pct, 37);
}

#[test]
fn old_blocks_time_decides_whether_old_pages_stay_old() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // ~5 times the pool: pages are evicted (the rule applies only once the pool is full) and
    // every point read below misses.
    load(&db, &t, 5_000);
    assert!(db.status().pool.evictions() > 0);
    let point_reads = || {
        for k in (0u32..5_000).step_by(7) {
            assert_eq!(db.get(&t, &k.to_be_bytes()).unwrap().unwrap().len(), 200);
        }
    };
    // 0: an access to an old page is never held back (InnoDB: `innodb_old_blocks_time = 0`).
    db.set_old_blocks_time(Duration::ZERO);
    let before = db.status().pool.pages_not_made_young;
    point_reads();
    assert_eq!(db.status().pool.pages_not_made_young, before);
    // An hour: every access to a page read during the run finds it too recent to make young.
    db.set_old_blocks_time(Duration::from_hours(1));
    let before = db.status().pool.pages_not_made_young;
    point_reads();
    let after = db.status().pool.pages_not_made_young;
    assert!(after > before, "{after} <= {before}");
}

#[test]
fn read_ahead_switched_at_run_time_decides_whether_a_cold_scan_prefetches() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Engine::open(dir.path(), mid_options()).unwrap();
        let t = db.create_table("t", TableOptions::default()).unwrap();
        // ~850 pages laid out in key order: more than three read-ahead areas of 256 pages.
        load(&db, &t, 15_000);
        db.close().unwrap();
    }
    // The first 40 % of the keys: past the end of the first area (which triggers the read-ahead
    // of the second) but well short of the end of the second, so the scan cannot have read
    // every page the read-ahead thread was asked for before that thread got to it.
    let scan = |db: &Engine| {
        let t = db.table("t").unwrap();
        let end = 6_000u32.to_be_bytes();
        assert_eq!(db.range(&t, ..end.as_slice()).unwrap().count(), 6_000);
    };
    // Opened with read-ahead off, switched on: the cold scan (fresh pool) prefetches.
    {
        let db = Engine::open(dir.path(), mid_options().read_ahead_threshold(None)).unwrap();
        db.set_read_ahead(Some(56), false);
        scan(&db);
        let pool = wait_for(&db, "read-ahead to drain", |p| p.pending_read_ahead == 0);
        assert!(pool.read_ahead_linear > 0, "{pool}");
    }
    // Opened with it on, switched off: nothing is prefetched.
    {
        let db = Engine::open(dir.path(), mid_options().read_ahead_threshold(Some(56))).unwrap();
        db.set_read_ahead(None, false);
        scan(&db);
        let pool = db.status().pool;
        assert_eq!(
            (pool.read_ahead_linear, pool.pending_read_ahead),
            (0, 0),
            "{pool}"
        );
    }
}

#[test]
fn a_corrupted_page_is_reported_with_file_and_page() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = small(dir.path());
        let t = db.create_table("t", TableOptions::default()).unwrap();
        for i in 0u32..3_000 {
            db.put(&t, &i.to_be_bytes(), &[3u8; 100]).unwrap();
        }
        db.close().unwrap();
    }
    // Flip one byte in the middle of page 1 (the root) of the table's file.
    let path = dir.path().join("tables/t.ibd");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4096 + 2000] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let db = small(dir.path());
    let t = db.table("t").unwrap();
    let err = db.get(&t, &5u32.to_be_bytes()).unwrap_err();
    let text = format!("{err}");
    let chain = error_chain(&err);
    // A caller can tell which file and page without parsing the message.
    assert!(
        matches!(&err, Error::Page { file, space_id, page_no: 1, .. }
            if file.ends_with("tables/t.ibd") && *space_id == t.space_id()),
        "{err:?}"
    );
    assert!(
        text.contains("t.ibd")
            && text.contains(&format!("{}:1", t.space_id()))
            && text.to_lowercase().contains("checksum"),
        "{text} // {chain}"
    );
}

#[test]
fn io_errors_carry_their_kind_file_and_os_error() {
    use barracuda::fs::{FaultError, FaultyFileSystem, OpKind};

    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let options = EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(64 * 4096)
        .file_system(std::sync::Arc::new(fs.clone()));
    {
        let db = Engine::open(dir.path(), options.clone()).unwrap();
        let t = db.create_table("t", TableOptions::default()).unwrap();
        db.put(&t, b"k", b"v").unwrap();
        // The disk fills up under the checkpoint's page writes.
        fs.fail_nth(OpKind::Write, 1, FaultError::Enospc);
        let err = db.checkpoint().unwrap_err();
        assert!(
            matches!(&err, Error::Io { kind: IoErrorKind::NoSpace, file, .. }
                if file.starts_with(dir.path())),
            "{err:?}"
        );
        assert_eq!(err.raw_os_error(), Some(FaultError::Enospc.errno()));
        // Space again: the next checkpoint writes everything.
        db.close().unwrap();
    }
    let db = Engine::open(dir.path(), options).unwrap();
    let t = db.table("t").unwrap();
    // The device fails the first read of the table's pages (the root, on this cold pool).
    fs.fail_nth(OpKind::Read, 1, FaultError::Eio);
    let err = db.get(&t, b"k").unwrap_err();
    assert!(
        matches!(&err, Error::Io { kind: IoErrorKind::DeviceError, file, .. }
            if file.ends_with("tables/t.ibd")),
        "{err:?}"
    );
    assert_eq!(err.raw_os_error(), Some(FaultError::Eio.errno()));
    assert!(err.to_string().contains("t.ibd"), "{}", error_chain(&err));
    // A failed read changes nothing: the row is there.
    assert_eq!(db.get(&t, b"k").unwrap(), Some(b"v".to_vec()));
}

/// Every message along an error's source chain, joined.
fn error_chain(err: &Error) -> String {
    std::iter::successors(Some(err as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" / ")
}

#[test]
fn lsns_keep_growing_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let db = small(dir.path());
        let t = db.create_table("t", TableOptions::default()).unwrap();
        for i in 0u32..2_000 {
            db.put(&t, &i.to_be_bytes(), b"v").unwrap();
        }
        let lsn = db.status().current_lsn;
        db.close().unwrap();
        lsn
    };
    assert!(before > 0);
    let db = small(dir.path());
    // The checkpoint at close recorded its LSN: the new session starts there, so a page's next
    // change cannot get an LSN below the one it already carries on disk.
    assert!(
        db.status().current_lsn >= before,
        "{} < {before}",
        db.status().current_lsn
    );
    let t = db.table("t").unwrap();
    db.put(&t, &7u32.to_be_bytes(), b"w").unwrap();
    assert!(db.status().current_lsn > before);
}

#[test]
fn a_missing_or_truncated_table_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = small(dir.path());
        let t = db.create_table("t", TableOptions::default()).unwrap();
        for i in 0u32..3_000 {
            db.put(&t, &i.to_be_bytes(), &[1u8; 100]).unwrap();
        }
        db.close().unwrap();
    }
    let path = dir.path().join("tables/t.ibd");
    let bytes = std::fs::read(&path).unwrap();
    // Truncated in the middle of the data (files grow by whole extents, so cut well inside the
    // ~100 pages written): shorter than its space header says, so the open refuses it, naming
    // the file.
    std::fs::write(&path, &bytes[..6 * 4096]).unwrap();
    let err = Engine::open(dir.path(), EngineOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(&err, Error::Corrupt { file, what }
            if file.ends_with("tables/t.ibd") && what.contains("6 whole pages")),
        "{err:?}"
    );
    // Missing: the open fails, names the file, and carries the OS error of the failed open.
    std::fs::remove_file(&path).unwrap();
    let err = Engine::open(dir.path(), EngineOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(&err, Error::Io { file, kind: IoErrorKind::NotFound, .. }
            if file.ends_with("tables/t.ibd")),
        "{err:?}"
    );
    assert!(err.to_string().contains("t.ibd"), "{err}");
    let enoent = std::fs::File::open(&path).unwrap_err().raw_os_error();
    assert!(enoent.is_some());
    assert_eq!(err.raw_os_error(), enoent, "{}", error_chain(&err));
}

/// The catalog is built under a temporary name and renamed into place: a creation killed
/// half-way leaves at most that temporary file (here, garbage in it), which the next open
/// rebuilds, never an empty `system.ibs` that no open could read.
#[test]
fn a_half_created_catalog_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("system.ibs.new"), b"half a catalog").unwrap();
    let db = small(dir.path());
    db.create_table("t", TableOptions::default()).unwrap();
    db.close().unwrap();
    assert!(!dir.path().join("system.ibs.new").exists());
    let db = small(dir.path());
    assert_eq!(db.list_tables(), vec!["t".to_string()]);
}
