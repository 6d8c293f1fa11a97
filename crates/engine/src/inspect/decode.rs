//! [`decode_page`](super::decode_page)'s result: one page decoded for people, by page type.

use barracuda_page_compression::{is_page_compressed, verify_envelope};
use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;

use barracuda_page::{
    verify_page, AllocationBitmap, CatalogPage, FileHeader, IndexPage, OverflowPage, PageError,
    PageId, PageNo, PageSize, PageType, SpaceHeader, ValueRef,
};

use super::page_no_text;

/// A page decoded for people: header fields, verification result and body.
#[derive(Clone, Debug)]
pub struct PageView {
    /// The file the page was read from.
    pub file: PathBuf,
    /// The page's expected id (space of the file, page number asked for).
    pub page_id: PageId,
    /// The page size.
    pub page_size: PageSize,
    /// How the page is stored when that is not as itself: a page-compressed envelope
    /// (algorithm and stored bytes); the rest of the view is of the page inside it.
    pub stored_as: Option<String>,
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
    /// A page of a transaction's undo log.
    Undo {
        /// The log header, on the log's first page.
        log: Option<barracuda_page::UndoLogHeader>,
        /// Records on this page.
        records: usize,
        /// The next page of the log, or `FIL_NULL`.
        next: PageNo,
    },
    /// A rollback segment page of the undo tablespace (page 1: also the transaction system
    /// page).
    TrxSys {
        /// Every transaction id handed out is below this (0 on segments but the first).
        max_trx_id: u64,
        /// Rollback segments of the tablespace (0 on segments but the first).
        rseg_count: u32,
        /// Committed logs waiting for purge.
        history_len: u32,
        /// Undo logs of transactions that have not committed.
        active_logs: usize,
        /// The newest cached undo log header page, `FIL_NULL` when none.
        cache_first: PageNo,
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
    /// Decodes `raw`, the bytes of page `page_id` as read from `file`, as far as they allow:
    /// a page-compressed envelope is checked and decompressed first.
    pub(super) fn decode(file: PathBuf, page_id: PageId, page_size: PageSize, raw: &[u8]) -> Self {
        let mut page = raw.to_vec();
        let (stored_as, envelope_error) = if is_page_compressed(raw) {
            let stored = verify_envelope(raw, page_id, page_size).map(|h| {
                format!(
                    "page-compressed ({:?}): {} of {} bytes stored, original type {:?}",
                    h.algorithm,
                    h.stored_len,
                    page_size.bytes(),
                    h.original_type
                )
            });
            let decoded =
                crate::compression::decode_stored_page(&mut page, page_id, page_size, None);
            (
                Some(stored.unwrap_or_else(|_| "page-compressed (damaged envelope)".into())),
                decoded.err().map(|e| e.to_string()),
            )
        } else if barracuda_row_compression::is_compressed_block(raw) {
            match crate::row_compression::find_block(raw, page_id) {
                Ok(Some(block)) => {
                    let decoded = crate::row_compression::decompress_block(
                        block, page_id, page_size, &mut page, None,
                    );
                    (
                        Some(format!(
                            "row-compressed block of {} bytes (ROW_FORMAT=COMPRESSED)",
                            block.len()
                        )),
                        decoded.err().map(|e| e.to_string()),
                    )
                }
                Ok(None) => (None, None),
                Err(e) => (
                    Some("row-compressed block (damaged)".into()),
                    Some(e.to_string()),
                ),
            }
        } else {
            (None, None)
        };
        let buf = &page[..];
        let verify_error = envelope_error.or_else(|| {
            verify_page(buf, page_id, page_size)
                .err()
                .map(|e| e.to_string())
        });
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
            stored_as,
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
                // IndexPage::open validated every record, so none is dropped here.
                records: page
                    .iter()
                    .flatten()
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
        PageType::Undo => match barracuda_page::UndoPage::open(buf, page_size) {
            Ok(page) => PageBody::Undo {
                log: page.log_header(),
                records: page.records().count(),
                next: page.next_page(),
            },
            Err(e) => undecodable(e),
        },
        PageType::TrxSys => match barracuda_page::TrxSysPage::open(buf, page_size) {
            Ok(page) => PageBody::TrxSys {
                max_trx_id: page.max_trx_id(),
                rseg_count: page.rseg_count(),
                history_len: page.history_len(),
                active_logs: page.active_logs().count(),
                cache_first: page.cache_first(),
            },
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
        if let Some(stored) = &self.stored_as {
            writeln!(f, "stored as: {stored}")?;
        }
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
            PageBody::Undo { log, records, next } => {
                if let Some(log) = log {
                    writeln!(
                        f,
                        "undo log header: transaction {}, commit number {}, {:?}, {} records, \
                         appending to page {}, next in history {}",
                        log.trx_id,
                        log.trx_no,
                        log.state,
                        log.records,
                        log.last_page,
                        page_no_text(log.history_next)
                    )?;
                }
                writeln!(
                    f,
                    "undo page: {records} records, next page {}",
                    page_no_text(*next)
                )
            }
            PageBody::TrxSys {
                max_trx_id,
                rseg_count,
                history_len,
                active_logs,
                cache_first,
            } => writeln!(
                f,
                "rollback segment: ids below {max_trx_id}, {rseg_count} segments (page 1 only), \
                 history list length {history_len}, {active_logs} active undo logs, newest \
                 cached header page {}",
                page_no_text(*cache_first)
            ),
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
