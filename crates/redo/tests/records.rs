//! Redo records: byte-exact examples of `docs/FORMATS.md` §10, the round-trip laws of
//! `log_page_diff` and `log_created_page`, the shifted-run size law, and decoder totality.

use barracuda_page::{PageId, PageSize};
use barracuda_redo::record::{apply, decode, MtrWriter, PageState, Record, RecordError};
use proptest::prelude::*;

const P: PageSize = PageSize::K4;

fn diff_bytes(before: &[u8], after: &[u8]) -> Vec<u8> {
    let mut w = MtrWriter::new(PageSize::from_bytes(before.len()).expect("page size"));
    w.log_page_diff(PageId::new(1, 2), before, after)
        .expect("diff");
    w.finish()
}

fn replay(before: &[u8], mtr: &[u8]) -> Vec<u8> {
    let ps = PageSize::from_bytes(before.len()).expect("page size");
    let recs = decode(mtr, ps).expect("decode");
    let mut page = before.to_vec();
    assert_eq!(
        apply(PageId::new(1, 2), &mut page, &recs),
        Ok(PageState::Live)
    );
    page
}

#[test]
fn byte_exact_example_of_formats_md() {
    let a = PageId::new(5, 300);
    let b = PageId::new(0, 1);
    let mut w = MtrWriter::new(PageSize::K16);
    w.init_page(a);
    w.write(a, 100, &[0xAA, 0xBB]).expect("write");
    w.write(a, 104, &[0x01]).expect("write");
    w.memset(a, 200, 1000, &[0x00]).expect("memset");
    w.memmove(a, 1202, 1200, 20).expect("memmove");
    w.write(b, 8, &[0x00; 20]).expect("write");
    w.free_page(b);
    w.option(b, b"tx").expect("option");
    let mut expected = vec![
        0x13, 0x05, 0x80, 0xAC, // INIT_PAGE 5:300
        0xB3, 0x64, 0xAA, 0xBB, // same page, WRITE at 0 + 100
        0xB2, 0x02, 0x01, // same page, WRITE at 102 + 2
        0xC4, 0x5F, 0x83, 0x68,
        0x00, // same page, MEMSET at 105 + 95, length 1000, pattern 00
        0xD3, 0x02, 0x14, 0x03, // same page, MEMMOVE to 1200 + 2, 20 bytes, source delta -2
        0x30, 0x17, 0x00, 0x01, 0x08, // WRITE, 23 bytes follow, page 0:1, offset 8
    ];
    expected.extend([0u8; 20]);
    expected.extend([0x02, 0x00, 0x01]); // FREE_PAGE 0:1
    expected.extend([0x74, 0x00, 0x01, b't', b'x']); // OPTION 0:1 "tx"
    assert_eq!(w.as_bytes(), expected.as_slice());

    let recs = decode(&expected, PageSize::K16).expect("decode");
    let zeros = [0u8; 20];
    assert_eq!(
        recs,
        vec![
            Record::InitPage { page: a },
            Record::Write {
                page: a,
                offset: 100,
                data: &[0xAA, 0xBB]
            },
            Record::Write {
                page: a,
                offset: 104,
                data: &[0x01]
            },
            Record::Memset {
                page: a,
                offset: 200,
                len: 1000,
                pattern: &[0]
            },
            Record::Memmove {
                page: a,
                offset: 1202,
                len: 20,
                source: 1200
            },
            Record::Write {
                page: b,
                offset: 8,
                data: &zeros
            },
            Record::FreePage { page: b },
            Record::Option {
                page: b,
                payload: b"tx"
            },
        ]
    );
    let mut page = vec![0xFFu8; PageSize::K16.bytes()];
    assert_eq!(apply(a, &mut page, &recs), Ok(PageState::Live));
    assert_eq!(page[99..106], [0, 0xAA, 0xBB, 0, 0, 0x01, 0]);
    let mut other = vec![0xFFu8; PageSize::K16.bytes()];
    assert_eq!(apply(b, &mut other, &recs), Ok(PageState::Freed));
}

#[test]
fn equal_pages_log_nothing() {
    let page: Vec<u8> = (0..P.bytes()).map(|i| (i * 7) as u8).collect();
    assert!(diff_bytes(&page, &page).is_empty());
}

#[test]
fn a_slot_directory_insert_is_one_memmove_and_a_small_write() {
    // A directory of n 2-byte slots at the page's end; inserting slot 0 shifts all n down by 2.
    for n in [16usize, 100, 1000] {
        let p = P.bytes();
        let mut before = vec![0u8; p];
        let dir_end = p - 8;
        for (k, s) in before[dir_end - 2 * n..dir_end].chunks_mut(2).enumerate() {
            s.copy_from_slice(&u16::try_from(k * 37 + 1).expect("fits").to_le_bytes());
        }
        let mut after = before.clone();
        after.copy_within(dir_end - 2 * n..dir_end, dir_end - 2 * n - 2);
        after[dir_end - 2..dir_end].copy_from_slice(&[0x34, 0x12]);
        let mtr = diff_bytes(&before, &after);
        assert!(mtr.len() <= 16, "n = {n}: {} bytes: {mtr:02x?}", mtr.len());
        assert_eq!(replay(&before, &mtr), after);
    }
}

#[test]
fn writer_rejects_changes_outside_the_page_and_after_free() {
    let a = PageId::new(1, 1);
    let mut w = MtrWriter::new(P);
    assert!(matches!(
        w.write(a, P.bytes() - 1, &[1, 2]),
        Err(RecordError::Invalid { .. })
    ));
    assert!(matches!(
        w.memset(a, 0, 4, &[]),
        Err(RecordError::Invalid { .. })
    ));
    assert!(matches!(
        w.memmove(a, 0, P.bytes() - 2, 4),
        Err(RecordError::Invalid { .. })
    ));
    w.free_page(a);
    assert!(matches!(
        w.write(a, 0, &[1]),
        Err(RecordError::Invalid { .. })
    ));
    w.init_page(a);
    w.write(a, 0, &[1]).expect("write after init");
}

#[test]
fn decoder_names_the_offset_of_the_fault() {
    let err = |b: &[u8]| match decode(b, P) {
        Err(RecordError::Corrupt { at, .. }) => at,
        other => panic!("{other:?}"),
    };
    assert_eq!(err(&[0x93]), 0, "same_page first record");
    assert_eq!(err(&[0x13, 0x01]), 0, "runs past the end");
    assert_eq!(err(&[0x12, 0x01, 0x01, 0x60 | 1, 0]), 3, "reserved type");
    assert_eq!(err(&[0x32, 0x01, 0x01]), 3, "WRITE without offset");
    assert_eq!(
        err(&[0x35, 0x01, 0x01, 0x90, 0x00, 0xAA]),
        3,
        "offset 4224 beyond a 4 KiB page"
    );
    assert_eq!(err(&[0x30, 0x05]), 1, "length 5 not in the header");
    assert_eq!(
        err(&[0x23, 0x01, 0x01, 0x05]),
        3,
        "EXTENDED subtype 5 undefined"
    );
    assert_eq!(
        err(&[0x23, 0x01, 0x01, 0x01]),
        4,
        "INDEX_INSERT without a position"
    );
    assert_eq!(
        err(&[0x25, 0x01, 0x01, 0x03, 0x90, 0x00]),
        4,
        "INDEX_REMOVE at record 4224: a 4 KiB page has fewer"
    );
    assert_eq!(
        err(&[0x25, 0x01, 0x01, 0x03, 0x02, 0x00]),
        5,
        "INDEX_REMOVE with a trailing byte"
    );
    assert_eq!(
        err(&[0x2A, 0x01, 0x01, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x4B]),
        5,
        "INDEX_INSERT whose inline record claims a 2-byte key but has 1"
    );
    assert_eq!(
        err(&[0x28, 0x01, 0x01, 0x02, 0x00, 0x07, 0x00, 0x00, 0x00]),
        5,
        "INDEX_REPLACE whose record has an unknown kind"
    );
    assert_eq!(
        decode(
            &[
                // 23 bytes follow the header: page 1:1, subtype 1, position 5, and the record:
                // kind 0, key_len 1, value_len 0, trx_id and roll_ptr 0 (13 bytes), key "K".
                0x20, 0x17, 0x01, 0x01, 0x01, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0x4B
            ],
            P
        ),
        Ok(vec![Record::IndexInsert {
            page: PageId::new(1, 1),
            pos: 5,
            record: &[0x00, 0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x4B],
        }]),
        "INDEX_INSERT of key \"K\" with an empty value at record 5"
    );
    assert_eq!(
        err(&[0x24, 0x01, 0x01, 0x00, 0x00]),
        4,
        "INDEX_REORGANIZE with a payload"
    );
    assert_eq!(
        err(&[0x23, 0x01, 0x01, 0x00, 0xA1, 0x00]),
        4,
        "INDEX_REORGANIZE on the same page without its page id"
    );
    assert_eq!(
        err(&[0x02, 0x01, 0x01, 0x23, 0x01, 0x01, 0x00]),
        3,
        "INDEX_REORGANIZE after FREE_PAGE"
    );
    assert_eq!(
        decode(&[0x23, 0x01, 0x01, 0x00], P),
        Ok(vec![Record::IndexReorganize {
            page: PageId::new(1, 1)
        }])
    );
}

/// A page pair: `before` random, `after` from edits typical of index pages.
fn page_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let edit = prop_oneof![
        (0..P.bytes(), proptest::collection::vec(any::<u8>(), 1..300)).prop_map(|(o, d)| (
            0u8,
            o,
            d.len(),
            d
        )),
        (0..P.bytes(), 1..2000usize, 1..17usize).prop_map(|(o, l, s)| (
            1u8,
            o,
            l,
            vec![u8::try_from(s).unwrap_or(1)]
        )),
        (0..P.bytes(), 1..500usize, any::<u8>()).prop_map(|(o, l, b)| (2u8, o, l, vec![b])),
    ];
    (
        proptest::collection::vec(any::<u8>(), P.bytes()),
        proptest::collection::vec(edit, 0..8),
    )
        .prop_map(|(before, edits)| {
            let p = before.len();
            let mut after = before.clone();
            for (kind, o, l, d) in edits {
                match kind {
                    0 => {
                        let end = (o + d.len()).min(p);
                        after[o..end].copy_from_slice(&d[..end - o]);
                    }
                    1 => {
                        // Shift [o, o + l) by s in either direction.
                        let s = usize::from(d[0]);
                        let l = l.min(p - o);
                        if o >= s {
                            after.copy_within(o..o + l, o - s);
                        }
                    }
                    _ => {
                        let end = (o + l).min(p);
                        after[o..end].fill(d[0]);
                    }
                }
            }
            (before, after)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn diff_replays_to_after((before, after) in page_pair()) {
        let mtr = diff_bytes(&before, &after);
        prop_assert_eq!(mtr.is_empty(), before == after);
        prop_assert_eq!(replay(&before, &mtr), after);
    }

    #[test]
    fn diff_of_unrelated_pages_replays(
        before in proptest::collection::vec(any::<u8>(), P.bytes()),
        after in proptest::collection::vec(any::<u8>(), P.bytes()),
    ) {
        let mtr = diff_bytes(&before, &after);
        prop_assert_eq!(replay(&before, &mtr), after);
    }

    #[test]
    fn decoder_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        // Any outcome but a panic; records that decode also apply or fail with a typed error.
        if let Ok(recs) = decode(&bytes, P) {
            let mut page = vec![0u8; P.bytes()];
            for r in &recs {
                let _ = apply(r.page(), &mut page, std::slice::from_ref(r));
            }
        }
    }

    #[test]
    fn writer_output_decodes_to_what_was_written(
        ops in proptest::collection::vec((0u8..6, 0u32..3, 0..P.bytes(), 1..300usize, any::<u8>()), 1..20)
    ) {
        let mut w = MtrWriter::new(P);
        let mut expect: Vec<(u8, PageId, usize, usize, u8)> = Vec::new();
        let mut freed = std::collections::HashSet::new();
        for (kind, pg, off, len, b) in ops {
            let page = PageId::new(pg, pg * 1000);
            let len = len.min(P.bytes() - off);
            let ok = match kind {
                0 => { w.init_page(page); freed.remove(&page); true }
                1 => { w.free_page(page); freed.insert(page); true }
                _ if freed.contains(&page) => false,
                2 => w.write(page, off, &vec![b; len]).is_ok(),
                3 => w.memset(page, off, len, &[b]).is_ok(),
                4 => w.memmove(page, off, (off + 1).min(P.bytes() - len), len).is_ok()
                    && off != (off + 1).min(P.bytes() - len),
                _ => w.option(page, &[b]).is_ok(),
            };
            if ok {
                expect.push((kind, page, off, len, b));
            }
        }
        let bytes = w.finish();
        let recs = decode(&bytes, P).expect("writer output decodes");
        prop_assert_eq!(recs.len(), expect.len());
        for (r, (kind, page, off, len, b)) in recs.iter().zip(expect) {
            prop_assert_eq!(r.page(), page);
            match (*r, kind) {
                (Record::InitPage { .. }, 0) | (Record::FreePage { .. }, 1) => {}
                (Record::Write { offset, data, .. }, 2) => {
                    prop_assert_eq!((offset, data.len()), (off, len));
                    prop_assert!(data.iter().all(|&x| x == b));
                }
                (Record::Memset { offset, len: l, pattern, .. }, 3) => prop_assert_eq!((offset, l, pattern), (off, len, &[b][..])),
                (Record::Memmove { offset, len: l, .. }, 4) => prop_assert_eq!((offset, l), (off, len)),
                (Record::Option { payload, .. }, 5) => prop_assert_eq!(payload, &[b][..]),
                (r, k) => prop_assert!(false, "record {:?} for op {}", r, k),
            }
        }
    }
}

/// Pages of runs: record-like bytes, zero runs of every length (inside records and between
/// heap and directory), at any place.
fn created_page() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec((0usize..3, 1usize..3000, any::<u8>()), 0..12).prop_map(|runs| {
        let mut page = vec![0u8; P.bytes()];
        let mut at = 0;
        for (kind, len, byte) in runs {
            let end = (at + len).min(page.len());
            match kind {
                0 => {}
                1 => page[at..end].fill(byte | 1),
                _ => page[at..end]
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b = (i as u8).wrapping_mul(byte)),
            }
            at = end;
        }
        page
    })
}

proptest! {
    /// A created page's records rebuild it from any page (INIT_PAGE zero-fills first), in at
    /// most three records.
    #[test]
    fn a_created_page_replays_from_any_page(after in created_page(), garbage in any::<u8>()) {
        let id = PageId::new(1, 2);
        let mut w = MtrWriter::new(P);
        w.log_created_page(id, &after).expect("created page");
        let mtr = w.finish();
        let recs = decode(&mtr, P).expect("decode");
        prop_assert!(recs.len() <= 3, "{} records", recs.len());
        let mut page = vec![garbage; P.bytes()];
        prop_assert_eq!(apply(id, &mut page, &recs), Ok(PageState::Live));
        prop_assert!(page == after, "the replayed page differs");
        // No more than the page's bytes outside its longest zero gap, plus record headers.
        let nonzero = after.iter().filter(|&&b| b != 0).count();
        prop_assert!(mtr.len() <= P.bytes() + 32 && (nonzero > 0 || mtr.len() <= 16));
    }
}

proptest! {
    /// A created page logged around bytes its builder knows are zeros replays to the same page
    /// from any page, and its records leave those bytes out.
    #[test]
    fn a_created_page_with_known_zeros_replays_from_any_page(
        after in created_page(),
        garbage in any::<u8>(),
        cut in (0usize..4096, 0usize..4096),
    ) {
        let id = PageId::new(1, 2);
        // The known zeros: a sub-range of the page's longest run of zero bytes.
        let mut run = 0..0;
        let mut i = 0;
        while i < after.len() {
            let start = i;
            while i < after.len() && after[i] == 0 {
                i += 1;
            }
            if i - start > run.len() {
                run = start..i;
            }
            i += 1;
        }
        let a = run.start + cut.0 % (run.len() + 1);
        let b = a + cut.1 % (run.end - a + 1);
        let mut w = MtrWriter::new(P);
        w.log_created_page_known_zero(id, &after, a..b).expect("created page");
        let mtr = w.finish();
        let recs = decode(&mtr, P).expect("decode");
        let mut page = vec![garbage; P.bytes()];
        prop_assert_eq!(apply(id, &mut page, &recs), Ok(PageState::Live));
        prop_assert!(page == after, "the replayed page differs");
        prop_assert!(mtr.len() <= P.bytes() - (b - a) + 32, "{} bytes of records", mtr.len());
    }
}

#[test]
fn known_zeros_outside_the_page_are_refused() {
    let mut w = MtrWriter::new(P);
    let page = vec![0u8; P.bytes()];
    assert!(matches!(
        w.log_created_page_known_zero(PageId::new(1, 2), &page, 10..P.bytes() + 1),
        Err(RecordError::Invalid { .. })
    ));
    assert!(w.is_empty(), "nothing appended");
}

#[test]
fn a_created_page_of_the_wrong_size_is_refused() {
    let mut w = MtrWriter::new(P);
    assert!(matches!(
        w.log_created_page(PageId::new(1, 2), &[1u8; 100]),
        Err(RecordError::Invalid { .. })
    ));
    assert!(w.is_empty(), "nothing appended");
}
