//! Where things are in a compressed block (FORMATS §14): the header fields, the per-record
//! trailer, and the checks a block read from disk must pass before anything else reads it.

use barracuda_page::header::{
    OFF_LSN, OFF_PAGE_NO, OFF_PAGE_TYPE, OFF_PREV, OFF_SPACE_ID, OFF_TYPE_SPECIFIC,
};
use barracuda_page::index::HEAP_START;
use barracuda_page::{
    PageId, PageSize, SysFields, FIL_HEADER_SIZE, FIL_TRAILER_SIZE, TRAILER_MAGIC,
};

use crate::codec::{CODE_DEFLATE, CODE_LZ4};
use crate::error::{Result, RowCompressionError};
use crate::BlockSize;
use barracuda_page::bytes::{
    put, put_u16, put_u32, put_u64, put_uint, u16_at, u32_at, u64_at, u8_at, uint_at, zero,
};

/// The page type of a compressed index block (FORMATS §4: reserved 16 until now).
pub const PAGE_TYPE_COMPRESSED_INDEX: u16 = 16;

/// Codec code (u8) in the type-specific field.
pub(crate) const OFF_CODEC: usize = OFF_TYPE_SPECIFIC;
/// log2 of the uncompressed page size (u8).
pub(crate) const OFF_PAGE_SHIFT: usize = OFF_TYPE_SPECIFIC + 1;
/// Length of the compressed stream (u16).
pub(crate) const OFF_STREAM_LEN: usize = OFF_TYPE_SPECIFIC + 2;
/// Offset of the log's end marker (u16).
pub(crate) const OFF_LOG_END: usize = OFF_TYPE_SPECIFIC + 4;
/// Records on the page now (u16): the number of trailer entries.
pub(crate) const OFF_N_RECS: usize = OFF_TYPE_SPECIFIC + 6;
/// The base index header (the page's, as it was when the stream was made) starts here.
pub(crate) const BASE_HEADER: usize = FIL_HEADER_SIZE;
/// The compressed stream starts here.
pub(crate) const STREAM_START: usize = HEAP_START;
/// Offset of the level inside the index header.
pub(crate) const OFF_LEVEL: usize = FIL_HEADER_SIZE;
/// Offset of `n_recs` inside the index header.
pub(crate) const OFF_BASE_N_RECS: usize = FIL_HEADER_SIZE + 2;
/// Offset of `heap_top` inside the index header.
pub(crate) const OFF_BASE_HEAP_TOP: usize = FIL_HEADER_SIZE + 4;

/// Bytes of a leaf record's trailer entry: its first byte (kind and delete mark), `trx_id`
/// (6) and `roll_ptr` (7).
pub(crate) const LEAF_ENTRY: usize = 14;
/// Bytes of an internal record's trailer entry: its child page number.
pub(crate) const CHILD_ENTRY: usize = 4;
/// Bytes of an overflow reference in the trailer: `first_page` (4) and `total_len` (8).
pub(crate) const OVERFLOW_REF: usize = 12;

/// Kind bits of a record's first byte (FORMATS §5.3).
pub(crate) const KIND_MASK: u8 = 0b11;
/// Kind of an overflow record.
pub(crate) const KIND_OVERFLOW: u8 = 1;
/// The delete mark in a leaf record's first byte.
pub(crate) const DELETE_MARK: u8 = 0x20;

/// The uncompressed, per-record part of a leaf record: what MVCC rewrites in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafEntry {
    /// The record's first byte: kind (0 inline, 1 overflow) and delete mark.
    pub(crate) info: u8,
    /// `trx_id` and `roll_ptr`.
    pub(crate) sys: SysFields,
}

/// An overflow record's pointer to its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OverflowRef {
    pub(crate) first_page: u32,
    pub(crate) total_len: u64,
}

/// The trailer, decoded: one entry per record in key order, and (leaf pages) one overflow
/// reference per overflow record, in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Trailer {
    /// A leaf page's entries and overflow references.
    Leaf(Vec<LeafEntry>, Vec<OverflowRef>),
    /// An internal page's child page numbers.
    Internal(Vec<u32>),
}

impl Trailer {
    /// Records it describes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Leaf(e, _) => e.len(),
            Self::Internal(c) => c.len(),
        }
    }

    /// Bytes it takes in the block.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Self::Leaf(e, o) => e.len() * LEAF_ENTRY + o.len() * OVERFLOW_REF,
            Self::Internal(c) => c.len() * CHILD_ENTRY,
        }
    }

    /// How many overflow records come before position `pos`.
    pub(crate) fn overflow_rank(entries: &[LeafEntry], pos: usize) -> usize {
        entries
            .iter()
            .take(pos)
            .filter(|e| e.info & KIND_MASK == KIND_OVERFLOW)
            .count()
    }

    /// Writes the trailer to the end of `block` (before the FIL trailer), and zeroes the
    /// `previous` bytes it no longer covers when it shrank.
    pub(crate) fn write(&self, block: &mut [u8], previous: usize) {
        let end = block.len() - FIL_TRAILER_SIZE;
        let now = self.bytes();
        if previous > now {
            zero(block, end - previous, end - now);
        }
        match self {
            Self::Leaf(entries, refs) => {
                for (i, e) in entries.iter().enumerate() {
                    let at = end - LEAF_ENTRY * (i + 1);
                    put(block, at, &[e.info]);
                    put_uint::<6>(block, at + 1, e.sys.trx_id);
                    put_uint::<7>(block, at + 7, e.sys.roll_ptr);
                }
                let dense = end - LEAF_ENTRY * entries.len();
                for (j, r) in refs.iter().enumerate() {
                    let at = dense - OVERFLOW_REF * (j + 1);
                    put_u32(block, at, r.first_page);
                    put_u64(block, at + 4, r.total_len);
                }
            }
            Self::Internal(children) => {
                for (i, c) in children.iter().enumerate() {
                    put_u32(block, end - CHILD_ENTRY * (i + 1), *c);
                }
            }
        }
    }

    /// Reads `n` records' trailer from `block`, checking each leaf entry's kind byte. `limit`
    /// is the lowest offset the trailer may reach (just above the log's end marker).
    pub(crate) fn read(
        block: &[u8],
        leaf: bool,
        n: usize,
        limit: usize,
        page: PageId,
    ) -> Result<Self> {
        let end = block.len() - FIL_TRAILER_SIZE;
        let too_long = |need: usize| {
            RowCompressionError::corrupt(
                page,
                format!(
                    "the trailer of {n} records needs {need} bytes but only {} are left above the log's end",
                    end.saturating_sub(limit)
                ),
            )
        };
        if leaf {
            let dense = n
                .checked_mul(LEAF_ENTRY)
                .filter(|&b| b <= end.saturating_sub(limit));
            let dense = dense.ok_or_else(|| too_long(n.saturating_mul(LEAF_ENTRY)))?;
            let mut entries = Vec::with_capacity(n);
            for i in 0..n {
                let at = end - LEAF_ENTRY * (i + 1);
                let info = u8_at(block, at).unwrap_or(0xFF);
                if info & !(KIND_MASK | DELETE_MARK) != 0 || info & KIND_MASK > KIND_OVERFLOW {
                    return Err(RowCompressionError::corrupt(
                        page,
                        format!("trailer entry {i} has first byte {info:#04x}, expected 0x00, 0x01, 0x20 or 0x21"),
                    ));
                }
                let trx_id = uint_at::<6>(block, at + 1).unwrap_or(0);
                let roll_ptr = uint_at::<7>(block, at + 7).unwrap_or(0);
                entries.push(LeafEntry {
                    info,
                    sys: SysFields {
                        trx_id,
                        roll_ptr,
                        deleted: info & DELETE_MARK != 0,
                    },
                });
            }
            let n_ovf = Self::overflow_rank(&entries, n);
            let total = dense + n_ovf * OVERFLOW_REF;
            if total > end.saturating_sub(limit) {
                return Err(too_long(total));
            }
            let base = end - dense;
            let refs = (0..n_ovf)
                .map(|j| {
                    let at = base - OVERFLOW_REF * (j + 1);
                    OverflowRef {
                        first_page: u32_at(block, at).unwrap_or(0),
                        total_len: u64_at(block, at + 4).unwrap_or(0),
                    }
                })
                .collect();
            Ok(Self::Leaf(entries, refs))
        } else {
            let bytes = n.saturating_mul(CHILD_ENTRY);
            if bytes > end.saturating_sub(limit) {
                return Err(too_long(bytes));
            }
            Ok(Self::Internal(
                (0..n)
                    .map(|i| u32_at(block, end - CHILD_ENTRY * (i + 1)).unwrap_or(0))
                    .collect(),
            ))
        }
    }
}

/// The fixed fields of a block's header, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHeader {
    pub(crate) page: PageId,
    pub(crate) page_size: PageSize,
    pub(crate) codec: u8,
    pub(crate) stream_len: usize,
    pub(crate) log_end: usize,
    pub(crate) n_recs: usize,
    pub(crate) leaf: bool,
}

impl BlockHeader {
    /// Reads and checks the header of `block` (its length is the block size): the type, the
    /// codec, the page size against `page_size` and the block, the stream and log bounds and
    /// the end marker. `expected` names the page in errors (and must match the header's).
    pub(crate) fn read(block: &[u8], expected: PageId, page_size: PageSize) -> Result<Self> {
        let corrupt = |what: String| RowCompressionError::corrupt(expected, what);
        let b = block.len();
        if BlockSize::from_bytes(b).is_none() {
            return Err(corrupt(format!(
                "{b} bytes is not a block size (1, 2, 4, 8 or 16 KiB)"
            )));
        }
        let page_type = u16_at(block, OFF_PAGE_TYPE).unwrap_or(0);
        if page_type != PAGE_TYPE_COMPRESSED_INDEX {
            return Err(corrupt(format!(
                "page type {page_type}, expected {PAGE_TYPE_COMPRESSED_INDEX} (compressed index page)"
            )));
        }
        let page = PageId::new(
            u32_at(block, OFF_SPACE_ID).unwrap_or(0),
            u32_at(block, OFF_PAGE_NO).unwrap_or(0),
        );
        if page != expected {
            return Err(corrupt(format!("the block says it is page {page}")));
        }
        let shift = u8_at(block, OFF_PAGE_SHIFT).unwrap_or(0);
        if shift != page_size.shift() {
            return Err(corrupt(format!(
                "page size shift {shift}, expected {} (a {}-byte page)",
                page_size.shift(),
                page_size.bytes()
            )));
        }
        if b > page_size.bytes() {
            return Err(corrupt(format!(
                "a {b}-byte block of a {}-byte page",
                page_size.bytes()
            )));
        }
        let codec = u8_at(block, OFF_CODEC).unwrap_or(0);
        if codec != CODE_DEFLATE && codec != CODE_LZ4 {
            return Err(corrupt(format!(
                "codec {codec}, expected 1 (deflate) or 2 (LZ4)"
            )));
        }
        let stream_len = usize::from(u16_at(block, OFF_STREAM_LEN).unwrap_or(0));
        let log_end = usize::from(u16_at(block, OFF_LOG_END).unwrap_or(0));
        let data_end = b - FIL_TRAILER_SIZE;
        let log_start = STREAM_START + stream_len;
        if stream_len == 0 || log_end < log_start || log_end >= data_end {
            return Err(corrupt(format!(
                "stream of {stream_len} bytes and log end at {log_end}: expected a stream of at least one byte and {log_start} <= log end < {data_end}"
            )));
        }
        if u8_at(block, log_end) != Some(0) {
            return Err(corrupt(format!(
                "no end marker (0x00) at the log's end, offset {log_end}"
            )));
        }
        let n_recs = usize::from(u16_at(block, OFF_N_RECS).unwrap_or(0));
        let leaf = u16_at(block, OFF_LEVEL).unwrap_or(0) == 0;
        Ok(Self {
            page,
            page_size,
            codec,
            stream_len,
            log_end,
            n_recs,
            leaf,
        })
    }

    /// Writes the fields this crate owns (type, codec, page size, stream and log, records).
    pub(crate) fn write(&self, block: &mut [u8]) {
        put_u16(block, OFF_PAGE_TYPE, PAGE_TYPE_COMPRESSED_INDEX);
        put(block, OFF_CODEC, &[self.codec, self.page_size.shift()]);
        put_u16(block, OFF_STREAM_LEN, self.stream_len as u16);
        put_u16(block, OFF_LOG_END, self.log_end as u16);
        put_u16(block, OFF_N_RECS, self.n_recs as u16);
    }
}

/// Whether `bytes` start like a compressed block: the page type in the FIL header is
/// [`PAGE_TYPE_COMPRESSED_INDEX`]. A hint for readers choosing a decoder, not a verification
/// ([`verify_block`] is).
pub fn is_compressed_block(bytes: &[u8]) -> bool {
    barracuda_page::bytes::u16_at(bytes, OFF_PAGE_TYPE) == Some(PAGE_TYPE_COMPRESSED_INDEX)
}

/// Seals `block`: the LSN's low half and the magic in its FIL trailer, then the CRC-32C of
/// bytes `4..` at offset 0 — as a page is sealed (FORMATS §2), at the block's length.
pub fn seal_block(block: &mut [u8]) {
    let len = block.len();
    if len < FIL_HEADER_SIZE + FIL_TRAILER_SIZE {
        return;
    }
    let lsn_low = u32_at(block, OFF_LSN).unwrap_or(0);
    put_u32(block, len - FIL_TRAILER_SIZE, lsn_low);
    put_u32(block, len - 4, TRAILER_MAGIC);
    let crc = barracuda_page::crc32c(block.get(4..).unwrap_or_default());
    put_u32(block, 0, crc);
}

/// Verifies a block read from disk as [`verify_page`](barracuda_page::verify_page) verifies a
/// page (FORMATS §3, at the block's length): trailer magic (an all-zero block was never
/// written), the LSN's low half against the header's (a torn write), the checksum, then the
/// page type and the page id. Does not look inside: [`CompressedPage::from_block`] and
/// decompression check the rest.
///
/// [`CompressedPage::from_block`]: crate::CompressedPage::from_block
pub fn verify_block(block: &[u8], expected: PageId) -> Result<()> {
    let corrupt = |what: String| RowCompressionError::corrupt(expected, what);
    let len = block.len();
    if BlockSize::from_bytes(len).is_none() {
        return Err(corrupt(format!(
            "{len} bytes is not a block size (1, 2, 4, 8 or 16 KiB)"
        )));
    }
    if u32_at(block, len - 4) != Some(TRAILER_MAGIC) {
        if block.iter().all(|&b| b == 0) {
            return Err(corrupt("the block is all zeros (never written)".into()));
        }
        return Err(corrupt("bad trailer magic (expected \"BRC1\")".into()));
    }
    let lsn = u64_at(block, OFF_LSN).unwrap_or(0);
    if u32_at(block, len - FIL_TRAILER_SIZE) != Some(lsn as u32) {
        return Err(corrupt(format!(
            "the trailer's LSN does not match the header's {lsn}: a torn write"
        )));
    }
    let stored = u32_at(block, 0).unwrap_or(0);
    let computed = barracuda_page::crc32c(block.get(4..).unwrap_or_default());
    if stored != computed {
        return Err(corrupt(format!(
            "checksum {stored:#010x} stored, {computed:#010x} computed"
        )));
    }
    let page_type = u16_at(block, OFF_PAGE_TYPE).unwrap_or(0);
    if page_type != PAGE_TYPE_COMPRESSED_INDEX {
        return Err(corrupt(format!(
            "page type {page_type}, expected {PAGE_TYPE_COMPRESSED_INDEX} (compressed index page)"
        )));
    }
    let found = PageId::new(
        u32_at(block, OFF_SPACE_ID).unwrap_or(0),
        u32_at(block, OFF_PAGE_NO).unwrap_or(0),
    );
    if found != expected {
        return Err(corrupt(format!("the block holds page {found}")));
    }
    Ok(())
}

/// Header bytes of the FIL header that a change may write in place in the block (no log): the
/// sibling links and the LSN.
pub(crate) fn header_writable(offset: usize, len: usize) -> bool {
    offset >= OFF_PREV && offset.saturating_add(len) <= OFF_LSN + 8
}
