//! Row compression in the engine (issue 12, InnoDB's `ROW_FORMAT=COMPRESSED`): how the blocks
//! of compressed tables reach the disk and come back.
//!
//! A compressed table's file keeps page slots of the page size, as every tablespace does, so
//! a page's place is one formula whatever it holds. An index page of the table is stored as
//! its block — `KEY_BLOCK_SIZE` bytes at the start of its slot, the rest of the slot punched
//! out (or never written: files grow sparse) — and read back by reading only those bytes.
//! Every other page (the space header, overflow pages, an index page that did not fit its
//! block) is stored whole. InnoDB instead gives such a tablespace a physical page size of
//! `KEY_BLOCK_SIZE` and stores every page type in it, BLOBs compressed into chains of blocks
//! (`page_zip_compress_write_log`, `btr_store_big_rec_extern_fields` with `page_zip`); slots
//! of the logical size cost nothing on a file system with holes and keep one reader for every
//! page (`docs/ARCHITECTURE.md`, "Row compression").
//!
//! Readers tell a block from a page by its FIL header's page type
//! ([`barracuda_row_compression::PAGE_TYPE_COMPRESSED_INDEX`]) and find its size by its
//! trailer, so recovery, the torn-page check and the offline tools need no table options.

use std::cell::RefCell;

use std::sync::Arc;

use crate::options::{RowFormat, TableOptions};
use barracuda_btree::BTree;
use barracuda_page::{PageId, PageSize};
use barracuda_row_compression::{
    is_compressed_block, seal_block, verify_block, BlockSize, CmpRow, CompressedPage,
    CompressionStats, Compressor, RowCompressionError,
};

thread_local! {
    /// Each reading thread's decompressor and a block-sized scratch buffer.
    static DECOMPRESSOR: RefCell<(Compressor, Vec<u8>)> = RefCell::new((Compressor::new(), Vec::new()));
}

/// The block at the start of `bytes` (a slot as read, or a block as written), if `bytes`
/// start with one that verifies: its size is the first block size whose trailer and checksum
/// check out. `None`: not a block. `Err`: a block header whose every candidate size fails
/// verification (damaged), naming the error at the size that matched the header best.
pub(crate) fn find_block(bytes: &[u8], id: PageId) -> Result<Option<&[u8]>, RowCompressionError> {
    if !is_compressed_block(bytes) {
        return Ok(None);
    }
    let mut first_error = None;
    for size in BlockSize::ALL {
        let Some(candidate) = bytes.get(..size.bytes()) else {
            break;
        };
        match verify_block(candidate, id) {
            Ok(()) => return Ok(Some(candidate)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        RowCompressionError::corrupt(id, "a compressed block shorter than 1 KiB".to_owned())
    }))
}

/// Decompresses `block` (verified) into `page`, counting the decompression in `stats`.
pub(crate) fn decompress_block(
    block: &[u8],
    id: PageId,
    page_size: PageSize,
    page: &mut [u8],
    stats: Option<&CompressionStats>,
) -> Result<(), RowCompressionError> {
    let zip = CompressedPage::open(block, id, page_size)?;
    DECOMPRESSOR.with(|cell| {
        let (compressor, _) = &mut *cell.borrow_mut();
        compressor.decompress(&zip, page, stats)
    })
}

/// When `buf` (one page slot as read) starts with a compressed block, verifies it and
/// decompresses it in place; returns whether it did. A slot that holds a page is left alone.
pub(crate) fn decode_slot(
    buf: &mut [u8],
    id: PageId,
    page_size: PageSize,
    stats: Option<&CompressionStats>,
) -> Result<bool, RowCompressionError> {
    let Some(block) = find_block(buf, id)? else {
        return Ok(false);
    };
    let block = block.to_vec();
    decompress_block(&block, id, page_size, buf, stats)?;
    Ok(true)
}

/// Writes the disk image of a compressed block into `slot` (at least as long): copied and
/// sealed. Returns its length.
pub(crate) fn encode_block(block: &[u8], slot: &mut [u8]) -> usize {
    let len = block.len().min(slot.len());
    if let (Some(dst), Some(src)) = (slot.get_mut(..len), block.get(..len)) {
        dst.copy_from_slice(src);
        seal_block(dst);
    }
    len
}

/// Row compression's counters in `status()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RowCompressionStatus {
    /// INFORMATION_SCHEMA.INNODB_CMP: per block size (1 KiB first), compressions tried and
    /// fitted, decompressions, and their times.
    pub cmp: Vec<CmpRow>,
    /// Frames of the buffer pool lent to compressed blocks.
    pub zip_frames: usize,
    /// Compressed blocks held in the pool, per size (INNODB_CMPMEM's `pages_used`); a block
    /// of a whole page is counted in `zip_frames` only.
    pub blocks_in_pool: Vec<(usize, u64)>,
    /// Pages in the pool with a block beside their frame (InnoDB's unzip LRU length: the
    /// pages whose uncompressed frame could be dropped while the block stays).
    pub unzip_lru_len: usize,
    /// Compressed-only pages: blocks kept after their frame was dropped.
    pub zip_only_pages: usize,
    /// Frames dropped with the page's block kept (evictions from the unzip LRU).
    pub frames_dropped_keeping_block: u64,
    /// Reads served by decompressing a compressed-only page, with no I/O.
    pub zip_only_hits: u64,
    /// Per compressed table: its name, block size, and its index's adaptive padding.
    pub tables: Vec<CompressedTableStatus>,
}

/// One compressed table in [`RowCompressionStatus`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompressedTableStatus {
    /// The table.
    pub name: String,
    /// Its `KEY_BLOCK_SIZE` in bytes.
    pub block_size: usize,
    /// Its own counters (INFORMATION_SCHEMA.INNODB_CMP_PER_INDEX): compressions of its pages
    /// tried and fitted, its blocks decompressed, and their times.
    pub cmp: CmpRow,
    /// The padding its index keeps free in each page now (INNODB_CMP_PER_INDEX's padding).
    pub padding: usize,
    /// How often the padding grew and shrank.
    pub padding_changes: (u64, u64),
}

impl CompressedTableStatus {
    pub(crate) fn new(
        name: String,
        block_size: usize,
        cmp: CmpRow,
        padding: usize,
        padding_changes: (u64, u64),
    ) -> Self {
        Self {
            name,
            block_size,
            cmp,
            padding,
            padding_changes,
        }
    }
}

/// Row compression's part of `status()`.
pub(crate) fn status(
    inner: &crate::engine::EngineInner,
    pool: &barracuda_buffer_pool::PoolStats,
) -> RowCompressionStatus {
    let mut tables: Vec<CompressedTableStatus> = inner
        .tables
        .read()
        .values()
        .filter_map(|t| {
            let zip = t.tree.compression()?;
            let space = inner.spaces.get(t.tree.space())?;
            let block = zip.block().bytes();
            let cmp = space
                .row_stats()?
                .snapshot()
                .into_iter()
                .find(|r| r.block_size == block)
                .unwrap_or_default();
            Some(CompressedTableStatus::new(
                t.name.clone(),
                block,
                cmp,
                zip.padding().pad(),
                zip.padding().changes(),
            ))
        })
        .collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    // Engine-wide: every table's counters, and what was decompressed outside a table's
    // reads (recovery, the torn-page check).
    let mut cmp = inner.spaces.encoder().counters().row.snapshot();
    for t in &tables {
        if let Some(row) = cmp.iter_mut().find(|r| r.block_size == t.block_size) {
            row.compress_ops += t.cmp.compress_ops;
            row.compress_ops_ok += t.cmp.compress_ops_ok;
            row.compress_time_us += t.cmp.compress_time_us;
            row.uncompress_ops += t.cmp.uncompress_ops;
            row.uncompress_time_us += t.cmp.uncompress_time_us;
        }
    }
    RowCompressionStatus {
        cmp,
        zip_frames: pool.zip_frames,
        blocks_in_pool: pool
            .zip_blocks
            .iter()
            .map(|c| (c.block_bytes, c.used))
            .collect(),
        unzip_lru_len: pool.zip_pages,
        zip_only_pages: pool.zip_only_pages,
        frames_dropped_keeping_block: pool.frames_dropped_keeping_block,
        zip_only_hits: pool.zip_only_hits,
        tables,
    }
}

/// A table's tree with its row compression, if its row format compresses (counted in
/// `stats`, the table's INNODB_CMP_PER_INDEX counters, which its tablespace's reads share).
pub(crate) fn open_tree(
    tree: BTree,
    options: TableOptions,
    stats: Option<&Arc<barracuda_row_compression::CompressionStats>>,
) -> BTree {
    match options.row_format {
        RowFormat::Compressed { algorithm, .. } => match (options.row_format.block_size(), stats) {
            (Some(block), Some(stats)) => {
                let zip = barracuda_btree::ZipIndex::new(
                    tree.space(),
                    block,
                    algorithm,
                    tree.context().pool().page_size(),
                    stats.clone(),
                );
                tree.with_compression(Arc::new(zip))
            }
            _ => tree,
        },
        _ => tree,
    }
}
