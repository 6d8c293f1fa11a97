//! Laws: properties every page format must satisfy, as functions returning
//! `Result<(), TestCaseError>` so that they can be called inside `proptest!` (with `?`) or from a
//! [`TestRunner`](proptest::test_runner::TestRunner).
//!
//! Each law checks one invariant and names it; a failure message says which part broke.

use crate::model::{page_records, IndexOp, OwnedRecord, OwnedValue};
use crate::strategy::{IndexPageCase, OverflowCase, SealedPage};
use barracuda_page::index::{
    MAX_OVERFLOW_LEN, OFF_DIRECTION, OFF_LAST_INSERT, OFF_N_DIRECTION, SEQUENTIAL_SPLIT_THRESHOLD,
};
use barracuda_page::{
    index_capacity, max_key_len, max_record_size, payload_capacity, seal_page, verify_page,
    AllocationBitmap, CatalogPage, FileHeader, IndexPage, OverflowPage, PageError, PageId,
    PageSize, PageType, SpaceHeader, FIL_HEADER_SIZE, FIL_NULL, FIL_TRAILER_SIZE,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Turns a page error into a test failure saying what was being done.
fn ok<T>(result: Result<T, PageError>, doing: &str) -> Result<T, TestCaseError> {
    result.map_err(|e| TestCaseError::fail(format!("{doing}: {e}")))
}

/// The little-endian u16 at `off`, or `None` past the end.
fn le_u16(bytes: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        bytes.get(off..off + 2)?.try_into().ok()?,
    ))
}

/// Encode∘decode = id for [`FileHeader`]: writing `header` into a page of `page_size` and
/// reading it back gives the same header, and the write touches only the first
/// [`FIL_HEADER_SIZE`] bytes.
pub fn law_file_header_round_trip(
    header: &FileHeader,
    page_size: PageSize,
) -> Result<(), TestCaseError> {
    let mut buf = vec![0xA5u8; page_size.bytes()];
    header.write(&mut buf);
    prop_assert_eq!(FileHeader::read(&buf), Ok(*header), "read after write");
    prop_assert_eq!(barracuda_page::page_lsn(&buf), Some(header.lsn));
    prop_assert!(
        buf.iter().skip(FIL_HEADER_SIZE).all(|&b| b == 0xA5),
        "FileHeader::write wrote past the header"
    );
    let short = buf.get(..FIL_HEADER_SIZE - 1).unwrap_or(&[]);
    prop_assert!(
        matches!(FileHeader::read(short), Err(PageError::WrongSize { .. })),
        "a 37-byte header must be rejected"
    );
    Ok(())
}

/// Encode∘decode = id for [`SpaceHeader`]: `format` then `read` gives the header back, the
/// page size can be peeked from the first 51 bytes, the fresh bitmap marks only page 0 used,
/// the sealed page verifies as page 0 of its space, and a reader with another page size rejects
/// it.
pub fn law_space_header_round_trip(header: &SpaceHeader) -> Result<(), TestCaseError> {
    let ps = header.page_size;
    let mut buf = vec![0xFFu8; ps.bytes()];
    ok(header.format(&mut buf), "SpaceHeader::format")?;
    prop_assert_eq!(
        SpaceHeader::read(&buf, ps),
        Ok(*header),
        "read after format"
    );
    let prefix = buf.get(..51).unwrap_or(&[]);
    prop_assert_eq!(SpaceHeader::peek_page_size(prefix), Ok(ps));
    {
        let bitmap = ok(AllocationBitmap::open(&buf, ps), "AllocationBitmap::open")?;
        prop_assert!(bitmap.is_used(0), "page 0 must be marked used");
        prop_assert_eq!(bitmap.count_used(), 1);
        prop_assert_eq!(bitmap.find_free(0), Some(1));
    }
    seal_page(&mut buf);
    prop_assert_eq!(
        verify_page(&buf, PageId::new(header.space_id, 0), ps),
        Ok(())
    );
    prop_assert_eq!(SpaceHeader::read(&buf, ps), Ok(*header), "read after seal");
    for other in PageSize::ALL.into_iter().filter(|&o| o != ps) {
        prop_assert!(SpaceHeader::read(&buf, other).is_err(), "read as {}", other);
    }
    Ok(())
}

/// Encode∘decode = id for [`CatalogPage`]: `write` then `read` gives the same page, before and
/// after sealing, whatever garbage the buffer held before.
pub fn law_catalog_page_round_trip(
    page_size: PageSize,
    page_id: PageId,
    page: &CatalogPage,
) -> Result<(), TestCaseError> {
    let mut buf = vec![0x3Cu8; page_size.bytes()];
    FileHeader::new(page_id, PageType::Catalog).write(&mut buf);
    ok(page.write(&mut buf, page_size), "CatalogPage::write")?;
    let back = CatalogPage::read(&buf, page_size);
    prop_assert_eq!(back.as_ref(), Ok(page), "read after write");
    seal_page(&mut buf);
    prop_assert_eq!(verify_page(&buf, page_id, page_size), Ok(()));
    let back = CatalogPage::read(&buf, page_size);
    prop_assert_eq!(back.as_ref(), Ok(page), "read after seal");
    Ok(())
}

/// Encode∘decode = id for [`OverflowPage`]: the encoder stores
/// `min(payload.len(), payload_capacity)` bytes, the decoder gives back exactly those and the
/// next link, the rest of the body is zero and the file header's prev link is untouched.
pub fn law_overflow_page_round_trip(case: &OverflowCase) -> Result<(), TestCaseError> {
    let ps = case.page_size;
    let (mut buf, used) = ok(case.encode(), "OverflowPage::write")?;
    let cap = payload_capacity(ps);
    prop_assert_eq!(used, case.payload.len().min(cap), "bytes consumed");
    seal_page(&mut buf);
    prop_assert_eq!(verify_page(&buf, case.page_id, ps), Ok(()));
    let page = ok(OverflowPage::read(&buf, ps), "OverflowPage::read")?;
    prop_assert_eq!(page.payload, case.payload.get(..used).unwrap_or(&[]));
    prop_assert_eq!(page.next, case.next);
    let header = ok(FileHeader::read(&buf), "FileHeader::read")?;
    prop_assert_eq!(header.prev, case.prev);
    let body_end = ps.bytes() - FIL_TRAILER_SIZE;
    let pad = buf.get(FIL_HEADER_SIZE + 8 + used..body_end).unwrap_or(&[]);
    prop_assert!(
        pad.iter().all(|&b| b == 0),
        "padding after the payload is not zero"
    );
    Ok(())
}

/// Encode∘decode = id for index pages: [`IndexPage::from_records`] accepts any
/// [`sorted_records`](crate::strategy::sorted_records), and [`IndexPage::open`] on the bytes
/// (also once sealed) gives back the same records, header fields and byte accounting; every key
/// is found by `search` at its position.
pub fn law_index_page_round_trip(
    page_size: PageSize,
    level: u16,
    records: &[OwnedRecord],
) -> Result<(), TestCaseError> {
    let id = PageId::new(5, 9);
    let case = ok(
        IndexPageCase::build(
            page_size,
            id,
            level,
            77,
            3,
            FIL_NULL,
            1234,
            records.to_vec(),
        ),
        "IndexPage::from_records",
    )?;
    let mut sealed = case.bytes.clone();
    seal_page(&mut sealed);
    prop_assert_eq!(verify_page(&sealed, id, page_size), Ok(()));
    for bytes in [&case.bytes, &sealed] {
        let page = ok(
            IndexPage::open(bytes.as_slice(), page_size),
            "IndexPage::open",
        )?;
        prop_assert_eq!(page_records(&page), records.to_vec(), "records after open");
        prop_assert_eq!(
            (
                page.level(),
                page.index_id(),
                page.page_id(),
                page.prev(),
                page.next()
            ),
            (level, 77, id, 3, FIL_NULL)
        );
        prop_assert_eq!(page.page_lsn(), 1234);
        let used: usize = records.iter().map(OwnedRecord::size_bytes).sum();
        prop_assert_eq!(page.used_space(), used, "used space");
        prop_assert_eq!(page.free_space(), index_capacity(page_size) - used);
        for (i, r) in records.iter().enumerate() {
            prop_assert_eq!(page.search(&r.key), Ok(i), "search for key {}", i);
        }
    }
    Ok(())
}

/// Any single flipped bit in a sealed page is detected by [`verify_page`], as a torn or corrupt
/// page (bad trailer magic, LSN mismatch or checksum mismatch), never as a valid or misplaced
/// page. `bit` is taken modulo the page's bit count.
pub fn law_bit_flip_detected(page: &SealedPage, bit: usize) -> Result<(), TestCaseError> {
    let ps = page.page_size;
    prop_assert_eq!(
        verify_page(&page.bytes, page.page_id, ps),
        Ok(()),
        "the unflipped page must verify"
    );
    let bit = bit % (page.bytes.len() * 8);
    let mut bad = page.bytes.clone();
    if let Some(b) = bad.get_mut(bit / 8) {
        *b ^= 1 << (bit % 8);
    }
    let result = verify_page(&bad, page.page_id, ps);
    prop_assert!(
        matches!(
            result,
            Err(PageError::BadTrailerMagic { .. }
                | PageError::LsnMismatch { .. }
                | PageError::ChecksumMismatch { .. })
        ),
        "flip of bit {} (byte {}) in a {:?} page gave {:?}",
        bit,
        bit / 8,
        page.page_type,
        result
    );
    Ok(())
}

/// What the page must answer to a mutation, computed from the model only.
fn expected_check(ps: PageSize, level: u16, rec: &OwnedRecord) -> Result<usize, PageError> {
    let max_key = max_key_len(ps);
    if rec.key.len() > max_key {
        return Err(PageError::KeyTooLong {
            len: rec.key.len(),
            max: max_key,
        });
    }
    let size = rec.size_bytes();
    let max = max_record_size(ps);
    if size > max {
        return Err(PageError::RecordTooLarge { size, max });
    }
    if rec.value.is_child() != (level > 0) {
        return Err(PageError::LevelMismatch { what: "" });
    }
    if let OwnedValue::Overflow {
        prefix,
        total_len,
        first_page,
    } = &rec.value
    {
        if *total_len <= prefix.len() as u64
            || *total_len > MAX_OVERFLOW_LEN
            || *first_page == FIL_NULL
        {
            return Err(PageError::Invalid {
                what: String::new(),
            });
        }
    }
    Ok(size)
}

/// Whether `actual` is the `expected` outcome: equal, except that the free-text field of
/// `LevelMismatch` and `Invalid` is not compared.
fn same_outcome(actual: &Result<(), PageError>, expected: &Result<(), PageError>) -> bool {
    match (actual, expected) {
        (Ok(()), Ok(()))
        | (Err(PageError::LevelMismatch { .. }), Err(PageError::LevelMismatch { .. }))
        | (Err(PageError::Invalid { .. }), Err(PageError::Invalid { .. })) => true,
        (Err(a), Err(e)) => a == e,
        _ => false,
    }
}

/// Index-page operations agree with a `BTreeMap` model: starting from `case`, each of `ops`
/// is applied to both the page and the model. The page must give exactly the outcome the model
/// predicts (`Ok`, or the precise error: key too long, record too large, wrong kind for the
/// level, key out of order, page full with the right byte counts, out of range), leave its
/// bytes unchanged when it fails, stay valid per [`IndexPage::open`], hold the model's records
/// in order with the model's byte usage, and answer `search` as the model does.
pub fn law_index_ops_agree_with_model(
    case: &IndexPageCase,
    ops: &[IndexOp],
) -> Result<(), TestCaseError> {
    let ps = case.page_size;
    let level = case.level;
    let cap = index_capacity(ps);
    let mut page = ok(IndexPage::open(case.bytes.clone(), ps), "open the case")?;
    let mut model = case.model();
    for (step, op) in ops.iter().enumerate() {
        let before = page.as_bytes().to_vec();
        let n = model.len();
        let (actual, expected, probe): (_, _, Vec<u8>) = match op {
            IndexOp::Insert(rec) | IndexOp::InsertAt { record: rec, .. } => {
                let right = match model.search(&rec.key) {
                    Ok(i) | Err(i) => i,
                };
                let pos = match op {
                    IndexOp::InsertAt { at, .. } => at.index(n + 1),
                    _ => right,
                };
                let exists = model.map.contains_key(&rec.key);
                let expected = expected_check(ps, level, rec).and_then(|size| {
                    if pos != right || exists {
                        Err(PageError::KeyOutOfOrder { index: pos })
                    } else if size > cap - model.used_bytes() {
                        Err(PageError::PageFull {
                            needed: size,
                            available: cap - model.used_bytes(),
                        })
                    } else {
                        Ok(())
                    }
                });
                prop_assert_eq!(
                    page.fits(&rec.as_record()),
                    expected_check(ps, level, rec)
                        .is_ok_and(|size| size <= cap - model.used_bytes()),
                    "step {}: fits()",
                    step
                );
                let actual = page.insert(pos, &rec.as_record());
                if expected.is_ok() {
                    model
                        .map
                        .insert(rec.key.clone(), (rec.value.clone(), rec.sys));
                }
                (actual, expected, rec.key.clone())
            }
            IndexOp::Replace { at, value, sys } => {
                if n == 0 {
                    let rec = OwnedRecord::new(Vec::new(), value.clone());
                    let actual = page.replace(0, &rec.as_record());
                    (
                        actual,
                        Err(PageError::OutOfRange { index: 0, len: 0 }),
                        Vec::new(),
                    )
                } else {
                    let i = at.index(n);
                    let old = model
                        .nth(i)
                        .unwrap_or_else(|| OwnedRecord::new(Vec::new(), value.clone()));
                    let rec = OwnedRecord::new(old.key.clone(), value.clone()).with_sys(*sys);
                    let expected = expected_check(ps, level, &rec).and_then(|_| {
                        let old_len = old.as_record().encoded_len();
                        let new_len = rec.as_record().encoded_len();
                        let available = cap - model.used_bytes() + old_len;
                        if new_len > available {
                            Err(PageError::PageFull {
                                needed: new_len,
                                available,
                            })
                        } else {
                            Ok(())
                        }
                    });
                    let actual = page.replace(i, &rec.as_record());
                    if expected.is_ok() {
                        model
                            .map
                            .insert(rec.key.clone(), (rec.value.clone(), rec.sys));
                    }
                    (actual, expected, rec.key)
                }
            }
            IndexOp::Remove { at } => {
                if n == 0 {
                    let actual = page.remove(0);
                    (
                        actual,
                        Err(PageError::OutOfRange { index: 1, len: 0 }),
                        Vec::new(),
                    )
                } else {
                    let i = at.index(n);
                    let key = model.nth(i).map(|r| r.key).unwrap_or_default();
                    model.map.remove(&key);
                    (page.remove(i), Ok(()), key)
                }
            }
            IndexOp::Compact => {
                page.compact();
                prop_assert_eq!(page.garbage(), 0, "step {}: garbage after compact", step);
                prop_assert_eq!(page.contiguous_free(), page.free_space());
                (Ok(()), Ok(()), Vec::new())
            }
        };
        prop_assert!(
            same_outcome(&actual, &expected),
            "step {}: {:?} gave {:?}, the model expects {:?}",
            step,
            op,
            actual,
            expected
        );
        if actual.is_err() {
            prop_assert!(
                page.as_bytes() == before.as_slice(),
                "step {}: failed {:?} changed the page",
                step,
                op
            );
        }
        let reopened = ok(
            IndexPage::open(page.as_bytes(), ps),
            &format!("step {step}: page invalid after {op:?}"),
        )?;
        prop_assert_eq!(reopened.len(), model.len(), "step {}: record count", step);
        prop_assert_eq!(
            page_records(&reopened),
            model.records(),
            "step {}: contents",
            step
        );
        prop_assert_eq!(
            reopened.used_space(),
            model.used_bytes(),
            "step {}: used bytes",
            step
        );
        prop_assert_eq!(
            reopened.search(&probe),
            model.search(&probe),
            "step {}: search",
            step
        );
    }
    for (i, r) in model.records().iter().enumerate() {
        prop_assert_eq!(page.search(&r.key), Ok(i));
        let mut after = r.key.clone();
        after.push(0);
        prop_assert_eq!(page.search(&after), model.search(&after));
    }
    Ok(())
}

/// Whether the page's insert hints call for a sequential split of an insert at `pos`
/// (mirrors [`IndexPage::split_point`]'s documented rule).
fn sequential_split(bytes: &[u8], n: usize, pos: usize) -> bool {
    let last = le_u16(bytes, OFF_LAST_INSERT).map_or(usize::MAX, usize::from);
    let dir = bytes.get(OFF_DIRECTION).copied().unwrap_or(0);
    let streak = le_u16(bytes, OFF_N_DIRECTION).unwrap_or(0) >= SEQUENTIAL_SPLIT_THRESHOLD;
    streak
        && ((dir == 1 && pos == n && last.checked_add(1) == Some(pos))
            || (dir == 2 && pos == 0 && last == 0))
}

/// A split preserves all records and their order: for `record` (of the page's level) inserted
/// into `case`'s page (the record with the same key is removed first, if any), `split_point`,
/// then `split_off`, then the insert on the chosen side must succeed, leave both halves valid, and the
/// left records followed by the right ones must equal the model with `record` added. Unless
/// the page was empty or its insert hints call for a sequential split, both sides end up
/// non-empty. The split does not touch the left page's links.
pub fn law_split_preserves_records(
    case: &IndexPageCase,
    record: &OwnedRecord,
) -> Result<(), TestCaseError> {
    let ps = case.page_size;
    prop_assume!(
        expected_check(ps, case.level, record).is_ok(),
        "the record must be one the page accepts"
    );
    let mut left = ok(IndexPage::open(case.bytes.clone(), ps), "open the case")?;
    let mut model = case.model();
    if let Ok(i) = model.search(&record.key) {
        ok(left.remove(i), "remove the record with the same key")?;
        model.map.remove(&record.key);
    }
    let n = left.len();
    let pos = match model.search(&record.key) {
        Ok(i) | Err(i) => i,
    };
    let rec = record.as_record();
    let sp = left.split_point(pos, &rec);
    prop_assert!(sp.at <= n, "split point {} beyond {} records", sp.at, n);
    prop_assert!(
        if sp.insert_left {
            pos <= sp.at
        } else {
            pos >= sp.at
        },
        "{:?} puts position {} on the wrong side",
        sp,
        pos
    );
    let sequential = sequential_split(left.as_bytes(), n, pos);
    let right_id = PageId::new(case.page_id.space_id, case.page_id.page_no.wrapping_add(1));
    let mut right = ok(
        IndexPage::init(
            vec![0u8; ps.bytes()],
            ps,
            right_id,
            case.level,
            case.index_id,
        ),
        "init the right page",
    )?;
    ok(left.split_off(sp.at, &mut right), "split_off")?;
    ok(
        IndexPage::open(left.as_bytes(), ps),
        "left page after split_off",
    )?;
    ok(
        IndexPage::open(right.as_bytes(), ps),
        "right page after split_off",
    )?;
    if sp.insert_left {
        ok(left.insert(pos, &rec), "insert into the left page")?;
    } else {
        ok(
            right.insert(pos - sp.at, &rec),
            "insert into the right page",
        )?;
    }
    let l = ok(
        IndexPage::open(left.as_bytes(), ps),
        "left page after insert",
    )?;
    let r = ok(
        IndexPage::open(right.as_bytes(), ps),
        "right page after insert",
    )?;
    model
        .map
        .insert(record.key.clone(), (record.value.clone(), record.sys));
    let mut both = page_records(&l);
    both.extend(page_records(&r));
    prop_assert_eq!(both, model.records(), "left ++ right != model");
    if !sequential && n >= 1 {
        prop_assert!(
            !l.is_empty() && !r.is_empty(),
            "a balanced split left {} + {} records",
            l.len(),
            r.len()
        );
    }
    prop_assert_eq!(
        (l.prev(), l.next()),
        (case.prev, case.next),
        "split_off changed links"
    );
    Ok(())
}

/// Decoders never panic on arbitrary bytes, and whatever they accept is self-consistent: runs
/// every [`fuzz_targets`](crate::fuzz_targets) function on `bytes` (they cover
/// [`IndexPage::open`], [`FileHeader::read`], [`verify_page`], [`CatalogPage::read`],
/// [`SpaceHeader::read`], [`OverflowPage::read`] and [`AllocationBitmap::open`] at every page
/// size). A violation panics; proptest reports the panic as a failure and shrinks the input.
pub fn law_decoders_never_panic(bytes: &[u8]) -> Result<(), TestCaseError> {
    crate::fuzz_targets::page_verify(bytes);
    crate::fuzz_targets::index_page_decode(bytes);
    crate::fuzz_targets::catalog_decode(bytes);
    crate::fuzz_targets::space_decode(bytes);
    Ok(())
}
