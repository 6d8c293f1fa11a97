//! `EngineOptions::mapped_reads`: with it (the default) pool misses read the table file through
//! a shared mapping — the file shows in this process's `/proc/self/maps` — and without it the
//! file is never mapped; both read back every row through a pool far smaller than the table.
//! (Damaged pages read through the mapping are the business of the tests of damaged files,
//! which run with the default.)

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use barracuda::{Engine, EngineOptions, PageSize, TableOptions};

const ROWS: u64 = 3_000;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value of row {i} ").repeat(8).into_bytes()
}

fn options(mapped: bool) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(1 << 20)
        .mapped_reads(mapped)
}

/// Whether some mapping of this process is of the file at `path`.
fn is_mapped(path: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let path = path.canonicalize().unwrap();
    maps.lines()
        .any(|line| line.ends_with(&*path.to_string_lossy()))
}

/// Loads the rows, reopens with `mapped` and reads them all back through a 1 MiB pool; returns
/// whether the table file was mapped while the engine was open.
fn round_trip(mapped: bool) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let db = Engine::open(dir, options(true)).unwrap();
        let t = db.create_table("t", TableOptions::default()).unwrap();
        for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
            let mut tx = db.begin();
            for &i in chunk {
                tx.put(&t, &key(i), &value(i)).unwrap();
            }
            tx.commit().unwrap();
        }
        db.close().unwrap();
    }
    let table_file = dir.join("tables").join("t.ibd");
    assert!(
        table_file.exists(),
        "the table's file is {}",
        table_file.display()
    );
    let db = Engine::open(dir, options(mapped)).unwrap();
    let t = db.table("t").unwrap();
    // Twice through, in an order that defeats the pool: every page is read in again.
    for round in 0..2 {
        for i in (0..ROWS).map(|i| (i * 7 + round) % ROWS) {
            assert_eq!(db.get(&t, &key(i)).unwrap(), Some(value(i)), "row {i}");
        }
    }
    let seen = is_mapped(&table_file);
    db.close().unwrap();
    seen
}

#[test]
fn misses_read_through_a_mapping_by_default() {
    assert!(round_trip(true), "the table file was not mapped");
}

#[test]
fn without_mapped_reads_no_file_is_mapped() {
    assert!(!round_trip(false), "the table file was mapped");
}
