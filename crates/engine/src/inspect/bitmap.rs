//! The allocation bitmaps of a tablespace: reading which pages are in use, and comparing that
//! with the pages reachable from the B-tree.

use barracuda_page::space::is_bitmap_page;
use barracuda_page::{
    pages_per_bitmap, verify_page, AllocationBitmap, PageError, PageId, PageNo, SpaceHeader,
    SpaceId,
};

use super::check::Kind;
use super::{PageReader, Problem, TableReport};

/// What the allocation bitmaps of a tablespace say.
pub(super) struct Bitmaps {
    /// Per page of the file: marked in use.
    pub(super) used: Vec<bool>,
    /// Every bitmap page was read and is sound (otherwise `used` is partial and no page can be
    /// blamed for its bit).
    pub(super) sound: bool,
}

/// Reads page 0 and the further bitmap pages; records the high-water mark in `report` and a
/// problem for each unreadable or inconsistent bitmap page.
pub(super) fn read_bitmaps(
    reader: &PageReader,
    space: SpaceId,
    report: &mut TableReport,
) -> Bitmaps {
    let mut bitmaps = Bitmaps {
        used: vec![false; reader.pages as usize],
        sound: true,
    };
    let per_bitmap = pages_per_bitmap(reader.page_size);
    let mut region: PageNo = 0;
    while region < reader.pages {
        if let Err(p) = read_bitmap(reader, space, region, &mut bitmaps.used, report) {
            bitmaps.sound = false;
            report.problems.push(p);
        }
        region = match region.checked_add(per_bitmap) {
            Some(r) => r,
            None => break,
        };
    }
    bitmaps
}

fn read_bitmap(
    reader: &PageReader,
    space: SpaceId,
    region: PageNo,
    used: &mut [bool],
    report: &mut TableReport,
) -> std::result::Result<(), Problem> {
    let page_size = reader.page_size;
    let buf = reader
        .read(region)
        .map_err(|e| reader.problem(Some(region), e.to_string()))?;
    let bad = |e: PageError| reader.problem(Some(region), format!("allocation bitmap page: {e}"));
    verify_page(&buf, PageId::new(space, region), page_size).map_err(bad)?;
    if region == 0 {
        let header = SpaceHeader::read(&buf, page_size).map_err(bad)?;
        if header.page_size != page_size {
            return Err(reader.problem(Some(0), "page size differs from system.ibs"));
        }
        report.size_in_pages = header.size_in_pages;
    }
    let bitmap = AllocationBitmap::open(&buf[..], page_size).map_err(bad)?;
    if !bitmap.is_used(0) {
        return Err(reader.problem(Some(region), "the bitmap page's own bit is not set"));
    }
    for bit in 0..bitmap.capacity() {
        let Some(page_no) = region.checked_add(bit) else {
            break;
        };
        if !bitmap.is_used(bit) {
            continue;
        }
        if page_no >= report.size_in_pages.max(reader.pages) {
            return Err(reader.problem(
                Some(region),
                format!("bit of page {page_no}, beyond the end of the space, is set"),
            ));
        }
        if let Some(u) = used.get_mut(page_no as usize) {
            *u = true;
        }
    }
    Ok(())
}

/// Compares the bitmaps (`used`) with the pages the B-tree walk `reached`: every reachable page
/// (and every bitmap page) must be marked in use, and every live page marked in use must be
/// reachable, else it leaked. Only meaningful when the bitmaps and the walk are sound.
pub(super) fn check_reachable(
    reader: &PageReader,
    used: &[bool],
    reached: &[bool],
    kinds: &[Kind],
    report: &mut TableReport,
) {
    for page_no in 0..reader.pages {
        let i = page_no as usize;
        let in_use = used.get(i).copied().unwrap_or(false);
        let is_reached =
            reached.get(i).copied().unwrap_or(false) || is_bitmap_page(page_no, reader.page_size);
        if is_reached && !in_use {
            report.problems.push(reader.problem(
                Some(page_no),
                "reachable from the B-tree but marked free in the allocation bitmap",
            ));
        } else if in_use && !is_reached && kinds.get(i).is_some_and(|k| k.is_live()) {
            report.problems.push(reader.problem(
                Some(page_no),
                "marked in use but not reachable from the B-tree (leaked page)",
            ));
        }
    }
}
