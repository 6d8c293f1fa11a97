//! Writing copies and reading them back: the newest valid copy of each page wins, `open`
//! discards copies or recreates the file, bad batches are refused, failures keep what recovery
//! needs, and the counters add up.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use barracuda_doublewrite::{
    read_copies, AreaKind, CopyContent, Doublewrite, DoublewriteError, Geometry, PageImage,
    FILE_NAME,
};
use barracuda_io::faulty::ErrorKind;
use barracuda_io::{FileSystem, OpKind, OpenOptions};
use barracuda_page::{PageId, PageSize};
use common::{batch, config, dir, fs, page, protect};

const PS: PageSize = PageSize::K4;

fn id(n: u32) -> PageId {
    PageId::new(1, n)
}

#[test]
fn read_copies_finds_every_page_and_the_newest_lsn_wins() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(3, 4, 2)).unwrap();
    let b1 = batch(PS, &[id(0), id(1), id(2), id(3)], 10);
    let b2 = batch(PS, &[id(0), id(9)], 20);
    let b3 = batch(PS, &[id(3)], 5);
    let s1 = batch(PS, &[id(1)], 30);
    for (pages, kind) in [
        (&b1, AreaKind::Batch),
        (&b2, AreaKind::Batch),
        (&b3, AreaKind::Batch),
        (&s1, AreaKind::SinglePage),
    ] {
        protect(&dw, pages, kind)
            .unwrap()
            .written_in_place(Vec::new());
    }
    // Same page, same LSN, later batch: the later copy wins the tie.
    let mut tie = page(PS, id(9), 20);
    tie[100] ^= 0xFF;
    barracuda_page::seal_page(&mut tie);
    let tied = vec![(id(9), tie.clone())];
    let last = protect(&dw, &tied, AreaKind::SinglePage).unwrap();
    let last_seq = last.seq();
    last.written_in_place(Vec::new());

    let copies = read_copies(&fs, dir(), PS).unwrap().unwrap();
    let summary = copies.summary();
    assert_eq!(
        (
            summary.descriptors,
            summary.damaged_areas,
            summary.invalid_images
        ),
        (5, 0, 0)
    );
    assert_eq!(copies.listed_pages(), 5);
    let want = [
        (id(0), 20, &b2[0].1),
        (id(1), 30, &s1[0].1),
        (id(2), 10, &b1[2].1),
        (id(3), 10, &b1[3].1), // LSN beats batch order
        (id(9), 20, &tie),
    ];
    for (pid, lsn, image) in want {
        let c = copies.copy(pid).unwrap();
        assert_eq!((c.id, c.lsn), (pid, lsn));
        assert_eq!(&c.image, image, "{pid}");
    }
    assert_eq!(copies.copy(id(9)).unwrap().seq, last_seq);

    let stats = dw.stats();
    assert_eq!(stats.batches, 3);
    assert_eq!(stats.single_page_writes, 2);
    assert_eq!(stats.pages_written, 4 + 2 + 1 + 1 + 1);
    assert_eq!(
        stats.bytes_written,
        ((5 + 3 + 2) + 2 * 2) * PS.bytes() as u64
    );
    assert_eq!(stats.file_syncs, 5);
    assert_eq!(stats.area_waits, 0);
}

#[test]
fn no_file_means_no_copies() {
    let fs = fs();
    assert!(read_copies(&fs, dir(), PS).unwrap().is_none());
}

#[test]
fn open_discards_copies_and_recreates_a_file_that_does_not_fit() {
    let fs = fs();
    let cfg = config(2, 4, 1);
    let dw = Doublewrite::create(&fs, dir(), PS, cfg).unwrap();
    let p = protect(&dw, &batch(PS, &[id(1), id(2)], 10), AreaKind::Batch).unwrap();
    let seq = p.seq();
    p.written_in_place(Vec::new());
    drop(dw);
    let path = dir().join(FILE_NAME);

    // Same geometry: the copies are discarded, numbering continues.
    let dw = Doublewrite::open(&fs, dir(), PS, cfg).unwrap();
    assert_eq!(
        read_copies(&fs, dir(), PS).unwrap().unwrap().listed_pages(),
        0
    );
    let p = protect(&dw, &batch(PS, &[id(1)], 11), AreaKind::Batch).unwrap();
    assert!(p.seq() > seq);
    p.written_in_place(Vec::new());
    drop(dw);

    // Another geometry: recreated at the new size.
    let bigger = config(2, 8, 3);
    let dw = Doublewrite::open(&fs, dir(), PS, bigger).unwrap();
    let len = fs.file(&path).unwrap().inner().contents().len() as u64;
    assert_eq!(len, bigger.geometry.total_pages() * PS.bytes() as u64);
    assert_eq!(
        read_copies(&fs, dir(), PS).unwrap().unwrap().listed_pages(),
        0
    );
    protect(&dw, &batch(PS, &[id(3)], 12), AreaKind::Batch)
        .unwrap()
        .written_in_place(Vec::new());
    drop(dw);

    // Another page size: recreated.
    let dw = Doublewrite::open(&fs, dir(), PageSize::K8, bigger).unwrap();
    assert_eq!(dw.page_size(), PageSize::K8);
    drop(dw);

    // A damaged header: recreated, and readable afterwards.
    let f = fs.open(&path, &OpenOptions::new()).unwrap();
    f.write_at(&[0xEE; 8], 8).unwrap();
    drop(f);
    let copies = read_copies(&fs, dir(), PageSize::K8).unwrap().unwrap();
    assert!(copies.summary().header_damaged);
    let dw = Doublewrite::open(&fs, dir(), PageSize::K8, bigger).unwrap();
    protect(
        &dw,
        &batch(PageSize::K8, &[id(4)], 13),
        AreaKind::SinglePage,
    )
    .unwrap()
    .written_in_place(Vec::new());
    let copies = read_copies(&fs, dir(), PageSize::K8).unwrap().unwrap();
    assert!(!copies.summary().header_damaged);
    assert_eq!(copies.copy(id(4)).unwrap().lsn, 13);

    // Shorter than its geometry (cut by a crash of the file system): recreated at full size.
    let full = bigger.geometry.total_pages() * PageSize::K8.bytes() as u64;
    fs.open(&path, &OpenOptions::new())
        .unwrap()
        .set_len(full / 2)
        .unwrap();
    Doublewrite::open(&fs, dir(), PageSize::K8, bigger).unwrap();
    assert_eq!(
        fs.file(&path).unwrap().inner().contents().len() as u64,
        full
    );

    // Missing: created.
    fs.remove(&path).unwrap();
    Doublewrite::open(&fs, dir(), PS, cfg).unwrap();
    assert!(fs.exists(&path).unwrap());
}

#[test]
fn bad_batches_and_configurations_are_refused() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(1, 2, 1)).unwrap();
    let is_bad =
        |r: barracuda_doublewrite::Result<_>| matches!(r, Err(DoublewriteError::BadBatch { .. }));
    assert!(is_bad(protect(&dw, &[], AreaKind::Batch).map(|_| ())));
    assert!(is_bad(
        protect(&dw, &batch(PS, &[id(1), id(2), id(3)], 1), AreaKind::Batch).map(|_| ())
    ));
    assert!(is_bad(
        protect(&dw, &batch(PS, &[id(1), id(2)], 1), AreaKind::SinglePage).map(|_| ())
    ));
    let image = page(PS, id(1), 5);
    for (pid, lsn, bytes) in [
        (id(2), 5, &image[..]),   // header names another page
        (id(1), 6, &image[..]),   // header carries another LSN
        (id(1), 5, &image[..20]), // shorter than a file header
    ] {
        let r = dw.protect(
            &[PageImage {
                id: pid,
                lsn,
                image: bytes,
            }],
            AreaKind::Batch,
        );
        assert!(is_bad(r.map(|_| ())));
    }
    let mut long = image.clone();
    long.push(0);
    let r = dw.protect(
        &[PageImage {
            id: id(1),
            lsn: 5,
            image: &long,
        }],
        AreaKind::Batch,
    );
    assert!(is_bad(r.map(|_| ())));
    assert_eq!(dw.stats().file_syncs, 0, "nothing was written");

    let mut cfg = config(1, 2, 1);
    cfg.geometry = Geometry {
        pages_per_area: 170,
        ..cfg.geometry
    };
    let err = Doublewrite::create(&fs, dir(), PS, cfg).unwrap_err();
    assert!(matches!(err, DoublewriteError::Config { .. }), "{err}");
    assert!(err.to_string().contains("pages_per_area = 170"), "{err}");
}

#[test]
fn a_page_compressed_image_shorter_than_a_page_is_kept_at_its_length() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PageSize::K16, config(1, 2, 1)).unwrap();
    let full = page(PageSize::K16, id(7), 40);
    let short = &full[..4096];
    let protected = dw
        .protect(
            &[PageImage {
                id: id(7),
                lsn: 40,
                image: short,
            }],
            AreaKind::Batch,
        )
        .unwrap();
    protected.written_in_place(Vec::new());
    let copies = read_copies(&fs, dir(), PageSize::K16).unwrap().unwrap();
    assert_eq!(copies.copy(id(7)).unwrap().image, short);
}

#[test]
fn a_batch_not_written_in_place_keeps_its_area_and_its_copies() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(1, 2, 1)).unwrap();
    let pages = batch(PS, &[id(1), id(2)], 10);
    drop(protect(&dw, &pages, AreaKind::Batch).unwrap());
    let err = protect(&dw, &batch(PS, &[id(3)], 11), AreaKind::Batch).unwrap_err();
    assert!(
        matches!(
            err,
            DoublewriteError::NoFreeArea {
                kind: AreaKind::Batch,
                areas: 1,
                ..
            }
        ),
        "{err}"
    );
    // Single-page slots are apart and still work.
    protect(&dw, &batch(PS, &[id(4)], 12), AreaKind::SinglePage)
        .unwrap()
        .written_in_place(Vec::new());
    let copies = read_copies(&fs, dir(), PS).unwrap().unwrap();
    assert_eq!(copies.copy(id(1)).unwrap().image, pages[0].1);
    assert_eq!(copies.copy(id(2)).unwrap().image, pages[1].1);
}

#[test]
fn a_failed_copy_write_or_sync_frees_the_area_and_reports_the_error() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(1, 2, 1)).unwrap();
    fs.fail_nth(OpKind::Write, 1, ErrorKind::Eio);
    let err = protect(&dw, &batch(PS, &[id(1)], 10), AreaKind::Batch).unwrap_err();
    assert!(
        matches!(&err, DoublewriteError::Io(e) if e.is_eio()),
        "{err}"
    );
    fs.fail_nth(OpKind::Sync, 1, ErrorKind::Eio);
    assert!(protect(&dw, &batch(PS, &[id(1)], 10), AreaKind::Batch).is_err());
    // The only batch area is free again.
    protect(&dw, &batch(PS, &[id(1)], 10), AreaKind::Batch)
        .unwrap()
        .written_in_place(Vec::new());
    assert_eq!(dw.stats().batches, 1);
}

#[test]
fn detect_only_writes_the_descriptor_alone() {
    let fs = fs();
    let mut cfg = config(1, 4, 1);
    cfg.content = CopyContent::DescriptorsOnly;
    let dw = Doublewrite::create(&fs, dir(), PS, cfg).unwrap();
    protect(&dw, &batch(PS, &[id(1), id(2), id(3)], 10), AreaKind::Batch)
        .unwrap()
        .written_in_place(Vec::new());
    assert_eq!(dw.stats().bytes_written, PS.bytes() as u64);
    assert_eq!(dw.stats().pages_written, 3);
    let copies = read_copies(&fs, dir(), PS).unwrap().unwrap();
    assert_eq!(
        copies.listed().collect::<Vec<_>>(),
        [(id(1), 10), (id(2), 10), (id(3), 10)]
    );
    assert_eq!(copies.copies().count(), 0);
}

/// A short image (a page-compressed page is a few blocks of its page) costs the copy only its
/// own blocks, not its whole slot — and reads back exactly, even over a slot that held a whole
/// page before (the bytes after the image are stale and never read).
#[test]
fn short_images_write_only_their_blocks_and_read_back_exactly() {
    const BIG: PageSize = PageSize::K16;
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), BIG, config(1, 4, 1)).unwrap();
    // First a batch of whole pages, filling the slots.
    let whole = batch(BIG, &[id(0), id(1), id(2)], 10);
    protect(&dw, &whole, AreaKind::Batch)
        .unwrap()
        .written_in_place(Vec::new());
    let before = dw.stats().bytes_written;
    assert_eq!(
        before,
        4 * BIG.bytes() as u64,
        "descriptor and three whole pages"
    );
    // Then shorter images of the same pages (an image only needs its file header to name the
    // page and its LSN; the rest is opaque to the doublewrite file).
    let short: Vec<(PageId, Vec<u8>)> = [(id(0), 4096), (id(1), 5000), (id(2), 12288)]
        .into_iter()
        .map(|(pid, len)| {
            let mut image = page(BIG, pid, 20);
            image.truncate(len);
            (pid, image)
        })
        .collect();
    let images: Vec<PageImage<'_>> = short
        .iter()
        .map(|(pid, image)| PageImage {
            id: *pid,
            lsn: 20,
            image,
        })
        .collect();
    dw.protect(&images, AreaKind::Batch)
        .unwrap()
        .written_in_place(Vec::new());
    let written = dw.stats().bytes_written - before;
    assert_eq!(
        written,
        (BIG.bytes() + 4096 + 8192 + 12288) as u64,
        "the descriptor and each image rounded up to 4 KiB"
    );
    let copies = read_copies(&fs, dir(), BIG).unwrap().unwrap();
    for (pid, image) in &short {
        let c = copies.copy(*pid).unwrap();
        assert_eq!(c.lsn, 20, "{pid}");
        assert_eq!(
            &c.image, image,
            "{pid}: the short image, not the page under it"
        );
    }
}
