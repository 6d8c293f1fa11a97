//! Recovery's two apply orders give the same database: with memory for every page (each apply
//! thread reads the pages a batch needs, then applies in log order) and with too little (the
//! threads sort each batch by page and write their caches back when full, reading pages again
//! in later batches).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::fs::FaultyFileSystem;
use crate::{Engine, EngineOptions, PageSize, RecoveryReport, TableOptions};

/// Rows: about 1,300 pages of 4 KiB, more than the smallest recovery memory (4 MiB: 768 pages
/// of cache) holds.
const ROWS: u32 = 20_000;
/// Updates after the load, 20 rows a transaction.
const UPDATES: u32 = 12_000;

fn value(row: u32, version: u32) -> Vec<u8> {
    let mut v = format!("row {row} version {version} ").into_bytes();
    v.resize(180, b'a' + (row % 26) as u8);
    v
}

fn options(fs: &FaultyFileSystem, pool_bytes: usize) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(pool_bytes)
        .redo_log_capacity(64 << 20)
        .file_system(Arc::new(fs.clone()))
}

/// Loads `ROWS` rows, checkpoints, updates random rows, loses power, then reopens with
/// `recovery_pool` bytes of pool (recovery's memory) and checks every row against the model.
fn crash_and_recover(seed: u64, recovery_pool: usize) -> RecoveryReport {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let fs = FaultyFileSystem::new();
    let mut model = BTreeMap::new();
    {
        let db = Engine::open(tmp.path(), options(&fs, 64 << 20)).expect("create");
        let t = db
            .create_table("t", TableOptions::default())
            .expect("table");
        for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
            let mut tx = db.begin();
            for &row in chunk {
                let key = format!("key{row:08}").into_bytes();
                tx.put(&t, &key, &value(row, 0)).expect("put");
                model.insert(key, value(row, 0));
            }
            tx.commit().expect("commit");
        }
        db.checkpoint().expect("checkpoint");
        let mut state = seed;
        for version in 1..=UPDATES / 20 {
            let mut tx = db.begin();
            for _ in 0..20 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let row = ((state >> 33) % u64::from(ROWS)) as u32;
                let key = format!("key{row:08}").into_bytes();
                tx.put(&t, &key, &value(row, version)).expect("update");
                model.insert(key, value(row, version));
            }
            tx.commit().expect("commit");
        }
        fs.crash().expect("power loss");
    }
    let db = Engine::open(tmp.path(), options(&fs, recovery_pool)).expect("recover");
    let report = db.status().recovery.expect("the open recovered");
    let t = db.table("t").expect("table");
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .range(&t, ..)
        .expect("scan")
        .map(|row| row.expect("row"))
        .collect();
    assert!(
        got == model,
        "seed {seed:#x}: the recovered table differs from the model"
    );
    db.check_table(&t).expect("a sound tree");
    db.close().expect("close");
    report
}

#[test]
fn recovery_with_too_little_memory_for_the_pages_gives_the_same_rows() {
    let roomy = crash_and_recover(0x5eed, 64 << 20);
    assert!(roomy.mtrs > u64::from(UPDATES / 20), "{roomy:?}");
    let tight = crash_and_recover(0x5eed, 1 << 20);
    assert!(
        tight.pages_read > roomy.pages_read && tight.pages_written > roomy.pages_written,
        "with 4 MiB the caches fill and are written back, pages read again: {tight:?}, \
         against {roomy:?}"
    );
}

/// An mtr whose bytes no longer match its frame's CRC (the log changed after the scan at
/// open) is refused by the apply thread before any byte of it reaches the page; the same mtr
/// with its real CRC is applied.
#[test]
fn an_apply_thread_checks_the_crc_before_it_applies() -> Result<(), Box<dyn std::error::Error>> {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use barracuda_io::{FileSystem, OpenOptions};
    use barracuda_page::PageId;
    use barracuda_redo::record::MtrWriter;
    use barracuda_redo::{Durability, Recovery, RedoLog, RedoOptions};

    use super::apply::{Applier, Counters};
    use super::batch::BatchBuilder;
    use super::files::Files;

    let fs = FaultyFileSystem::new();
    let dir = Path::new("/db");
    let table = PathBuf::from("/db/t.ibd");
    fs.create_dir_all(dir)?;
    fs.open(&table, &OpenOptions::new().create(true))?;
    let page = PageId::new(5, 3);
    let mut mtr = MtrWriter::new(PageSize::K4);
    mtr.init_page(page);
    mtr.write(page, 100, b"hello")?;
    let log = RedoLog::create(
        &fs,
        dir,
        &RedoOptions {
            capacity: 64 << 10,
            buffer_bytes: 4096,
            start_lsn: 8192,
            durability: Durability::Sync,
        },
    )?;
    log.commit(&mtr.finish())?;
    drop(log);
    let mut recovery = Recovery::open(&fs, dir)?;
    let read = recovery
        .next_mtr_unchecked()?
        .ok_or("the log holds the mtr")?;

    let spaces = HashMap::from([(5, table)]);
    let page_writes = crate::torn_writes::PageWrites::open(
        std::sync::Arc::new(fs.clone()),
        dir,
        PageSize::K4,
        barracuda_doublewrite::DoublewriteMode::Off,
        &spaces,
        barracuda_doublewrite::Geometry::default(),
    )?;
    page_writes.start(&spaces, 0)?;
    let encoder = crate::compression::PageEncoder::new(
        PageSize::K4,
        1,
        Arc::new(crate::compression::CompressionCounters::default()),
    );
    let no_compression = HashMap::new();
    let files = Files::new(&fs, &spaces, &page_writes, &encoder, &no_compression);
    let counters = Counters::default();
    let apply = |crc: u32| -> crate::Result<Option<Vec<u8>>> {
        let mut builder = BatchBuilder::new(1, PageSize::K4, &spaces);
        builder.add(&barracuda_redo::UncheckedMtr { crc, ..read })?;
        let (batch, mut parts) = builder.take();
        let mut applier = Applier::new(16, PageSize::K4, &files, &counters);
        applier.apply(&batch, parts.pop().unwrap_or_default())?;
        Ok(applier.finish().bytes(page))
    };
    let damaged = apply(read.crc ^ 1).expect_err("a CRC mismatch must be refused");
    assert!(
        damaged.to_string().contains("valid in the first scan"),
        "{damaged}"
    );
    let applied = apply(read.crc)?.ok_or("the page was not changed")?;
    assert_eq!(applied.get(100..105), Some(&b"hello"[..]));
    Ok(())
}
