//! [`MtrWriter`]: builds the bytes of one mtr, record by record.

use barracuda_page::{PageId, PageSize};

use super::{varint, ExtendedType, RecordError, RecordType};

/// What the previous record said about its page, for `same_page` and relative offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor {
    /// The previous record's page.
    pub(crate) page: PageId,
    /// Where the previous change on that page ended (0 after `InitPage`).
    pub(crate) end: usize,
    /// The page was freed by the previous page record.
    pub(crate) freed: bool,
}

/// A record to log: as a value, or already in its heap encoding.
#[derive(Clone, Copy)]
enum RecordBytes<'a> {
    Record(&'a barracuda_page::Record<'a>),
    Encoded(&'a [u8]),
}

/// Builds the bytes of one mtr: a sequence of records (`docs/FORMATS.md` §10), ended by the
/// end of the byte string (the log frame knows its length).
///
/// Each method checks the change against the page size and returns
/// [`RecordError::Invalid`] (appending nothing) if it does not fit. Empty changes append nothing.
#[derive(Debug)]
pub struct MtrWriter {
    page_size: PageSize,
    buf: Vec<u8>,
    cursor: Option<Cursor>,
}

impl MtrWriter {
    /// An empty mtr for pages of `page_size`.
    pub fn new(page_size: PageSize) -> Self {
        Self {
            page_size,
            // Most mtrs are one record change of a few hundred bytes: no regrowth for those.
            buf: Vec::with_capacity(512),
            cursor: None,
        }
    }

    /// [`new`](Self::new), with room for `bytes` of records before the buffer grows: a large
    /// mtr (a run of a leaf's rows, ~20 KiB) otherwise doubles its buffer several times,
    /// copying what it holds each time.
    pub fn with_capacity(page_size: PageSize, bytes: usize) -> Self {
        Self {
            page_size,
            buf: Vec::with_capacity(bytes.max(512)),
            cursor: None,
        }
    }

    /// [`with_capacity`](Self::with_capacity) in `buf`, emptied first: a caller that builds
    /// many mtrs hands back each one's [`finish`](Self::finish)ed buffer instead of the
    /// allocator (large buffers come from and go back to the kernel otherwise).
    pub fn reusing(page_size: PageSize, mut buf: Vec<u8>, bytes: usize) -> Self {
        buf.clear();
        buf.reserve(bytes.max(512));
        Self {
            page_size,
            buf,
            cursor: None,
        }
    }

    /// The page size the records are checked against.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The mtr's bytes so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// No record yet.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The mtr's bytes, for the log to frame.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// Logs that `page` becomes all zeros (recovery will not read it).
    pub fn init_page(&mut self, page: PageId) {
        self.emit_with(RecordType::InitPage, page, false, &[], &[]);
        self.cursor = Some(Cursor {
            page,
            end: 0,
            freed: false,
        });
    }

    /// Logs that `page` was freed.
    pub fn free_page(&mut self, page: PageId) {
        self.emit_with(RecordType::FreePage, page, false, &[], &[]);
        self.cursor = Some(Cursor {
            page,
            end: 0,
            freed: true,
        });
    }

    /// Logs that index page `page` is compacted ([`ExtendedType::IndexReorganize`]); the
    /// changes that follow on the page are relative to its start again.
    ///
    /// Fails if the page was freed by the previous record on it.
    pub fn index_reorganize(&mut self, page: PageId) -> Result<(), RecordError> {
        if self.cursor.is_some_and(|c| c.page == page && c.freed) {
            return Err(self.invalid(
                page,
                "INDEX_REORGANIZE after FREE_PAGE without INIT_PAGE".into(),
            ));
        }
        self.emit_with(
            RecordType::Extended,
            page,
            false,
            &[ExtendedType::IndexReorganize as u8],
            &[],
        );
        self.cursor = Some(Cursor {
            page,
            end: 0,
            freed: false,
        });
        Ok(())
    }

    /// Logs that `record` was inserted as record `pos` of index page `page`
    /// ([`ExtendedType::IndexInsert`]). Fails, appending nothing, if the page was freed by the
    /// previous record on it or `record` has no valid encoding.
    pub fn index_insert(
        &mut self,
        page: PageId,
        pos: usize,
        record: &barracuda_page::Record<'_>,
    ) -> Result<(), RecordError> {
        self.index_change(
            ExtendedType::IndexInsert,
            page,
            pos,
            Some(RecordBytes::Record(record)),
        )
    }

    /// [`index_insert`](Self::index_insert) of a record given in its heap encoding (the bytes
    /// [`Record::encode_to`](barracuda_page::Record::encode_to) writes), copied as they are:
    /// for a caller that encoded the record already. Fails, appending nothing, if the bytes
    /// are not exactly one record's encoding.
    pub fn index_insert_encoded(
        &mut self,
        page: PageId,
        pos: usize,
        encoded: &[u8],
    ) -> Result<(), RecordError> {
        self.index_change(
            ExtendedType::IndexInsert,
            page,
            pos,
            Some(RecordBytes::Encoded(encoded)),
        )
    }

    /// [`index_replace`](Self::index_replace) of a record given in its heap encoding, as
    /// [`index_insert_encoded`](Self::index_insert_encoded).
    pub fn index_replace_encoded(
        &mut self,
        page: PageId,
        pos: usize,
        encoded: &[u8],
    ) -> Result<(), RecordError> {
        self.index_change(
            ExtendedType::IndexReplace,
            page,
            pos,
            Some(RecordBytes::Encoded(encoded)),
        )
    }

    /// Logs that record `pos` of index page `page` was replaced by `record`
    /// ([`ExtendedType::IndexReplace`]). Fails as [`index_insert`](Self::index_insert).
    pub fn index_replace(
        &mut self,
        page: PageId,
        pos: usize,
        record: &barracuda_page::Record<'_>,
    ) -> Result<(), RecordError> {
        self.index_change(
            ExtendedType::IndexReplace,
            page,
            pos,
            Some(RecordBytes::Record(record)),
        )
    }

    /// Logs that record `pos` of index page `page` was removed ([`ExtendedType::IndexRemove`]).
    /// Fails if the page was freed by the previous record on it.
    pub fn index_remove(&mut self, page: PageId, pos: usize) -> Result<(), RecordError> {
        self.index_change(ExtendedType::IndexRemove, page, pos, None)
    }

    /// Logs that records `at..` of index page `page` were removed and the page compacted
    /// ([`ExtendedType::IndexTruncate`]). Fails as [`index_remove`](Self::index_remove).
    pub fn index_truncate(&mut self, page: PageId, at: usize) -> Result<(), RecordError> {
        self.index_change(ExtendedType::IndexTruncate, page, at, None)
    }

    fn index_change(
        &mut self,
        kind: ExtendedType,
        page: PageId,
        pos: usize,
        record: Option<RecordBytes<'_>>,
    ) -> Result<(), RecordError> {
        let name = super::decode::extended_name(kind);
        if self.cursor.is_some_and(|c| c.page == page && c.freed) {
            return Err(self.invalid(page, format!("{name} after FREE_PAGE without INIT_PAGE")));
        }
        let p = self.page_size.bytes();
        if pos >= p / 2 {
            return Err(self.invalid(
                page,
                format!("{name} at record {pos}: a {p}-byte page has fewer"),
            ));
        }
        let record_len = match record {
            None => 0,
            Some(RecordBytes::Record(r)) => r.encoded_len(),
            Some(RecordBytes::Encoded(bytes)) => bytes.len(),
        };
        if record_len > p {
            return Err(self.invalid(page, format!("{name} of a {record_len}-byte record")));
        }
        // Encoded straight into the mtr's bytes, behind a header that counts the record.
        let at = self.buf.len();
        let body = varint::len(kind as u32) + varint::len(small(pos)) + record_len;
        self.emit_header(RecordType::Extended, page, false, body);
        varint::encode(kind as u32, &mut self.buf);
        varint::encode(small(pos), &mut self.buf);
        let written = match record {
            None => Ok(()),
            Some(RecordBytes::Record(r)) => r.encode_to(&mut self.buf),
            // Checked, not trusted: a record replay cannot parse would stop recovery.
            Some(RecordBytes::Encoded(bytes)) => barracuda_page::Record::decode_exact(bytes)
                .map(|_| self.buf.extend_from_slice(bytes)),
        };
        if let Err(what) = written {
            self.buf.truncate(at);
            return Err(self.invalid(page, format!("{name} of an invalid record: {what}")));
        }
        self.cursor = Some(Cursor {
            page,
            end: 0,
            freed: false,
        });
        Ok(())
    }

    /// Drops every byte after the first `len` and sets the cursor the next record is placed
    /// against (the state [`cursor`](Self::cursor) returned at that length).
    pub(crate) fn truncate(&mut self, len: usize, cursor: Option<Cursor>) {
        self.buf.truncate(len);
        self.cursor = cursor;
    }

    /// What the last record said about its page.
    pub(crate) fn cursor(&self) -> Option<Cursor> {
        self.cursor
    }

    /// Appends the bytes and takes the final cursor of `other`, whose first record names its
    /// page (so it reads the same after any earlier record).
    pub(crate) fn append(&mut self, other: &MtrWriter) {
        self.buf.extend_from_slice(&other.buf);
        self.cursor = other.cursor;
    }

    /// Logs information about `page` that changes none of its bytes (recovery may skip it).
    ///
    /// Fails if the payload is longer than a page.
    pub fn option(&mut self, page: PageId, payload: &[u8]) -> Result<(), RecordError> {
        if payload.len() > self.page_size.bytes() {
            return Err(self.invalid(
                page,
                format!(
                    "OPTION payload of {} bytes is longer than the page",
                    payload.len()
                ),
            ));
        }
        // Always with its page id: a same-page OPTION with no payload would have no bytes after
        // its header.
        self.emit_with(RecordType::Option, page, false, &[], payload);
        // The decoder follows the page id it read; the previous change's end only carries
        // over on the same page.
        self.cursor = Some(self.cursor.filter(|c| c.page == page).unwrap_or(Cursor {
            page,
            end: 0,
            freed: false,
        }));
        Ok(())
    }

    /// Logs `data` written at `offset` of `page`.
    pub fn write(&mut self, page: PageId, offset: usize, data: &[u8]) -> Result<(), RecordError> {
        if data.is_empty() {
            return Ok(());
        }
        self.check_range(page, "WRITE", offset, data.len())?;
        self.change(
            RecordType::Write,
            page,
            offset,
            &[],
            data,
            offset + data.len(),
        );
        Ok(())
    }

    /// Logs `[offset, offset + len)` of `page` filled with `pattern` repeated.
    ///
    /// Fails if the range leaves the page or `pattern` is empty or longer than `len`.
    pub fn memset(
        &mut self,
        page: PageId,
        offset: usize,
        len: usize,
        pattern: &[u8],
    ) -> Result<(), RecordError> {
        if len == 0 {
            return Ok(());
        }
        self.check_range(page, "MEMSET", offset, len)?;
        if pattern.is_empty() || pattern.len() > len {
            return Err(self.invalid(
                page,
                format!(
                    "MEMSET pattern of {} bytes for a length of {len}",
                    pattern.len()
                ),
            ));
        }
        let mut fields = Vec::with_capacity(varint::MAX_LEN);
        varint::encode(small(len), &mut fields);
        self.change(
            RecordType::Memset,
            page,
            offset,
            &fields,
            pattern,
            offset + len,
        );
        Ok(())
    }

    /// Logs `len` bytes of `page` copied from `source` to `dest` (ranges may overlap).
    pub fn memmove(
        &mut self,
        page: PageId,
        dest: usize,
        source: usize,
        len: usize,
    ) -> Result<(), RecordError> {
        if len == 0 || dest == source {
            return Ok(());
        }
        self.check_range(page, "MEMMOVE destination", dest, len)?;
        self.check_range(page, "MEMMOVE source", source, len)?;
        let mut fields = Vec::with_capacity(2 * varint::MAX_LEN);
        varint::encode(small(len), &mut fields);
        // Both are below 65_536, so the difference fits an i32.
        let delta =
            i32::try_from(source).unwrap_or(i32::MAX) - i32::try_from(dest).unwrap_or(i32::MAX);
        varint::encode(varint::zigzag(delta), &mut fields);
        self.change(RecordType::Memmove, page, dest, &fields, &[], dest + len);
        Ok(())
    }

    fn check_range(
        &self,
        page: PageId,
        what: &str,
        offset: usize,
        len: usize,
    ) -> Result<(), RecordError> {
        let p = self.page_size.bytes();
        if offset >= p || len > p - offset {
            return Err(self.invalid(
                page,
                format!("{what} of {len} bytes at offset {offset} leaves the {p}-byte page"),
            ));
        }
        if self.cursor.is_some_and(|c| c.page == page && c.freed) {
            return Err(self.invalid(page, format!("{what} after FREE_PAGE without INIT_PAGE")));
        }
        Ok(())
    }

    #[allow(clippy::unused_self)]
    fn invalid(&self, page: PageId, what: String) -> RecordError {
        RecordError::Invalid { page, what }
    }

    /// Appends a WRITE/MEMSET/MEMMOVE: same page and not behind the previous change's end →
    /// no page id and an offset relative to that end; otherwise page id and absolute offset.
    fn change(
        &mut self,
        ty: RecordType,
        page: PageId,
        offset: usize,
        fields: &[u8],
        data: &[u8],
        end: usize,
    ) {
        let (same, rel) = match self.cursor {
            Some(c) if c.page == page && offset >= c.end => (true, offset - c.end),
            _ => (false, offset),
        };
        // Straight into the buffer: a head assembled apart was an allocation per record.
        let rel = small(rel);
        self.emit_header(ty, page, same, varint::len(rel) + fields.len() + data.len());
        varint::encode(rel, &mut self.buf);
        self.buf.extend_from_slice(fields);
        self.buf.extend_from_slice(data);
        self.cursor = Some(Cursor {
            page,
            end,
            freed: false,
        });
    }

    /// Appends header byte, length (if over 15), page id (unless `same`), `fields`, `data`.
    fn emit_with(&mut self, ty: RecordType, page: PageId, same: bool, fields: &[u8], data: &[u8]) {
        self.emit_header(ty, page, same, fields.len() + data.len());
        self.buf.extend_from_slice(fields);
        self.buf.extend_from_slice(data);
    }

    /// Appends header byte, length (if over 15) and page id (unless `same`) of a record whose
    /// bytes after the page id are `body` long; the caller appends them.
    fn emit_header(&mut self, ty: RecordType, page: PageId, same: bool, body: usize) {
        let id_len = if same {
            0
        } else {
            varint::len(page.space_id) + varint::len(page.page_no)
        };
        let rest = id_len + body;
        let same_bit = if same { 0x80 } else { 0 };
        let ty_bits = (ty as u8) << 4;
        if rest <= 15 {
            // `rest` is at least 1: a page id or an offset is always there.
            self.buf.push(same_bit | ty_bits | rest as u8);
        } else {
            self.buf.push(same_bit | ty_bits);
            varint::encode(small(rest), &mut self.buf);
        }
        if !same {
            varint::encode(page.space_id, &mut self.buf);
            varint::encode(page.page_no, &mut self.buf);
        }
    }
}

/// An offset or length already checked against the page size (≤ 65_536 + a few bytes), as
/// the varint's `u32`.
fn small(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}
