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

use crate::bytes::{put, put_u16, put_u64};
use crate::compress::leaf_fields;
use crate::error::{Result, RowCompressionError};
use crate::layout::{
    seal_block, verify_block, BlockHeader, Trailer, OFF_LEVEL, OFF_LOG_END, OFF_N_RECS,
    STREAM_START,
};
use crate::mlog::Entry;
use crate::BlockSize;

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

    fn trailer_start(&self) -> usize {
        self.as_bytes().len() - FIL_TRAILER_SIZE - self.trailer().bytes()
    }

    /// Bytes free between the log's end marker and the trailer: what the log and the trailer
    /// can still grow into.
    pub fn free(&self) -> usize {
        self.trailer_start().saturating_sub(self.header.log_end + 1)
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> CompressedPage<B> {
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
        let mut trailer = self.trailer();
        match (&mut trailer, record.value) {
            (Trailer::Internal(children), ValueRef::Child(child)) => children.insert(pos, child),
            (Trailer::Leaf(entries, refs), ValueRef::Inline(_) | ValueRef::Overflow { .. }) => {
                let (entry, reference) = leaf_fields(record);
                if let Some(r) = reference {
                    refs.insert(Trailer::overflow_rank(entries, pos), r);
                }
                entries.insert(pos, entry);
            }
            _ => return Err(self.level_mismatch()),
        }
        let encoded = encode(record, id)?;
        self.append(
            &Entry::Insert {
                pos,
                record: &encoded,
            },
            &trailer,
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
        let mut trailer = self.trailer();
        match (&mut trailer, new.value) {
            (Trailer::Internal(children), ValueRef::Child(child)) => {
                if let Some(c) = children.get_mut(pos) {
                    *c = child;
                }
            }
            (Trailer::Leaf(entries, refs), ValueRef::Inline(_) | ValueRef::Overflow { .. }) => {
                let rank = Trailer::overflow_rank(entries, pos);
                let was_overflow = matches!(old.value, ValueRef::Overflow { .. });
                let (entry, reference) = leaf_fields(new);
                if was_overflow && rank < refs.len() {
                    refs.remove(rank);
                }
                if let Some(r) = reference {
                    refs.insert(rank, r);
                }
                if let Some(e) = entries.get_mut(pos) {
                    *e = entry;
                }
            }
            _ => return Err(self.level_mismatch()),
        }
        if same_stripped(old, new) {
            return self.replace_trailer(&trailer);
        }
        let encoded = encode(new, id)?;
        self.append(
            &Entry::Replace {
                pos,
                record: &encoded,
            },
            &trailer,
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
        let mut trailer = self.trailer();
        match &mut trailer {
            Trailer::Internal(children) => {
                children.remove(pos);
            }
            Trailer::Leaf(entries, refs) => {
                let rank = Trailer::overflow_rank(entries, pos);
                if entries.get(pos).is_some_and(|e| e.info & 1 == 1) && rank < refs.len() {
                    refs.remove(rank);
                }
                entries.remove(pos);
            }
        }
        self.append(&Entry::Remove { pos }, &trailer)
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
        let mut trailer = self.trailer();
        match &mut trailer {
            Trailer::Internal(children) => children.truncate(at),
            Trailer::Leaf(entries, refs) => {
                let rank = Trailer::overflow_rank(entries, at);
                refs.truncate(rank);
                entries.truncate(at);
            }
        }
        self.append(&Entry::Truncate { at }, &trailer)
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
        self.append(&Entry::Write { offset, bytes }, &self.trailer())
    }

    fn level_mismatch(&self) -> RowCompressionError {
        RowCompressionError::bad_change(
            self.header.page,
            if self.header.leaf {
                "a child record on a leaf page".to_owned()
            } else {
                "a leaf record on an internal page".to_owned()
            },
        )
    }

    /// Changes the trailer alone, if the free space allows it.
    fn replace_trailer(&mut self, trailer: &Trailer) -> Result<()> {
        self.append_bytes(&[], trailer)
    }

    fn append(&mut self, entry: &Entry<'_>, trailer: &Trailer) -> Result<()> {
        let mut encoded = Vec::new();
        entry.encode(&mut encoded);
        self.append_bytes(&encoded, trailer)
    }

    /// Appends `entry` (encoded) to the log and writes `trailer`, or fails with `LogFull`
    /// changing nothing.
    fn append_bytes(&mut self, entry: &[u8], trailer: &Trailer) -> Result<()> {
        let old_trailer = self.trailer().bytes();
        let new_log_end = self.header.log_end + entry.len();
        let len = self.as_bytes().len();
        let trailer_start = len - FIL_TRAILER_SIZE - trailer.bytes();
        if new_log_end + 1 > trailer_start {
            let needed = entry.len() + trailer.bytes().saturating_sub(old_trailer);
            return Err(RowCompressionError::LogFull {
                page: self.header.page,
                needed,
                free: self.free(),
            });
        }
        let log_end = self.header.log_end;
        let bytes = self.bytes.as_mut();
        // The trailer first: when it shrinks it zeroes the bytes it leaves, and the entry may
        // extend into them.
        trailer.write(bytes, old_trailer);
        put(bytes, log_end, entry);
        put(bytes, new_log_end, &[0]);
        put_u16(bytes, OFF_LOG_END, new_log_end as u16);
        put_u16(bytes, OFF_N_RECS, trailer.len() as u16);
        self.header.log_end = new_log_end;
        self.header.n_recs = trailer.len();
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
