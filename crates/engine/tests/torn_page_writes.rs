//! Torn page writes (issue 9): a power loss while table pages are being written leaves pages
//! half old, half new, which redo cannot repair. Each iteration commits random batches on a
//! fault-injecting file system with a pool much smaller than the data (pages are written all
//! the time), then loses power with every unsynced write torn at a random 512-byte or 4 KiB
//! boundary, and opens the database again:
//!
//! - `On`: always opens, every acknowledged commit present (the torn pages restored from the
//!   doublewrite file before redo is applied);
//! - `Off` and `DetectOnly`: either opens with exactly the acknowledged data or refuses with an
//!   error naming a table file and a page — never wrong data — and over the iterations the
//!   refusal does happen;
//! - `AtomicWrites` on a device that pretends untorn writes: always opens, without a
//!   doublewrite file;
//! - `Auto` on this machine's disk, which has no untorn writes, picks `On` and says why.
//!
//! The iterations check that the crash really tore table pages (else they prove nothing).
//! CI runs [`ITERATIONS`] per mode; `--ignored` runs thousands.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use barracuda::fs::{CrashMode, FaultError, FaultyFileSystem, FileSystem, OpKind};
use barracuda::{
    DoublewriteEffectiveMode, DoublewriteMode, Durability, Engine, EngineOptions, Error, PageSize,
    TableOptions,
};
use barracuda_testkit::crash::SplitMix64;

const PAGE: PageSize = PageSize::K4;
/// Iterations per mode in a plain `cargo test`.
const ITERATIONS: u64 = 12;
/// Iterations per mode with `--ignored`.
const LONG_ITERATIONS: u64 = 1000;

fn options(fs: &FaultyFileSystem, mode: DoublewriteMode) -> EngineOptions {
    options_with_areas(fs, mode, None)
}

/// [`options`] with `areas` batch areas in the doublewrite file (else the pool's default: 2
/// for this small pool).
fn options_with_areas(
    fs: &FaultyFileSystem,
    mode: DoublewriteMode,
    areas: Option<u32>,
) -> EngineOptions {
    let options = EngineOptions::default()
        .page_size(PAGE)
        .buffer_pool_bytes(24 * PAGE.bytes())
        .redo_log_capacity(4 << 20)
        .durability(Durability::SyncEachCommit)
        .doublewrite(mode)
        .file_system(Arc::new(fs.clone()));
    match areas {
        Some(areas) => options.doublewrite_batch_areas(areas),
        None => options,
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// How one iteration ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The reopen served exactly the acknowledged commits.
    Recovered { repaired: usize },
    /// The reopen refused, naming a torn page of a table file.
    TornPageReported,
}

/// Commits random batches (puts and deletes over 1500 keys, values of 40–400 bytes) into
/// table `t`, then cuts the power, tearing every unsynced write; returns the acknowledged
/// contents and how many table-page writes the crash tore.
fn run_and_crash(
    dir: &Path,
    fs: &FaultyFileSystem,
    mode: DoublewriteMode,
    seed: u64,
    table: TableOptions,
    areas: Option<u32>,
) -> (Model, usize) {
    let mut rng = SplitMix64::new(seed);
    let db = Engine::open(dir, options_with_areas(fs, mode, areas)).unwrap();
    let t = db.create_table("t", table).unwrap();
    let mut model = Model::new();
    let batches = 50 + rng.below(50);
    for batch in 0..batches {
        let mut tx = db.begin();
        let mut pending = Vec::new();
        for _ in 0..=rng.below(12) {
            let key = format!("key{:05}", rng.below(1500)).into_bytes();
            if rng.below(5) == 0 {
                tx.delete(&t, &key).unwrap();
                pending.push((key, None));
            } else {
                let len = 40 + rng.below(360) as usize;
                let value: Vec<u8> = (0..len).map(|i| (batch as usize + i) as u8).collect();
                tx.put(&t, &key, &value).unwrap();
                pending.push((key, Some(value)));
            }
        }
        tx.commit().unwrap();
        for (key, value) in pending {
            match value {
                Some(v) => model.insert(key, v),
                None => model.remove(&key),
            };
        }
        if rng.below(25) == 0 {
            db.checkpoint().unwrap();
        }
    }
    let report = fs.crash().unwrap();
    drop(db);
    let torn = report
        .files
        .iter()
        // Tables and the undo tablespace: data files the doublewrite protects.
        .filter(|(path, _)| path.extension().is_some_and(|e| e == "ibd" || e == "ibu"))
        .map(|(_, r)| r.torn_writes())
        .sum();
    (model, torn)
}

/// One iteration: run, crash with tearing at `sector`, reopen.
fn iteration(
    mode: DoublewriteMode,
    seed: u64,
    pretend_atomic: bool,
    table: TableOptions,
    areas: Option<u32>,
) -> (Outcome, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let sector = if seed.is_multiple_of(2) { 512 } else { 4096 };
    fs.set_crash_mode(CrashMode::TearUnsynced { sector, seed });
    if pretend_atomic {
        fs.pretend_atomic_writes(Some(PAGE.bytes() as u32));
    }
    let (model, torn) = run_and_crash(tmp.path(), &fs, mode, seed, table, areas);
    let outcome = match Engine::open(tmp.path(), options_with_areas(&fs, mode, areas)) {
        Ok(db) => {
            let t = db.table("t").unwrap();
            let got: Model = db.range(&t, ..).unwrap().map(Result::unwrap).collect();
            assert!(
                got == model,
                "{mode:?} seed {seed:#x}: the reopened table differs from the acknowledged \
                 commits ({} rows, {} expected)",
                got.len(),
                model.len()
            );
            db.check_table(&t).unwrap();
            let repaired = db.status().doublewrite.torn_pages_repaired.len();
            db.close().unwrap();
            Outcome::Recovered { repaired }
        }
        Err(err @ Error::Page { .. }) => {
            let text = err.to_string();
            assert!(
                (text.contains("t.ibd") || text.contains("undo.ibu")) && text.contains("page"),
                "{mode:?} seed {seed:#x}: the error names no page of the database: {text}"
            );
            Outcome::TornPageReported
        }
        Err(err) => panic!("{mode:?} seed {seed:#x}: the reopen failed otherwise: {err}"),
    };
    (outcome, torn)
}

/// Runs `iterations` of `mode` and returns (recovered, repaired pages, refused, torn writes).
fn run_mode(
    mode: DoublewriteMode,
    iterations: u64,
    pretend_atomic: bool,
    table: TableOptions,
    areas: Option<u32>,
) -> (u64, usize, u64, usize) {
    let (mut recovered, mut repaired, mut refused, mut torn) = (0, 0, 0, 0);
    for i in 0..iterations {
        let seed = 0x70_0000 + i;
        let (outcome, torn_here) = iteration(mode, seed, pretend_atomic, table, areas);
        torn += torn_here;
        match outcome {
            Outcome::Recovered { repaired: r } => {
                recovered += 1;
                repaired += r;
            }
            Outcome::TornPageReported => refused += 1,
        }
    }
    (recovered, repaired, refused, torn)
}

fn doublewrite_on_always_recovers(iterations: u64, table: TableOptions, areas: Option<u32>) {
    let (recovered, repaired, refused, torn) =
        run_mode(DoublewriteMode::On, iterations, false, table, areas);
    assert_eq!(refused, 0);
    assert_eq!(recovered, iterations);
    assert!(
        torn > 0,
        "no table page write was torn: the test proves nothing"
    );
    assert!(
        repaired > 0,
        "{torn} torn writes but no page repaired from the doublewrite file"
    );
}

#[test]
fn doublewrite_on_repairs_torn_pages_and_keeps_every_acknowledged_commit() {
    doublewrite_on_always_recovers(ITERATIONS, TableOptions::default(), None);
}

/// With six batch areas an area is reused only every sixth batch, so the data files are synced
/// that rarely and a crash tears in-place writes of several batches whose copies sit in
/// different areas: each torn page is restored from the newest of them.
#[test]
fn doublewrite_on_with_many_areas_repairs_pages_torn_across_batches() {
    doublewrite_on_always_recovers(ITERATIONS, TableOptions::default(), Some(6));
}

/// A row-compressed table's blocks (2 KiB at the start of 4 KiB slots; their other pages
/// page-compressed) are written through the doublewrite file too: a torn block is restored
/// from its copy, and every acknowledged commit is there.
#[test]
fn doublewrite_on_repairs_torn_blocks_of_a_compressed_table() {
    doublewrite_on_always_recovers(ITERATIONS, compressed(), None);
}

/// Without copies, a torn block is reported (its checksum), never served.
#[test]
fn without_doublewrite_a_torn_block_is_reported_never_served() {
    unprotected_writes_are_detected(DoublewriteMode::Off, ITERATIONS, compressed());
}

fn compressed() -> TableOptions {
    TableOptions::default().row_format(barracuda::RowFormat::compressed(2))
}

#[test]
#[ignore = "thousands of crashes; run with --ignored"]
fn doublewrite_on_repairs_torn_pages_over_many_crashes() {
    doublewrite_on_always_recovers(LONG_ITERATIONS, TableOptions::default(), None);
    doublewrite_on_always_recovers(LONG_ITERATIONS, TableOptions::default(), Some(6));
    doublewrite_on_always_recovers(LONG_ITERATIONS, compressed(), None);
}

fn unprotected_writes_are_detected(mode: DoublewriteMode, iterations: u64, table: TableOptions) {
    let (_, repaired, refused, torn) = run_mode(mode, iterations, false, table, None);
    assert!(
        torn > 0,
        "no table page write was torn: the test proves nothing"
    );
    assert_eq!(repaired, 0, "{mode:?} has no copies to repair from");
    assert!(
        refused > 0,
        "{mode:?}: {torn} torn writes and never a torn page reported"
    );
}

#[test]
fn without_doublewrite_a_torn_page_is_reported_never_served() {
    unprotected_writes_are_detected(DoublewriteMode::Off, ITERATIONS, TableOptions::default());
}

#[test]
fn detect_only_names_the_torn_page_and_refuses_to_open() {
    unprotected_writes_are_detected(
        DoublewriteMode::DetectOnly,
        ITERATIONS,
        TableOptions::default(),
    );
}

#[test]
#[ignore = "thousands of crashes; run with --ignored"]
fn unprotected_modes_over_many_crashes() {
    unprotected_writes_are_detected(
        DoublewriteMode::Off,
        LONG_ITERATIONS,
        TableOptions::default(),
    );
    unprotected_writes_are_detected(
        DoublewriteMode::DetectOnly,
        LONG_ITERATIONS,
        TableOptions::default(),
    );
}

#[test]
fn atomic_writes_on_an_atomic_device_recover_without_a_doublewrite_file() {
    for i in 0..ITERATIONS {
        let seed = 0x71_0000 + i;
        let tmp = tempfile::tempdir().unwrap();
        let fs = FaultyFileSystem::new();
        fs.set_crash_mode(CrashMode::TearUnsynced { sector: 512, seed });
        fs.pretend_atomic_writes(Some(PAGE.bytes() as u32));
        let (model, _) = run_and_crash(
            tmp.path(),
            &fs,
            DoublewriteMode::AtomicWrites,
            seed,
            TableOptions::default(),
            None,
        );
        assert!(
            !fs.exists(&tmp.path().join("doublewrite.dblwr")).unwrap(),
            "atomic writes made a doublewrite file"
        );
        let db = Engine::open(tmp.path(), options(&fs, DoublewriteMode::AtomicWrites)).unwrap();
        let status = db.status().doublewrite;
        assert_eq!(
            status.mode,
            DoublewriteEffectiveMode::AtomicWrites,
            "{}",
            status.reason
        );
        let t = db.table("t").unwrap();
        let got: Model = db.range(&t, ..).unwrap().map(Result::unwrap).collect();
        assert!(got == model, "seed {seed:#x}: the reopened table differs");
        db.close().unwrap();
    }
}

#[test]
fn a_file_that_refuses_untorn_writes_falls_back_to_the_doublewrite_file() {
    let mut torn_total = 0;
    for (i, error) in [FaultError::Eopnotsupp, FaultError::Einval]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let seed = 0x72_0000 + i as u64;
        let tmp = tempfile::tempdir().unwrap();
        let fs = FaultyFileSystem::new();
        fs.set_crash_mode(CrashMode::TearUnsynced { sector: 512, seed });
        fs.pretend_atomic_writes(Some(PAGE.bytes() as u32));
        // The device refuses an untorn write at run time (a kernel or device that changed its
        // mind, a file moved to other storage); the open's trial write is the first counted.
        fs.fail_nth(OpKind::AtomicWrite, 3, error);
        let (model, torn) = run_and_crash(
            tmp.path(),
            &fs,
            DoublewriteMode::AtomicWrites,
            seed,
            TableOptions::default(),
            None,
        );
        torn_total += torn;
        assert!(
            fs.exists(&tmp.path().join("doublewrite.dblwr")).unwrap(),
            "{error:?}: the fallback made no doublewrite file"
        );
        let db = Engine::open(tmp.path(), options(&fs, DoublewriteMode::AtomicWrites)).unwrap();
        let t = db.table("t").unwrap();
        let got: Model = db.range(&t, ..).unwrap().map(Result::unwrap).collect();
        assert!(
            got == model,
            "{error:?} seed {seed:#x}: the reopened table differs"
        );
        // A new session tries untorn writes again, and the fallback shows in the status.
        fs.fail_nth(OpKind::AtomicWrite, 1, error);
        for i in 0..500u32 {
            db.put(&t, format!("x{i:05}").as_bytes(), &[9; 200])
                .unwrap();
        }
        db.checkpoint().unwrap();
        let status = db.status().doublewrite;
        assert_eq!(status.mode, DoublewriteEffectiveMode::AtomicWrites);
        assert_eq!(status.atomic_fallback_files.len(), 1, "{status:?}");
        // The first untorn write of the session: the table's file or the undo tablespace's.
        let fallback = &status.atomic_fallback_files[0];
        assert!(
            fallback.ends_with("tables/t.ibd") || fallback.ends_with("undo.ibu"),
            "{fallback:?}"
        );
        assert!(
            status.doublewrite.is_some_and(|d| d.pages_written > 0),
            "{status:?}"
        );
        db.close().unwrap();
    }
    // The pages the fallback wrote tore at the crashes and were repaired (else the reopens
    // above would have failed or differed).
    assert!(
        torn_total > 0,
        "nothing torn: the fallback's protection is not tested"
    );
}

#[test]
fn auto_picks_atomic_writes_only_on_a_device_that_has_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    fs.pretend_atomic_writes(Some(PAGE.bytes() as u32));
    let db = Engine::open(tmp.path(), options(&fs, DoublewriteMode::Auto)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0..2000u32 {
        db.put(&t, format!("k{i:06}").as_bytes(), &[7; 100])
            .unwrap();
    }
    db.checkpoint().unwrap();
    let status = db.status().doublewrite;
    assert_eq!(
        status.mode,
        DoublewriteEffectiveMode::AtomicWrites,
        "{}",
        status.reason
    );
    assert!(status.atomic_writes > 0, "{status:?}");
    assert!(status.doublewrite.is_none());
    db.close().unwrap();

    // The same without the pretence: the doublewrite file, and the reason.
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs, DoublewriteMode::Auto)).unwrap();
    let status = db.status().doublewrite;
    assert_eq!(status.mode, DoublewriteEffectiveMode::On);
    assert!(status.reason.contains("atomic"), "{}", status.reason);
    db.close().unwrap();
}

#[test]
fn auto_on_this_machines_disk_uses_the_doublewrite_file_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let options = EngineOptions::default()
        .page_size(PAGE)
        .buffer_pool_bytes(24 * PAGE.bytes());
    let db = Engine::open(tmp.path(), options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0..3000u32 {
        db.put(&t, format!("k{i:06}").as_bytes(), &[7; 100])
            .unwrap();
    }
    db.checkpoint().unwrap();
    let status = db.status().doublewrite;
    // This machine's disks have no untorn writes (statx reports none); a machine with them
    // would pick AtomicWrites here, which the test accepts only with the evidence in the reason.
    match status.mode {
        DoublewriteEffectiveMode::On => {
            assert!(!status.reason.is_empty());
            let copies = status.doublewrite.expect("On has a doublewrite file");
            assert!(copies.pages_written > 0 && copies.batches + copies.single_page_writes > 0);
            assert!(tmp.path().join("doublewrite.dblwr").exists());
        }
        DoublewriteEffectiveMode::AtomicWrites => assert!(status.atomic_writes > 0),
        other => panic!("Auto chose {other:?}: {}", status.reason),
    }
    assert!(db.status().to_string().contains("DOUBLEWRITE"));
    db.close().unwrap();
}

/// Pages of a doublewrite file with `batch_areas` areas of 128 pages and 8 single-page slots.
fn doublewrite_file_pages(batch_areas: u64) -> u64 {
    1 + batch_areas * 129 + 8 * 2
}

#[test]
fn the_doublewrite_file_is_sized_to_the_pool_and_rebuilt_when_the_pool_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let file_len = || {
        std::fs::metadata(tmp.path().join("doublewrite.dblwr"))
            .unwrap()
            .len()
    };
    let open = |pool_pages: usize| {
        let options = EngineOptions::default()
            .page_size(PAGE)
            .buffer_pool_bytes(pool_pages * PAGE.bytes())
            .doublewrite(DoublewriteMode::On);
        Engine::open(tmp.path(), options).unwrap()
    };
    // 4096 pages: slots for an eighth of them are 4 areas of 128.
    let db = open(4096);
    assert_eq!(file_len(), doublewrite_file_pages(4) * PAGE.bytes() as u64);
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0..20_000u32 {
        db.put(&t, format!("k{i:06}").as_bytes(), &[i as u8; 100])
            .unwrap();
    }
    db.checkpoint().unwrap();
    let copies = db.status().doublewrite.doublewrite.expect("On has a file");
    assert!(copies.batches > 4, "{copies:?}");
    db.close().unwrap();

    // Asked for, the count is the one asked for, within the file format's bounds.
    let asked = |areas: u32| {
        let options = EngineOptions::default()
            .page_size(PAGE)
            .buffer_pool_bytes(24 * PAGE.bytes())
            .doublewrite(DoublewriteMode::On)
            .doublewrite_batch_areas(areas);
        Engine::open(tmp.path(), options)
    };
    asked(6).unwrap().close().unwrap();
    assert_eq!(file_len(), doublewrite_file_pages(6) * PAGE.bytes() as u64);
    for refused in [0, 257] {
        match asked(refused) {
            Err(Error::InvalidOption(why)) => assert!(
                why.contains("doublewrite_batch_areas") && why.contains(&refused.to_string()),
                "{why}"
            ),
            other => panic!("{refused} batch areas: {:?}", other.map(|_| ())),
        }
    }

    // A small pool gets the smallest file (two areas), and the data is all there.
    let db = open(24);
    assert_eq!(file_len(), doublewrite_file_pages(2) * PAGE.bytes() as u64);
    let t = db.table("t").unwrap();
    for i in (0..20_000u32).step_by(997) {
        let value = db.get(&t, format!("k{i:06}").as_bytes()).unwrap();
        assert_eq!(value.as_deref(), Some(&[i as u8; 100][..]));
    }
    db.close().unwrap();
}
