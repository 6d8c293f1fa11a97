//! `Engine::load_sorted`: an empty table built bottom-up from sorted rows, all or nothing,
//! through the public API (the tree-level laws are in `barracuda-btree`'s `sorted_build`).

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use barracuda::{
    Codec, Engine, EngineOptions, Error, PageCompression, PageSize, RowFormat, TableOptions,
};

fn key(n: u64) -> [u8; 8] {
    (n * 2).to_be_bytes()
}

fn value(n: u64) -> Vec<u8> {
    let len = if n % 1009 == 3 { 40_000 } else { 100 + n % 150 };
    (0..len).map(|i| (n + i) as u8).collect()
}

fn rows(count: u64) -> impl Iterator<Item = ([u8; 8], Vec<u8>)> {
    (0..count).map(|n| (key(n), value(n)))
}

fn options() -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K16)
        .buffer_pool_bytes(4 << 20)
}

#[test]
fn a_loaded_table_has_every_row_and_keeps_them_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let count = 30_000;
    {
        let db = Engine::open(dir.path(), options()).unwrap();
        let t = db.create_table("t", TableOptions::default()).unwrap();
        let report = db.load_sorted(&t, rows(count)).unwrap();
        assert_eq!(report.rows, count);
        assert!(report.height >= 2, "{report:?}");
        assert_eq!(db.status().rows_written, count);
        let stats = db.check_table(&t).unwrap();
        assert_eq!(stats.records, count);
        assert!(stats.leaf_fill > 0.85, "leaf fill {}", stats.leaf_fill);
        // A row goes in between two loaded ones, another replaces one; then a delete.
        db.put(&t, &(7u64 * 2 + 1).to_be_bytes(), b"between")
            .unwrap();
        db.put(&t, &key(8), b"replaced").unwrap();
        db.delete(&t, &key(9)).unwrap();
        db.close().unwrap();
    }
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    let mut n = 0;
    for row in db.range(&t, ..).unwrap() {
        let (k, v) = row.unwrap();
        if k == (7u64 * 2 + 1).to_be_bytes() {
            assert_eq!(v, b"between");
            continue;
        }
        if n == 9 {
            n += 1;
        }
        assert_eq!(k, key(n), "row {n}");
        assert_eq!(
            v,
            if n == 8 {
                b"replaced".to_vec()
            } else {
                value(n)
            }
        );
        n += 1;
    }
    assert_eq!(n, count);
    assert_eq!(db.check_table(&t).unwrap().records, count);
}

#[test]
fn rows_out_of_order_load_nothing_and_the_table_can_be_loaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let shuffled = rows(5_000).chain(std::iter::once((key(4_000), value(1))));
    match db.load_sorted(&t, shuffled) {
        Err(Error::NotSorted { table, position }) => {
            assert_eq!((table.as_str(), position), ("t", 5_000));
        }
        other => panic!("expected NotSorted, got {other:?}"),
    }
    let duplicate = [(key(1), value(1)), (key(1), value(2))];
    assert!(matches!(
        db.load_sorted(&t, duplicate),
        Err(Error::NotSorted { position: 1, .. })
    ));
    assert_eq!(db.range(&t, ..).unwrap().count(), 0);
    assert_eq!(db.check_table(&t).unwrap().records, 0);
    // The abandoned loads gave their pages back: loading again reuses them.
    let file_bytes = || {
        let status = db.status();
        status
            .tables
            .iter()
            .find(|s| s.name == "t")
            .unwrap()
            .file_bytes
    };
    let before = file_bytes();
    db.load_sorted(&t, rows(5_000)).unwrap();
    let after = file_bytes();
    assert_eq!(before, after, "the second load grew the file");
    assert_eq!(db.range(&t, ..).unwrap().count(), 5_000);
}

#[test]
fn a_table_with_rows_is_refused_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, b"present", b"row").unwrap();
    let mut pulled = 0;
    let counted = rows(100).inspect(|_| pulled += 1);
    match db.load_sorted(&t, counted) {
        Err(Error::TableNotEmpty(table)) => assert_eq!(table, "t"),
        other => panic!("expected TableNotEmpty, got {other:?}"),
    }
    assert_eq!(pulled, 0, "rows were read from the iterator");
    assert_eq!(db.get(&t, b"present").unwrap(), Some(b"row".to_vec()));
}

#[test]
fn views_opened_before_the_load_do_not_see_it_and_later_ones_see_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let other = db.create_table("other", TableOptions::default()).unwrap();
    db.put(&other, b"k", b"v").unwrap();
    let before = db.snapshot();
    // The snapshot's view starts at its first read.
    assert_eq!(before.get(&other, b"k").unwrap(), Some(b"v".to_vec()));
    db.load_sorted(&t, rows(3_000)).unwrap();
    assert_eq!(before.get(&t, &key(5)).unwrap(), None);
    assert_eq!(before.range(&t, ..).unwrap().count(), 0);
    let after = db.snapshot();
    assert_eq!(after.get(&t, &key(5)).unwrap(), Some(value(5)));
    assert_eq!(after.range(&t, ..).unwrap().count(), 3_000);
    // A transaction's update of a loaded row keeps the loaded version for the old view's
    // successors to roll back to.
    let mut tx = db.begin();
    tx.put(&t, &key(5), b"updated").unwrap();
    tx.rollback().unwrap();
    assert_eq!(db.get(&t, &key(5)).unwrap(), Some(value(5)));
}

#[test]
fn page_compressed_tables_load_and_row_compressed_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let lz4 = db
        .create_table(
            "lz4",
            TableOptions::default().page_compression(Some(PageCompression::Lz4)),
        )
        .unwrap();
    db.load_sorted(&lz4, rows(4_000)).unwrap();
    let zipped = db
        .create_table(
            "zipped",
            TableOptions::default().row_format(RowFormat::Compressed {
                key_block_size: 8,
                algorithm: Codec::Zlib { level: 1 },
            }),
        )
        .unwrap();
    assert!(matches!(
        db.load_sorted(&zipped, rows(10)),
        Err(Error::Unsupported(_))
    ));
    db.close().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let lz4 = db.table("lz4").unwrap();
    for n in (0..4_000).step_by(37) {
        assert_eq!(db.get(&lz4, &key(n)).unwrap(), Some(value(n)));
    }
    assert_eq!(db.check_table(&lz4).unwrap().records, 4_000);
}
