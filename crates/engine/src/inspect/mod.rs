//! Offline checking and inspection of a database directory that is *not* open — the library side
//! of `barracuda check` and `barracuda inspect` (InnoDB: `innochecksum`, `innodb_ruby`).
//!
//! Everything here reads the files directly, page by page, through the decoders of
//! `barracuda-page`: no buffer pool, no `LOCK` taken, nothing written. Run it on a closed database
//! (on an open one, pages still in the pool are not on disk yet and the report may show
//! inconsistencies that are not real).
//!
//! [`check_database`] verifies, for `system.ibs` and every tablespace named by the catalog:
//! - every page: size, trailer magic, torn-page LSN check, CRC-32C, page type, page number and
//!   space id ([`verify_page`](barracuda_page::verify_page)); pages never written (all zero) are legal only where the
//!   allocation bitmap says the page is free;
//! - each page body by its type: index pages structurally ([`IndexPage::open`](barracuda_page::IndexPage::open): slots, bounds,
//!   byte accounting, key order), overflow pages, space header and bitmap pages, catalog pages;
//! - the B-tree from its root: levels decreasing by one, keys inside their parent's fences and
//!   ascending across leaves, leaf `prev`/`next` links, index id, overflow chains (type, `prev`/`next`
//!   links and total length), no page reached twice;
//! - the allocation bitmaps against the pages reachable from the tree: every reachable page is
//!   marked in use, and every page marked in use is reachable (otherwise it leaked).
//!
//! Each problem names the file, the page number and the reason.
//!
//! ```
//! use barracuda::{inspect, Engine, EngineOptions, TableOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Engine::open(dir.path(), EngineOptions::default().buffer_pool_bytes(4 << 20))?;
//! let t = db.create_table("t", TableOptions::default())?;
//! db.put(&t, b"k", b"v")?;
//! db.close()?;
//!
//! let report = inspect::check_database(dir.path())?;
//! assert!(report.is_clean(), "{report}");
//! let tables = inspect::inspect_database(dir.path(), Some("t"))?;
//! assert_eq!(tables[0].records, 1);
//! println!("{}", inspect::decode_page(dir.path(), "t", 1)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::layout::{table_path, TABLES_DIR, TABLE_NAME_RULE};
use std::collections::HashSet;
use std::path::Path;

use barracuda_page::{PageId, PageNo, FIL_NULL};

use crate::error::{Error, Result};

mod bitmap;
mod check;
mod decode;
mod reader;
mod report;
mod system;
#[cfg(test)]
mod tests;
mod tree_walk;
mod undo;

pub use decode::{escape_key, PageBody, PageView, RecordView, ValueView};
pub use report::{CheckReport, Problem, TableReport, UndoReport};

use check::scan_table;
use reader::PageReader;
use system::{read_catalog, read_system};

/// The name [`decode_page`] accepts for the system tablespace (table names cannot contain `.`).
pub const SYSTEM_FILE_NAME: &str = crate::layout::SYSTEM_FILE;

/// Verifies every page of every tablespace of the database in `dir` (see the module docs).
///
/// Returns `Err` only when `dir` holds no database; every problem inside the files, including
/// unreadable files, is reported in the [`CheckReport`].
pub fn check_database(dir: impl AsRef<Path>) -> Result<CheckReport> {
    let dir = dir.as_ref();
    let system_path = dir.join(SYSTEM_FILE_NAME);
    if !system_path.is_file() {
        return Err(Error::NotFound {
            dir: dir.to_owned(),
        });
    }
    let mut report = CheckReport {
        dir: dir.to_owned(),
        page_size: None,
        files_checked: 1,
        pages_checked: 0,
        tables: Vec::new(),
        undo: None,
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    let system = match read_system(&system_path) {
        Ok(system) => system,
        Err(problem) => {
            report.problems.push(problem);
            return Ok(report);
        }
    };
    report.page_size = Some(system.page_size);
    report.pages_checked += u64::from(system.file_pages);
    report.problems.extend(system.problems);
    let Some(catalog) = system.catalog else {
        return Ok(report);
    };
    let mut named = HashSet::new();
    for entry in &catalog.entries {
        named.insert(format!("{}.ibd", entry.name));
        let table = scan_table(dir, entry, system.page_size);
        report.files_checked += 1;
        report.pages_checked += u64::from(table.file_pages);
        report.problems.extend(table.problems.iter().cloned());
        report.warnings.extend(table.warnings.iter().cloned());
        report.tables.push(table);
    }
    report.undo = undo::scan_undo(dir, system.page_size, &mut report.problems);
    match &report.undo {
        Some(undo) => {
            report.files_checked += 1;
            report.pages_checked += u64::from(undo.file_pages);
        }
        None => report.warnings.push(format!(
            "{}: no undo tablespace (the next open creates one)",
            dir.join(crate::layout::UNDO_FILE).display()
        )),
    }
    if let Ok(listing) = std::fs::read_dir(dir.join(TABLES_DIR)) {
        let mut orphans: Vec<String> = listing
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|name| {
                Path::new(name).extension().is_some_and(|ext| ext == "ibd") && !named.contains(name)
            })
            .collect();
        orphans.sort();
        for name in orphans {
            report.warnings.push(format!(
                "{}: tablespace not named by the catalog (left by an interrupted create_table?)",
                dir.join(TABLES_DIR).join(name).display()
            ));
        }
    }
    Ok(report)
}

/// Reads and checks the tables of the database in `dir` (all of them, or only `table`), and
/// returns their page-type counts, fill factors, B-tree heights and problems.
pub fn inspect_database(dir: impl AsRef<Path>, table: Option<&str>) -> Result<Vec<TableReport>> {
    let dir = dir.as_ref();
    let (page_size, entries) = read_catalog(dir)?;
    let mut reports = Vec::new();
    for entry in &entries {
        if table.is_none_or(|t| t == entry.name) {
            reports.push(scan_table(dir, entry, page_size));
        }
    }
    if let Some(name) = table {
        if reports.is_empty() {
            return Err(Error::NoSuchTable(name.to_owned()));
        }
    }
    Ok(reports)
}

/// Decodes page `page_no` of `table`'s tablespace (or of `system.ibs` when `table` is
/// [`SYSTEM_FILE_NAME`]) into a readable [`PageView`]. A page that fails verification is still
/// decoded as far as its bytes allow; the view says what failed.
pub fn decode_page(dir: impl AsRef<Path>, table: &str, page_no: PageNo) -> Result<PageView> {
    let dir = dir.as_ref();
    let (page_size, entries) = read_catalog(dir)?;
    let (path, space_id) = if table == SYSTEM_FILE_NAME {
        (dir.join(SYSTEM_FILE_NAME), 0)
    } else {
        let entry = entries
            .iter()
            .find(|e| e.name == table)
            .ok_or_else(|| Error::NoSuchTable(table.to_owned()))?;
        let path = table_path(dir, &entry.name).ok_or_else(|| Error::InvalidTableName {
            name: entry.name.clone(),
            why: TABLE_NAME_RULE,
        })?;
        (path, entry.space_id)
    };
    let file = PageReader::open(&path, page_size, space_id).map_err(|p| Error::Corrupt {
        file: path.clone(),
        what: p.reason,
    })?;
    if page_no >= file.pages {
        return Err(Error::InvalidOption(format!(
            "{}: page {page_no} is beyond the end of the file ({} pages)",
            path.display(),
            file.pages
        )));
    }
    // The stored bytes: the view decompresses a compressed page itself, to say how it is stored.
    let mut buf = vec![0u8; page_size.bytes()];
    file.read_into(page_no, &mut buf)
        .map_err(|e| Error::fs(&path, e))?;
    Ok(PageView::decode(
        path,
        PageId::new(space_id, page_no),
        page_size,
        &buf,
    ))
}

/// A page number for people: `FIL_NULL` by name.
fn page_no_text(p: PageNo) -> String {
    if p == FIL_NULL {
        "FIL_NULL".to_owned()
    } else {
        p.to_string()
    }
}
