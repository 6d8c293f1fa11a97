//! Compression of an index page into a block, and decompression of a block (stream, log and
//! trailer) back into the page.
//!
//! The stream holds the page's record heap and slot directory with each leaf record's
//! transaction fields and delete mark zeroed: the trailer holds them, uncompressed, and they
//! are the bytes that compress worst (InnoDB strips `DB_TRX_ID` and `DB_ROLL_PTR` the same
//! way). Child page numbers and overflow references stay in the stream too, but the trailer's
//! copies are the ones that count, so that rewriting them needs no recompression.

use std::time::Instant;

use barracuda_page::header::{
    OFF_LSN, OFF_NEXT, OFF_PAGE_NO, OFF_PAGE_TYPE, OFF_PREV, OFF_SPACE_ID,
};
use barracuda_page::index::{
    HEAP_START, INLINE_SYS_OFFSET, MAX_OVERFLOW_LEN, OVERFLOW_SYS_OFFSET, SLOT_SIZE,
};
use barracuda_page::{
    seal_page, zero_unused_space, IndexPage, PageId, PageSize, PageType, Record, SysFields,
    ValueRef, FIL_HEADER_SIZE, FIL_TRAILER_SIZE, SYS_FIELDS_SIZE,
};

use crate::codec::{Codec, Codecs};
use crate::error::{Result, RowCompressionError};
use crate::layout::{
    BlockHeader, LeafEntry, OverflowRef, Trailer, BASE_HEADER, DELETE_MARK, OFF_BASE_HEAP_TOP,
    OFF_BASE_N_RECS, STREAM_START,
};
use crate::mlog;
use crate::page::CompressedPage;
use crate::stats::CompressionStats;
use crate::BlockSize;
use barracuda_page::bytes::{put, put_u16, u16_at, u32_at, zero};

/// Compresses and decompresses pages, keeping codec state between calls (one per thread).
pub struct Compressor {
    codecs: Codecs,
    /// The stream's input, reused.
    input: Vec<u8>,
    /// The block being built, reused: copied out only when the page fits.
    block: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compressor {
    /// A compressor with no codec state yet (made at first use).
    pub fn new() -> Self {
        Self {
            codecs: Codecs::new(),
            input: Vec::new(),
            block: Vec::new(),
        }
    }

    /// Compresses index page `page` into a block of `block` bytes with `codec`: a fresh
    /// stream, an empty modification log, the trailer.
    ///
    /// `page` is first made canonical in place: its free space and garbage are zeroed
    /// ([`zero_unused_space`]; what it means does not change). Decompressing the block gives
    /// exactly `page` then, sealed.
    ///
    /// Fails with [`RowCompressionError::DoesNotFit`] when the stream does not fit the room the
    /// trailer leaves (InnoDB's compression failure: split the page), with
    /// [`RowCompressionError::BadBlockSize`] when the block is larger than the page, and with
    /// [`RowCompressionError::Page`] when `page` is not a valid index page. `stats`, if
    /// given, counts the attempt, its outcome and its time (INNODB_CMP).
    pub fn compress(
        &mut self,
        page: &mut [u8],
        page_size: PageSize,
        block: BlockSize,
        codec: Codec,
        stats: Option<&CompressionStats>,
    ) -> Result<CompressedPage> {
        let header = self.compress_timed(page, page_size, block, codec, stats)?;
        let bytes: Box<[u8]> = self.block.as_slice().into();
        Ok(CompressedPage::from_parts(bytes, header))
    }

    /// As [`compress`](Self::compress), into `out` (whose length is the block size, one of
    /// [`BlockSize`]'s): where the block lives, such as the buffer pool's memory. `out` is
    /// written only when the page fits, so a failed recompression leaves the block it held.
    pub fn compress_into<'o>(
        &mut self,
        page: &mut [u8],
        page_size: PageSize,
        codec: Codec,
        out: &'o mut [u8],
        stats: Option<&CompressionStats>,
    ) -> Result<CompressedPage<&'o mut [u8]>> {
        let block = BlockSize::from_bytes(out.len()).ok_or(RowCompressionError::BadBlockSize {
            block: out.len(),
            page_size: page_size.bytes(),
        })?;
        let header = self.compress_timed(page, page_size, block, codec, stats)?;
        out.copy_from_slice(&self.block);
        Ok(CompressedPage::from_parts(out, header))
    }

    /// Whether `bytes` compress with `codec` to at most `limit` bytes: how a tree decides
    /// that a long value can still live in a compressed page (its record is stored
    /// uncompressed in the frame but must fit the block compressed). Not counted in the stats.
    pub fn compresses_within(&mut self, codec: Codec, bytes: &[u8], limit: usize) -> bool {
        let mut out = std::mem::take(&mut self.block);
        out.clear();
        out.resize(limit, 0);
        let fits = self.codecs.compress(codec, bytes, &mut out).is_some();
        self.block = out;
        fits
    }

    /// Compresses into `self.block`, counting the attempt in `stats`.
    pub(crate) fn compress_timed(
        &mut self,
        page: &mut [u8],
        page_size: PageSize,
        block: BlockSize,
        codec: Codec,
        stats: Option<&CompressionStats>,
    ) -> Result<BlockHeader> {
        let started = Instant::now();
        let result = self.compress_inner(page, page_size, block, codec);
        if let Some(stats) = stats {
            stats.record_compress(block, result.is_ok(), started.elapsed());
        }
        result
    }

    fn compress_inner(
        &mut self,
        page: &mut [u8],
        page_size: PageSize,
        block: BlockSize,
        codec: Codec,
    ) -> Result<BlockHeader> {
        let b = block.bytes();
        if b > page_size.bytes() {
            return Err(RowCompressionError::BadBlockSize {
                block: b,
                page_size: page_size.bytes(),
            });
        }
        let (id, trailer, heap_top) = {
            let index =
                IndexPage::open(&*page, page_size).map_err(|source| RowCompressionError::Page {
                    page: page_id_of(page),
                    source,
                })?;
            let id = index.page_id();
            (id, trailer_of(&index, id)?, index.heap_top())
        };
        zero_unused_space(page, page_size)
            .map_err(|source| RowCompressionError::Page { page: id, source })?;
        self.stream_input(page, page_size, &trailer, heap_top, id)?;

        self.block.clear();
        self.block.resize(b, 0);
        let out = &mut self.block[..];
        // Room for the stream: the block less the headers, the trailer and the log's end marker.
        let available = (b - FIL_TRAILER_SIZE).saturating_sub(STREAM_START + trailer.bytes() + 1);
        let does_not_fit = |needed| RowCompressionError::DoesNotFit {
            page: id,
            block: b,
            available,
            needed,
        };
        if available == 0 {
            return Err(does_not_fit(
                STREAM_START + trailer.bytes() + 1 + FIL_TRAILER_SIZE - b + 1,
            ));
        }
        let stream_len = {
            let dst = out
                .get_mut(STREAM_START..STREAM_START + available)
                .unwrap_or_default();
            self.codecs
                .compress(codec, &self.input, dst)
                .filter(|&n| n > 0 && n <= available)
                .ok_or_else(|| does_not_fit(available + 1))?
        };
        put(out, 0, page.get(..FIL_HEADER_SIZE).unwrap_or_default());
        put(
            out,
            BASE_HEADER,
            page.get(BASE_HEADER..HEAP_START).unwrap_or_default(),
        );
        let header = BlockHeader {
            page: id,
            page_size,
            codec: codec.code(),
            stream_len,
            log_end: STREAM_START + stream_len,
            n_recs: trailer.len(),
            leaf: matches!(trailer, Trailer::Leaf(..)),
        };
        header.write(out);
        trailer.write(out, 0);
        Ok(header)
    }

    /// The block the last successful compression built.
    pub(crate) fn last_block(&self) -> &[u8] {
        &self.block
    }

    /// Fills `self.input` with the page's heap (transaction fields and delete marks zeroed)
    /// followed by its slot directory, slot 0 first.
    fn stream_input(
        &mut self,
        page: &[u8],
        page_size: PageSize,
        trailer: &Trailer,
        heap_top: usize,
        id: PageId,
    ) -> Result<()> {
        self.input.clear();
        self.input
            .extend_from_slice(page.get(HEAP_START..heap_top).unwrap_or_default());
        let n = trailer.len();
        let slots_at = page_size.bytes() - FIL_TRAILER_SIZE;
        for i in 0..n {
            let off = usize::from(u16_at(page, slots_at - SLOT_SIZE * (i + 1)).unwrap_or(0));
            self.input.extend_from_slice(&(off as u16).to_le_bytes());
            if let Trailer::Leaf(entries, _) = trailer {
                let kind = entries.get(i).map_or(0, |e| e.info & !DELETE_MARK);
                let sys = if kind == 0 {
                    INLINE_SYS_OFFSET
                } else {
                    OVERFLOW_SYS_OFFSET
                };
                let at = off.checked_sub(HEAP_START).ok_or_else(|| {
                    RowCompressionError::corrupt(
                        id,
                        format!("record {i} at offset {off}, inside the header"),
                    )
                })?;
                put(&mut self.input, at, &[kind]);
                zero(&mut self.input, at + sys, at + sys + SYS_FIELDS_SIZE);
            }
        }
        Ok(())
    }

    /// Decompresses `zip` into `out` (one page of its page size): the stream gives the page as
    /// it was compressed, the modification log is replayed on it, the trailer's fields are put
    /// back into the records; the result is validated as a page read from disk would be, its
    /// unused space zeroed, and sealed.
    ///
    /// Fails with [`RowCompressionError::Corrupt`] or [`RowCompressionError::Page`] naming the
    /// page when anything in the block is inconsistent (a damaged or crafted block); `out` is
    /// unspecified then. `stats`, if given, counts the call and its time.
    pub fn decompress<B: AsRef<[u8]>>(
        &mut self,
        zip: &CompressedPage<B>,
        out: &mut [u8],
        stats: Option<&CompressionStats>,
    ) -> Result<()> {
        let started = Instant::now();
        let result = self.decompress_inner(zip, out);
        if let Some(stats) = stats {
            stats.record_uncompress(zip.block_size(), started.elapsed());
        }
        result
    }

    fn decompress_inner<B: AsRef<[u8]>>(
        &mut self,
        zip: &CompressedPage<B>,
        out: &mut [u8],
    ) -> Result<()> {
        let header = zip.header();
        let id = header.page;
        let page_size = header.page_size;
        let p = page_size.bytes();
        let block = zip.as_bytes();
        let corrupt = |what: String| RowCompressionError::corrupt(id, what);
        if out.len() != p {
            return Err(corrupt(format!(
                "decompressing into {} bytes, the page has {p}",
                out.len()
            )));
        }
        out.fill(0);
        // The FIL header from the block, as an index page's.
        for (off, len) in [
            (OFF_PAGE_NO, 4),
            (OFF_PREV, 4),
            (OFF_NEXT, 4),
            (OFF_LSN, 8),
            (OFF_SPACE_ID, 4),
        ] {
            put(out, off, block.get(off..off + len).unwrap_or_default());
        }
        put_u16(out, OFF_PAGE_TYPE, PageType::Index.to_u16());
        put(
            out,
            BASE_HEADER,
            block.get(BASE_HEADER..HEAP_START).unwrap_or_default(),
        );
        let base_n = usize::from(u16_at(out, OFF_BASE_N_RECS).unwrap_or(0));
        let heap_top = usize::from(u16_at(out, OFF_BASE_HEAP_TOP).unwrap_or(0));
        let dir_start = (p - FIL_TRAILER_SIZE).checked_sub(SLOT_SIZE * base_n);
        let heap_len = heap_top.checked_sub(HEAP_START);
        let (Some(dir_start), Some(heap_len)) = (dir_start, heap_len) else {
            return Err(corrupt(format!(
                "the base page's {base_n} records and heap top {heap_top} do not fit a {p}-byte page"
            )));
        };
        if heap_top > dir_start {
            return Err(corrupt(format!(
                "the base page's heap top {heap_top} is above its slot directory at {dir_start}"
            )));
        }
        let expected = heap_len + SLOT_SIZE * base_n;
        self.input.clear();
        self.input.resize(expected, 0);
        let stream = block
            .get(STREAM_START..STREAM_START + header.stream_len)
            .unwrap_or_default();
        self.codecs
            .decompress(header.codec, stream, &mut self.input)
            .map_err(corrupt)?;
        put(
            out,
            HEAP_START,
            self.input.get(..heap_len).unwrap_or_default(),
        );
        for i in 0..base_n {
            let off = u16_at(&self.input, heap_len + SLOT_SIZE * i).unwrap_or(0);
            put_u16(out, p - FIL_TRAILER_SIZE - SLOT_SIZE * (i + 1), off);
        }
        IndexPage::open(&*out, page_size)
            .map_err(|source| RowCompressionError::Page { page: id, source })?;
        let log = block
            .get(STREAM_START + header.stream_len..header.log_end)
            .unwrap_or_default();
        for entry in mlog::entries(log, id)? {
            mlog::replay(&entry, out, page_size, id)?;
        }
        overlay_trailer(out, page_size, &zip.trailer(), id)?;
        IndexPage::open(&*out, page_size)
            .map_err(|source| RowCompressionError::Page { page: id, source })?;
        zero_unused_space(out, page_size)
            .map_err(|source| RowCompressionError::Page { page: id, source })?;
        seal_page(out);
        Ok(())
    }
}

/// The page id a page's header names (for errors about a page that does not open).
fn page_id_of(page: &[u8]) -> PageId {
    PageId::new(
        u32_at(page, OFF_SPACE_ID).unwrap_or(0),
        u32_at(page, OFF_PAGE_NO).unwrap_or(0),
    )
}

/// The trailer of a valid index page: its records' uncompressed fields.
pub(crate) fn trailer_of<B: AsRef<[u8]>>(index: &IndexPage<B>, id: PageId) -> Result<Trailer> {
    let n = index.len();
    let record = |i| {
        index
            .record(i)
            .map_err(|source| RowCompressionError::Page { page: id, source })
    };
    if index.is_leaf() {
        let mut entries = Vec::with_capacity(n);
        let mut refs = Vec::new();
        for i in 0..n {
            let rec = record(i)?;
            let (entry, reference) = leaf_fields(&rec);
            entries.push(entry);
            refs.extend(reference);
        }
        Ok(Trailer::Leaf(entries, refs))
    } else {
        (0..n)
            .map(|i| {
                let rec = record(i)?;
                rec.child_page().ok_or_else(|| {
                    RowCompressionError::corrupt(
                        id,
                        format!("record {i} of an internal page has no child"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Trailer::Internal)
    }
}

/// A leaf record's trailer entry and, for an overflow record, its reference.
pub(crate) fn leaf_fields(rec: &Record<'_>) -> (LeafEntry, Option<OverflowRef>) {
    let (kind, reference) = match rec.value {
        ValueRef::Overflow {
            total_len,
            first_page,
            ..
        } => (
            1,
            Some(OverflowRef {
                first_page,
                total_len,
            }),
        ),
        _ => (0, None),
    };
    let info = if rec.sys.deleted {
        kind | DELETE_MARK
    } else {
        kind
    };
    (LeafEntry { info, sys: rec.sys }, reference)
}

/// Puts the trailer's fields back into the replayed page's records (same lengths: each
/// replace writes in place).
fn overlay_trailer(
    out: &mut [u8],
    page_size: PageSize,
    trailer: &Trailer,
    id: PageId,
) -> Result<()> {
    let page_err = |source| RowCompressionError::Page { page: id, source };
    let mut index = IndexPage::open_trusted(out, page_size).map_err(page_err)?;
    let n = index.len();
    if n != trailer.len() {
        return Err(RowCompressionError::corrupt(
            id,
            format!(
                "the log leaves {n} records, the trailer describes {}",
                trailer.len()
            ),
        ));
    }
    let mut key = Vec::new();
    let mut prefix = Vec::new();
    let mut next_ref = 0;
    for i in 0..n {
        let rec = index.record(i).map_err(page_err)?;
        key.clear();
        key.extend_from_slice(rec.key);
        let mismatch = |what: &str| RowCompressionError::corrupt(id, format!("record {i}: {what}"));
        match (trailer, rec.value) {
            (Trailer::Internal(children), ValueRef::Child(_)) => {
                let child = children.get(i).copied().unwrap_or(0);
                index.set_child(i, child).map_err(page_err)?;
            }
            (Trailer::Leaf(entries, _), ValueRef::Inline(v)) => {
                let e = entries.get(i).ok_or_else(|| mismatch("no trailer entry"))?;
                if e.info & !DELETE_MARK != 0 {
                    return Err(mismatch("the trailer says overflow, the record is inline"));
                }
                prefix.clear();
                prefix.extend_from_slice(v);
                let new = Record::inline(&key, &prefix).with_sys(sys_of(e));
                index.replace(i, &new).map_err(page_err)?;
            }
            (Trailer::Leaf(entries, refs), ValueRef::Overflow { prefix: p, .. }) => {
                let e = entries.get(i).ok_or_else(|| mismatch("no trailer entry"))?;
                if e.info & !DELETE_MARK != 1 {
                    return Err(mismatch(
                        "the trailer says inline, the record is an overflow record",
                    ));
                }
                let r = refs
                    .get(next_ref)
                    .ok_or_else(|| mismatch("no overflow reference"))?;
                next_ref += 1;
                prefix.clear();
                prefix.extend_from_slice(p);
                let new =
                    Record::overflow(&key, &prefix, r.total_len, r.first_page).with_sys(sys_of(e));
                if let Some(what) = shape_problem(&new) {
                    return Err(mismatch(what));
                }
                index.replace(i, &new).map_err(page_err)?;
            }
            _ => return Err(mismatch("its kind does not match the page's level")),
        }
    }
    Ok(())
}

/// The transaction fields of a trailer entry.
fn sys_of(e: &LeafEntry) -> SysFields {
    SysFields {
        trx_id: e.sys.trx_id,
        roll_ptr: e.sys.roll_ptr,
        deleted: e.info & DELETE_MARK != 0,
    }
}

/// Why an overflow reference from the trailer cannot be a record's (the page API would refuse
/// it too; this names it).
fn shape_problem(rec: &Record<'_>) -> Option<&'static str> {
    match rec.value {
        ValueRef::Overflow {
            prefix,
            total_len,
            first_page,
        } => {
            if first_page == barracuda_page::FIL_NULL {
                Some("an overflow reference to no page")
            } else if total_len <= prefix.len() as u64 || total_len > MAX_OVERFLOW_LEN {
                Some("an overflow reference whose length is not above its prefix or above 4 GiB")
            } else {
                None
            }
        }
        _ => None,
    }
}
