//! The decode logic of the fuzz targets in `fuzz/fuzz_targets/`, shared with the corpus replay
//! test (`tests/fuzz_corpus.rs`) and with
//! [`law_decoders_never_panic`](crate::laws::law_decoders_never_panic).
//!
//! Each function takes arbitrary bytes and panics if, and only if, a decoder panics or accepts
//! something inconsistent (a valid index page whose keys are not sorted, a header that does not
//! re-encode to the same bytes, ...). That panic is what libFuzzer reports as a crash.
//!
//! # Input format
//! An input whose length is a page size is that page. Any other non-empty input is in *compact
//! form* (see [`expand_compact`]): its first byte selects the page size and the rest gives the
//! start and the end of a page whose middle is zero, so that short inputs reach the file
//! header, the body headers, the slot directory and the trailer of every page size. Every
//! decoder is also given the raw input at every other page size, where it must fail.

use crate::model::{page_records, OwnedRecord};
use barracuda_page::catalog::{capacity as catalog_capacity, MAX_NAME_LEN};
use barracuda_page::space::FLAG_RESERVED_MASK;
use barracuda_page::{
    checksum, index_capacity, max_key_len, max_record_size, pages_per_bitmap, payload_capacity,
    record_size, seal_page, verify_page, AllocationBitmap, CatalogPage, FileHeader, IndexPage,
    OverflowPage, PageError, PageId, PageSize, PageType, SpaceHeader, ValueRef, FIL_HEADER_SIZE,
    FIL_NULL, TRAILER_MAGIC,
};
use std::borrow::Cow;

/// Names of the fuzz targets, which are also the directories of the seed corpus
/// (`fuzz/corpus/<target>/`).
pub const TARGETS: [&str; 5] = [
    "page_verify",
    "index_page_decode",
    "catalog_decode",
    "space_decode",
    "undo_decode",
];

/// Runs the target named `target` on `data`; `false` if there is no such target.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "page_verify" => page_verify(data),
        "index_page_decode" => index_page_decode(data),
        "catalog_decode" => catalog_decode(data),
        "space_decode" => space_decode(data),
        "undo_decode" => undo_decode(data),
        _ => return false,
    }
    true
}

/// Unwraps a result the invariants say must be `Ok`, panicking with what was being done.
fn must<T>(result: Result<T, PageError>, doing: &str) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{doing}: {e}"),
    }
}

/// Decodes the compact form: `data[0] % 5` selects the page size in [`PageSize::ALL`]; the rest,
/// split in two halves, gives the first bytes of the page (first half) and its last bytes
/// (second half); the bytes between are zero. Halves longer than the page are cut (the end
/// overwrites the start). `None` for empty input.
pub fn expand_compact(data: &[u8]) -> Option<(PageSize, Vec<u8>)> {
    let (&selector, body) = data.split_first()?;
    let ps = *PageSize::ALL.get(usize::from(selector) % PageSize::ALL.len())?;
    let size = ps.bytes();
    let (front, back) = body.split_at(body.len() / 2);
    let mut page = vec![0u8; size];
    let front = front.get(..front.len().min(size)).unwrap_or(front);
    if let Some(dst) = page.get_mut(..front.len()) {
        dst.copy_from_slice(front);
    }
    let back = back.get(back.len().saturating_sub(size)..).unwrap_or(back);
    if let Some(dst) = page.get_mut(size - back.len()..) {
        dst.copy_from_slice(back);
    }
    Some((ps, page))
}

/// Encodes `page` (of `page_size`) in the compact form [`expand_compact`] reads back exactly:
/// the shortest equal-length start and end that hold every non-zero byte. Its length is odd,
/// so it is never mistaken for a whole page.
pub fn compact(page_size: PageSize, page: &[u8]) -> Vec<u8> {
    let half = page.len() / 2;
    let (first, second) = page.split_at(half);
    let f = first.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let b = second
        .iter()
        .position(|&b| b != 0)
        .map_or(0, |i| second.len() - i);
    let m = f.max(b).min(half);
    let selector = PageSize::ALL
        .iter()
        .position(|&p| p == page_size)
        .unwrap_or(0) as u8;
    let mut out = Vec::with_capacity(1 + 2 * m);
    out.push(selector);
    out.extend_from_slice(page.get(..m).unwrap_or(&[]));
    out.extend_from_slice(page.get(page.len() - m..).unwrap_or(&[]));
    out
}

/// The page images an input stands for: itself if its length is a page size, else its
/// [compact form](expand_compact).
pub fn page_images(data: &[u8]) -> Vec<(PageSize, Cow<'_, [u8]>)> {
    match PageSize::from_bytes(data.len()) {
        Some(ps) => vec![(ps, Cow::Borrowed(data))],
        None => expand_compact(data)
            .map(|(ps, page)| (ps, Cow::Owned(page)))
            .into_iter()
            .collect(),
    }
}

/// Page sizes other than the input's own length: decoders must reject the input at these.
fn other_sizes(data: &[u8]) -> impl Iterator<Item = PageSize> + '_ {
    PageSize::ALL
        .into_iter()
        .filter(move |ps| ps.bytes() != data.len())
}

/// Fuzz target `page_verify`: [`FileHeader::read`] on the input, and [`verify_page`] at every
/// page size on the input and its page image. A header that decodes must re-encode to the
/// same 38 bytes; every verification error must be the documented one for those bytes; a page
/// that verifies must be sealed (resealing changes nothing), be rejected at another page id,
/// and be rejected once any one bit is flipped.
pub fn page_verify(data: &[u8]) {
    check_file_header(data);
    for ps in other_sizes(data) {
        check_verify(data, ps);
    }
    for (ps, image) in page_images(data) {
        check_file_header(&image);
        check_verify(&image, ps);
    }
}

fn check_file_header(data: &[u8]) {
    match FileHeader::read(data) {
        Ok(h) => {
            let mut enc = [0u8; FIL_HEADER_SIZE];
            h.write(&mut enc);
            assert_eq!(
                Some(&enc[..]),
                data.get(..FIL_HEADER_SIZE),
                "FileHeader does not re-encode to the bytes it was read from"
            );
        }
        Err(PageError::WrongSize { found, .. }) => {
            assert!(
                found == data.len() && found < FIL_HEADER_SIZE,
                "WrongSize for {found} bytes"
            );
        }
        Err(PageError::UnknownPageType { found, .. }) => {
            assert!(
                PageType::from_u16(found).is_none(),
                "known type {found} reported unknown"
            );
        }
        Err(e) => panic!("FileHeader::read returned an undocumented error: {e}"),
    }
}

fn check_verify(buf: &[u8], ps: PageSize) {
    let claimed = FileHeader::read(buf).ok();
    let expected = claimed.map_or(PageId::new(0, 0), |h| h.page_id());
    match verify_page(buf, expected, ps) {
        Ok(()) => check_verified(buf, ps),
        Err(PageError::WrongSize { expected, found }) => {
            assert!(found == buf.len() && expected == ps.bytes() && found != expected);
        }
        Err(PageError::AllZero { .. }) => assert!(buf.iter().all(|&b| b == 0), "AllZero"),
        Err(PageError::BadTrailerMagic { found, .. }) => assert_ne!(found, TRAILER_MAGIC),
        Err(PageError::LsnMismatch {
            header_low,
            trailer,
            ..
        }) => assert_ne!(header_low, trailer),
        Err(PageError::ChecksumMismatch {
            stored, computed, ..
        }) => {
            assert_ne!(stored, computed);
            assert_eq!(computed, checksum(buf));
        }
        Err(PageError::UnknownPageType { found, .. }) => {
            assert!(PageType::from_u16(found).is_none());
        }
        Err(e) => panic!("verify_page at the header's own page id returned {e}"),
    }
}

fn check_verified(buf: &[u8], ps: PageSize) {
    assert_eq!(buf.len(), ps.bytes(), "a page of the wrong size verified");
    let h = must(FileHeader::read(buf), "header of a verified page");
    assert_eq!(
        h.checksum,
        checksum(buf),
        "verified page with a wrong checksum"
    );
    let mut resealed = buf.to_vec();
    seal_page(&mut resealed);
    assert!(resealed == buf, "sealing a verified page changed it");
    let id = h.page_id();
    assert!(matches!(
        verify_page(buf, PageId::new(id.space_id, id.page_no ^ 1), ps),
        Err(PageError::WrongPageNo { .. })
    ));
    assert!(matches!(
        verify_page(buf, PageId::new(id.space_id ^ 1, id.page_no), ps),
        Err(PageError::WrongSpaceId { .. })
    ));
    let bit = h.checksum as usize % (buf.len() * 8);
    let mut flipped = buf.to_vec();
    if let Some(b) = flipped.get_mut(bit / 8) {
        *b ^= 1 << (bit % 8);
    }
    assert!(
        verify_page(&flipped, id, ps).is_err(),
        "flip of bit {bit} not detected"
    );
}

/// A record to probe an index page of `level` with.
fn probe(level: u16) -> OwnedRecord {
    let key = b"\xff\xfe probe".to_vec();
    if level > 0 {
        OwnedRecord::new(key, crate::model::OwnedValue::Child(7))
    } else {
        OwnedRecord::new(key, crate::model::OwnedValue::Inline(b"v".to_vec()))
    }
}

/// Fuzz target `index_page_decode`: [`IndexPage::open`] on the input at every page size. When
/// it accepts a page, every accessor must agree with the format's invariants (sorted keys
/// within the limits, kinds matching the level, exact byte accounting, `search` finding every
/// key) and the mutations (compact, remove, split, insert, replace) must keep it valid. Pages
/// that only pass [`IndexPage::open_trusted`] must not make a reading method panic.
pub fn index_page_decode(data: &[u8]) {
    for ps in other_sizes(data) {
        assert!(IndexPage::open(data, ps).is_err());
        assert!(IndexPage::open_trusted(data, ps).is_err());
    }
    for (ps, image) in page_images(data) {
        if let Ok(page) = IndexPage::open(&image[..], ps) {
            check_index_page(&page);
            mutate_index_page(&image, ps);
        }
        if let Ok(page) = IndexPage::open_trusted(&image[..], ps) {
            read_trusted(&page);
        }
    }
}

fn check_index_page(page: &IndexPage<&[u8]>) {
    let ps = page.page_size();
    let n = page.len();
    let level = page.level();
    assert_eq!(page.iter().len(), n);
    assert_eq!(page.iter().rev().count(), n);
    assert!(page.record(n).is_err());
    assert_eq!(page.is_empty(), n == 0);
    assert_eq!(page.is_leaf(), level == 0);
    let mut sum = 0;
    let mut prev: Option<&[u8]> = None;
    for (i, rec) in page.iter().enumerate() {
        let rec = rec.expect("a page that passed open decodes every record");
        assert_eq!(page.record(i).ok(), Some(rec));
        assert_eq!(page.key(i).ok(), Some(rec.key));
        assert!(rec.key.len() <= max_key_len(ps), "record {i}: key too long");
        let size = page.record_size_at(i).expect("record decodes");
        assert_eq!(size, record_size(&rec));
        assert!(size <= max_record_size(ps), "record {i} too large");
        assert_eq!(
            rec.is_child(),
            level > 0,
            "record {i}: kind vs level {level}"
        );
        assert!(
            prev.is_none_or(|p| p < rec.key),
            "record {i}: keys not increasing"
        );
        assert_eq!(page.search(rec.key), Ok(i), "search for record {i}");
        if level > 0 {
            assert_eq!(page.child_index_for(rec.key), Some(i));
            assert!(rec.child_page().is_some());
        }
        if let ValueRef::Overflow {
            prefix,
            total_len,
            first_page,
        } = rec.value
        {
            assert!(total_len > prefix.len() as u64 && first_page != FIL_NULL);
        }
        sum += size;
        prev = Some(rec.key);
    }
    assert_eq!(page.used_space(), sum, "byte accounting");
    assert_eq!(page.range_size(0..n), sum);
    assert_eq!(page.used_space() + page.free_space(), index_capacity(ps));
    assert!(page.contiguous_free() <= page.free_space());
    assert!((0.0..=1.0).contains(&page.fill_factor()));
    assert_eq!(page.child_index_for(b""), (n > 0).then_some(0));
    let header = page.file_header();
    assert_eq!(header.page_type, PageType::Index);
    assert_eq!(
        (page.page_id(), page.prev(), page.next(), page.page_lsn()),
        (header.page_id(), header.prev, header.next, header.lsn)
    );
    let mid = page.middle_split_point();
    assert!(
        mid <= n && (n < 2 || (1..n).contains(&mid)),
        "middle split {mid} of {n}"
    );
    let p = probe(level);
    for pos in [0, n / 2, n] {
        let sp = page.split_point(pos, &p.as_record());
        assert!(sp.at <= n, "split point {} of {n}", sp.at);
    }
}

fn mutate_index_page(image: &[u8], ps: PageSize) {
    let open = |bytes: &[u8]| {
        page_records(&must(
            IndexPage::open(bytes, ps),
            "page valid after a mutation",
        ))
    };
    let original = must(IndexPage::open(image.to_vec(), ps), "reopen");
    let records = page_records(&original);
    let n = records.len();
    let level = original.level();

    let mut page = original.clone();
    page.compact();
    assert_eq!(page.garbage(), 0);
    assert_eq!(page.contiguous_free(), page.free_space());
    assert_eq!(
        open(page.as_bytes()),
        records,
        "compact changed the records"
    );

    if n > 0 {
        let mut page = original.clone();
        must(page.remove(n / 2), "remove");
        let mut expected = records.clone();
        expected.remove(n / 2);
        assert_eq!(open(page.as_bytes()), expected, "remove");

        let mut page = original.clone();
        let first = records.first().map(OwnedRecord::as_record);
        if let Some(first) = first {
            must(page.replace(0, &first), "replace a record with itself");
            assert_eq!(open(page.as_bytes()), records, "replace with itself");
        }

        let mut left = original.clone();
        let at = left.middle_split_point();
        let mut right = must(
            IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(0, 1), level, 0),
            "init",
        );
        must(left.split_off(at, &mut right), "split_off");
        let mut both = open(left.as_bytes());
        both.extend(open(right.as_bytes()));
        assert_eq!(both, records, "split_off lost or reordered records");
    }

    let p = probe(level);
    if let Err(pos) = original.search(&p.key) {
        let mut page = original.clone();
        match page.insert(pos, &p.as_record()) {
            Ok(()) => assert_eq!(open(page.as_bytes()).len(), n + 1),
            Err(_) => assert!(
                page.as_bytes() == original.as_bytes(),
                "failed insert changed the page"
            ),
        }
    }
}

/// Reading methods on a page that only passed `open_trusted`: results are unspecified, but
/// nothing may panic.
fn read_trusted(page: &IndexPage<&[u8]>) {
    let n = page.len();
    for i in 0..n {
        let _ = (page.record(i), page.key(i), page.record_size_at(i));
    }
    let _ = (
        page.iter().count(),
        page.search(b"m"),
        page.child_index_for(b"m"),
    );
    let _ = (page.free_space(), page.used_space(), page.fill_factor());
    let _ = (
        page.middle_split_point(),
        page.range_size(0..n),
        page.file_header(),
    );
    let p = probe(page.level());
    let _ = page.split_point(n / 2, &p.as_record());
}

/// Fuzz target `catalog_decode`: [`CatalogPage::read`] at every page size. An accepted page
/// must respect the capacity and name rules and survive write-then-read unchanged.
pub fn catalog_decode(data: &[u8]) {
    for ps in other_sizes(data) {
        assert!(CatalogPage::read(data, ps).is_err());
    }
    for (ps, image) in page_images(data) {
        if let Ok(cat) = CatalogPage::read(&image, ps) {
            assert!(cat.entries.len() <= catalog_capacity(ps));
            for e in &cat.entries {
                assert!(
                    (1..=MAX_NAME_LEN).contains(&e.name.len()),
                    "name {:?}",
                    e.name
                );
            }
            let mut copy = image.to_vec();
            must(cat.write(&mut copy, ps), "rewrite an accepted catalog page");
            assert_eq!(CatalogPage::read(&copy, ps), Ok(cat), "catalog write∘read");
            assert_eq!(copy.get(..FIL_HEADER_SIZE), image.get(..FIL_HEADER_SIZE));
        }
    }
}

/// Fuzz target `space_decode`: [`SpaceHeader::read`] and `peek_page_size`,
/// [`AllocationBitmap::open`] and its queries and updates, and [`OverflowPage::read`], at
/// every page size. Accepted headers and overflow pages must re-encode to equal values;
/// bitmap answers must be consistent with each other.
pub fn space_decode(data: &[u8]) {
    if let Ok(ps) = SpaceHeader::peek_page_size(data) {
        assert_eq!(data.get(50).copied(), Some(ps.shift()));
    }
    for ps in other_sizes(data) {
        assert!(SpaceHeader::read(data, ps).is_err());
        assert!(AllocationBitmap::open(data, ps).is_err());
        assert!(OverflowPage::read(data, ps).is_err());
    }
    for (ps, image) in page_images(data) {
        if let Ok(h) = SpaceHeader::read(&image, ps) {
            assert_eq!(h.page_size, ps);
            assert_eq!(h.flags & FLAG_RESERVED_MASK, 0);
            assert_eq!(SpaceHeader::peek_page_size(&image), Ok(ps));
            let mut buf = vec![0u8; ps.bytes()];
            must(h.format(&mut buf), "format an accepted space header");
            assert_eq!(
                SpaceHeader::read(&buf, ps),
                Ok(h),
                "space header format∘read"
            );
        }
        if let Ok(bitmap) = AllocationBitmap::open(&image[..], ps) {
            check_bitmap(&bitmap, ps);
            let mut copy = image.to_vec();
            let mut bitmap = must(AllocationBitmap::open(&mut copy[..], ps), "reopen bitmap");
            let used = bitmap.count_used();
            if let Some(i) = bitmap.find_free(0) {
                must(bitmap.set_used(i, true), "set a free bit");
                assert!(bitmap.is_used(i));
                assert_eq!(bitmap.count_used(), used + 1);
                must(bitmap.set_used(i, false), "clear it again");
                assert_eq!(bitmap.count_used(), used);
            }
            let cap = bitmap.capacity();
            assert!(bitmap.set_used(cap, true).is_err());
        }
        if let Ok(o) = OverflowPage::read(&image, ps) {
            assert!(o.payload.len() <= payload_capacity(ps));
            let (payload, next) = (o.payload.to_vec(), o.next);
            let mut copy = image.to_vec();
            let used = must(
                OverflowPage::write(&mut copy, ps, &payload, next),
                "rewrite",
            );
            assert_eq!(used, payload.len());
            let back = must(OverflowPage::read(&copy, ps), "read the rewrite");
            assert_eq!((back.payload, back.next), (&payload[..], next));
        }
    }
}

fn check_bitmap(bitmap: &AllocationBitmap<&[u8]>, ps: PageSize) {
    let cap = pages_per_bitmap(ps);
    assert_eq!(bitmap.capacity(), cap);
    let used = bitmap.count_used();
    assert!(used <= cap);
    assert!(
        bitmap.is_used(cap),
        "bits beyond the capacity must read as used"
    );
    match bitmap.find_free(0) {
        Some(i) => {
            assert!(i < cap && !bitmap.is_used(i));
            assert!(i == 0 || bitmap.is_used(i - 1));
        }
        None => assert_eq!(used, cap),
    }
    assert_eq!(bitmap.find_free(cap), None);
    let run = ps.pages_per_extent();
    if let Some(s) = bitmap.find_free_run(0, run) {
        assert!(s % run == 0 && s + run <= cap);
        assert!(!bitmap.is_used(s) && !bitmap.is_used(s + run - 1));
    }
    assert_eq!(bitmap.find_free_run(0, 0), None);
    assert_eq!(bitmap.find_free_run(0, 7), None);
}

/// Fuzz target `undo_decode`: [`UndoPage::open`](barracuda_page::UndoPage::open) with its
/// records and roll-pointer lookups, and [`TrxSysPage::open`](barracuda_page::TrxSysPage::open),
/// at every page size. An accepted undo page's records must be readable at the offsets its walk
/// yields and nowhere outside its record area; appending a record to it must give a page that
/// opens again with that record last. A page that passes only `open_trusted` must not make any
/// method panic, and reusing it as a log header page must give a valid, empty page.
pub fn undo_decode(data: &[u8]) {
    use barracuda_page::undo::{UndoKind, UndoRecord};
    use barracuda_page::{TrxSysPage, UndoPage};
    for (ps, image) in page_images(data) {
        if let Ok(page) = UndoPage::open(&image[..], ps) {
            let records: Vec<(u16, UndoRecord<'_>)> = page.records().collect();
            let mut prev = 0u16;
            for (offset, record) in &records {
                assert_eq!(page.record_at(*offset).ok().as_ref(), Some(record));
                assert_eq!(page.prev_record(*offset).unwrap_or(0), prev);
                prev = *offset;
            }
            assert_eq!(page.last_record(), prev);
            assert!(page.record_at(page.free()).is_err());
            // An offset taken from the input, as a crafted roll pointer would name it.
            let probe = data
                .get(..2)
                .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
            let _ = page.record_at(probe);
            let _ = page.log_header();
            let mut copy = image.to_vec();
            let mut writable = must(UndoPage::open(&mut copy[..], ps), "reopen an undo page");
            let extra = UndoRecord {
                kind: UndoKind::Insert,
                space: 1,
                undo_no: 0,
                payload: b"fuzz",
            };
            if let Ok(at) = writable.append(&extra) {
                let again = must(UndoPage::open(&copy[..], ps), "open after an append");
                assert_eq!(again.last_record(), at);
                assert_eq!(again.record_at(at).ok(), Some(extra));
            }
        }
        // A page that only passes the O(1) open (its records unchecked): reading and writing
        // methods may return anything, but never panic.
        if let Ok(page) = UndoPage::open_trusted(&image[..], ps) {
            let _ = page.records().count();
            let probe = data
                .get(2..4)
                .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
            let _ = page.record_at(probe);
            let _ = page.prev_record(probe);
            let _ = page.log_header();
            let mut copy = image.to_vec();
            let mut writable = must(UndoPage::open_trusted(&mut copy[..], ps), "reopen trusted");
            let _ = writable.append(&UndoRecord {
                kind: UndoKind::Update,
                space: 2,
                undo_no: 1,
                payload: b"trusted",
            });
            writable.set_cached(FIL_NULL, 1);
            writable.reuse_as_header(7);
            let reused = must(
                UndoPage::open(&copy[..], ps),
                "open a page reused as a header",
            );
            assert_eq!(reused.records().count(), 0);
        }
        if let Ok(page) = TrxSysPage::open(&image[..], ps) {
            assert_eq!(page.history_first() == FIL_NULL, page.history_len() == 0);
            let _ = page.active_logs().count();
            let _ = page.cache_first();
        }
    }
}
