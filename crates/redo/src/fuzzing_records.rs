//! The `redo_records` target: one mtr decoded, checked and replayed (input format and invariants
//! in the [module docs](super)).

use barracuda_page::{IndexPage, PageId, PageSize};

use crate::record::{
    apply, apply_mtr, decode, max_rest_len, MtrWriter, Record, RecordError, RecordReader,
};

/// Distinct pages of one mtr that are replayed: the first ones it names. Each costs six page
/// replays, and more pages exercise nothing the first few do not.
const MAX_PAGES: usize = 4;
/// The index id of the base index page.
const INDEX_ID: u64 = 0x1d;
/// Child page numbers of an internal base page start here.
const FIRST_CHILD: u32 = 100;

/// What byte 0 of an input selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Selector {
    /// The page size the mtr is decoded and replayed for.
    pub(crate) page_size: PageSize,
    /// Level of the base index page: 0 (leaf, inline records) or 1 (child pointers).
    pub(crate) level: u16,
    /// Records of the base index page, at most 15.
    pub(crate) records: usize,
}

impl Selector {
    pub(crate) fn from_byte(b: u8) -> Self {
        let sizes = PageSize::ALL;
        Self {
            page_size: sizes
                .get(usize::from(b & 7) % sizes.len())
                .copied()
                .unwrap_or_default(),
            level: u16::from((b >> 3) & 1),
            records: usize::from(b >> 4),
        }
    }

    /// The byte that selects `self` (records above 15 are cut to 15).
    pub(crate) fn to_byte(self) -> u8 {
        let size = PageSize::ALL
            .iter()
            .position(|&s| s == self.page_size)
            .unwrap_or(0) as u8;
        size | ((self.level.min(1) as u8) << 3) | ((self.records.min(15) as u8) << 4)
    }
}

/// Key of record `i` of the base index page: `k00`, `k02`, … (odd numbers fall between them).
pub(crate) fn base_key(i: usize) -> Vec<u8> {
    format!("k{:02}", 2 * i).into_bytes()
}

/// The base index page (b) for `page`: `sel.records` records with keys [`base_key`], inline
/// values of `3 i` bytes on a leaf, child pointers `FIRST_CHILD + i` on an internal page.
pub(crate) fn base_index_page(sel: Selector, page: PageId) -> Vec<u8> {
    let keys: Vec<Vec<u8>> = (0..sel.records).map(base_key).collect();
    let values: Vec<Vec<u8>> = (0..sel.records)
        .map(|i| vec![b'a' + i as u8; 3 * i])
        .collect();
    let records = keys
        .iter()
        .zip(&values)
        .zip(FIRST_CHILD..)
        .map(|((k, v), child)| {
            if sel.level == 0 {
                barracuda_page::Record::inline(k, v)
            } else {
                barracuda_page::Record::child(k, child)
            }
        });
    let buf = vec![0u8; sel.page_size.bytes()];
    IndexPage::from_records(buf, sel.page_size, page, sel.level, INDEX_ID, records)
        .unwrap_or_else(|e| panic!("harness: the base index page {sel:?} does not build: {e}"))
        .into_inner()
}

/// Runs one input of the `redo_records` target (see the [module docs](super)).
///
/// # Panics
/// When the decoder or a replay misbehaves: that panic is the crash libFuzzer reports.
pub fn redo_records(data: &[u8]) {
    let Some((&selector, mtr)) = data.split_first() else {
        return;
    };
    let sel = Selector::from_byte(selector);
    let size = sel.page_size;
    let decoded = decode(mtr, size);
    check_reader(mtr, size, &decoded);
    let records = match decoded {
        Ok(records) => records,
        Err(e) => return check_undecodable(mtr, size, &e),
    };
    assert!(
        records.len() <= mtr.len() / 2,
        "{} records from {} bytes: more than one per two bytes",
        records.len(),
        mtr.len()
    );
    for rec in &records {
        check_in_page(rec, size);
    }
    assert!(
        decode(mtr, size).as_ref() == Ok(&records),
        "decoding the same bytes twice gave different records"
    );
    check_reencoded(&records, size);

    let mut pages: Vec<PageId> = Vec::with_capacity(MAX_PAGES);
    for rec in &records {
        if pages.len() == MAX_PAGES {
            break;
        }
        if !pages.contains(&rec.page()) {
            pages.push(rec.page());
        }
    }
    let p = size.bytes();
    let mut raw = vec![0u8; p];
    for (dst, src) in raw.iter_mut().zip(data) {
        *dst = *src;
    }
    for page in pages {
        let index_only = records
            .iter()
            .filter(|r| r.page() == page)
            .all(is_index_level);
        let bases = [
            ("a zero page", vec![0u8; p]),
            ("the base index page", base_index_page(sel, page)),
            ("the raw input", raw.clone()),
        ];
        for (i, (what, base)) in bases.into_iter().enumerate() {
            let mut by_records = base.clone();
            let from_records = apply(page, &mut by_records, &records);
            let mut by_bytes = base;
            let from_bytes = apply_mtr(page, &mut by_bytes, mtr);
            assert_eq!(
                from_records, from_bytes,
                "{page} onto {what}: apply and apply_mtr disagree"
            );
            assert!(
                by_records == by_bytes,
                "{page} onto {what}: apply and apply_mtr leave different bytes"
            );
            if let Err(e) = &from_records {
                assert!(
                    matches!(e, RecordError::Invalid { page: at, .. } if *at == page),
                    "{page} onto {what}: replaying decoded records failed with {e:?}, \
                     not an Invalid naming the page"
                );
            }
            // The page API's promise: a mutation that succeeds leaves a valid page.
            if i == 1 && index_only && from_records.is_ok() {
                if let Err(e) = IndexPage::open(&by_records[..], size) {
                    panic!(
                        "{page}: index record changes replayed onto a valid index page \
                         left an invalid one: {e}"
                    );
                }
            }
        }
    }
}

/// A record that changes an index page through the page API only (or changes nothing).
fn is_index_level(rec: &Record<'_>) -> bool {
    matches!(
        rec,
        Record::IndexReorganize { .. }
            | Record::IndexInsert { .. }
            | Record::IndexReplace { .. }
            | Record::IndexRemove { .. }
            | Record::IndexTruncate { .. }
            | Record::Option { .. }
    )
}

/// The reader's promises: it yields what `decode` returned, item by item, and nothing after an
/// error.
fn check_reader(mtr: &[u8], size: PageSize, decoded: &Result<Vec<Record<'_>>, RecordError>) {
    let mut reader = RecordReader::new(mtr, size);
    let mut yielded = Vec::new();
    for item in reader.by_ref() {
        match item {
            Ok(rec) => yielded.push(rec),
            Err(e) => {
                assert_eq!(
                    decoded.as_ref().err(),
                    Some(&e),
                    "the reader's error differs from decode's"
                );
                break;
            }
        }
    }
    let after = reader.next();
    assert!(
        after.is_none(),
        "the reader yielded {after:?} after its error or end"
    );
    if let Ok(records) = decoded {
        assert!(
            *records == yielded,
            "the reader yields other records than decode"
        );
    }
}

/// An mtr that does not decode: a `Corrupt` error inside it, and `apply_mtr` fails too.
fn check_undecodable(mtr: &[u8], size: PageSize, e: &RecordError) {
    let RecordError::Corrupt { at, .. } = e else {
        panic!("decode failed with {e:?}, not a Corrupt error");
    };
    assert!(
        *at <= mtr.len(),
        "error at byte {at} of a {}-byte mtr: {e}",
        mtr.len()
    );
    // The page of the first record, if one decoded, so that its changes are applied first.
    let page = RecordReader::new(mtr, size)
        .next()
        .and_then(Result::ok)
        .map_or(PageId::new(0, 0), |r| r.page());
    let mut buf = vec![0u8; size.bytes()];
    match apply_mtr(page, &mut buf, mtr) {
        Ok(state) => panic!("apply_mtr succeeded ({state:?}) on bytes decode refuses with {e}"),
        Err(corrupt @ RecordError::Corrupt { .. }) => {
            assert_eq!(
                &corrupt, e,
                "apply_mtr's Corrupt error differs from decode's"
            );
        }
        Err(RecordError::Invalid { .. }) => {}
    }
}

/// The decoder's promise that a decoded record lies within its page, field by field.
fn check_in_page(rec: &Record<'_>, size: PageSize) {
    let p = size.bytes();
    let inside = |offset: usize, len: usize| len >= 1 && offset < p && len <= p - offset;
    let ok = match *rec {
        Record::Write { offset, data, .. } => inside(offset, data.len()),
        Record::Memset {
            offset,
            len,
            pattern,
            ..
        } => inside(offset, len) && !pattern.is_empty() && pattern.len() <= len,
        Record::Memmove {
            offset,
            len,
            source,
            ..
        } => inside(offset, len) && inside(source, len) && source != offset,
        Record::IndexInsert { pos, record, .. } | Record::IndexReplace { pos, record, .. } => {
            pos < p / 2 && barracuda_page::Record::decode_exact(record).is_ok()
        }
        Record::IndexRemove { pos, .. } | Record::IndexTruncate { at: pos, .. } => pos < p / 2,
        Record::Option { payload, .. } => payload.len() <= max_rest_len(size),
        Record::FreePage { .. } | Record::InitPage { .. } | Record::IndexReorganize { .. } => true,
    };
    assert!(ok, "decoded record {rec:?} is not inside a {p}-byte page");
}

/// Re-encodes `records` with the writer: where it accepts them all, they decode back to the
/// same records. The writer may refuse only what it never writes: an OPTION payload longer
/// than a page, or an index record longer than a page or of an invalid shape.
fn check_reencoded(records: &[Record<'_>], size: PageSize) {
    let p = size.bytes();
    let mut w = MtrWriter::new(size);
    for rec in records {
        let index_record = |bytes| {
            barracuda_page::Record::decode_exact(bytes)
                .unwrap_or_else(|e| panic!("decoded {rec:?} carries an undecodable record: {e}"))
        };
        let written = match *rec {
            Record::FreePage { page } => {
                w.free_page(page);
                Ok(())
            }
            Record::InitPage { page } => {
                w.init_page(page);
                Ok(())
            }
            Record::Write { page, offset, data } => w.write(page, offset, data),
            Record::Memset {
                page,
                offset,
                len,
                pattern,
            } => w.memset(page, offset, len, pattern),
            Record::Memmove {
                page,
                offset,
                len,
                source,
            } => w.memmove(page, offset, source, len),
            Record::IndexReorganize { page } => w.index_reorganize(page),
            Record::IndexInsert { page, pos, record } => {
                w.index_insert(page, pos, &index_record(record))
            }
            Record::IndexReplace { page, pos, record } => {
                w.index_replace(page, pos, &index_record(record))
            }
            Record::IndexRemove { page, pos } => w.index_remove(page, pos),
            Record::IndexTruncate { page, at } => w.index_truncate(page, at),
            Record::Option { page, payload } => w.option(page, payload),
        };
        if let Err(e) = written {
            let never_written = match *rec {
                Record::Option { payload, .. } => payload.len() > p,
                Record::IndexInsert { record, .. } | Record::IndexReplace { record, .. } => {
                    record.len() > p || index_record(record).encode_to(&mut Vec::new()).is_err()
                }
                _ => false,
            };
            assert!(
                never_written,
                "the writer refuses decoded record {rec:?}: {e}"
            );
            return;
        }
    }
    let bytes = w.finish();
    match decode(&bytes, size) {
        Ok(again) => assert!(
            again == records,
            "re-encoded records decode differently: {again:?}"
        ),
        Err(e) => panic!("re-encoded records do not decode: {e}"),
    }
}
