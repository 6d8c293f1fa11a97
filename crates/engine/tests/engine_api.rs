//! The public API's promises, one scenario each: locking, DDL, refusals with typed errors,
//! large values, persistence across clean close, status, run-time knobs.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use barracuda::{
    Engine, EngineOptions, Error, FreePagePolicy, PageCompression, PageSize, RowFormat,
    TableOptions,
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
fn compression_options_are_refused_until_they_exist() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let row = TableOptions::default().row_format(RowFormat::Compressed { key_block_size: 8 });
    assert!(matches!(
        db.create_table("c", row),
        Err(Error::Unsupported(_))
    ));
    let page = TableOptions::default().page_compression(Some(PageCompression::Lz4));
    assert!(matches!(
        db.create_table("p", page),
        Err(Error::Unsupported(_))
    ));
    assert!(db.list_tables().is_empty());
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
        let db = small(dir.path());
        let t = db.create_table("blobs", TableOptions::default()).unwrap();
        db.put(&t, b"huge", &sixty_four_mib).unwrap();
        db.put(&t, b"mid", &vec![5u8; 100_000]).unwrap();
        db.close().unwrap();
    }
    let db = small(dir.path());
    let t = db.table("blobs").unwrap();
    assert_eq!(db.get(&t, b"huge").unwrap().unwrap(), sixty_four_mib);
    assert_eq!(db.get(&t, b"mid").unwrap().unwrap(), vec![5u8; 100_000]);
    db.delete(&t, b"huge").unwrap();
    let stats = db.check_table(&t).unwrap();
    assert_eq!(stats.records, 1);
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

#[test]
fn knobs_change_at_run_time_while_threads_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = small(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0u32..5_000 {
        db.put(&t, &i.to_be_bytes(), &[1u8; 200]).unwrap();
    }
    std::thread::scope(|s| {
        for worker in 0..2u32 {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for i in 0..3_000u32 {
                    let k = (i * 7 + worker) % 5_000;
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
            db.set_lru_scan_depth(128);
            db.set_old_blocks_pct(20).unwrap();
            db.set_old_blocks_time(std::time::Duration::from_millis(10));
            db.set_read_ahead(None, true);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    assert!(matches!(
        db.set_old_blocks_pct(99),
        Err(Error::InvalidOption(_))
    ));
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
    let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" / ");
    assert!(
        chain.contains("t.ibd")
            && chain.contains("1:1")
            && chain.to_lowercase().contains("checksum"),
        "{text} // {chain}"
    );
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
    assert!(err.to_string().contains("t.ibd"), "{err}");
}
