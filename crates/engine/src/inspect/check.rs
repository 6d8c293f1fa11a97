//! Checking one table's tablespace: its allocation bitmaps, a sequential pass verifying and
//! decoding every page by its type, the B-tree walk, then the bitmaps against what it reached.

use std::path::Path;

use barracuda_page::space::is_bitmap_page;
use barracuda_page::{
    index_capacity, page_lsn, verify_page, CatalogEntry, FileHeader, IndexPage, OverflowPage,
    PageError, PageId, PageNo, PageSize, PageType, SpaceId,
};

use super::bitmap::{check_reachable, read_bitmaps};
use super::tree_walk::walk_tree;
use super::{PageReader, Problem, TableReport};
use crate::layout::{table_path, SYSTEM_FILE, TABLE_NAME_RULE};

/// What the sequential pass learnt about one page.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Bad,
    Zero,
    Free,
    Bitmap,
    Leaf,
    Internal,
    Overflow,
}

impl Kind {
    /// Whether the page holds something (is neither bad, never written nor freed): such a page
    /// marked in use must be reachable from the B-tree.
    pub(super) fn is_live(self) -> bool {
        !matches!(self, Self::Bad | Self::Zero | Self::Free)
    }
}

/// Checks the tablespace of the catalog's `entry` (see the module docs of `inspect`).
pub(super) fn scan_table(dir: &Path, entry: &CatalogEntry, page_size: PageSize) -> TableReport {
    let path = table_path(dir, &entry.name);
    let mut report = TableReport {
        name: entry.name.clone(),
        space_id: entry.space_id,
        index_id: entry.index_id,
        root_page_no: entry.root_page_no,
        file: path.clone().unwrap_or_else(|| dir.join(SYSTEM_FILE)),
        ..TableReport::default()
    };
    // A crafted catalog must not make the checker open files outside the directory.
    let Some(path) = path else {
        report.problems.push(Problem {
            file: dir.join(SYSTEM_FILE),
            page_no: None,
            reason: format!(
                "catalog names a table {:?}; a table name is {TABLE_NAME_RULE} (file not opened)",
                entry.name
            ),
        });
        return report;
    };
    let reader = match PageReader::open(&path, page_size, entry.space_id) {
        Ok(r) => r,
        Err(p) => {
            report.problems.push(p);
            return report;
        }
    };
    report.file_pages = reader.pages;
    report.problems.extend(reader.tail_problem());
    let space = entry.space_id;

    // Page 0 and the further bitmap pages first: they say which pages are in use.
    let bitmaps = read_bitmaps(&reader, space, &mut report);
    if reader.pages == 0 {
        report
            .problems
            .push(reader.problem(None, "empty tablespace file"));
        return report;
    }
    if report.size_in_pages > reader.pages {
        report.problems.push(reader.problem(
            None,
            format!(
                "page 0 says {} pages but the file holds {}",
                report.size_in_pages, reader.pages
            ),
        ));
    }
    report.pages_in_use = bitmaps.used.iter().filter(|&&u| u).count() as u32;

    // Sequential pass: every page verified and decoded by type.
    let mut kinds = vec![Kind::Bad; reader.pages as usize];
    let (mut leaf_used, mut internal_used) = (0u64, 0u64);
    for page_no in 0..reader.pages {
        let in_use = bitmaps.used.get(page_no as usize).copied().unwrap_or(false);
        let kind = scan_page(
            &reader,
            space,
            entry.index_id,
            page_no,
            in_use,
            bitmaps.sound,
            &mut report,
        );
        match kind {
            (Kind::Leaf, bytes) => leaf_used += bytes,
            (Kind::Internal, bytes) => internal_used += bytes,
            _ => {}
        }
        if let Some(k) = kinds.get_mut(page_no as usize) {
            *k = kind.0;
        }
    }
    let capacity = index_capacity(page_size) as f64;
    if report.leaf_pages > 0 {
        report.leaf_fill = leaf_used as f64 / (f64::from(report.leaf_pages) * capacity);
    }
    if report.internal_pages > 0 {
        report.internal_fill = internal_used as f64 / (f64::from(report.internal_pages) * capacity);
    }

    // The B-tree walk, then the bitmaps against what it reached.
    let mut walk = walk_tree(&reader, space, entry.index_id, entry.root_page_no);
    report.height = walk.height;
    report.records = walk.records;
    let walk_clean = walk.problems.is_empty();
    report.problems.append(&mut walk.problems);
    if walk_clean && bitmaps.sound {
        check_reachable(&reader, &bitmaps.used, &walk.reached, &kinds, &mut report);
    }
    report
}

/// Verifies and decodes one page; returns its kind and, for index pages, its used bytes.
fn scan_page(
    reader: &PageReader,
    space: SpaceId,
    index_id: u64,
    page_no: PageNo,
    in_use: bool,
    bitmap_ok: bool,
    report: &mut TableReport,
) -> (Kind, u64) {
    let page_size = reader.page_size;
    let buf = match reader.read(page_no) {
        Ok(buf) => buf,
        Err(e) => {
            report.bad_pages += 1;
            report
                .problems
                .push(reader.problem(Some(page_no), e.to_string()));
            return (Kind::Bad, 0);
        }
    };
    let bad = |report: &mut TableReport, reason: String| {
        report.bad_pages += 1;
        report.problems.push(reader.problem(Some(page_no), reason));
        (Kind::Bad, 0)
    };
    match verify_page(&buf, PageId::new(space, page_no), page_size) {
        Ok(()) => {}
        Err(PageError::AllZero { .. }) => {
            report.never_written_pages += 1;
            if in_use && bitmap_ok {
                report.problems.push(
                    reader.problem(Some(page_no), "marked in use but never written (all zero)"),
                );
            }
            return (Kind::Zero, 0);
        }
        Err(e) => {
            let what = if in_use { "" } else { " (a free page)" };
            return bad(report, format!("{e}{what}"));
        }
    }
    report.max_lsn = report.max_lsn.max(page_lsn(&buf).unwrap_or(0));
    let header = match FileHeader::read(&buf) {
        Ok(h) => h,
        Err(e) => return bad(report, e.to_string()),
    };
    let bitmap_position = is_bitmap_page(page_no, page_size);
    if bitmap_position && header.page_type != PageType::SpaceHeader {
        return bad(
            report,
            format!(
                "page type {:?} where an allocation bitmap belongs",
                header.page_type
            ),
        );
    }
    match header.page_type {
        PageType::SpaceHeader if bitmap_position => {
            report.bitmap_pages += 1;
            (Kind::Bitmap, 0)
        }
        PageType::SpaceHeader => bad(report, "space header page outside a bitmap position".into()),
        PageType::Catalog => bad(report, "catalog page in a table's tablespace".into()),
        PageType::Undo | PageType::TrxSys => bad(
            report,
            format!("{:?} page in a table's tablespace", header.page_type),
        ),
        PageType::Free => {
            report.free_pages += 1;
            if in_use && bitmap_ok {
                report
                    .problems
                    .push(reader.problem(Some(page_no), "marked in use but of type Free"));
            }
            (Kind::Free, 0)
        }
        PageType::Overflow => match OverflowPage::read(&buf, page_size) {
            // Freeing a chain changes only the bitmaps: the page keeps its old content.
            Ok(_) if !in_use && bitmap_ok => {
                report.free_pages += 1;
                (Kind::Free, 0)
            }
            Ok(_) => {
                report.overflow_pages += 1;
                (Kind::Overflow, 0)
            }
            Err(e) => bad(report, e.to_string()),
        },
        PageType::Index => match IndexPage::open(&buf[..], page_size) {
            Ok(page) if page.index_id() != index_id && in_use => bad(
                report,
                format!(
                    "index page of index {}, the table's index is {index_id}",
                    page.index_id()
                ),
            ),
            Ok(page) if page.is_leaf() => {
                report.leaf_pages += 1;
                (Kind::Leaf, page.used_space() as u64)
            }
            Ok(page) => {
                report.internal_pages += 1;
                (Kind::Internal, page.used_space() as u64)
            }
            Err(e) => bad(report, e.to_string()),
        },
    }
}
