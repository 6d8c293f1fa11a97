//! Power loss at every point of the protocol, on a `FaultyFileSystem` that tears unsynced
//! writes at 512-byte or 4 KiB boundaries: a torn copy is never used, a torn in-place page is
//! repaired to its copy, descriptors-only mode names the torn page, and a run of batches cut at
//! any write recovers every page to a version that was written.
//!
//! Bounded here; `cargo test -p barracuda-doublewrite --test crash -- --ignored` runs
//! thousands of seeds.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use barracuda_doublewrite::{
    read_copies, restore_torn_pages, AreaKind, CopyContent, Doublewrite, DoublewriteError,
};
use barracuda_io::faulty::ErrorKind;
use barracuda_io::{CrashMode, FaultyFileSystem, OpKind, PageFile};
use barracuda_page::{page_lsn, PageId, PageSize};
use common::{
    batch, config, data_file, data_path, dir, flush, fs, page, protect, read_page, verify,
    write_in_place,
};

const SEEDS: u64 = 48;
const MANY_SEEDS: u64 = 2000;

/// Page sizes and tearing sectors where a page write can tear (a 4 KiB page written at a
/// 4 KiB boundary cannot tear into 4 KiB sectors).
const TEARABLE: [(PageSize, u32); 3] = [
    (PageSize::K4, 512),
    (PageSize::K16, 512),
    (PageSize::K16, 4096),
];

fn ids(space: u32, n: u32) -> Vec<PageId> {
    (0..n).map(|p| PageId::new(space, p)).collect()
}

fn crashing_fs(sector: u32, seed: u64) -> FaultyFileSystem {
    let fs = fs();
    fs.set_crash_mode(CrashMode::TearUnsynced { sector, seed });
    fs
}

fn resolver(file: Arc<dyn PageFile>) -> impl Fn(u32) -> Option<Arc<dyn PageFile>> {
    move |space| (space == 1).then(|| file.clone())
}

/// Pages of `file` that fail verification.
fn torn_pages(file: &dyn PageFile, ps: PageSize, pages: &[PageId]) -> BTreeSet<PageId> {
    let ok = verify(ps);
    pages
        .iter()
        .filter(|id| !ok(**id, &read_page(file, ps, id.page_no)))
        .copied()
        .collect()
}

fn copy_write_cut(ps: PageSize, sector: u32, seed: u64) -> u64 {
    let fs = crashing_fs(sector, seed);
    let dw = Doublewrite::create(&fs, dir(), ps, config(1, 8, 1)).unwrap();
    let file = data_file(&fs, 1);
    let pages = ids(1, 8);
    let v1 = batch(ps, &pages, 100);
    flush(&dw, &file, &v1, AreaKind::Batch);
    dw.sync_pending().unwrap();
    // The next batch reuses the area holding v1's copies; its copy write is cut before the
    // sync (the failed sync stands for the power loss).
    let v2 = batch(ps, &pages, 200);
    fs.fail_nth(OpKind::Sync, 1, ErrorKind::Eio);
    assert!(protect(&dw, &v2, AreaKind::Batch).is_err());
    fs.crash().unwrap();

    let copies = read_copies(&fs, dir(), ps).unwrap().unwrap();
    for copy in copies.copies() {
        let i = copy.id.page_no as usize;
        assert!(
            copy.image == v1[i].1 || copy.image == v2[i].1,
            "seed {seed}: a copy of {} that was never written",
            copy.id
        );
    }
    let file = data_file(&fs, 1);
    let report = restore_torn_pages(&copies, resolver(file.clone()), verify(ps)).unwrap();
    assert!(report.repaired.is_empty(), "seed {seed}: {report:?}");
    assert_eq!(report.intact, 8);
    for (id, image) in &v1 {
        assert_eq!(
            &read_page(&*file, ps, id.page_no),
            image,
            "seed {seed}: {id} was touched"
        );
    }
    copies.summary().invalid_images
}

#[test]
fn a_crash_during_the_copy_write_leaves_in_place_pages_untouched_and_no_bogus_copy() {
    for (ps, sector) in TEARABLE {
        let invalid: u64 = (0..SEEDS)
            .map(|seed| copy_write_cut(ps, sector, seed))
            .sum();
        // Some crashes kept the new descriptor with old images in its slots: the per-image
        // CRCs must have rejected them, or the test did not exercise that case.
        assert!(
            invalid > 0,
            "{ps}, {sector}-byte sectors: no half-written copy in {SEEDS} seeds"
        );
    }
}

/// Crashes during the in-place writes of a protected batch; returns how many pages tore.
fn in_place_cut(ps: PageSize, sector: u32, seed: u64, content: CopyContent) -> usize {
    let fs = crashing_fs(sector, seed);
    let mut cfg = config(2, 8, 1);
    cfg.content = content;
    let dw = Doublewrite::create(&fs, dir(), ps, cfg).unwrap();
    let file = data_file(&fs, 1);
    let pages = ids(1, 8);
    let v1 = batch(ps, &pages, 100);
    flush(&dw, &file, &v1, AreaKind::Batch);
    dw.sync_pending().unwrap();
    let v2 = batch(ps, &pages, 200);
    let protected = protect(&dw, &v2, AreaKind::Batch).unwrap();
    write_in_place(&*file, ps, &v2);
    protected.written_in_place(vec![file.clone()]);
    fs.crash().unwrap();

    let file = data_file(&fs, 1);
    let torn = torn_pages(&*file, ps, &pages);
    let copies = read_copies(&fs, dir(), ps).unwrap().unwrap();
    let restored = restore_torn_pages(&copies, resolver(file.clone()), verify(ps));
    match content {
        CopyContent::Images => {
            let report = restored.unwrap();
            assert_eq!(
                report.repaired.iter().copied().collect::<BTreeSet<_>>(),
                torn,
                "seed {seed}"
            );
            assert_eq!(report.files_synced, u64::from(!torn.is_empty()));
            for (i, id) in pages.iter().enumerate() {
                let now = read_page(&*file, ps, id.page_no);
                if torn.contains(id) {
                    assert_eq!(now, v2[i].1, "seed {seed}: {id} not repaired to its copy");
                } else {
                    assert!(now == v1[i].1 || now == v2[i].1, "seed {seed}: {id}");
                }
            }
        }
        CopyContent::DescriptorsOnly => match restored {
            Ok(report) => assert!(
                torn.is_empty(),
                "seed {seed}: torn {torn:?} missed: {report:?}"
            ),
            Err(DoublewriteError::TornPage {
                file: path,
                page,
                lsn,
                why,
            }) => {
                assert_eq!(path, data_path(1));
                assert_eq!(
                    Some(&page),
                    torn.first(),
                    "seed {seed}: the first torn page is named"
                );
                assert_eq!(lsn, 200);
                assert!(why.contains("DetectOnly"), "{why}");
            }
            Err(e) => panic!("seed {seed}: {e}"),
        },
    }
    torn.len()
}

fn torn_in_place_pages_are_repaired(seeds: u64) {
    for (ps, sector) in TEARABLE {
        let torn: usize = (0..seeds)
            .map(|seed| in_place_cut(ps, sector, seed, CopyContent::Images))
            .sum();
        assert!(
            torn > 0,
            "{ps}, {sector}-byte sectors: nothing tore in {seeds} seeds"
        );
    }
}

#[test]
fn torn_in_place_pages_are_repaired_from_their_copies() {
    torn_in_place_pages_are_repaired(SEEDS);
}

#[test]
#[ignore = "thousands of seeds; run with --ignored"]
fn torn_in_place_pages_are_repaired_from_their_copies_many_seeds() {
    torn_in_place_pages_are_repaired(MANY_SEEDS);
}

#[test]
fn descriptors_only_mode_detects_and_names_a_torn_page() {
    for (ps, sector) in TEARABLE {
        let torn: usize = (0..SEEDS)
            .map(|seed| in_place_cut(ps, sector, seed, CopyContent::DescriptorsOnly))
            .sum();
        assert!(torn > 0, "{ps}, {sector}-byte sectors: nothing tore");
    }
}

/// A tiny deterministic generator for the model run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Batches and single pages over two files with two batch areas (so areas are reused), cut
/// at a random write; returns the pages repaired.
fn model_run(seed: u64) -> usize {
    let ps = PageSize::K4;
    let mut rng = Rng(seed);
    let fs = crashing_fs(512, seed);
    let dw = Doublewrite::create(&fs, dir(), ps, config(2, 4, 2)).unwrap();
    let files = [data_file(&fs, 1), data_file(&fs, 2)];
    let pages: Vec<PageId> = ids(1, 6).into_iter().chain(ids(2, 6)).collect();
    // Every version each page was ever given; version 1 is written and synced up front.
    let mut versions: Vec<Vec<u64>> = vec![vec![1]; pages.len()];
    for (id, image) in batch(ps, &pages, 1) {
        files[id.space_id as usize - 1]
            .write_at(&image, u64::from(id.page_no) * 4096)
            .unwrap();
    }
    for f in &files {
        f.sync_data().unwrap();
    }
    fs.fail_nth(OpKind::Write, 1 + rng.below(80), ErrorKind::Eio);
    'run: for round in 1..200u64 {
        let single = rng.below(4) == 0;
        let n = if single { 1 } else { 1 + rng.below(4) as usize };
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < n {
            let i = rng.below(pages.len() as u64) as usize;
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        let lsn = 10 * round;
        let this: Vec<(PageId, Vec<u8>)> = chosen
            .iter()
            .map(|&i| (pages[i], page(ps, pages[i], lsn)))
            .collect();
        let kind = if single {
            AreaKind::SinglePage
        } else {
            AreaKind::Batch
        };
        let Ok(protected) = protect(&dw, &this, kind) else {
            break 'run;
        };
        // Once the copy is durable, recovery may restore any page of the batch to it (a
        // version whose redo is durable), written in place or not.
        for &i in &chosen {
            versions[i].push(lsn);
        }
        let mut written: Vec<Arc<dyn PageFile>> = Vec::new();
        for (id, image) in &this {
            let file = &files[id.space_id as usize - 1];
            if file.write_at(image, u64::from(id.page_no) * 4096).is_err() {
                break 'run; // the Protected is dropped: its area stays reserved
            }
            written.push(file.clone());
        }
        protected.written_in_place(written);
        if rng.below(8) == 0 && dw.sync_pending().is_err() {
            break 'run;
        }
    }
    drop(dw);
    fs.crash().unwrap();

    let copies = read_copies(&fs, dir(), ps).unwrap().unwrap();
    let files = [data_file(&fs, 1), data_file(&fs, 2)];
    let resolve = |space: u32| files.get(space as usize - 1).cloned();
    let report = restore_torn_pages(&copies, resolve, verify(ps)).unwrap();
    let ok = verify(ps);
    for (i, id) in pages.iter().enumerate() {
        let now = read_page(&*files[id.space_id as usize - 1], ps, id.page_no);
        assert!(ok(*id, &now), "seed {seed}: {id} still torn");
        let lsn = page_lsn(&now).unwrap();
        assert!(
            versions[i].contains(&lsn),
            "seed {seed}: {id} at LSN {lsn} was never written"
        );
        assert_eq!(now, page(ps, *id, lsn), "seed {seed}: {id}");
    }
    report.repaired.len()
}

#[test]
fn batches_cut_at_any_write_recover_every_page_to_a_written_version() {
    let repaired: usize = (0..SEEDS * 2).map(model_run).sum();
    assert!(
        repaired > 0,
        "no crash tore a page: the run does not test repair"
    );
}

#[test]
#[ignore = "thousands of seeds; run with --ignored"]
fn batches_cut_at_any_write_recover_every_page_to_a_written_version_many_seeds() {
    let repaired: usize = (0..MANY_SEEDS).map(model_run).sum();
    assert!(repaired > 0);
}

#[test]
fn pages_of_unknown_spaces_and_beyond_the_end_are_skipped() {
    let ps = PageSize::K4;
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), ps, config(1, 4, 1)).unwrap();
    let file = data_file(&fs, 1);
    let listed = [PageId::new(1, 0), PageId::new(1, 50), PageId::new(7, 0)];
    let pages = [
        (listed[0], page(ps, listed[0], 9)),
        (listed[1], page(ps, listed[1], 9)),
        (listed[2], page(ps, listed[2], 9)),
    ];
    let protected = protect(&dw, &pages, AreaKind::Batch).unwrap();
    file.write_at(&vec![0xAB; 4096], 0).unwrap(); // page 1:0 garbage, the file 1 page long
    protected.written_in_place(vec![file.clone()]);
    let copies = read_copies(&fs, dir(), ps).unwrap().unwrap();
    let report = restore_torn_pages(&copies, resolver(file.clone()), verify(ps)).unwrap();
    assert_eq!(report.repaired, [listed[0]]);
    assert_eq!(
        (report.skipped_beyond_eof, report.skipped_unknown_space),
        (1, 1)
    );
    assert_eq!(read_page(&*file, ps, 0), pages[0].1);
}

#[test]
fn a_copy_the_engine_rejects_is_a_torn_page_error() {
    let ps = PageSize::K4;
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), ps, config(1, 4, 1)).unwrap();
    let file = data_file(&fs, 1);
    let id = PageId::new(1, 0);
    let pages = [(id, page(ps, id, 9))];
    protect(&dw, &pages, AreaKind::Batch)
        .unwrap()
        .written_in_place(vec![file.clone()]);
    file.write_at(&vec![0xAB; 4096], 0).unwrap();
    let copies = read_copies(&fs, dir(), ps).unwrap().unwrap();
    let err = restore_torn_pages(&copies, resolver(file.clone()), |_, _| false).unwrap_err();
    let DoublewriteError::TornPage { page, lsn, why, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!((*page, *lsn), (id, 9));
    assert!(why.contains("fails verification too"), "{why}");
    assert!(err.to_string().contains("space1.ibd"), "{err}");
}
