//! Reading records back ([`RecordReader`], [`decode`]) and replaying them ([`apply`]).

use barracuda_page::{IndexPage, PageId, PageSize};

use super::writer::Cursor;
use super::{max_rest_len, varint, ExtendedType, Record, RecordError, RecordType};

/// Decodes the records of one mtr lazily, in order. Total: every byte string yields records
/// and then either the end or one [`RecordError::Corrupt`] naming the offset (after which the
/// reader yields nothing). Every offset and length is checked against the page size, and
/// nothing is allocated.
#[derive(Debug, Clone)]
pub struct RecordReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    page_size: PageSize,
    cursor: Option<Cursor>,
    failed: bool,
}

/// Decodes a whole mtr into its records (at most one per two bytes of input), or the first
/// error.
pub fn decode(mtr: &[u8], page_size: PageSize) -> Result<Vec<Record<'_>>, RecordError> {
    RecordReader::new(mtr, page_size).collect()
}

impl<'a> RecordReader<'a> {
    /// A reader of the mtr bytes `mtr`, for pages of `page_size`.
    pub fn new(mtr: &'a [u8], page_size: PageSize) -> Self {
        Self {
            bytes: mtr,
            pos: 0,
            page_size,
            cursor: None,
            failed: false,
        }
    }

    fn record(&mut self) -> Result<Record<'a>, RecordError> {
        let at = self.pos;
        let corrupt = |at: usize, what: String| RecordError::Corrupt { at, what };
        let header = self
            .bytes
            .get(at)
            .copied()
            .ok_or_else(|| corrupt(at, "expected a record header".into()))?;
        let same = header & 0x80 != 0;
        let ty = (header >> 4) & 0x07;
        let (rest_len, len_len) = match header & 0x0F {
            0 => {
                let (v, n) = self
                    .bytes
                    .get(at + 1..)
                    .and_then(varint::decode)
                    .ok_or_else(|| corrupt(at + 1, "expected a record length varint".into()))?;
                let v = v as usize;
                if v < 16 {
                    return Err(corrupt(at + 1, format!("record length {v} must be in the header byte (only lengths ≥ 16 follow it)")));
                }
                (v, n)
            }
            n => (usize::from(n), 0),
        };
        if rest_len > max_rest_len(self.page_size) {
            return Err(corrupt(at, format!("record length {rest_len} exceeds the {} bytes any record of a {}-byte page can take", max_rest_len(self.page_size), self.page_size.bytes())));
        }
        let start = at + 1 + len_len;
        let rest = self.bytes.get(start..start + rest_len).ok_or_else(|| {
            corrupt(at, format!("record of {rest_len} bytes after its header runs past the mtr's end at byte {}", self.bytes.len()))
        })?;
        self.pos = start + rest_len;
        if ty == RecordType::Reserved as u8 {
            return Err(corrupt(at, "record type 6 is reserved".into()));
        }
        let mut f = Fields {
            rest,
            pos: 0,
            base: start,
        };
        let page = if same {
            let c = self
                .cursor
                .ok_or_else(|| corrupt(at, "same_page record with no earlier record".into()))?;
            if ty == RecordType::FreePage as u8 || ty == RecordType::InitPage as u8 {
                return Err(corrupt(
                    at,
                    "FREE_PAGE/INIT_PAGE must name their page (same_page set)".into(),
                ));
            }
            c.page
        } else {
            let space = f.varint("space id")?;
            let page_no = f.varint("page number")?;
            PageId::new(space, page_no)
        };
        let p = self.page_size.bytes();
        let rec = match ty {
            0 | 1 => {
                if f.pos != rest.len() {
                    return Err(corrupt(
                        start + f.pos,
                        format!(
                            "{} trailing bytes after a FREE_PAGE/INIT_PAGE page id",
                            rest.len() - f.pos
                        ),
                    ));
                }
                let freed = ty == 0;
                self.cursor = Some(Cursor {
                    page,
                    end: 0,
                    freed,
                });
                if freed {
                    Record::FreePage { page }
                } else {
                    Record::InitPage { page }
                }
            }
            3..=5 => {
                if self.cursor.is_some_and(|c| c.page == page && c.freed) {
                    return Err(corrupt(
                        at,
                        format!("change to {page} after its FREE_PAGE without INIT_PAGE"),
                    ));
                }
                let off_at = start + f.pos;
                let rel = f.varint("offset")? as usize;
                let base = match self.cursor {
                    Some(c) if same => c.end,
                    _ => 0,
                };
                let offset = base + rel;
                if offset >= p {
                    return Err(corrupt(
                        off_at,
                        format!("offset {offset} is not inside the {p}-byte page"),
                    ));
                }
                let rec = if ty == 3 {
                    let data = f.tail();
                    if data.is_empty() {
                        return Err(corrupt(at, "WRITE with no bytes".into()));
                    }
                    Record::Write { page, offset, data }
                } else {
                    let len_at = start + f.pos;
                    let len = f.varint("length")? as usize;
                    if len == 0 {
                        return Err(corrupt(len_at, "length 0".into()));
                    }
                    if ty == 4 {
                        let pattern = f.tail();
                        if pattern.is_empty() || pattern.len() > len {
                            return Err(corrupt(at, format!("MEMSET pattern of {} bytes for a length of {len} (expected 1..={len})", pattern.len())));
                        }
                        Record::Memset {
                            page,
                            offset,
                            len,
                            pattern,
                        }
                    } else {
                        let src_at = start + f.pos;
                        let delta = varint::unzigzag(f.varint("source delta")?);
                        let source = i64::try_from(offset).unwrap_or(i64::MAX) + i64::from(delta);
                        if delta == 0 || source < 0 || f.pos != rest.len() {
                            return Err(corrupt(src_at, format!("MEMMOVE source delta {delta} (expected non-zero, inside the page, last field)")));
                        }
                        let source = usize::try_from(source).unwrap_or(usize::MAX);
                        if source >= p || len > p - source {
                            return Err(corrupt(src_at, format!("MEMMOVE source [{source}, {source} + {len}) leaves the {p}-byte page")));
                        }
                        Record::Memmove {
                            page,
                            offset,
                            len,
                            source,
                        }
                    }
                };
                let len = match rec {
                    Record::Write { data, .. } => data.len(),
                    Record::Memset { len, .. } | Record::Memmove { len, .. } => len,
                    _ => 0,
                };
                if len > p - offset {
                    return Err(corrupt(
                        at,
                        format!(
                            "change of {len} bytes at offset {offset} leaves the {p}-byte page"
                        ),
                    ));
                }
                self.cursor = Some(Cursor {
                    page,
                    end: offset + len,
                    freed: false,
                });
                rec
            }
            7 => {
                if !same {
                    self.cursor = Some(self.cursor.filter(|c| c.page == page).unwrap_or(Cursor {
                        page,
                        end: 0,
                        freed: false,
                    }));
                }
                Record::Option {
                    page,
                    payload: f.tail(),
                }
            }
            2 => {
                let sub_at = start + f.pos;
                let sub = f.varint("EXTENDED subtype")?;
                let Some(kind) = ExtendedType::from_subtype(sub) else {
                    return Err(corrupt(
                        sub_at,
                        format!("EXTENDED record subtype {sub} is not defined by this version"),
                    ));
                };
                let name = extended_name(kind);
                if same {
                    return Err(corrupt(
                        at,
                        format!("{name} must name its page (same_page set)"),
                    ));
                }
                if self.cursor.is_some_and(|c| c.page == page && c.freed) {
                    return Err(corrupt(
                        at,
                        format!("{name} of {page} after its FREE_PAGE without INIT_PAGE"),
                    ));
                }
                let rec = match kind {
                    ExtendedType::IndexReorganize => Record::IndexReorganize { page },
                    ExtendedType::IndexInsert
                    | ExtendedType::IndexReplace
                    | ExtendedType::IndexRemove
                    | ExtendedType::IndexTruncate => {
                        let pos_at = start + f.pos;
                        let pos = f.varint("record position")? as usize;
                        // A page of P bytes has fewer than P / 2 slots.
                        if pos >= p / 2 {
                            return Err(corrupt(
                                pos_at,
                                format!("{name} at record {pos}: a {p}-byte page has fewer"),
                            ));
                        }
                        if kind == ExtendedType::IndexRemove {
                            Record::IndexRemove { page, pos }
                        } else if kind == ExtendedType::IndexTruncate {
                            Record::IndexTruncate { page, at: pos }
                        } else {
                            let rec_at = start + f.pos;
                            let record = f.tail();
                            if let Err(what) = barracuda_page::Record::decode_exact(record) {
                                return Err(corrupt(
                                    rec_at,
                                    format!("{name} carries no valid index record: {what}"),
                                ));
                            }
                            if kind == ExtendedType::IndexInsert {
                                Record::IndexInsert { page, pos, record }
                            } else {
                                Record::IndexReplace { page, pos, record }
                            }
                        }
                    }
                };
                if f.pos != rest.len() {
                    return Err(corrupt(
                        start + f.pos,
                        format!("{} trailing bytes after {name}", rest.len() - f.pos),
                    ));
                }
                self.cursor = Some(Cursor {
                    page,
                    end: 0,
                    freed: false,
                });
                rec
            }
            _ => return Err(corrupt(at, "record type 6 is reserved".into())),
        };
        Ok(rec)
    }
}

impl<'a> Iterator for RecordReader<'a> {
    type Item = Result<Record<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        let r = self.record();
        self.failed = r.is_err();
        Some(r)
    }
}

/// The fields of one record after its header.
struct Fields<'a> {
    rest: &'a [u8],
    pos: usize,
    /// Offset of `rest` inside the mtr, for errors.
    base: usize,
}

impl<'a> Fields<'a> {
    fn varint(&mut self, what: &str) -> Result<u32, RecordError> {
        let (v, n) = self
            .rest
            .get(self.pos..)
            .and_then(varint::decode)
            .ok_or_else(|| RecordError::Corrupt {
                at: self.base + self.pos,
                what: format!("expected a {what} varint inside the record"),
            })?;
        self.pos += n;
        Ok(v)
    }

    fn tail(&mut self) -> &'a [u8] {
        let t = self.rest.get(self.pos..).unwrap_or(&[]);
        self.pos = self.rest.len();
        t
    }
}

/// What a page is after [`apply`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PageState {
    /// The page holds data.
    Live,
    /// The last record for the page freed it.
    Freed,
}

/// Replays onto `buf` (the bytes of page `page`) the records among `records` that are about
/// `page`, in order; records about other pages are skipped (recovery hands each page the
/// records of an mtr). `InitPage` zero-fills, `Option` changes nothing.
///
/// Fails with [`RecordError::Invalid`] if `buf` is not a page size long, a change leaves the
/// page, or a change follows the page's `FreePage` without an `InitPage`; the page may then be
/// partly changed.
pub fn apply<'r, 'a: 'r>(
    page: PageId,
    buf: &mut [u8],
    records: impl IntoIterator<Item = &'r Record<'a>>,
) -> Result<PageState, RecordError> {
    check_page_buffer(page, buf)?;
    let mut state = PageState::Live;
    for rec in records.into_iter().filter(|r| r.page() == page) {
        apply_one(page, buf, rec, &mut state)?;
    }
    Ok(state)
}

/// [`apply`] for the records of one whole mtr, `mtr` (its bytes as logged), decoded as they
/// are applied: nothing is allocated. Recovery's path.
///
/// Fails as [`apply`] does, and with [`RecordError::Corrupt`] if the bytes do not decode.
pub fn apply_mtr(page: PageId, buf: &mut [u8], mtr: &[u8]) -> Result<PageState, RecordError> {
    let size = check_page_buffer(page, buf)?;
    let mut state = PageState::Live;
    for rec in RecordReader::new(mtr, size) {
        let rec = rec?;
        if rec.page() == page {
            apply_one(page, buf, &rec, &mut state)?;
        }
    }
    Ok(state)
}

/// The page size of `buf`, or [`RecordError::Invalid`] if its length is not one.
fn check_page_buffer(page: PageId, buf: &[u8]) -> Result<PageSize, RecordError> {
    PageSize::from_bytes(buf.len()).ok_or_else(|| RecordError::Invalid {
        page,
        what: format!("a buffer of {} bytes is not a page", buf.len()),
    })
}

/// Replays one record about `page` onto `buf` (a page size long), `state` carrying whether
/// the page is freed from one record to the next.
fn apply_one(
    page: PageId,
    buf: &mut [u8],
    rec: &Record<'_>,
    state: &mut PageState,
) -> Result<(), RecordError> {
    let invalid = |what: String| RecordError::Invalid { page, what };
    let p = buf.len();
    let (offset, len) = match *rec {
        Record::Write { offset, data, .. } => (offset, data.len()),
        Record::Memset { offset, len, .. } | Record::Memmove { offset, len, .. } => (offset, len),
        Record::FreePage { .. } => {
            *state = PageState::Freed;
            return Ok(());
        }
        Record::InitPage { .. } => {
            buf.fill(0);
            *state = PageState::Live;
            return Ok(());
        }
        Record::Option { .. } => return Ok(()),
        Record::IndexReorganize { .. } => {
            if *state == PageState::Freed {
                return Err(invalid(
                    "INDEX_REORGANIZE after FREE_PAGE without INIT_PAGE".into(),
                ));
            }
            return reorganize(page, buf);
        }
        Record::IndexInsert { .. }
        | Record::IndexReplace { .. }
        | Record::IndexRemove { .. }
        | Record::IndexTruncate { .. } => {
            if *state == PageState::Freed {
                return Err(invalid(
                    "an index record change after FREE_PAGE without INIT_PAGE".into(),
                ));
            }
            return index_change(page, buf, rec);
        }
    };
    if *state == PageState::Freed {
        return Err(invalid("a change after FREE_PAGE without INIT_PAGE".into()));
    }
    let dest = buf
        .get_mut(offset..offset.saturating_add(len))
        .ok_or_else(|| {
            invalid(format!(
                "change of {len} bytes at offset {offset} leaves the {p}-byte page"
            ))
        })?;
    match *rec {
        Record::Write { data, .. } => dest.copy_from_slice(data),
        Record::Memset { pattern, .. } => {
            if pattern.is_empty() {
                return Err(invalid("MEMSET with an empty pattern".into()));
            }
            for (d, s) in dest.iter_mut().zip(pattern.iter().cycle()) {
                *d = *s;
            }
        }
        Record::Memmove { source, .. } => {
            if source.checked_add(len).is_none_or(|end| end > p) {
                return Err(invalid(format!(
                    "MEMMOVE source [{source}, {source} + {len}) leaves the {p}-byte page"
                )));
            }
            buf.copy_within(source..source + len, offset);
        }
        _ => {}
    }
    Ok(())
}

/// Compacts index page `page` held in `buf` (a page size long), after validating its whole
/// structure: the replay of [`Record::IndexReorganize`], and what the writer computes to diff
/// against. Deterministic: the same bytes give the same result.
pub(crate) fn reorganize(page: PageId, buf: &mut [u8]) -> Result<(), RecordError> {
    let invalid = |what: String| RecordError::Invalid { page, what };
    let size = PageSize::from_bytes(buf.len())
        .ok_or_else(|| invalid(format!("a buffer of {} bytes is not a page", buf.len())))?;
    let mut index = IndexPage::open(buf, size).map_err(|e| {
        invalid(format!(
            "INDEX_REORGANIZE of a page that is not a valid index page: {e}"
        ))
    })?;
    index.compact();
    Ok(())
}

/// Replays an INDEX_INSERT, INDEX_REPLACE or INDEX_REMOVE onto index page `page` in `buf` (a
/// page size long) with the same [`IndexPage`] function that made the change, so the result is
/// the same bytes. The page is opened with the O(1) header checks only: it is the page the
/// change was made to (the page-LSN check picks which records a page gets), and on a damaged
/// page the page API fails or gives unspecified bytes, never panics.
fn index_change(page: PageId, buf: &mut [u8], rec: &Record<'_>) -> Result<(), RecordError> {
    let invalid = |what: String| RecordError::Invalid { page, what };
    let size = check_page_buffer(page, buf)?;
    let mut index = IndexPage::open_trusted(buf, size).map_err(|e| {
        invalid(format!(
            "an index record change on a page that is not one: {e}"
        ))
    })?;
    let decoded = |bytes| {
        barracuda_page::Record::decode_exact(bytes)
            .map_err(|what| invalid(format!("an index record that does not decode: {what}")))
    };
    let done = match *rec {
        Record::IndexInsert { pos, record, .. } => index.insert(pos, &decoded(record)?),
        Record::IndexReplace { pos, record, .. } => index.replace(pos, &decoded(record)?),
        Record::IndexRemove { pos, .. } => index.remove(pos),
        Record::IndexTruncate { at, .. } => {
            let n = index.len();
            index.remove_range(at..n).map(|()| index.compact())
        }
        _ => Ok(()),
    };
    done.map_err(|e| invalid(format!("replaying an index record change: {e}")))
}

/// The name of an EXTENDED subtype in `docs/FORMATS.md` §10.1, for errors.
pub(crate) fn extended_name(kind: ExtendedType) -> &'static str {
    match kind {
        ExtendedType::IndexReorganize => "INDEX_REORGANIZE",
        ExtendedType::IndexInsert => "INDEX_INSERT",
        ExtendedType::IndexReplace => "INDEX_REPLACE",
        ExtendedType::IndexRemove => "INDEX_REMOVE",
        ExtendedType::IndexTruncate => "INDEX_TRUNCATE",
    }
}
