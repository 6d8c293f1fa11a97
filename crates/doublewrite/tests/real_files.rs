//! The doublewrite file on the real file system, opened O_DIRECT, on the `pread`/`pwrite` and
//! the default (io_uring where allowed) back ends: every write is one aligned buffer, so the
//! copies, their recovery and the repair of a damaged page work there as in memory.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use barracuda_doublewrite::{read_copies, restore_torn_pages, AreaKind, Doublewrite};
use barracuda_io::{AlignedBuf, Backend, FileSystem, OpenOptions, OsFileSystem, PageFile};
use barracuda_page::{PageId, PageSize};
use common::{batch, config, protect, verify};

const PS: PageSize = PageSize::K16;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("doublewrite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn round_trip_with_o_direct(backend: Backend, name: &str) {
    let dir = scratch_dir(name);
    let fs = OsFileSystem::new(backend);
    let mut cfg = config(2, 8, 2);
    cfg.direct_io = true;
    let dw = Doublewrite::create(&fs, &dir, PS, cfg).unwrap();
    let direct = OpenOptions::new().create(true).direct(true);
    let data: Arc<dyn PageFile> = fs.open(&dir.join("t.ibd"), &direct).unwrap();
    assert!(data.alignment() > 1, "{name}: O_DIRECT was not applied");
    let ids: Vec<PageId> = (0..8).map(|n| PageId::new(5, n)).collect();
    let pages = batch(PS, &ids, 300);
    let protected = protect(&dw, &pages, AreaKind::Batch).unwrap();
    for (id, image) in &pages {
        let aligned = AlignedBuf::from_slice(image);
        data.write_at(&aligned, u64::from(id.page_no) * PS.bytes() as u64)
            .unwrap();
    }
    protected.written_in_place(vec![data.clone()]);
    let single = batch(PS, &[PageId::new(5, 8)], 301);
    protect(&dw, &single, AreaKind::SinglePage)
        .unwrap()
        .written_in_place(vec![data.clone()]);
    dw.sync_pending().unwrap();

    // Damage page 3 in place, as a torn write would.
    let garbage = AlignedBuf::from_slice(&vec![0x5Au8; 4096]);
    data.write_at(&garbage, 3 * PS.bytes() as u64 + 8192)
        .unwrap();

    let copies = read_copies(&fs, &dir, PS).unwrap().unwrap();
    assert_eq!(copies.listed_pages(), 9);
    assert_eq!(copies.summary().damaged_areas, 0);
    let resolve = |space| (space == 5).then(|| data.clone());
    let report = restore_torn_pages(&copies, resolve, verify(PS)).unwrap();
    assert_eq!(report.repaired, [ids[3]]);
    let mut back = AlignedBuf::zeroed(PS.bytes());
    data.read_at(&mut back, 3 * PS.bytes() as u64).unwrap();
    assert_eq!(&back[..], &pages[3].1[..]);

    drop(dw);
    Doublewrite::open(&fs, &dir, PS, cfg).unwrap();
    assert_eq!(
        read_copies(&fs, &dir, PS).unwrap().unwrap().listed_pages(),
        0
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn o_direct_round_trip_on_pread_pwrite() {
    round_trip_with_o_direct(Backend::Std, "std");
}

#[test]
fn o_direct_round_trip_on_the_default_back_end() {
    round_trip_with_o_direct(Backend::Auto, "auto");
}
