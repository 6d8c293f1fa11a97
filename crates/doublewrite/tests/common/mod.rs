//! Helpers shared by the integration tests: sealed pages whose bytes say which version they
//! are, data files on a `FaultyFileSystem`, and the in-place write the engine would do.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(dead_code, reason = "each test file uses some of the helpers")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use barracuda_doublewrite::{
    AreaKind, CopyContent, Doublewrite, DoublewriteConfig, Geometry, PageImage, Protected,
};
use barracuda_io::{FaultyFileSystem, FileSystem, OpenOptions, PageFile};
use barracuda_page::{
    seal_page, set_page_lsn, verify_page, FileHeader, Lsn, PageId, PageSize, PageType,
};

/// The database directory on the in-memory file systems.
pub const DIR: &str = "/db";

pub fn dir() -> &'static Path {
    Path::new(DIR)
}

/// A file system holding an empty database directory.
pub fn fs() -> FaultyFileSystem {
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(dir()).unwrap();
    fs
}

pub fn config(batch_areas: u32, pages_per_area: u32, single_page_slots: u32) -> DoublewriteConfig {
    DoublewriteConfig {
        geometry: Geometry {
            batch_areas,
            pages_per_area,
            single_page_slots,
        },
        content: CopyContent::Images,
        direct_io: false,
    }
}

/// Version `lsn` of page `id`: a sealed page whose body is a pattern of `id` and `lsn`, so
/// that any two versions differ in every sector.
pub fn page(ps: PageSize, id: PageId, lsn: Lsn) -> Vec<u8> {
    let mut p = vec![0u8; ps.bytes()];
    let seed = (u64::from(id.space_id) << 40) ^ (u64::from(id.page_no) << 20) ^ lsn;
    for (i, b) in p.iter_mut().enumerate() {
        *b = (seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left((i % 61) as u32)
            >> 7) as u8
            ^ (i as u8);
    }
    FileHeader::new(id, PageType::Free).write(&mut p);
    set_page_lsn(&mut p, lsn);
    seal_page(&mut p);
    p
}

/// The engine's verdict on in-place bytes, as the engine's own verify would give for plain
/// pages.
pub fn verify(ps: PageSize) -> impl Fn(PageId, &[u8]) -> bool {
    move |id, bytes| verify_page(bytes, id, ps).is_ok()
}

pub fn data_path(space: u32) -> PathBuf {
    dir().join(format!("space{space}.ibd"))
}

/// Opens the data file of `space`, creating it (durably: the directory is synced) if needed.
pub fn data_file(fs: &FaultyFileSystem, space: u32) -> Arc<dyn PageFile> {
    let file = fs
        .open(&data_path(space), &OpenOptions::new().create(true))
        .unwrap();
    fs.sync_dir(dir()).unwrap();
    file
}

/// Writes `pages` in place, each at `page_no × P`.
pub fn write_in_place(file: &dyn PageFile, ps: PageSize, pages: &[(PageId, Vec<u8>)]) {
    for (id, bytes) in pages {
        file.write_at(bytes, u64::from(id.page_no) * ps.bytes() as u64)
            .unwrap();
    }
}

/// Reads page `page_no` of `file`.
pub fn read_page(file: &dyn PageFile, ps: PageSize, page_no: u32) -> Vec<u8> {
    let mut buf = vec![0u8; ps.bytes()];
    file.read_at(&mut buf, u64::from(page_no) * ps.bytes() as u64)
        .unwrap();
    buf
}

/// The batch of versions `lsn` of `ids`, and the images.
pub fn batch(ps: PageSize, ids: &[PageId], lsn: Lsn) -> Vec<(PageId, Vec<u8>)> {
    ids.iter().map(|id| (*id, page(ps, *id, lsn))).collect()
}

/// Protects `pages` (all of version `lsn`).
pub fn protect<'a>(
    dw: &'a Doublewrite,
    pages: &[(PageId, Vec<u8>)],
    kind: AreaKind,
) -> barracuda_doublewrite::Result<Protected<'a>> {
    let images: Vec<PageImage<'_>> = pages
        .iter()
        .map(|(id, bytes)| PageImage {
            id: *id,
            lsn: barracuda_page::page_lsn(bytes).unwrap(),
            image: bytes,
        })
        .collect();
    dw.protect(&images, kind)
}

/// The whole protocol for one batch in one file: copy, in place, release.
pub fn flush(
    dw: &Doublewrite,
    file: &Arc<dyn PageFile>,
    pages: &[(PageId, Vec<u8>)],
    kind: AreaKind,
) {
    let protected = protect(dw, pages, kind).unwrap();
    write_in_place(&**file, dw.page_size(), pages);
    protected.written_in_place(vec![file.clone()]);
}
