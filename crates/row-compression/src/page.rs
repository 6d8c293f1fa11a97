//! A compressed page as the buffer pool keeps it: the block's bytes (owned, or borrowed from
//! wherever the block lives) with its header decoded, and the appends that keep it in step with
//! the uncompressed frame. The trailer is read from the bytes when a change needs it, so a view
//! over pool memory costs nothing to make.
//!
//! Every `log_*` method either changes the block completely (the log entry, the trailer, the
//! header's counts) or not at all: [`RowCompressionError::LogFull`] leaves the block as it was,
//! and the caller recompresses the frame.

use barracuda_page::header::OFF_LSN;
use barracuda_page::{Lsn, PageId, PageSize, Record, ValueRef, FIL_TRAILER_SIZE};

use crate::compress::leaf_fields;
use crate::error::{Result, RowCompressionError};
use crate::layout::{
    seal_block, verify_block, BlockHeader, OverflowRef, Trailer, OFF_LEVEL, OFF_LOG_END,
    OFF_N_RECS, STREAM_START,
};
use crate::mlog::Entry;
use crate::trailer_edit::{Edit, Fields, Shape};
use crate::BlockSize;
use barracuda_page::bytes::{put, put_u16, put_u64};

/// A compressed index page: a block of KEY_BLOCK_SIZE bytes (FORMATS §14) holding the page's
/// header, its records' compressed stream, a modification log and the uncompressed per-record
/// trailer (transaction fields, delete marks, child pages, overflow references), held in `B`
/// (`Box<[u8]>` when owned, `&mut [u8]` over a block that lives elsewhere, `&[u8]` to read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedPage<B = Box<[u8]>> {
    bytes: B,
    header: BlockHeader,
}

impl CompressedPage<Box<[u8]>> {
    /// Reads a block from disk into an owned copy: verified ([`verify_block`]: checksum, torn
    /// write, type, page id), then its header and trailer checked. The stream and the log are
    /// checked when it is decompressed. Errors name `expected`.
    pub fn from_block(bytes: &[u8], expected: PageId, page_size: PageSize) -> Result<Self> {
        verify_block(bytes, expected)?;
        Self::from_unverified(bytes, expected, page_size)
    }

    /// As [`from_block`](Self::from_block) without the checksum (a block that never left
    /// memory, or one the caller verified).
    pub fn from_unverified(bytes: &[u8], expected: PageId, page_size: PageSize) -> Result<Self> {
        CompressedPage::open(Box::from(bytes), expected, page_size)
    }
}

impl<B: AsRef<[u8]>> CompressedPage<B> {
    /// A view of the block in `bytes` (its length is the block size), its header and trailer
    /// checked as [`from_unverified`](CompressedPage::from_unverified) checks them, without
    /// copying it.
    pub fn open(bytes: B, expected: PageId, page_size: PageSize) -> Result<Self> {
        let header = BlockHeader::read(bytes.as_ref(), expected, page_size)?;
        Trailer::read(
            bytes.as_ref(),
            header.leaf,
            header.n_recs,
            header.log_end + 1,
            expected,
        )?;
        Ok(Self { bytes, header })
    }

    pub(crate) fn from_parts(bytes: B, header: BlockHeader) -> Self {
        Self { bytes, header }
    }

    /// The block's bytes (sealed only after [`seal`](Self::seal)).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The bytes, given back.
    pub fn into_inner(self) -> B {
        self.bytes
    }

    /// The page it holds.
    pub fn page_id(&self) -> PageId {
        self.header.page
    }

    /// The uncompressed page's size.
    pub fn page_size(&self) -> PageSize {
        self.header.page_size
    }

    /// The block's size.
    pub fn block_size(&self) -> BlockSize {
        BlockSize::from_bytes(self.as_bytes().len()).unwrap_or(BlockSize::K16)
    }

    /// Whether the page is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.header.leaf
    }

    /// Records on the page.
    pub fn len(&self) -> usize {
        self.header.n_recs
    }

    /// Whether the page has no records.
    pub fn is_empty(&self) -> bool {
        self.header.n_recs == 0
    }

    /// Bytes of the compressed stream.
    pub fn stream_len(&self) -> usize {
        self.header.stream_len
    }

    /// Bytes of modification log (entries, without the end marker).
    pub fn log_len(&self) -> usize {
        self.header.log_end - STREAM_START - self.header.stream_len
    }

    pub(crate) fn header(&self) -> &BlockHeader {
        &self.header
    }

    /// The trailer, read from the bytes (checked when the view was made).
    pub(crate) fn trailer(&self) -> Trailer {
        Trailer::read(
            self.as_bytes(),
            self.header.leaf,
            self.header.n_recs,
            self.header.log_end + 1,
            self.header.page,
        )
        .unwrap_or(if self.header.leaf {
            Trailer::Leaf(Vec::new(), Vec::new())
        } else {
            Trailer::Internal(Vec::new())
        })
    }

    /// Bytes free between the log's end marker and the trailer: what the log and the trailer
    /// can still grow into.
    pub fn free(&self) -> usize {
        let bytes = self.as_bytes();
        let trailer = Shape::read(bytes, self.header.leaf, self.header.n_recs).bytes();
        (bytes.len() - FIL_TRAILER_SIZE).saturating_sub(trailer + self.header.log_end + 1)
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> CompressedPage<B> {
    /// Puts a freshly compressed block (of this block's size) in the place of this one.
    pub(crate) fn replace_block(&mut self, block: &[u8], header: BlockHeader) {
        self.bytes.as_mut().copy_from_slice(block);
        self.header = header;
    }

    /// Stamps `lsn` (the uncompressed page's LSN) and seals the block for writing.
    pub fn seal(&mut self, lsn: Lsn) {
        put_u64(self.bytes.as_mut(), OFF_LSN, lsn);
        seal_block(self.bytes.as_mut());
    }

    /// Logs the insertion of `record` as record `pos` (the change
    /// [`IndexPage::insert`](barracuda_page::IndexPage::insert) made to the frame).
    pub fn log_insert(&mut self, pos: usize, record: &Record<'_>) -> Result<()> {
        let id = self.header.page;
        if pos > self.len() {
            return Err(RowCompressionError::bad_change(
                id,
                format!("insert at {pos} of {} records", self.len()),
            ));
        }
        let (fields, reference) = self.fields_of(record)?;
        let encoded = encode(record, id)?;
        self.apply_change(
            &Entry::Insert {
                pos,
                record: &encoded,
            },
            Edit::Insert {
                pos,
                fields,
                reference,
            },
        )
    }

    /// Logs the replacement of record `pos`, which was `old`, by `new` (the change
    /// [`IndexPage::replace`](barracuda_page::IndexPage::replace) or
    /// [`IndexPage::set_child`](barracuda_page::IndexPage::set_child) made). A change of
    /// only the transaction fields, the delete mark, the child page or the overflow reference
    /// changes the trailer alone and takes no log space — what MVCC does to every row it
    /// writes, and purge to every row it removes.
    pub fn log_replace(&mut self, pos: usize, old: &Record<'_>, new: &Record<'_>) -> Result<()> {
        let id = self.header.page;
        if pos >= self.len() {
            return Err(RowCompressionError::bad_change(
                id,
                format!("replace of record {pos} of {}", self.len()),
            ));
        }
        let (fields, reference) = self.fields_of(new)?;
        let edit = Edit::Set {
            pos,
            fields,
            reference,
        };
        if same_stripped(old, new) {
            return self.apply_encoded(&[], edit);
        }
        let encoded = encode(new, id)?;
        self.apply_change(
            &Entry::Replace {
                pos,
                record: &encoded,
            },
            edit,
        )
    }

    /// Logs the removal of record `pos`.
    pub fn log_remove(&mut self, pos: usize) -> Result<()> {
        if pos >= self.len() {
            return Err(RowCompressionError::bad_change(
                self.header.page,
                format!("remove of record {pos} of {}", self.len()),
            ));
        }
        self.apply_change(&Entry::Remove { pos }, Edit::Remove { pos })
    }

    /// Logs the removal of records `at..` and the compaction of the page (what
    /// [`IndexPage::split_off`](barracuda_page::IndexPage::split_off) leaves of the page it
    /// splits).
    pub fn log_truncate(&mut self, at: usize) -> Result<()> {
        if at > self.len() {
            return Err(RowCompressionError::bad_change(
                self.header.page,
                format!("truncate at {at} of {} records", self.len()),
            ));
        }
        self.apply_change(&Entry::Truncate { at }, Edit::Truncate { at })
    }

    /// Logs `bytes` written at `offset` of the page. The sibling links and the LSN (FIL header
    /// bytes 8..24) are written into the block's header in place; the rest of the FIL header
    /// and the level are the block's own and refused; any other write to the page body is a
    /// log entry.
    pub fn log_write(&mut self, offset: usize, bytes: &[u8]) -> Result<()> {
        let id = self.header.page;
        let end = offset.saturating_add(bytes.len());
        if crate::layout::header_writable(offset, bytes.len()) {
            put(self.bytes.as_mut(), offset, bytes);
            return Ok(());
        }
        if offset < OFF_LEVEL + 2 || end > self.header.page_size.bytes() - FIL_TRAILER_SIZE {
            return Err(RowCompressionError::bad_change(
                id,
                format!("a write of {} bytes at offset {offset}: a compressed page logs writes to the page body only (from offset 40), and the links and LSN (8..24)", bytes.len()),
            ));
        }
        self.apply_change(&Entry::Write { offset, bytes }, Edit::Nothing)
    }

    /// The trailer fields of `record`, which must be of this page's level.
    fn fields_of(&self, record: &Record<'_>) -> Result<(Fields, Option<OverflowRef>)> {
        match (self.header.leaf, record.value) {
            (false, ValueRef::Child(child)) => Ok((Fields::Child(child), None)),
            (true, ValueRef::Inline(_) | ValueRef::Overflow { .. }) => {
                let (entry, reference) = leaf_fields(record);
                Ok((
                    Fields::Leaf {
                        info: entry.info,
                        sys: entry.sys,
                    },
                    reference,
                ))
            }
            _ => Err(RowCompressionError::bad_change(
                self.header.page,
                if self.header.leaf {
                    "a child record on a leaf page"
                } else {
                    "a leaf record on an internal page"
                },
            )),
        }
    }

    fn apply_change(&mut self, entry: &Entry<'_>, edit: Edit) -> Result<()> {
        let mut encoded = Vec::new();
        entry.encode(&mut encoded);
        self.apply_encoded(&encoded, edit)
    }

    /// Appends `entry` (encoded; empty for a trailer-only change) to the log and makes `edit`
    /// to the trailer, or fails with `LogFull` changing nothing.
    fn apply_encoded(&mut self, entry: &[u8], edit: Edit) -> Result<()> {
        let bytes = self.bytes.as_ref();
        let shape = Shape::read(bytes, self.header.leaf, self.header.n_recs);
        let after = edit.bytes_after(bytes, &shape);
        let log_end = self.header.log_end;
        let new_log_end = log_end + entry.len();
        let data_end = bytes.len() - FIL_TRAILER_SIZE;
        if new_log_end + 1 + after > data_end {
            return Err(RowCompressionError::LogFull {
                page: self.header.page,
                needed: entry.len() + after.saturating_sub(shape.bytes()),
                free: data_end.saturating_sub(shape.bytes() + log_end + 1),
            });
        }
        let n_after = edit.records_after(self.header.n_recs);
        let bytes = self.bytes.as_mut();
        // The trailer first: when it shrinks it zeroes the bytes it leaves, and the entry may
        // extend into them.
        edit.apply(bytes, &shape);
        put(bytes, log_end, entry);
        put(bytes, new_log_end, &[0]);
        put_u16(bytes, OFF_LOG_END, new_log_end as u16);
        put_u16(bytes, OFF_N_RECS, n_after as u16);
        self.header.log_end = new_log_end;
        self.header.n_recs = n_after;
        Ok(())
    }
}

/// The record's heap encoding, for a log entry.
fn encode(record: &Record<'_>, page: PageId) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(record.encoded_len());
    record.encode_to(&mut out).map_err(|what| {
        RowCompressionError::bad_change(page, format!("a record that cannot be encoded: {what}"))
    })?;
    Ok(out)
}

/// Whether two records differ only in what the trailer holds (transaction fields, delete mark,
/// child page, overflow reference): same kind, key and inline bytes.
fn same_stripped(a: &Record<'_>, b: &Record<'_>) -> bool {
    a.key == b.key
        && match (a.value, b.value) {
            (ValueRef::Inline(x), ValueRef::Inline(y))
            | (ValueRef::Overflow { prefix: x, .. }, ValueRef::Overflow { prefix: y, .. }) => {
                x == y
            }
            (ValueRef::Child(_), ValueRef::Child(_)) => true,
            _ => false,
        }
}
