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
//!   space id ([`verify_page`]); pages never written (all zero) are legal only where the
//!   allocation bitmap says the page is free;
//! - each page body by its type: index pages structurally ([`IndexPage::open`]: slots, bounds,
//!   byte accounting, key order), overflow pages, space header and bitmap pages, catalog pages;
//! - the B-tree from its root: levels decreasing by one, keys inside their parent's fences and
//!   ascending across leaves, leaf `prev`/`next` links, index id, overflow chains (type, links and
//!   total length), no page reached twice;
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

use std::collections::HashSet;
use std::fmt;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use barracuda_page::space::is_bitmap_page;
use barracuda_page::{
    index_capacity, page_lsn, pages_per_bitmap, verify_page, AllocationBitmap, CatalogEntry,
    CatalogPage, FileHeader, IndexPage, Lsn, OverflowPage, PageError, PageId, PageNo, PageSize,
    PageType, SpaceHeader, SpaceId, ValueRef, FIL_NULL,
};

use crate::error::{Error, Result};

/// The name [`decode_page`] accepts for the system tablespace (table names cannot contain `.`).
pub const SYSTEM_FILE_NAME: &str = "system.ibs";
const TABLES_DIR: &str = "tables";

/// One bad page (or file), as found by [`check_database`].
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

/// The result of [`check_database`].
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

/// What [`inspect_database`] (and [`check_database`]) learn about one table's tablespace.
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
    /// Overflow pages.
    pub overflow_pages: u32,
    /// Pages of type `Free` (freed by the B-tree).
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
    /// Deviations that are legal in practice but differ from `docs/FORMATS.md`.
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
        (table_path(dir, &entry.name), entry.space_id)
    };
    let file = PageReader::open(&path, page_size).map_err(|p| Error::Corrupt {
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
    let buf = file.read(page_no).map_err(|e| Error::fs(&path, e))?;
    Ok(PageView::decode(
        path,
        PageId::new(space_id, page_no),
        page_size,
        &buf,
    ))
}

/// A page decoded for people: header fields, verification result and body.
#[derive(Clone, Debug)]
pub struct PageView {
    /// The file the page was read from.
    pub file: PathBuf,
    /// The page's expected id (space of the file, page number asked for).
    pub page_id: PageId,
    /// The page size.
    pub page_size: PageSize,
    /// `None` if the page verifies ([`verify_page`]), else why not.
    pub verify_error: Option<String>,
    /// The file header, when it decodes.
    pub header: Option<FileHeader>,
    /// The body, decoded by page type.
    pub body: PageBody,
}

/// The body of a [`PageView`].
#[derive(Clone, Debug)]
pub enum PageBody {
    /// Every byte is zero: allocated, never written.
    AllZero,
    /// A B-tree page.
    Index {
        /// 0 = leaf.
        level: u16,
        /// The B-tree's id.
        index_id: u64,
        /// Heap bytes held by removed records.
        garbage_bytes: usize,
        /// Free bytes (contiguous plus garbage).
        free_bytes: usize,
        /// Used bytes / capacity.
        fill: f64,
        /// The records, in key order.
        records: Vec<RecordView>,
    },
    /// A page of an overflow chain.
    Overflow {
        /// Payload bytes on this page.
        payload_len: usize,
        /// The next page of the chain, or `FIL_NULL`.
        next: PageNo,
    },
    /// Page 0 of a tablespace.
    SpaceHeader {
        /// The decoded header.
        header: SpaceHeader,
        /// Pages marked in use by its bitmap.
        pages_in_use: u32,
    },
    /// A further allocation bitmap page.
    Bitmap {
        /// Pages marked in use by it.
        pages_in_use: u32,
    },
    /// A catalog page of `system.ibs`.
    Catalog {
        /// The decoded page.
        page: CatalogPage,
    },
    /// A page freed by the B-tree.
    Free,
    /// The body does not decode.
    Undecodable {
        /// Why.
        reason: String,
    },
}

/// One record of an index page, for display.
#[derive(Clone, Debug)]
pub struct RecordView {
    /// The key.
    pub key: Vec<u8>,
    /// The value, summarised.
    pub value: ValueView,
}

/// A record's value, summarised.
#[derive(Clone, Debug)]
pub enum ValueView {
    /// An inline value of this many bytes.
    Inline {
        /// Its length.
        len: usize,
    },
    /// A value stored off-page.
    Overflow {
        /// Inline prefix length.
        prefix_len: usize,
        /// Whole value length.
        total_len: u64,
        /// First page of the chain.
        first_page: PageNo,
    },
    /// A child pointer of an internal node.
    Child {
        /// The child page.
        page_no: PageNo,
    },
}

impl PageView {
    fn decode(file: PathBuf, page_id: PageId, page_size: PageSize, buf: &[u8]) -> Self {
        let verify_error = verify_page(buf, page_id, page_size)
            .err()
            .map(|e| e.to_string());
        let header = FileHeader::read(buf).ok();
        let body = if buf.iter().all(|&b| b == 0) {
            PageBody::AllZero
        } else {
            match header.map(|h| h.page_type) {
                None => PageBody::Undecodable {
                    reason: "unknown page type".into(),
                },
                Some(page_type) => decode_body(page_type, page_id.page_no, page_size, buf),
            }
        };
        Self {
            file,
            page_id,
            page_size,
            verify_error,
            header,
            body,
        }
    }
}

fn decode_body(page_type: PageType, page_no: PageNo, page_size: PageSize, buf: &[u8]) -> PageBody {
    let undecodable = |e: PageError| PageBody::Undecodable {
        reason: e.to_string(),
    };
    match page_type {
        PageType::Free => PageBody::Free,
        PageType::Index => match IndexPage::open(buf, page_size) {
            Ok(page) => PageBody::Index {
                level: page.level(),
                index_id: page.index_id(),
                garbage_bytes: page.garbage(),
                free_bytes: page.free_space(),
                fill: page.fill_factor(),
                records: page
                    .iter()
                    .map(|r| RecordView {
                        key: r.key.to_vec(),
                        value: value_view(r.value),
                    })
                    .collect(),
            },
            Err(e) => undecodable(e),
        },
        PageType::Overflow => match OverflowPage::read(buf, page_size) {
            Ok(page) => PageBody::Overflow {
                payload_len: page.payload.len(),
                next: page.next,
            },
            Err(e) => undecodable(e),
        },
        PageType::SpaceHeader if page_no == 0 => {
            match (
                SpaceHeader::read(buf, page_size),
                AllocationBitmap::open(buf, page_size),
            ) {
                (Ok(header), Ok(bitmap)) => PageBody::SpaceHeader {
                    header,
                    pages_in_use: bitmap.count_used(),
                },
                (Err(e), _) | (_, Err(e)) => undecodable(e),
            }
        }
        PageType::SpaceHeader => match AllocationBitmap::open(buf, page_size) {
            Ok(bitmap) => PageBody::Bitmap {
                pages_in_use: bitmap.count_used(),
            },
            Err(e) => undecodable(e),
        },
        PageType::Catalog => match CatalogPage::read(buf, page_size) {
            Ok(page) => PageBody::Catalog { page },
            Err(e) => undecodable(e),
        },
    }
}

fn value_view(value: ValueRef<'_>) -> ValueView {
    match value {
        ValueRef::Inline(v) => ValueView::Inline { len: v.len() },
        ValueRef::Overflow {
            prefix,
            total_len,
            first_page,
        } => ValueView::Overflow {
            prefix_len: prefix.len(),
            total_len,
            first_page,
        },
        ValueRef::Child(page_no) => ValueView::Child { page_no },
    }
}

/// `key` as hex, then as ASCII with non-printable bytes escaped (`\x00`).
pub fn escape_key(key: &[u8]) -> String {
    let mut hex = String::with_capacity(key.len() * 2);
    for b in key {
        let _ = write!(hex, "{b:02x}");
    }
    let ascii: String = key
        .iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    format!("{hex} \"{ascii}\"")
}

fn page_no_text(p: PageNo) -> String {
    if p == FIL_NULL {
        "FIL_NULL".to_owned()
    } else {
        p.to_string()
    }
}

impl fmt::Display for PageView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: page {} (space {}, page size {})",
            self.file.display(),
            self.page_id.page_no,
            self.page_id.space_id,
            self.page_size
        )?;
        match &self.verify_error {
            None => writeln!(f, "verification: ok (checksum, LSN trailer, page id)")?,
            Some(why) => writeln!(f, "verification: FAILED: {why}")?,
        }
        if let Some(h) = &self.header {
            writeln!(f, "file header:")?;
            writeln!(f, "  checksum     {:#010x}", h.checksum)?;
            writeln!(f, "  page_no      {}", h.page_no)?;
            writeln!(f, "  space_id     {}", h.space_id)?;
            writeln!(f, "  page_type    {:?}", h.page_type)?;
            writeln!(f, "  prev         {}", page_no_text(h.prev))?;
            writeln!(f, "  next         {}", page_no_text(h.next))?;
            writeln!(f, "  page LSN     {}", h.lsn)?;
        }
        match &self.body {
            PageBody::AllZero => writeln!(f, "body: all zero (allocated, never written)"),
            PageBody::Free => writeln!(f, "body: free page"),
            PageBody::Undecodable { reason } => writeln!(f, "body: does not decode: {reason}"),
            PageBody::Overflow { payload_len, next } => {
                writeln!(
                    f,
                    "overflow page: {payload_len} payload bytes, next {}",
                    page_no_text(*next)
                )
            }
            PageBody::Bitmap { pages_in_use } => {
                writeln!(
                    f,
                    "allocation bitmap page: {pages_in_use} pages in use in its range"
                )
            }
            PageBody::SpaceHeader {
                header,
                pages_in_use,
            } => {
                writeln!(f, "space header:")?;
                writeln!(f, "  space_id      {}", header.space_id)?;
                writeln!(f, "  page size     {}", header.page_size)?;
                writeln!(f, "  flags         {:#x}", header.flags)?;
                writeln!(f, "  size_in_pages {}", header.size_in_pages)?;
                writeln!(f, "  free_hint     {}", header.free_hint)?;
                writeln!(f, "  bitmap: {pages_in_use} pages in use in its range")
            }
            PageBody::Catalog { page } => {
                writeln!(
                    f,
                    "catalog page: next catalog page {}, next space id {}, next index id {}, {} entries",
                    page_no_text(page.next_catalog_page),
                    page.next_space_id,
                    page.next_index_id,
                    page.entries.len()
                )?;
                for e in &page.entries {
                    writeln!(
                        f,
                        "  {:<24} space {:>4} root {:>4} index {:>4} row_format {} kbs {} pc {} level {}",
                        e.name,
                        e.space_id,
                        e.root_page_no,
                        e.index_id,
                        e.row_format,
                        e.key_block_size,
                        e.page_compression,
                        e.compression_level
                    )?;
                }
                Ok(())
            }
            PageBody::Index {
                level,
                index_id,
                garbage_bytes,
                free_bytes,
                fill,
                records,
            } => {
                writeln!(
                    f,
                    "index page: {} level {level}, index id {index_id}, {} records, \
                     {free_bytes} bytes free ({garbage_bytes} garbage), fill {:.1} %",
                    if *level == 0 { "leaf" } else { "internal" },
                    records.len(),
                    fill * 100.0
                )?;
                for (i, r) in records.iter().enumerate() {
                    let value = match r.value {
                        ValueView::Inline { len } => format!("inline value, {len} bytes"),
                        ValueView::Overflow { prefix_len, total_len, first_page } => format!(
                            "off-page value, {total_len} bytes ({prefix_len} inline), chain at page {first_page}"
                        ),
                        ValueView::Child { page_no } => format!("child page {page_no}"),
                    };
                    writeln!(f, "  [{i:>4}] key {} -> {value}", escape_key(&r.key))?;
                }
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading files

/// A file of pages read with plain positioned reads.
struct PageReader {
    path: PathBuf,
    file: std::cell::RefCell<File>,
    page_size: PageSize,
    pages: u32,
    /// Bytes past the last whole page (a torn extension).
    tail_bytes: u64,
}

impl PageReader {
    fn open(path: &Path, page_size: PageSize) -> std::result::Result<Self, Problem> {
        let problem = |e: std::io::Error| Problem {
            file: path.to_owned(),
            page_no: None,
            reason: e.to_string(),
        };
        let file = File::open(path).map_err(problem)?;
        let len = file.metadata().map_err(problem)?.len();
        let ps = page_size.bytes() as u64;
        let pages = u32::try_from(len / ps).unwrap_or(u32::MAX);
        Ok(Self {
            path: path.to_owned(),
            file: std::cell::RefCell::new(file),
            page_size,
            pages,
            tail_bytes: len % ps,
        })
    }

    fn read(&self, page_no: PageNo) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.page_size.bytes()];
        let mut file = self.file.borrow_mut();
        file.seek(SeekFrom::Start(
            u64::from(page_no) * self.page_size.bytes() as u64,
        ))?;
        file.read_exact(&mut buf)?;
        Ok(buf)
    }

    fn problem(&self, page_no: Option<PageNo>, reason: impl Into<String>) -> Problem {
        Problem {
            file: self.path.clone(),
            page_no,
            reason: reason.into(),
        }
    }
}

fn table_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(TABLES_DIR).join(format!("{name}.ibd"))
}

struct SystemInfo {
    page_size: PageSize,
    file_pages: u32,
    catalog: Option<CatalogCopy>,
    problems: Vec<Problem>,
}

struct CatalogCopy {
    generation: u64,
    entries: Vec<CatalogEntry>,
    pages: Vec<PageNo>,
}

/// The page size and the catalog of the newest valid copy, for `inspect` and `decode_page`.
fn read_catalog(dir: &Path) -> Result<(PageSize, Vec<CatalogEntry>)> {
    let path = dir.join(SYSTEM_FILE_NAME);
    if !path.is_file() {
        return Err(Error::NotFound {
            dir: dir.to_owned(),
        });
    }
    let system = read_system(&path).map_err(|p| Error::Corrupt {
        file: path.clone(),
        what: p.reason,
    })?;
    match system.catalog {
        Some(catalog) => Ok((system.page_size, catalog.entries)),
        None => Err(Error::Corrupt {
            file: path,
            what: "no valid catalog copy".into(),
        }),
    }
}

/// Reads `system.ibs`: page size, both catalog copies (the newest valid generation wins, as in
/// `Engine::open`), and verifies every other page. `Err` when even the page size is unknown.
fn read_system(path: &Path) -> std::result::Result<SystemInfo, Problem> {
    let mut prefix = [0u8; 64];
    let read_prefix = File::open(path).and_then(|mut f| f.read_exact(&mut prefix));
    read_prefix.map_err(|e| Problem {
        file: path.to_owned(),
        page_no: Some(0),
        reason: e.to_string(),
    })?;
    let page_size = SpaceHeader::peek_page_size(&prefix).map_err(|e| Problem {
        file: path.to_owned(),
        page_no: Some(0),
        reason: e.to_string(),
    })?;
    let reader = PageReader::open(path, page_size)?;
    let mut problems = Vec::new();
    if reader.tail_bytes != 0 {
        problems.push(reader.problem(
            None,
            format!("{} bytes past the last whole page", reader.tail_bytes),
        ));
    }
    let mut checked = HashSet::new();
    checked.insert(0);
    match reader.read(0) {
        Err(e) => problems.push(reader.problem(Some(0), e.to_string())),
        Ok(page0) => {
            let result = verify_page(&page0, PageId::new(0, 0), page_size)
                .and_then(|()| SpaceHeader::read(&page0, page_size).map(|_| ()));
            if let Err(e) = result {
                problems.push(reader.problem(Some(0), e.to_string()));
            }
        }
    }
    let mut copies = Vec::new();
    for copy in 0..2u32 {
        match read_catalog_copy(&reader, copy, &mut checked) {
            Ok(c) => copies.push(c),
            // Reported even when the other copy is sound: after a clean shutdown both are.
            Err(problem) => problems.push(problem),
        }
    }
    let newest = copies.into_iter().max_by_key(|c| c.generation);
    if newest.is_none() {
        problems.push(reader.problem(None, "no valid catalog copy"));
    }
    for page_no in 1..reader.pages {
        if checked.contains(&page_no) {
            continue;
        }
        // Pages of no current catalog chain: stale pages of a longer chain, or never written.
        match reader.read(page_no) {
            Err(e) => problems.push(reader.problem(Some(page_no), e.to_string())),
            Ok(buf) => match verify_page(&buf, PageId::new(0, page_no), page_size) {
                Ok(()) | Err(PageError::AllZero { .. }) => {}
                Err(e) => problems.push(reader.problem(Some(page_no), e.to_string())),
            },
        }
    }
    Ok(SystemInfo {
        page_size,
        file_pages: reader.pages,
        catalog: newest,
        problems,
    })
}

fn read_catalog_copy(
    reader: &PageReader,
    copy: u32,
    checked: &mut HashSet<PageNo>,
) -> std::result::Result<CatalogCopy, Problem> {
    let mut page_no = 1 + copy;
    let mut result: Option<CatalogCopy> = None;
    loop {
        if page_no >= reader.pages {
            return Err(reader.problem(
                Some(page_no),
                format!(
                    "catalog copy {} runs past the end of the file",
                    copy_name(copy)
                ),
            ));
        }
        if !checked.insert(page_no) {
            return Err(reader.problem(Some(page_no), "catalog chain loops"));
        }
        let buf = reader
            .read(page_no)
            .map_err(|e| reader.problem(Some(page_no), e.to_string()))?;
        let page = verify_page(&buf, PageId::new(0, page_no), reader.page_size)
            .and_then(|()| CatalogPage::read(&buf, reader.page_size))
            .map_err(|e| {
                reader.problem(
                    Some(page_no),
                    format!("catalog copy {}: {e}", copy_name(copy)),
                )
            })?;
        let generation = page_lsn(&buf).unwrap_or(0);
        match &mut result {
            None => {
                result = Some(CatalogCopy {
                    generation,
                    entries: page.entries,
                    pages: vec![page_no],
                });
            }
            Some(c) => {
                if c.generation != generation {
                    return Err(reader.problem(
                        Some(page_no),
                        format!(
                            "catalog page of generation {generation} in a copy of generation {}",
                            c.generation
                        ),
                    ));
                }
                c.entries.extend(page.entries);
                c.pages.push(page_no);
            }
        }
        if page.next_catalog_page == FIL_NULL {
            break;
        }
        let expected = page_no + 2;
        if page.next_catalog_page != expected {
            return Err(reader.problem(
                Some(page_no),
                format!(
                    "next catalog page is {}, expected {expected}",
                    page.next_catalog_page
                ),
            ));
        }
        page_no = expected;
    }
    result.ok_or_else(|| reader.problem(None, "empty catalog copy"))
}

fn copy_name(copy: u32) -> &'static str {
    if copy == 0 {
        "A"
    } else {
        "B"
    }
}

// ---------------------------------------------------------------------------------------------
// Scanning a tablespace

/// What the sequential pass learnt about one page.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bad,
    Zero,
    Free,
    Bitmap,
    Leaf,
    Internal,
    Overflow,
}

fn scan_table(dir: &Path, entry: &CatalogEntry, page_size: PageSize) -> TableReport {
    let path = table_path(dir, &entry.name);
    let mut report = TableReport {
        name: entry.name.clone(),
        space_id: entry.space_id,
        index_id: entry.index_id,
        root_page_no: entry.root_page_no,
        file: path.clone(),
        ..TableReport::default()
    };
    let reader = match PageReader::open(&path, page_size) {
        Ok(r) => r,
        Err(p) => {
            report.problems.push(p);
            return report;
        }
    };
    report.file_pages = reader.pages;
    if reader.tail_bytes != 0 {
        report.problems.push(reader.problem(
            None,
            format!("{} bytes past the last whole page", reader.tail_bytes),
        ));
    }
    let space = entry.space_id;

    // Page 0 and the further bitmap pages first: they say which pages are in use.
    let mut used = vec![false; reader.pages as usize];
    let mut bitmap_ok = true;
    let per_bitmap = pages_per_bitmap(page_size);
    let mut region: PageNo = 0;
    while region < reader.pages {
        match read_bitmap(&reader, space, region, &mut used, &mut report) {
            Ok(()) => {}
            Err(p) => {
                bitmap_ok = false;
                report.problems.push(p);
            }
        }
        region = match region.checked_add(per_bitmap) {
            Some(r) => r,
            None => break,
        };
    }
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
    report.pages_in_use = used.iter().filter(|&&u| u).count() as u32;

    // Sequential pass: every page verified and decoded by type.
    let mut kinds = vec![Kind::Bad; reader.pages as usize];
    let (mut leaf_used, mut internal_used) = (0u64, 0u64);
    for page_no in 0..reader.pages {
        let in_use = used.get(page_no as usize).copied().unwrap_or(false);
        let kind = scan_page(
            &reader,
            space,
            entry.index_id,
            page_no,
            in_use,
            bitmap_ok,
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
    let mut walk = TreeWalk {
        reader: &reader,
        space,
        index_id: entry.index_id,
        reached: vec![false; reader.pages as usize],
        previous_leaf: None,
        last_key: None,
        records: 0,
        problems: Vec::new(),
        prev_link_mismatches: 0,
        first_prev_link_mismatch: None,
        links_unknown: false,
    };
    report.height = walk.run(entry.root_page_no);
    report.records = walk.records;
    let walk_clean = walk.problems.is_empty();
    let reached = std::mem::take(&mut walk.reached);
    report.problems.append(&mut walk.problems);
    if let Some(first) = walk.first_prev_link_mismatch {
        report.warnings.push(format!(
            "{}: {} overflow pages (first: page {first}) lack the prev link FORMATS.md §6 \
             specifies (the B-tree's overflow writer leaves it FIL_NULL)",
            path.display(),
            walk.prev_link_mismatches
        ));
    }
    if walk_clean && bitmap_ok {
        for page_no in 0..reader.pages {
            let i = page_no as usize;
            let in_use = used.get(i).copied().unwrap_or(false);
            let is_reached =
                reached.get(i).copied().unwrap_or(false) || is_bitmap_page(page_no, page_size);
            if is_reached && !in_use {
                report.problems.push(reader.problem(
                    Some(page_no),
                    "reachable from the B-tree but marked free in the allocation bitmap",
                ));
            } else if in_use
                && !is_reached
                && kinds
                    .get(i)
                    .is_some_and(|k| *k != Kind::Bad && *k != Kind::Zero && *k != Kind::Free)
            {
                report.problems.push(reader.problem(
                    Some(page_no),
                    "marked in use but not reachable from the B-tree (leaked page)",
                ));
            }
        }
    }
    report
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

/// The depth-first walk of a B-tree read from its file.
struct TreeWalk<'r> {
    reader: &'r PageReader,
    space: SpaceId,
    index_id: u64,
    reached: Vec<bool>,
    previous_leaf: Option<PageNo>,
    last_key: Option<Vec<u8>>,
    records: u64,
    problems: Vec<Problem>,
    prev_link_mismatches: u64,
    first_prev_link_mismatch: Option<PageNo>,
    /// A page was skipped (unreadable): the next leaf's sibling links cannot be judged.
    links_unknown: bool,
}

struct Visit {
    page_no: PageNo,
    level: Option<u16>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl TreeWalk<'_> {
    /// Walks from `root`; returns the height (0 if the root is unreadable).
    fn run(&mut self, root: PageNo) -> u32 {
        let mut height = 0;
        let mut stack = vec![Visit {
            page_no: root,
            level: None,
            lower: None,
            upper: None,
        }];
        while let Some(visit) = stack.pop() {
            let Some(buf) = self.fetch(visit.page_no, "B-tree") else {
                self.links_unknown = true;
                continue;
            };
            let page = match IndexPage::open(&buf[..], self.reader.page_size) {
                Ok(page) => page,
                Err(e) => {
                    self.problem(visit.page_no, format!("B-tree page: {e}"));
                    self.links_unknown = true;
                    continue;
                }
            };
            if page.index_id() != self.index_id {
                self.problem(
                    visit.page_no,
                    format!(
                        "B-tree page of index {}, expected {}",
                        page.index_id(),
                        self.index_id
                    ),
                );
                self.links_unknown = true;
                continue;
            }
            match visit.level {
                None => height = u32::from(page.level()) + 1,
                Some(level) if level != page.level() => {
                    self.problem(
                        visit.page_no,
                        format!("level {}, expected {level}", page.level()),
                    );
                    self.links_unknown = true;
                    continue;
                }
                Some(_) => {}
            }
            for i in 0..page.len() {
                let key = page.key(i);
                let routing = !page.is_leaf() && i == 0;
                if !routing && visit.lower.as_deref().is_some_and(|l| key < l) {
                    self.problem(
                        visit.page_no,
                        format!("key {i} is below its parent's fence"),
                    );
                }
                if visit.upper.as_deref().is_some_and(|u| key >= u) {
                    self.problem(
                        visit.page_no,
                        format!("key {i} is at or above its parent's fence"),
                    );
                }
            }
            if page.is_leaf() {
                self.leaf(&page, visit.page_no, root);
                continue;
            }
            if page.is_empty() {
                self.problem(visit.page_no, "internal page without children");
                continue;
            }
            let n = page.len();
            for i in (0..n).rev() {
                let record = page.record(i);
                let Some(child) = record.child_page() else {
                    self.problem(
                        visit.page_no,
                        format!("record {i} of an internal page is not a child pointer"),
                    );
                    continue;
                };
                let lower = if i == 0 {
                    visit.lower.clone()
                } else {
                    Some(record.key.to_vec())
                };
                let upper = if i + 1 < n {
                    Some(page.key(i + 1).to_vec())
                } else {
                    visit.upper.clone()
                };
                stack.push(Visit {
                    page_no: child,
                    level: Some(page.level() - 1),
                    lower,
                    upper,
                });
            }
        }
        if let Some(last) = self.previous_leaf {
            if let Ok(buf) = self.reader.read(last) {
                if FileHeader::read(&buf).is_ok_and(|h| h.next != FIL_NULL) {
                    self.problem(last, "the last leaf has a next page");
                }
            }
        }
        height
    }

    fn leaf(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo, root: PageNo) {
        if std::mem::take(&mut self.links_unknown) {
            self.previous_leaf = None;
        } else {
            self.check_links(page, page_no);
        }
        self.leaf_body(page, page_no, root);
    }

    fn check_links(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo) {
        let prev = (page.prev() != FIL_NULL).then_some(page.prev());
        if prev != self.previous_leaf {
            self.problem(
                page_no,
                format!(
                    "prev link {}, expected {}",
                    page_no_text(page.prev()),
                    self.previous_leaf
                        .map_or_else(|| "FIL_NULL".to_owned(), |p| p.to_string())
                ),
            );
        }
        if let Some(previous) = self.previous_leaf {
            if let Ok(buf) = self.reader.read(previous) {
                let next = FileHeader::read(&buf).map_or(FIL_NULL, |h| h.next);
                if next != page_no {
                    self.problem(
                        previous,
                        format!("next link {}, expected {page_no}", page_no_text(next)),
                    );
                }
            }
        }
    }

    fn leaf_body(&mut self, page: &IndexPage<&[u8]>, page_no: PageNo, root: PageNo) {
        if page_no != root && page.is_empty() {
            self.problem(page_no, "empty leaf that is not the root");
        }
        for i in 0..page.len() {
            let record = page.record(i);
            if self
                .last_key
                .as_deref()
                .is_some_and(|last| record.key <= last)
            {
                self.problem(
                    page_no,
                    format!("key {i} is not above the previous leaf's last key"),
                );
            }
            self.last_key = Some(record.key.to_vec());
            match record.value {
                ValueRef::Inline(_) => {}
                ValueRef::Overflow {
                    prefix,
                    total_len,
                    first_page,
                } => {
                    self.chain(
                        page_no,
                        i,
                        first_page,
                        total_len.saturating_sub(prefix.len() as u64),
                    );
                }
                ValueRef::Child(_) => {
                    self.problem(page_no, format!("record {i}: child pointer in a leaf"));
                }
            }
        }
        self.records += page.len() as u64;
        self.previous_leaf = Some(page_no);
    }

    fn chain(&mut self, leaf: PageNo, record: usize, first: PageNo, expected_len: u64) {
        let mut page_no = first;
        let mut prev = FIL_NULL;
        let mut total = 0u64;
        while page_no != FIL_NULL {
            let Some(buf) = self.fetch(page_no, "overflow chain") else {
                return;
            };
            let page = match OverflowPage::read(&buf, self.reader.page_size) {
                Ok(p) => p,
                Err(e) => {
                    self.problem(
                        page_no,
                        format!("overflow chain of page {leaf} record {record}: {e}"),
                    );
                    return;
                }
            };
            // FORMATS.md §6 asks for back links; the B-tree's chain writer leaves them
            // FIL_NULL today, so a mismatch is counted and reported once as a warning.
            if FileHeader::read(&buf).is_ok_and(|h| h.prev != prev) {
                self.prev_link_mismatches += 1;
                self.first_prev_link_mismatch.get_or_insert(page_no);
            }
            total += page.payload.len() as u64;
            prev = page_no;
            page_no = page.next;
        }
        if total != expected_len {
            self.problem(
                leaf,
                format!(
                    "record {record}: overflow chain holds {total} bytes, expected {expected_len}"
                ),
            );
        }
    }

    /// Reads a page reached by the walk, once: checks bounds, double references and
    /// verification (problems with the page itself are reported by the sequential pass).
    fn fetch(&mut self, page_no: PageNo, what: &str) -> Option<Vec<u8>> {
        let Some(seen) = self.reached.get_mut(page_no as usize) else {
            self.problem(page_no, format!("{what} points beyond the end of the file"));
            return None;
        };
        if *seen {
            self.problem(page_no, format!("{what} reaches this page a second time"));
            return None;
        }
        *seen = true;
        let buf = self.reader.read(page_no).ok()?;
        verify_page(
            &buf,
            PageId::new(self.space, page_no),
            self.reader.page_size,
        )
        .ok()
        .map(|()| buf)
        .or_else(|| {
            self.problem(
                page_no,
                format!("{what} reaches a page that fails verification"),
            );
            None
        })
    }

    fn problem(&mut self, page_no: PageNo, reason: impl Into<String>) {
        self.problems
            .push(self.reader.problem(Some(page_no), reason));
    }
}
