//! Page-compressed tables (issue 10) through the public API: rows of real dictionary text
//! survive a round trip through compressed, hole-punched pages for both codecs and every page
//! size; a tiny pool re-reads (decompresses) pages all the time and still agrees with a model;
//! incompressible rows are stored plain; a file system that refuses hole punching costs space,
//! never data; a damaged compressed page is an error naming its file and page.
//!
//! What would break: a page read back differently from how it was written (envelope, zeroing
//! of free space, sealing after compression), a compressed image that the read path does not
//! recognise, punching that frees part of a page's image, a counter that does not count.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use barracuda::fs::FaultyFileSystem;
use barracuda::{Engine, EngineOptions, Error, PageCompression, PageSize, TableOptions};
use proptest::prelude::*;

/// Row `i`: a window of 1–4 KB of the text (different for each row).
fn text_row(text: &[u8], i: u64) -> Vec<u8> {
    let len = 1000 + (i as usize * 769) % 3000;
    let start = (i as usize * 7919) % (text.len() - len);
    text[start..start + len].to_vec()
}

fn key(i: u64) -> Vec<u8> {
    format!("row{i:08}").into_bytes()
}

/// The in-memory file system's block: what a compressed image is rounded up to.
const MEMORY_BLOCK: usize = 4096;

const CODECS: [PageCompression; 2] = [PageCompression::Zlib { level: 6 }, PageCompression::Lz4];

/// Loads `rows` rows of text into a table compressed with `codec`, on the in-memory file
/// system (which counts allocated 4 KiB blocks exactly), closes, reopens and reads every row
/// back; returns the status after the reads.
fn round_trip(page_size: PageSize, codec: PageCompression, rows: u64) -> barracuda::EngineStatus {
    let text = common::gcide_excerpt();
    let fs = Arc::new(FaultyFileSystem::new());
    let options = || {
        EngineOptions::default()
            .page_size(page_size)
            .buffer_pool_bytes(64 * page_size.bytes())
            .doublewrite(barracuda::DoublewriteMode::On)
            .file_system(fs.clone())
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let db = Engine::open(dir, options()).unwrap();
        let t = db
            .create_table("t", TableOptions::default().page_compression(Some(codec)))
            .unwrap();
        load_in_order(&db, &t, &text, rows);
        db.checkpoint().unwrap();
        let status = db.status();
        let c = &status.page_compression;
        let table = &status.tables[0];
        if page_size.bytes() > MEMORY_BLOCK {
            assert!(
                c.num_pages_page_compressed > 0 && c.page_compression_saved > 0,
                "{page_size} {codec:?}: {c:?}"
            );
            assert!(c.num_page_compressed_trim_op > 0, "{c:?}");
            assert!(
                table.allocated_bytes * 3 < table.logical_bytes * 2,
                "{page_size} {codec:?}: {table:?}"
            );
            // In place and in the doublewrite file, each page takes its compressed image's
            // blocks only (the copies' descriptor pages aside).
            let dw = &status.doublewrite;
            let full = dw.pages_written_in_place * page_size.bytes() as u64;
            // Every copy (a batch or a single page) starts with one whole descriptor page;
            // how many copies the flushes made depends on timing (with 64 KiB pages and small
            // batches the descriptors alone can outweigh the images), so they are left out.
            let (copies, descriptors) = dw.doublewrite.as_ref().map_or((0, 0), |d| {
                let descriptors = (d.batches + d.single_page_writes) * page_size.bytes() as u64;
                (d.bytes_written, descriptors)
            });
            let images = copies.saturating_sub(descriptors);
            assert!(
                dw.bytes_written_in_place < full && images > 0 && images < full,
                "{page_size} {codec:?}: {} pages, {} bytes in place, {copies} bytes of copies \
                 of which {descriptors} are descriptor pages",
                dw.pages_written_in_place,
                dw.bytes_written_in_place
            );
        } else {
            // A page of one block cannot free a block: every page is written plain.
            assert_eq!(c.num_pages_page_compressed, 0, "{c:?}");
            assert!(c.num_pages_written_plain > 0, "{c:?}");
        }
        db.close().unwrap();
    }
    let db = Engine::open(dir, options()).unwrap();
    assert_rows_read_back(&db, "t", &text, rows, &format!("{page_size} {codec:?}"));
    db.status()
}

/// Every row `0..rows` of table `name` reads back as loaded, and the table checks clean.
fn assert_rows_read_back(db: &Engine, name: &str, text: &[u8], rows: u64, what: &str) {
    let t = db.table(name).unwrap();
    for i in 0..rows {
        assert_eq!(
            db.get(&t, &key(i)).unwrap().as_deref(),
            Some(&text_row(text, i)[..]),
            "{what}: row {i}"
        );
    }
    db.check_table(&t).unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn text_rows_round_trip_through_compressed_pages_for_every_codec_and_page_size() {
    for page_size in [
        PageSize::K4,
        PageSize::K8,
        PageSize::K16,
        PageSize::K32,
        PageSize::K64,
    ] {
        for codec in CODECS {
            let status = round_trip(page_size, codec, 300);
            let compressible = page_size.bytes() > MEMORY_BLOCK;
            assert_eq!(
                status.page_compression.num_pages_page_decompressed > 0,
                compressible,
                "{page_size} {codec:?}: compressed pages read back: {:?}",
                status.page_compression
            );
        }
    }
}

/// Loads rows `0..rows` in key order, 50 a transaction.
fn load_in_order(db: &Engine, t: &barracuda::Table, text: &[u8], rows: u64) {
    for chunk in (0..rows).collect::<Vec<_>>().chunks(50) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(t, &key(i), &text_row(text, i)).unwrap();
        }
        tx.commit().unwrap();
    }
}

#[test]
fn a_load_in_key_order_queues_the_pages_it_finished_for_write_behind_in_page_compressed_tables_only(
) {
    let text = common::gcide_excerpt();
    let tmp = tempfile::tempdir().unwrap();
    let options = || {
        EngineOptions::default()
            .page_size(PageSize::K16)
            .buffer_pool_bytes(1024 * PageSize::K16.bytes())
    };
    let rows = 400;
    {
        let db = Engine::open(tmp.path(), options()).unwrap();
        // A plain table and a row-compressed one: their pages cost nothing more to write
        // than to keep, and are left to the checkpoints.
        let plain = db.create_table("plain", TableOptions::default()).unwrap();
        load_in_order(&db, &plain, &text, rows);
        let zipped = db
            .create_table(
                "zipped",
                TableOptions::default().row_format(barracuda::RowFormat::compressed(8)),
            )
            .unwrap();
        load_in_order(&db, &zipped, &text, rows);
        let stats = db.status().pool;
        assert_eq!(stats.write_behind_hints, 0, "{stats}");
        // Every split of this load appends: each page it leaves behind is queued.
        let t = db
            .create_table(
                "t",
                TableOptions::default().page_compression(Some(PageCompression::Lz4)),
            )
            .unwrap();
        load_in_order(&db, &t, &text, rows);
        let tree = db.check_table(&t).unwrap();
        let stats = db.status().pool;
        assert!(
            stats.write_behind_hints >= tree.leaf_pages - 1,
            "{} leaf pages: {stats}",
            tree.leaf_pages
        );
        db.checkpoint().unwrap();
        db.close().unwrap();
    }
    // Whichever pages the page cleaner wrote behind the load and whichever the checkpoint
    // wrote, every row reads back.
    let db = Engine::open(tmp.path(), options()).unwrap();
    for name in ["plain", "zipped", "t"] {
        assert_rows_read_back(&db, name, &text, rows, name);
    }
}

#[test]
fn write_behind_turned_off_writes_no_page_behind_a_load() {
    let text = common::gcide_excerpt();
    let tmp = tempfile::tempdir().unwrap();
    let mut settings = barracuda::FlushSettings::default();
    settings.set_write_behind(false);
    let db = Engine::open(
        tmp.path(),
        EngineOptions::default()
            .page_size(PageSize::K16)
            .buffer_pool_bytes(1024 * PageSize::K16.bytes())
            .flush_settings(settings),
    )
    .unwrap();
    let t = db
        .create_table(
            "t",
            TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 1 })),
        )
        .unwrap();
    load_in_order(&db, &t, &text, 400);
    db.checkpoint().unwrap();
    let stats = db.status().pool;
    assert!(stats.write_behind_hints > 0, "{stats}");
    assert_eq!(stats.pages_written_write_behind, 0, "{stats}");
    assert!(!db.flush_settings().write_behind());
}

/// On this machine's real file system: the file's allocated blocks fall below its length
/// (holes were punched), or — where the file system refuses — the refusal is counted and the
/// data is intact all the same.
#[test]
fn holes_are_punched_on_a_real_file_system() {
    let text = common::gcide_excerpt();
    let tmp = tempfile::tempdir().unwrap();
    let db = Engine::open(tmp.path(), EngineOptions::default()).unwrap();
    let t = db
        .create_table(
            "t",
            TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 6 })),
        )
        .unwrap();
    let mut tx = db.begin();
    for i in 0..400 {
        tx.put(&t, &key(i), &text_row(&text, i)).unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    let status = db.status();
    let c = &status.page_compression;
    let table = &status.tables[0];
    if c.num_punch_hole_failures > 0 {
        eprintln!("THIS FILE SYSTEM REFUSES HOLE PUNCHING: {c:?}");
        assert_eq!(c.num_page_compressed_trim_op, 0, "{c:?}");
    } else {
        assert!(c.num_page_compressed_trim_op > 0, "{c:?}");
        assert!(
            table.allocated_bytes * 3 < table.file_bytes * 2,
            "zlib on dictionary text must free a third of the file at least: {table:?}"
        );
    }
    for i in 0..400 {
        assert_eq!(
            db.get(&t, &key(i)).unwrap().as_deref(),
            Some(&text_row(&text, i)[..])
        );
    }
}

#[test]
fn incompressible_rows_are_stored_plain_and_read_back() {
    let fs = Arc::new(FaultyFileSystem::new());
    let options = || {
        EngineOptions::default()
            .page_size(PageSize::K16)
            .buffer_pool_bytes(32 << 14)
            .file_system(fs.clone())
    };
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect()
    };
    let rows: Vec<Vec<u8>> = (0..200).map(|_| random(900)).collect();
    let tmp = tempfile::tempdir().unwrap();
    {
        let db = Engine::open(tmp.path(), options()).unwrap();
        let t = db
            .create_table(
                "t",
                TableOptions::default().page_compression(Some(PageCompression::Lz4)),
            )
            .unwrap();
        let mut tx = db.begin();
        for (i, row) in rows.iter().enumerate() {
            tx.put(&t, &key(i as u64), row).unwrap();
        }
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        let c = db.status().page_compression;
        assert!(c.num_pages_written_plain > 0, "{c:?}");
        assert_eq!(c.num_pages_page_compression_error, 0, "{c:?}");
        db.close().unwrap();
    }
    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(
            db.get(&t, &key(i as u64)).unwrap().as_deref(),
            Some(&row[..])
        );
    }
}

/// Loads 300 text rows into a zlib-compressed table on `fs`, checkpoints, closes, reopens and
/// checks every row; returns the status taken after the checkpoint.
fn load_and_reread(fs: &Arc<FaultyFileSystem>) -> barracuda::EngineStatus {
    let text = common::gcide_excerpt();
    let options = || {
        EngineOptions::default()
            .buffer_pool_bytes(64 << 14)
            .file_system(fs.clone())
    };
    let tmp = tempfile::tempdir().unwrap();
    let status = {
        let db = Engine::open(tmp.path(), options()).unwrap();
        let t = db
            .create_table(
                "t",
                TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 1 })),
            )
            .unwrap();
        let mut tx = db.begin();
        for i in 0..300 {
            tx.put(&t, &key(i), &text_row(&text, i)).unwrap();
        }
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        let status = db.status();
        db.close().unwrap();
        status
    };
    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    for i in 0..300 {
        assert_eq!(
            db.get(&t, &key(i)).unwrap().as_deref(),
            Some(&text_row(&text, i)[..])
        );
    }
    status
}

#[test]
fn a_file_system_refusing_hole_punching_costs_space_not_data() {
    let punching = Arc::new(FaultyFileSystem::new());
    let punched = load_and_reread(&punching);
    let refusing = Arc::new(FaultyFileSystem::new());
    refusing.refuse_punch_hole(true);
    let kept = load_and_reread(&refusing);

    let c = &kept.page_compression;
    assert!(c.num_pages_page_compressed > 0, "{c:?}");
    assert_eq!(c.num_page_compressed_trim_op, 0, "{c:?}");
    assert!(c.num_punch_hole_failures > 0, "{c:?}");
    assert!(punched.page_compression.num_page_compressed_trim_op > 0);
    let (with_holes, without) = (&punched.tables[0], &kept.tables[0]);
    assert_eq!(with_holes.logical_bytes, without.logical_bytes);
    assert!(
        without.allocated_bytes > with_holes.allocated_bytes,
        "without punching the file keeps more blocks: {without:?} vs {with_holes:?}"
    );
}

/// A byte flipped inside a compressed page's stored image is caught by the envelope's
/// checksum: the read fails with `Error::Page` naming the file and the page.
#[test]
fn a_damaged_compressed_page_is_an_error_naming_it() {
    let text = common::gcide_excerpt();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let page_bytes = PageSize::K16.bytes();
    {
        let db = Engine::open(dir, EngineOptions::default()).unwrap();
        let t = db
            .create_table(
                "t",
                TableOptions::default().page_compression(Some(PageCompression::Lz4)),
            )
            .unwrap();
        let mut tx = db.begin();
        for i in 0..300 {
            tx.put(&t, &key(i), &text_row(&text, i)).unwrap();
        }
        tx.commit().unwrap();
        db.close().unwrap();
    }
    let file = dir.join("tables").join("t.ibd");
    let mut bytes = std::fs::read(&file).unwrap();
    // The last compressed page of the file (type PAGE_COMPRESSED = 17 at offset 24): a leaf.
    let victim = (0..bytes.len() / page_bytes)
        .rev()
        .find(|&n| bytes[n * page_bytes + 24..n * page_bytes + 26] == 17u16.to_le_bytes())
        .expect("a compressed page in the file");
    // The offline tools see through the envelope: `check` passes the sound database, and
    // `inspect` says how the page is stored and decodes the page inside it.
    let report = barracuda::inspect::check_database(dir).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.pages_checked > 0);
    let view = barracuda::inspect::decode_page(dir, "t", victim as u32).unwrap();
    assert!(
        view.stored_as
            .as_deref()
            .is_some_and(|s| s.starts_with("page-compressed (Lz4)")),
        "{view}"
    );
    assert!(view.verify_error.is_none(), "{view}");
    assert!(
        matches!(view.body, barracuda::inspect::PageBody::Index { .. }),
        "{view}"
    );
    bytes[victim * page_bytes + 200] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let view = barracuda::inspect::decode_page(dir, "t", victim as u32).unwrap();
    assert!(
        view.verify_error
            .as_deref()
            .is_some_and(|e| e.contains("checksum mismatch")),
        "{view}"
    );
    let report = barracuda::inspect::check_database(dir).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.page_no == Some(victim as u32) && p.reason.contains("checksum")),
        "check must name page {victim}: {:?}",
        report.problems
    );

    let db = Engine::open(dir, EngineOptions::default()).unwrap();
    let t = db.table("t").unwrap();
    let error = (0..300)
        .find_map(|i| db.get(&t, &key(i)).err())
        .expect("reading every row must reach the damaged page");
    let text = common::chain(&error);
    assert!(
        matches!(error, Error::Page { page_no, .. } if page_no as usize == victim)
            || text.contains(&format!("page {}:{victim}", 1)),
        "the error must name page {victim}: {text}"
    );
    assert!(
        text.contains("t.ibd"),
        "the error must name the file: {text}"
    );
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u16),
    Delete(u16),
    Get(u16),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u16..600, 0u16..2000).prop_map(|(k, n)| Op::Put(k, n)),
        2 => (0u16..600).prop_map(Op::Delete),
        4 => (0u16..600).prop_map(Op::Get),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Through a pool of 16 frames of 8 KiB, almost every read is a miss of a compressed
    /// page: the table must still read like a `BTreeMap`.
    #[test]
    fn a_tiny_pool_over_a_compressed_table_agrees_with_a_model(
        ops in prop::collection::vec(op(), 1..250),
        lz4 in any::<bool>(),
    ) {
        let text = common::gcide_excerpt();
        let fs = Arc::new(FaultyFileSystem::new());
        let options = || {
            EngineOptions::default()
                .page_size(PageSize::K8)
                .buffer_pool_bytes(16 * 8192)
                .file_system(fs.clone())
        };
        let codec = if lz4 { PageCompression::Lz4 } else { PageCompression::Zlib { level: 6 } };
        let tmp = tempfile::tempdir().unwrap();
        let mut db = Engine::open(tmp.path(), options()).unwrap();
        let mut t = db
            .create_table("t", TableOptions::default().page_compression(Some(codec)))
            .unwrap();
        let mut model: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
        let value = |k: u16, n: u16| {
            let start = (usize::from(k) * 131 + usize::from(n)) % (text.len() - 1200);
            text[start..start + 100 + usize::from(n) % 1100].to_vec()
        };
        for op in ops {
            match op {
                Op::Put(k, n) => {
                    db.put(&t, &key(u64::from(k)), &value(k, n)).unwrap();
                    model.insert(k, value(k, n));
                }
                Op::Delete(k) => {
                    db.delete(&t, &key(u64::from(k))).unwrap();
                    model.remove(&k);
                }
                Op::Get(k) => {
                    prop_assert_eq!(db.get(&t, &key(u64::from(k))).unwrap(), model.get(&k).cloned());
                }
                Op::Reopen => {
                    db.close().unwrap();
                    db = Engine::open(tmp.path(), options()).unwrap();
                    t = db.table("t").unwrap();
                }
            }
        }
        let all: Vec<(Vec<u8>, Vec<u8>)> = db.range(&t, ..).unwrap().collect::<Result<_, _>>().unwrap();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (key(u64::from(*k)), v.clone())).collect();
        prop_assert_eq!(all, expected);
        db.check_table(&t).unwrap();

    }
}
