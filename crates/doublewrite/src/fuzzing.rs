//! The logic of the `doublewrite_file` fuzz target (cargo feature `fuzzing`), shared by
//! `fuzz/fuzz_targets/doublewrite_file.rs` and the corpus replay test
//! (`crates/doublewrite/tests/fuzz_corpus.rs`), so an input the fuzzer finds replays in
//! `cargo test` once it is in `fuzz/corpus/doublewrite_file/`.
//!
//! [`doublewrite_file`] panics if, and only if, the recovery side misbehaves: a panic inside
//! it, an error of the wrong kind, or a broken invariant (below).
//!
//! # Input
//! Byte 0: bits 0..3, modulo 5, the page size (4 to 64 KiB); bit 3 re-seals the header CRC;
//! bit 4 re-seals the image CRCs in every descriptor-looking page (the entry's CRC set to the
//! CRC of its slot's bytes); bit 5 re-seals those pages' descriptor CRCs — so that mutations
//! reach past the checksums. The rest is `doublewrite.dblwr`, byte for byte.
//!
//! # Invariants
//! In an in-memory [`FaultyFileSystem`]:
//! 1. [`read_copies`] succeeds (only a failing read may be an error), and every copy it
//!    returns has a length in bounds and a file header naming its page id and LSN; no more
//!    copies than listed pages, no more listed pages than entries read.
//! 2. [`restore_torn_pages`] over data files of all-zero pages (spaces with an even id; odd ids
//!    are unknown, as dropped tables) with [`verify_page`] either repairs every page it
//!    checked and can, or fails with [`DoublewriteError::TornPage`]; each repaired page reads
//!    back as its copy and verifies.
//! 3. [`Doublewrite::open`] succeeds (recreating the file if it must) and leaves no copy;
//!    a page then protected is found again by `read_copies`.

use std::path::Path;
use std::sync::Arc;

use barracuda_io::{FaultyFileSystem, FileSystem, OpenOptions, PageFile};
use barracuda_page::{
    seal_page, set_page_lsn, verify_page, FileHeader, PageId, PageSize, PageType,
};

use crate::format::{
    decode_header, image_identity, max_entries, AreaKind, CopyContent, Geometry,
    DESCRIPTOR_HEADER_LEN, DESCRIPTOR_MAGIC, ENTRY_LEN, FILE_NAME, MIN_IMAGE_LEN,
};
use crate::{
    read_copies, restore_torn_pages, Doublewrite, DoublewriteConfig, DoublewriteError, PageImage,
};

#[path = "fuzzing_seeds.rs"]
mod seeds;

pub use seeds::{seeds, Seed};

/// The target's name, which is also its corpus directory.
pub const TARGET: &str = "doublewrite_file";

/// Byte 0, bit 3: re-seal the header CRC.
pub const RESEAL_HEADER: u8 = 1 << 3;
/// Byte 0, bit 4: re-seal the image CRCs of descriptor-looking pages.
pub const RESEAL_IMAGES: u8 = 1 << 4;
/// Byte 0, bit 5: re-seal the CRCs of descriptor-looking pages.
pub const RESEAL_DESCRIPTORS: u8 = 1 << 5;

/// Data files of the restore check hold this many pages.
const DATA_FILE_PAGES: u32 = 8;

/// The database directory of the in-memory file system.
fn dir() -> &'static Path {
    Path::new("/db")
}

/// Byte 0's page size.
pub fn page_size_of(selector: u8) -> PageSize {
    PageSize::ALL[usize::from(selector & 7) % PageSize::ALL.len()]
}

/// Runs one input (see the module documentation); panics on a broken invariant.
pub fn doublewrite_file(data: &[u8]) {
    let Some((&selector, file)) = data.split_first() else {
        return;
    };
    let page_size = page_size_of(selector);
    let mut file = file.to_vec();
    reseal(&mut file, page_size, selector);

    let fs = FaultyFileSystem::new();
    fs.create_dir_all(dir()).expect("an in-memory directory");
    let path = dir().join(FILE_NAME);
    let handle = fs
        .open(&path, &OpenOptions::new().create(true))
        .expect("an in-memory file");
    handle.write_at(&file, 0).expect("an in-memory write");
    drop(handle);

    let copies = read_copies(&fs, dir(), page_size)
        .expect("reading an in-memory file cannot fail")
        .expect("the file exists");
    let summary = copies.summary();
    let mut n_copies = 0;
    for copy in copies.copies() {
        n_copies += 1;
        assert!((MIN_IMAGE_LEN..=page_size.bytes()).contains(&copy.image.len()));
        assert_eq!(image_identity(&copy.image), Some((copy.id, copy.lsn)));
        assert_eq!(copies.copy(copy.id), Some(copy));
    }
    assert!(n_copies <= copies.listed_pages());
    assert!(copies.listed_pages() as u64 <= summary.entries);

    check_restore(&fs, &copies, page_size);
    check_reopen(&fs, &file, page_size);
}

/// Invariant 2.
fn check_restore(fs: &FaultyFileSystem, copies: &crate::Copies, page_size: PageSize) {
    let p = page_size.bytes();
    let mut files: Vec<(u32, Arc<dyn PageFile>)> = Vec::new();
    for (id, _) in copies.listed() {
        if id.space_id % 2 == 0 && !files.iter().any(|(s, _)| *s == id.space_id) {
            let path = dir().join(format!("space{}.ibd", id.space_id));
            let f = fs
                .open(&path, &OpenOptions::new().create(true))
                .expect("an in-memory data file");
            f.set_len(u64::from(DATA_FILE_PAGES) * p as u64)
                .expect("set_len in memory");
            files.push((id.space_id, f));
        }
    }
    let resolve = |space: u32| {
        files
            .iter()
            .find(|(s, _)| *s == space)
            .map(|(_, f)| f.clone())
    };
    let verify = |id: PageId, bytes: &[u8]| verify_page(bytes, id, page_size).is_ok();
    match restore_torn_pages(copies, resolve, verify) {
        Ok(report) => {
            assert_eq!(report.checked, report.intact + report.repaired.len() as u64);
            for id in &report.repaired {
                let copy = copies.copy(*id).expect("a repaired page has a copy");
                let file = resolve(id.space_id).expect("a repaired page has a file");
                let mut back = vec![0u8; p];
                file.read_at(&mut back, u64::from(id.page_no) * p as u64)
                    .expect("read back in memory");
                assert_eq!(&back[..copy.image.len()], &copy.image[..]);
                assert!(verify(*id, &back));
            }
        }
        Err(DoublewriteError::TornPage { page, .. }) => {
            assert!(page.space_id % 2 == 0 && page.page_no < DATA_FILE_PAGES);
        }
        Err(e) => panic!("restore failed with {e}, not a torn page"),
    }
}

/// Invariant 3.
fn check_reopen(fs: &FaultyFileSystem, file: &[u8], page_size: PageSize) {
    // The file's own geometry when its header is valid (so the discard path runs), else a
    // small one (so the recreation stays cheap).
    let geometry = match decode_header(file) {
        Ok((size, g)) if size == page_size && g.total_pages() <= 64 => g,
        _ => Geometry {
            batch_areas: 1,
            pages_per_area: 2,
            single_page_slots: 1,
        },
    };
    let config = DoublewriteConfig {
        geometry,
        content: CopyContent::Images,
        direct_io: false,
    };
    let dw = Doublewrite::open(fs, dir(), page_size, config).expect("open in memory");
    let left = read_copies(fs, dir(), page_size)
        .expect("read in memory")
        .expect("the file exists");
    assert_eq!(left.listed_pages(), 0, "open must discard every copy");
    let id = PageId::new(2, 1);
    let image = sealed_page(page_size, id, 77, 0x5A);
    let protected = dw
        .protect(
            &[PageImage {
                id,
                lsn: 77,
                image: &image,
            }],
            AreaKind::SinglePage,
        )
        .expect("protect in memory");
    protected.written_in_place(Vec::new());
    let found = read_copies(fs, dir(), page_size)
        .expect("read in memory")
        .expect("the file exists");
    assert_eq!(found.copy(id).map(|c| &c.image[..]), Some(&image[..]));
}

/// A sealed page of type Free named `id` at `lsn`, its body filled with `fill`.
pub fn sealed_page(page_size: PageSize, id: PageId, lsn: u64, fill: u8) -> Vec<u8> {
    let mut page = vec![fill; page_size.bytes()];
    FileHeader::new(id, PageType::Free).write(&mut page);
    set_page_lsn(&mut page, lsn);
    seal_page(&mut page);
    page
}

fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

fn write_u32(buf: &mut [u8], at: usize, v: u32) {
    if let Some(dst) = buf.get_mut(at..at + 4) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

/// Applies byte 0's re-seal bits to `file`.
fn reseal(file: &mut [u8], page_size: PageSize, selector: u8) {
    let p = page_size.bytes();
    if selector & RESEAL_HEADER != 0 && file.len() >= 28 {
        let crc = barracuda_page::crc32c(&file[..24]);
        write_u32(file, 24, crc);
    }
    if selector & (RESEAL_IMAGES | RESEAL_DESCRIPTORS) == 0 {
        return;
    }
    let pages = file.len() / p;
    for n in 1..pages {
        let at = n * p;
        if read_u32(file, at) != Some(DESCRIPTOR_MAGIC) {
            continue;
        }
        let Some(count) = read_u32(file, at + 20) else {
            continue;
        };
        if count == 0 || count > max_entries(page_size) {
            continue;
        }
        let count = count as usize;
        if selector & RESEAL_IMAGES != 0 {
            for i in 0..count {
                let entry = at + DESCRIPTOR_HEADER_LEN + i * ENTRY_LEN;
                let len = read_u32(file, entry + 16).unwrap_or(0) as usize;
                let slot = at + (1 + i) * p;
                if let Some(image) = file.get(slot..slot + len.min(p)) {
                    let crc = barracuda_page::crc32c(image);
                    write_u32(file, entry + 20, crc);
                }
            }
        }
        if selector & RESEAL_DESCRIPTORS != 0 {
            let end = at + DESCRIPTOR_HEADER_LEN + count * ENTRY_LEN;
            let crc = barracuda_page::crc32c(&file[at + 8..end]);
            write_u32(file, at + 4, crc);
        }
    }
}
