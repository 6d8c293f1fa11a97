//! The reports [`check_database`](super::check_database) and
//! [`inspect_database`](super::inspect_database) return, and how they print.

use std::fmt;
use std::path::PathBuf;

use barracuda_page::{Lsn, PageNo, PageSize, SpaceId};

/// One bad page (or file), as found by [`check_database`](super::check_database).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// The page, when the problem is tied to one.
    pub page_no: Option<PageNo>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.page_no {
            Some(page_no) => write!(
                f,
                "{}: page {page_no}: {}",
                self.file.display(),
                self.reason
            ),
            None => write!(f, "{}: {}", self.file.display(), self.reason),
        }
    }
}

/// The result of [`check_database`](super::check_database).
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The database directory.
    pub dir: PathBuf,
    /// The page size, when `system.ibs` could tell it.
    pub page_size: Option<PageSize>,
    /// Files read (`system.ibs` and the tablespaces).
    pub files_checked: usize,
    /// Pages read and verified.
    pub pages_checked: u64,
    /// Every table named by the catalog, with its counts.
    pub tables: Vec<TableReport>,
    /// The undo tablespace, when there is one (a database without one gets a new one at open).
    pub undo: Option<UndoReport>,
    /// Every problem found; empty for a sound database.
    pub problems: Vec<Problem>,
    /// Findings that are legal but worth knowing: a tablespace file the catalog does not name
    /// (left by a crash during `create_table`).
    pub warnings: Vec<String>,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let page_size = self
            .page_size
            .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        writeln!(
            f,
            "{}: page size {page_size}, {} files, {} pages checked, {} tables",
            self.dir.display(),
            self.files_checked,
            self.pages_checked,
            self.tables.len()
        )?;
        for t in &self.tables {
            writeln!(
                f,
                "  {:<24} {:>8} pages  {:>10} records  height {}  {}",
                t.name,
                t.file_pages,
                t.records,
                t.height,
                if t.problems.is_empty() { "ok" } else { "BAD" }
            )?;
        }
        if let Some(u) = &self.undo {
            writeln!(
                f,
                "  {:<24} {:>8} pages  {} rollback segments, history list {}, {} active logs, \
                 {} cached header pages, {} log pages, ids below {}",
                "(undo tablespace)",
                u.file_pages,
                u.rollback_segments,
                u.history_list_length,
                u.active_logs,
                u.cached_header_pages,
                u.log_pages,
                u.max_trx_id
            )?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        for p in &self.problems {
            writeln!(f, "BAD: {p}")?;
        }
        if self.is_clean() {
            writeln!(f, "OK: no problem found")
        } else {
            writeln!(f, "FAILED: {} problem(s)", self.problems.len())
        }
    }
}

/// What [`check_database`](super::check_database) learns about the undo tablespace.
#[derive(Clone, Debug, Default)]
pub struct UndoReport {
    /// `undo.ibu`.
    pub file: PathBuf,
    /// Pages in the file.
    pub file_pages: u32,
    /// The persisted high-water mark of transaction ids and commit numbers.
    pub max_trx_id: u64,
    /// Rollback segments (each with its slots, history list and cache of header pages).
    pub rollback_segments: u32,
    /// Committed logs waiting for purge, as the rollback segment pages count them.
    pub history_list_length: u32,
    /// Logs of transactions that never committed (the next open rolls them back).
    pub active_logs: u32,
    /// Purged logs' header pages kept for new logs.
    pub cached_header_pages: u32,
    /// Pages reached from the logs and the cache of header pages.
    pub log_pages: u32,
    /// Pages that failed verification or could not be decoded.
    pub bad_pages: u32,
}

/// What [`inspect_database`](super::inspect_database) (and
/// [`check_database`](super::check_database)) learn about one table's tablespace.
#[derive(Clone, Debug, Default)]
pub struct TableReport {
    /// The table's name.
    pub name: String,
    /// Its tablespace id.
    pub space_id: SpaceId,
    /// The id of its clustered B-tree.
    pub index_id: u64,
    /// Root page of the B-tree.
    pub root_page_no: PageNo,
    /// The tablespace file.
    pub file: PathBuf,
    /// Pages in the file (its length / page size).
    pub file_pages: u32,
    /// The high-water mark recorded in page 0.
    pub size_in_pages: u32,
    /// Pages marked in use by the allocation bitmaps.
    pub pages_in_use: u32,
    /// Index pages with level 0.
    pub leaf_pages: u32,
    /// Index pages with level > 0.
    pub internal_pages: u32,
    /// Overflow pages in use.
    pub overflow_pages: u32,
    /// Pages free in the allocation bitmaps that hold a page: of type `Free` (B-tree pages
    /// freed by a merge) or a freed overflow page's old content (freeing a chain changes only
    /// the bitmaps).
    pub free_pages: u32,
    /// Space header (page 0) and further allocation bitmap pages.
    pub bitmap_pages: u32,
    /// All-zero pages (allocated to the file, never written).
    pub never_written_pages: u32,
    /// Pages that failed verification or could not be decoded.
    pub bad_pages: u32,
    /// B-tree height found by the walk from the root (1 = the root is a leaf; 0 = unreadable).
    pub height: u32,
    /// Records in the leaves reached from the root.
    pub records: u64,
    /// Average fill of leaf pages (used bytes / capacity), 0.0–1.0.
    pub leaf_fill: f64,
    /// Average fill of internal pages, 0.0–1.0.
    pub internal_fill: f64,
    /// The largest page LSN in the file.
    pub max_lsn: Lsn,
    /// Problems found in this tablespace.
    pub problems: Vec<Problem>,
    /// Deviations that are legal in practice but differ from `docs/FORMATS.md` (none are
    /// reported at present; an overflow page's wrong `prev` link is a problem).
    pub warnings: Vec<String>,
}

impl fmt::Display for TableReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "table {} (space {}, index {}, root page {}) — {}",
            self.name,
            self.space_id,
            self.index_id,
            self.root_page_no,
            self.file.display()
        )?;
        writeln!(
            f,
            "  pages: {} in file, {} high-water mark, {} in use per bitmap",
            self.file_pages, self.size_in_pages, self.pages_in_use
        )?;
        writeln!(
            f,
            "  page types: index leaf {}, index internal {}, overflow {}, free {}, \
             space header/bitmap {}, never written {}, bad {}",
            self.leaf_pages,
            self.internal_pages,
            self.overflow_pages,
            self.free_pages,
            self.bitmap_pages,
            self.never_written_pages,
            self.bad_pages
        )?;
        writeln!(
            f,
            "  B-tree: height {}, {} records, leaf fill {:.1} %, internal fill {:.1} %, max page LSN {}",
            self.height,
            self.records,
            self.leaf_fill * 100.0,
            self.internal_fill * 100.0,
            self.max_lsn
        )?;
        for p in &self.problems {
            writeln!(f, "  BAD: {p}")?;
        }
        for w in &self.warnings {
            writeln!(f, "  warning: {w}")?;
        }
        Ok(())
    }
}
