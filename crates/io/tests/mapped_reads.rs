//! `StdFile`'s mapped reads: page-sized reads copied out of a shared mapping of the file must
//! return exactly what `pread` would — the bytes last written through any handle, an error past
//! the end, never a `SIGBUS` — through writes, growth past the mapped window, shrinks and
//! concurrent readers.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use barracuda_io::{OpenOptions, PageFile, StdFile};

const PAGE: usize = 16 * 1024;

fn page_of(n: u64, generation: u8) -> Vec<u8> {
    let mut page = vec![generation; PAGE];
    page[..8].copy_from_slice(&n.to_le_bytes());
    page
}

fn open(path: &std::path::Path) -> StdFile {
    StdFile::open(path, &OpenOptions::new().create(true)).unwrap()
}

fn read(file: &StdFile, n: u64) -> Vec<u8> {
    let mut buf = vec![0; PAGE];
    file.read_at(&mut buf, n * PAGE as u64).unwrap();
    buf
}

#[test]
fn reads_come_from_the_mapping_and_see_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let file = open(&dir.path().join("f"));
    for n in 0..8 {
        file.write_at(&page_of(n, 1), n * PAGE as u64).unwrap();
    }
    assert!(!file.reads_mapped(), "nothing was read yet");
    assert_eq!(read(&file, 3), page_of(3, 1));
    assert!(file.reads_mapped(), "a page-sized read maps the file");
    // An overwrite through the descriptor is seen through the mapping at once.
    file.write_at(&page_of(3, 2), 3 * PAGE as u64).unwrap();
    assert_eq!(read(&file, 3), page_of(3, 2));
    // Reads longer than a mapped read's limit take `pread`, with the same bytes.
    let mut all = vec![0; 8 * PAGE];
    file.read_at(&mut all, 0).unwrap();
    for n in 0..8u64 {
        let want = page_of(n, if n == 3 { 2 } else { 1 });
        assert_eq!(&all[n as usize * PAGE..][..PAGE], &want[..], "page {n}");
    }
}

#[test]
fn a_read_past_the_end_is_an_error_also_after_a_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let file = open(&dir.path().join("f"));
    for n in 0..4 {
        file.write_at(&page_of(n, 1), n * PAGE as u64).unwrap();
    }
    assert_eq!(read(&file, 3), page_of(3, 1));
    let mut buf = vec![0; PAGE];
    assert!(file.read_at(&mut buf, 4 * PAGE as u64).is_err());
    // Half a page past the end.
    assert!(file.read_at(&mut buf, 3 * PAGE as u64 + 100).is_err());
    file.set_len(2 * PAGE as u64).unwrap();
    assert!(
        file.read_at(&mut buf, 3 * PAGE as u64).is_err(),
        "a page cut off by the shrink is gone, not a SIGBUS"
    );
    assert_eq!(read(&file, 1), page_of(1, 1));
    // Grown again (sparse): the new range reads as zeros, then as written.
    file.set_len(6 * PAGE as u64).unwrap();
    assert_eq!(read(&file, 4), vec![0; PAGE]);
    file.write_at(&page_of(5, 3), 5 * PAGE as u64).unwrap();
    assert_eq!(read(&file, 5), page_of(5, 3));
}

#[test]
fn growth_past_the_window_and_other_handles_writes_are_read_right() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let file = open(&path);
    file.write_at(&page_of(0, 1), 0).unwrap();
    assert_eq!(read(&file, 0), page_of(0, 1));
    // Sparse growth far past the first window (256 MiB of address space).
    let far = (600 << 20) / PAGE as u64;
    file.set_len((far + 1) * PAGE as u64).unwrap();
    file.write_at(&page_of(far, 4), far * PAGE as u64).unwrap();
    assert_eq!(read(&file, far), page_of(far, 4));
    assert_eq!(read(&file, 0), page_of(0, 1));
    // Another handle extends the file: this one learns the new length from its `pread`.
    let other = open(&path);
    other
        .write_at(&page_of(far + 1, 5), (far + 1) * PAGE as u64)
        .unwrap();
    assert_eq!(read(&file, far + 1), page_of(far + 1, 5));
    assert_eq!(read(&file, far + 1), page_of(far + 1, 5));
}

#[test]
fn readers_race_a_writer_that_grows_the_file() {
    const STRIDE: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let file = open(&dir.path().join("f"));
    file.write_at(&page_of(0, 1), 0).unwrap();
    let written = std::sync::atomic::AtomicU64::new(1);
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (file, written) = (&file, &written);
            s.spawn(move || {
                let mut x = r + 1;
                let mut buf = vec![0; PAGE];
                loop {
                    let have = written.load(std::sync::atomic::Ordering::Acquire);
                    if have >= 2_000 {
                        break;
                    }
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let n = (x >> 33) % have;
                    file.read_at(&mut buf, n * STRIDE).unwrap();
                    assert_eq!(buf, page_of(n, 1), "page {n} of {have}");
                }
            });
        }
        // Pages a MiB apart: the (sparse) file outgrows one window after another.
        for n in 1..2_000u64 {
            file.write_at(&page_of(n, 1), n * STRIDE).unwrap();
            written.store(n + 1, std::sync::atomic::Ordering::Release);
        }
    });
}

#[test]
fn mapped_reads_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let file = StdFile::open(
        dir.path().join("f"),
        &OpenOptions::new().create(true).mapped_reads(false),
    )
    .unwrap();
    file.write_at(&page_of(0, 1), 0).unwrap();
    assert_eq!(read(&file, 0), page_of(0, 1));
    assert!(!file.reads_mapped());
}

#[test]
fn a_punched_range_reads_as_zeros_through_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let file = open(&dir.path().join("f"));
    for n in 0..4 {
        file.write_at(&page_of(n, 7), n * PAGE as u64).unwrap();
    }
    assert_eq!(read(&file, 1), page_of(1, 7));
    assert!(file.reads_mapped());
    match file.punch_hole(PAGE as u64 + 4096, 8192).unwrap() {
        barracuda_io::PunchOutcome::Punched => {
            let mut want = page_of(1, 7);
            want[4096..4096 + 8192].fill(0);
            assert_eq!(read(&file, 1), want, "the hole reads as zeros, no fault");
        }
        // A file system without holes: the page is as written.
        barracuda_io::PunchOutcome::Unsupported => assert_eq!(read(&file, 1), page_of(1, 7)),
    }
    assert_eq!(read(&file, 2), page_of(2, 7));
}

#[test]
fn shrinks_race_reads_that_need_a_larger_window() {
    // A reader whose window is too small for its read must let go of it before it waits to
    // map a larger one: a shrink holding the remap lock waits for every holder of the window it
    // took out. (Had the reader kept it, this test would hang.)
    const FAR: u64 = (590 << 20) / PAGE as u64;
    let dir = tempfile::tempdir().unwrap();
    let file = open(&dir.path().join("f"));
    file.write_at(&page_of(0, 1), 0).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (file, stop) = (&file, &stop);
            s.spawn(move || {
                let mut buf = vec![0; PAGE];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // A small window first, then a read past it.
                    file.read_at(&mut buf, 0).unwrap();
                    assert_eq!(buf, page_of(0, 1));
                    // Racing the write and the truncates of this very page, the read may
                    // fail (past the end) or see any mix of old and new bytes: what it must
                    // not do is fault or hang.
                    let _ = file.read_at(&mut buf, FAR * PAGE as u64);
                }
            });
        }
        for _ in 0..300 {
            file.set_len((FAR + 1) * PAGE as u64).unwrap();
            file.write_at(&page_of(FAR, 2), FAR * PAGE as u64).unwrap();
            file.set_len(PAGE as u64).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
