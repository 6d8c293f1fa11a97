//! Index page invariants: order and search, split/merge preserve records, space accounting,
//! failed mutations leave the page unchanged. That `open` and `open_trusted` are total on
//! arbitrary, mutated and truncated bytes is the testkit's `law_decoders_never_panic`
//! (`crates/testkit/tests/decoders_total.rs`), which also checks what `open` accepts.

use super::*;
use crate::{seal_page, verify_page, FIL_NULL};
use proptest::prelude::*;
use std::collections::BTreeMap;

const ID: PageId = PageId::new(1, 7);

fn leaf(ps: PageSize) -> IndexPage<Vec<u8>> {
    IndexPage::init(vec![0u8; ps.bytes()], ps, ID, 0, 99).expect("right size")
}

/// Deterministic xorshift, enough for test data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, max_len: u64) -> Vec<u8> {
        let len = self.next() % (max_len + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

fn contents(page: &IndexPage<impl AsRef<[u8]>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    page.iter()
        .map(|r| r.expect("record decodes"))
        .map(|r| match r.value {
            ValueRef::Inline(v) => (r.key.to_vec(), v.to_vec()),
            other => (r.key.to_vec(), format!("{other:?}").into_bytes()),
        })
        .collect()
}

fn assert_valid(page: &IndexPage<Vec<u8>>) {
    let reopened = IndexPage::open(page.as_bytes(), page.page_size());
    assert!(reopened.is_ok(), "invalid page: {reopened:?}");
}

#[test]
fn empty_page_round_trips_for_every_size() {
    for ps in PageSize::ALL {
        let page = leaf(ps);
        let mut bytes = page.into_inner();
        seal_page(&mut bytes);
        verify_page(&bytes, ID, ps).expect("sealed");
        let page = IndexPage::open(&bytes, ps).expect("valid");
        assert!(page.is_empty() && page.is_leaf());
        assert_eq!(
            (page.level(), page.index_id(), page.prev(), page.next()),
            (0, 99, FIL_NULL, FIL_NULL)
        );
        assert_eq!(page.free_space(), index_capacity(ps));
        assert_eq!(page.used_space(), 0);
        assert_eq!(page.search(b"x"), Err(0));
    }
}

#[test]
fn random_inserts_stay_sorted_and_searchable() {
    let ps = PageSize::K16;
    let mut page = leaf(ps);
    let mut model = BTreeMap::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    loop {
        let key = rng.bytes(24);
        let value = rng.bytes(40);
        let rec = Record::inline(&key, &value);
        match page.search(&key) {
            Ok(i) => page.replace(i, &rec).expect("same-size-ish replace fits"),
            Err(i) => match page.insert(i, &rec) {
                Ok(()) => {}
                Err(PageError::PageFull { .. }) => break,
                Err(e) => panic!("{e}"),
            },
        }
        model.insert(key, value);
    }
    assert!(page.fill_factor() > 0.95, "{}", page.fill_factor());
    assert_valid(&page);
    let expected: Vec<_> = model.clone().into_iter().collect();
    assert_eq!(contents(&page), expected);
    for (i, key) in model.keys().enumerate() {
        assert_eq!(page.search(key), Ok(i));
    }
}

#[test]
fn each_records_heap_bytes_are_its_encoding_after_inserts_and_replaces() {
    let mut page = leaf(PageSize::K4);
    page.insert(0, &Record::inline(b"m", b"middle"))
        .expect("fits");
    page.insert(0, &Record::inline(b"a", b"first"))
        .expect("fits");
    page.insert(2, &Record::inline(b"z", b"")).expect("fits");
    page.replace(1, &Record::inline(b"m", b"a longer middle value"))
        .expect("fits");
    for i in 0..page.len() {
        let range = page.encoded_record_range(i).expect("in range");
        let mut expected = Vec::new();
        page.record(i).unwrap().encode_to(&mut expected).unwrap();
        assert_eq!(
            page.as_bytes().get(range),
            Some(&expected[..]),
            "record {i}"
        );
    }
    let err = page.encoded_record_range(3).unwrap_err().to_string();
    assert!(err.contains("record 3 requested of 3"), "{err}");
}

#[test]
fn insert_rejects_out_of_order_and_bad_kinds_without_change() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    page.insert(0, &Record::inline(b"b", b"")).expect("fits");
    page.insert(1, &Record::inline(b"d", b"")).expect("fits");
    let before = page.as_bytes().to_vec();
    for (pos, key) in [
        (0usize, &b"c"[..]),
        (1, b"a"),
        (2, b"c"),
        (1, b"b"),
        (2, b"d"),
    ] {
        assert_eq!(
            page.insert(pos, &Record::inline(key, b"")),
            Err(PageError::KeyOutOfOrder { index: pos })
        );
    }
    assert!(matches!(
        page.insert(3, &Record::inline(b"z", b"")),
        Err(PageError::OutOfRange { .. })
    ));
    assert!(matches!(
        page.insert(2, &Record::child(b"z", 3)),
        Err(PageError::LevelMismatch { .. })
    ));
    let long = vec![0u8; max_key_len(ps) + 1];
    assert!(matches!(
        page.insert(2, &Record::inline(&long, b"")),
        Err(PageError::KeyTooLong { .. })
    ));
    let big = vec![0u8; max_inline_value_len(ps, 1) + 1];
    assert!(matches!(
        page.insert(2, &Record::inline(b"z", &big)),
        Err(PageError::RecordTooLarge { .. })
    ));
    assert_eq!(page.as_bytes(), before.as_slice());
}

#[test]
fn records_within_limits_fit_an_empty_page_three_times() {
    for ps in PageSize::ALL {
        let key = vec![b'k'; max_key_len(ps)];
        let recs = [
            (0, Record::overflow(&key, &[], 1 << 40, 5)),
            (1, Record::child(&key, 5)),
        ];
        for (level, rec) in recs {
            assert!(record_size(&rec) <= max_record_size(ps));
            assert!(3 * record_size(&rec) <= index_capacity(ps));
            let _ = level;
        }
        let value = vec![1u8; max_inline_value_len(ps, 10)];
        let mut page = leaf(ps);
        for k in 0..3u8 {
            let key = [k; 10];
            let rec = Record::inline(&key, &value);
            assert_eq!(record_size(&rec), max_record_size(ps));
            page.insert(usize::from(k), &rec)
                .expect("three maximal records fit");
        }
        let prefix = vec![2u8; max_overflow_prefix_len(ps, 10)];
        let rec = Record::overflow(&[9; 10], &prefix, 1 << 20, 8);
        assert_eq!(record_size(&rec), max_record_size(ps));
        page.insert(3, &rec).expect("a fourth fits too");
    }
}

fn fill(page: &mut IndexPage<Vec<u8>>, rng: &mut Rng) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    loop {
        let key = rng.bytes(30);
        let value = rng.bytes(300);
        if let Err(pos) = page.search(&key) {
            if page.insert(pos, &Record::inline(&key, &value)).is_err() {
                return model;
            }
            model.insert(key, value);
        }
    }
}

#[test]
fn split_preserves_every_record_and_makes_room() {
    let ps = PageSize::K8;
    let mut rng = Rng(42);
    for _ in 0..20 {
        let mut left = leaf(ps);
        let mut model = fill(&mut left, &mut rng);
        let full = left.as_bytes().to_vec();
        // A record that does not fit: the page must be unchanged.
        let (key, value) = loop {
            let key = rng.bytes(30);
            let value = vec![7u8; max_inline_value_len(ps, key.len())];
            if left.search(&key).is_err() {
                break (key, value);
            }
        };
        let rec = Record::inline(&key, &value);
        let pos = left.search(&key).unwrap_err();
        assert!(matches!(
            left.insert(pos, &rec),
            Err(PageError::PageFull { .. })
        ));
        assert_eq!(left.as_bytes(), full.as_slice());

        let split = left.split_point(pos, &rec);
        let mut right =
            IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(1, 8), 0, 99).expect("size");
        left.split_off(split.at, &mut right)
            .expect("right is empty");
        if split.insert_left {
            left.insert(pos, &rec).expect("fits after split");
        } else {
            right
                .insert(pos - split.at, &rec)
                .expect("fits after split");
        }
        model.insert(key, value);
        assert_valid(&left);
        assert_valid(&right);
        assert!(!left.is_empty() && !right.is_empty());
        assert!(left.key(left.len() - 1).unwrap() < right.key(0).unwrap());
        let mut all = contents(&left);
        all.extend(contents(&right));
        assert_eq!(all, model.clone().into_iter().collect::<Vec<_>>());

        // Merge back after removing enough.
        let half = right.len() / 2;
        right.remove_range(half..right.len()).expect("in range");
        left.remove_range(0..left.len() / 2).expect("in range");
        if right.used_space() <= left.free_space() {
            let n = left.len() + right.len();
            left.append_all_from(&right).expect("fits");
            assert_eq!(left.len(), n);
            assert_valid(&left);
        }
    }
}

#[test]
fn sequential_inserts_split_at_the_end() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    let mut i = 0u32;
    let rec_for = |i: u32| (format!("{i:08}").into_bytes(), [0u8; 50]);
    loop {
        let (k, v) = rec_for(i);
        if page.insert(page.len(), &Record::inline(&k, &v)).is_err() {
            break;
        }
        i += 1;
    }
    let (k, v) = rec_for(i);
    let split = page.split_point(page.len(), &Record::inline(&k, &v));
    assert_eq!(
        split,
        SplitPoint {
            at: page.len(),
            insert_left: false
        }
    );
    // Descending inserts split at the start.
    let mut page = leaf(ps);
    let mut i = 1000u32;
    loop {
        let (k, v) = rec_for(i);
        if page.insert(0, &Record::inline(&k, &v)).is_err() {
            break;
        }
        i -= 1;
    }
    let (k, v) = rec_for(i);
    assert_eq!(
        page.split_point(0, &Record::inline(&k, &v)),
        SplitPoint {
            at: 0,
            insert_left: true
        }
    );
}

#[test]
fn remove_and_compaction_reclaim_space() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    let mut rng = Rng(7);
    fill(&mut page, &mut rng);
    let n = page.len();
    let free_full = page.free_space();
    let sizes: usize = (0..n)
        .step_by(2)
        .map(|i| page.record_size_at(i).unwrap())
        .sum();
    for i in (0..n).step_by(2).rev() {
        page.remove(i).expect("in range");
    }
    assert_eq!(page.free_space(), free_full + sizes);
    assert_valid(&page);
    let before = contents(&page);
    page.compact();
    assert_eq!(page.garbage(), 0);
    assert_eq!(page.contiguous_free(), page.free_space());
    assert_eq!(contents(&page), before);
    assert_valid(&page);
    page.remove_range(0..page.len()).expect("all");
    assert_eq!(page.free_space(), index_capacity(ps));
    assert_eq!(page.contiguous_free(), index_capacity(ps));
}

#[test]
fn replace_grows_shrinks_and_uses_garbage() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    let big = vec![1u8; 900];
    for k in 0..4u8 {
        page.insert(usize::from(k), &Record::inline(&[k], &big))
            .expect("fits");
    }
    page.replace(1, &Record::inline(&[1], b"small"))
        .expect("shrinks");
    page.replace(2, &Record::inline(&[2], b""))
        .expect("shrinks");
    assert!(page.garbage() > 0);
    // Growing record 1 needs the garbage: compaction happens inside replace.
    let bigger = vec![2u8; 960];
    page.replace(1, &Record::inline(&[1], &bigger))
        .expect("fits after compaction");
    assert_valid(&page);
    assert_eq!(page.record(1).unwrap().value, ValueRef::Inline(&bigger));
    assert_eq!(
        page.replace(0, &Record::inline(&[9], b"")),
        Err(PageError::KeyOutOfOrder { index: 0 })
    );
    // Five records of 801 bytes (18-byte header, 1-byte key, 780-byte value, 2-byte slot) fill
    // 4005 of 4008 bytes: growing one by 200 cannot fit.
    let mut page = leaf(ps);
    let value = vec![1u8; 780];
    for k in 0..5u8 {
        page.insert(usize::from(k), &Record::inline(&[k], &value))
            .expect("fits");
    }
    page.remove(2).expect("in range");
    page.insert(2, &Record::inline(&[2], &value))
        .expect("fits after compaction");
    let before = page.as_bytes().to_vec();
    let r = page.replace(3, &Record::inline(&[3], &[0; 980]));
    assert!(matches!(r, Err(PageError::PageFull { .. })), "{r:?}");
    assert_eq!(page.as_bytes(), before.as_slice());
}

#[test]
fn internal_pages_hold_child_pointers() {
    let ps = PageSize::K4;
    let recs = [
        Record::child(b"", 10),
        Record::child(b"m", 11),
        Record::child(b"t", 12),
    ];
    let mut page =
        IndexPage::from_records(vec![0u8; ps.bytes()], ps, ID, 1, 5, recs).expect("fits");
    assert!(!page.is_leaf());
    assert_eq!(page.child_index_for(b"a"), Some(0));
    assert_eq!(page.child_index_for(b"m"), Some(1));
    assert_eq!(page.child_index_for(b"zz"), Some(2));
    page.set_child(1, 99).expect("child record");
    assert_eq!(page.record(1).unwrap().child_page(), Some(99));
    assert_valid(&page);
    assert!(matches!(
        page.insert(3, &Record::inline(b"z", b"")),
        Err(PageError::LevelMismatch { .. })
    ));
    let mut left = leaf(ps);
    assert!(matches!(
        left.append_all_from(&page),
        Err(PageError::LevelMismatch { .. })
    ));
}

#[test]
fn rebalancing_moves_records_between_siblings() {
    let ps = PageSize::K4;
    let keys: Vec<[u8; 1]> = (0..20u8).map(|k| [k]).collect();
    let mut left = IndexPage::from_records(
        vec![0u8; ps.bytes()],
        ps,
        ID,
        0,
        1,
        keys.iter().take(15).map(|k| Record::inline(k, b"v")),
    )
    .expect("fits");
    let mut right = IndexPage::from_records(
        vec![0u8; ps.bytes()],
        ps,
        ID,
        0,
        1,
        keys.iter().skip(15).map(|k| Record::inline(k, b"v")),
    )
    .expect("fits");
    right.take_last_from(&mut left, 5).expect("fits");
    assert_eq!((left.len(), right.len()), (10, 10));
    assert_eq!(right.key(0).unwrap(), [10]);
    left.take_first_from(&mut right, 3).expect("fits");
    assert_eq!((left.len(), right.len()), (13, 7));
    assert_eq!(left.key(12).unwrap(), [12]);
    assert_valid(&left);
    assert_valid(&right);
}

#[test]
fn open_rejects_structural_corruption() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    for k in 0..5u8 {
        page.insert(usize::from(k), &Record::inline(&[k], b"value"))
            .expect("fits");
    }
    let good = page.into_inner();
    let corrupt = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        IndexPage::open(&b, ps).map(|_| ())
    };
    let slot0 = ps.bytes() - 8 - 2;
    // Swap two slots: keys out of order.
    let r = corrupt(&|b| {
        let s0 = crate::bytes::u16_at(b, slot0).unwrap_or(0);
        let s1 = crate::bytes::u16_at(b, slot0 - 2).unwrap_or(0);
        crate::bytes::put_u16(b, slot0, s1);
        crate::bytes::put_u16(b, slot0 - 2, s0);
    });
    assert!(matches!(r, Err(PageError::Corrupt { .. })), "{r:?}");
    for (what, f) in [
        (
            "slot out of heap",
            &(|b: &mut Vec<u8>| crate::bytes::put_u16(b, slot0, 4000)) as &dyn Fn(&mut Vec<u8>),
        ),
        ("two slots to one record", &|b| {
            crate::bytes::put_u16(b, slot0 - 2, HEAP_START as u16);
        }),
        ("record count too large", &|b| {
            crate::bytes::put_u16(b, OFF_N_RECS, 3000);
        }),
        ("heap top below header", &|b| {
            crate::bytes::put_u16(b, OFF_HEAP_TOP, 3);
        }),
        ("garbage miscounted", &|b| {
            crate::bytes::put_u16(b, OFF_GARBAGE, 1);
        }),
        ("bad record kind", &|b| {
            crate::bytes::put_u8(b, HEAP_START, 9);
        }),
        ("leaf marked internal", &|b| {
            crate::bytes::put_u16(b, OFF_LEVEL, 1);
        }),
        ("key length runs off", &|b| {
            crate::bytes::put_u16(b, HEAP_START + 1, 60000);
        }),
    ] {
        assert!(corrupt(f).is_err(), "{what} not detected");
    }
    assert!(matches!(
        IndexPage::open(good.get(..100).unwrap_or(&[]), ps),
        Err(PageError::WrongSize { .. })
    ));
    let mut other_type = good.clone();
    crate::bytes::put_u16(
        &mut other_type,
        crate::header::OFF_PAGE_TYPE,
        PageType::Overflow.to_u16(),
    );
    assert!(matches!(
        IndexPage::open(&other_type, ps),
        Err(PageError::WrongPageType { .. })
    ));
}

#[test]
fn open_rejects_records_that_overlap_when_the_accounting_balances() {
    // Record 2's value is stretched over record 3 and the garbage left by record 1 is
    // declared zero, so the bytes add up, the keys still increase and every record decodes:
    // only the overlap is wrong.
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    for k in 0..5u8 {
        page.insert(usize::from(k), &Record::inline(&[k], b"value"))
            .expect("fits");
    }
    let rec_len = page.slot(1) - page.slot(0);
    page.remove(1).expect("record 1 exists");
    assert_eq!(
        page.garbage(),
        rec_len,
        "the removed record is left as garbage"
    );
    let third = page.slot(1);
    assert_eq!(
        page.slot(2),
        third + rec_len,
        "records lie in insertion order"
    );
    let mut bytes = page.into_inner();
    crate::bytes::put_u16(&mut bytes, third + 3, (5 + rec_len) as u16);
    crate::bytes::put_u16(&mut bytes, OFF_GARBAGE, 0);
    let r = IndexPage::open(&bytes, ps).map(|_| ());
    match r {
        Err(PageError::Corrupt { what, .. }) => assert!(what.contains("overlaps"), "{what}"),
        other => panic!("overlap not detected: {other:?}"),
    }
}

#[test]
fn covered_bytes_are_marked_across_words_and_overlaps_found() {
    let mut covered = [0u64; 4];
    assert!(mark_covered(&mut covered, 10, 70));
    assert_eq!(covered[0], !0u64 << 10);
    assert_eq!(covered[1], (1u64 << 6) - 1);
    assert!(
        mark_covered(&mut covered, 70, 192),
        "adjacent, not overlapping"
    );
    assert_eq!((covered[1], covered[2]), (!0, !0));
    assert!(mark_covered(&mut covered, 0, 10));
    assert!(mark_covered(&mut covered, 192, 193));
    assert!(mark_covered(&mut covered, 255, 256));
    assert_eq!(covered[3], 1 | (1 << 63));
    for (start, stop) in [(191, 193), (5, 6), (100, 300), (250, 260), (256, 300)] {
        let mut copy = covered;
        assert!(!mark_covered(&mut copy, start, stop), "{start}..{stop}");
    }
    assert!(
        mark_covered(&mut covered, 193, 255),
        "the gap left fits exactly"
    );
    assert_eq!(covered, [!0u64; 4]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mutations_match_a_btreemap_model(
        ops in proptest::collection::vec((any::<bool>(), proptest::collection::vec(0u8..8, 0..6), 0usize..400), 1..200),
    ) {
        let ps = PageSize::K4;
        let mut page = leaf(ps);
        let mut model = BTreeMap::new();
        for (put, key, value_len) in ops {
            let value = vec![key.len() as u8; value_len];
            match (put, page.search(&key)) {
                (true, Ok(i)) => {
                    if page.replace(i, &Record::inline(&key, &value)).is_ok() {
                        model.insert(key, value);
                    }
                }
                (true, Err(i)) => {
                    if page.insert(i, &Record::inline(&key, &value)).is_ok() {
                        model.insert(key, value);
                    }
                }
                (false, Ok(i)) => {
                    page.remove(i).expect("in range");
                    model.remove(&key);
                }
                (false, Err(_)) => {}
            }
            prop_assert!(IndexPage::open(page.as_bytes(), ps).is_ok());
        }
        prop_assert_eq!(contents(&page), model.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn an_undecodable_or_missing_record_is_an_error_naming_the_page() {
    let ps = PageSize::K4;
    let mut page = leaf(ps);
    page.insert(0, &Record::inline(b"a", b"one")).expect("fits");
    page.insert(1, &Record::inline(b"b", b"two")).expect("fits");
    let off = page.slot(1);
    let mut bytes = page.into_inner();
    *bytes.get_mut(off).expect("slot inside the page") = 0x7F; // no such record kind
    let page = IndexPage::open_trusted(bytes.as_slice(), ps).expect("header is fine");
    assert_eq!(page.record(0).expect("record 0 is intact").key, b"a");
    for err in [
        page.record(1).expect_err("kind 0x7F"),
        page.key(2).expect_err("out of range"),
        page.record_size_at(usize::MAX).expect_err("out of range"),
    ] {
        assert!(
            matches!(err, PageError::Corrupt { page, .. } if page == ID),
            "{err}"
        );
    }
    let results: Vec<_> = page.iter().map(|r| r.is_ok()).collect();
    assert_eq!(
        results,
        [true, false],
        "iter reports the bad record, not an empty one"
    );
    assert!(IndexPage::open(bytes.as_slice(), ps).is_err());
}

#[expect(
    clippy::big_endian_bytes,
    reason = "big-endian integers sort in numeric order under memcmp"
)]
/// Keys of one of the shapes a page meets: evenly spread integers (where interpolation
/// guesses right), skewed integers (where it guesses wrong), strings sharing a long prefix
/// (heads all equal: no interpolation), and short random byte strings.
fn key_set() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let even = (1u64..1_000, 0u64..1_000_000_000, 16usize..200).prop_map(|(step, start, n)| {
        (0..n as u64)
            .map(|i| (start + i * step).to_be_bytes().to_vec())
            .collect()
    });
    let skewed = proptest::collection::vec(0u32..64, 16..200).prop_map(|exps| {
        exps.iter()
            .enumerate()
            .map(|(i, e)| ((1u64 << (e % 64)) + i as u64).to_be_bytes().to_vec())
            .collect()
    });
    let prefixed = proptest::collection::vec("[a-z]{0,6}", 16..200).prop_map(|tails| {
        tails
            .iter()
            .map(|t| format!("customer:{t}").into_bytes())
            .collect()
    });
    let short = proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..5), 16..200);
    prop_oneof![even, skewed, prefixed, short]
}

proptest! {
    /// The search (interpolation, gallop, bisection) answers as `slice::binary_search` does,
    /// for every key on the page, just around each, and far outside the range.
    #[test]
    fn search_agrees_with_binary_search(keys in key_set(), extra in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..10), 0..20)) {
        let mut keys = keys;
        keys.sort();
        keys.dedup();
        let ps = PageSize::K16;
        let mut page = leaf(ps);
        let mut stored: Vec<Vec<u8>> = Vec::new();
        for key in &keys {
            if page.insert(stored.len(), &Record::inline(key, b"v")).is_err() {
                break;
            }
            stored.push(key.clone());
        }
        let mut probes = stored.clone();
        for key in &stored {
            let mut after = key.clone();
            after.push(0);
            probes.push(after);
            if let Some((last, rest)) = key.split_last() {
                let mut before = rest.to_vec();
                before.push(last.wrapping_sub(1));
                probes.push(before);
            }
        }
        probes.extend(extra);
        probes.push(Vec::new());
        probes.push(vec![0xff; 12]);
        for probe in &probes {
            prop_assert_eq!(page.search(probe), stored.binary_search(probe), "probe {:?}", probe);
        }
    }
}

/// `init_zeroed` on a zeroed buffer writes the same page as `init` over old bytes, and `init`
/// refuses a buffer of the wrong size without touching it.
#[test]
fn init_zeroed_matches_init_over_any_old_bytes() {
    for ps in [PageSize::K4, PageSize::K16, PageSize::K64] {
        let mut rng = Rng(0x5EED ^ ps.bytes() as u64);
        let garbage: Vec<u8> = (0..ps.bytes()).map(|_| rng.next() as u8).collect();
        let over_garbage = IndexPage::init(garbage, ps, ID, 2, 99).expect("right size");
        let zeroed = IndexPage::init_zeroed(vec![0u8; ps.bytes()], ps, ID, 2, 99).expect("size");
        assert_eq!(over_garbage.into_inner(), zeroed.into_inner(), "{ps}");
    }
    let mut short = vec![7u8; 100];
    assert!(matches!(
        IndexPage::init(short.as_mut_slice(), PageSize::K4, ID, 0, 99),
        Err(PageError::WrongSize { .. })
    ));
    assert!(
        short.iter().all(|&b| b == 7),
        "a refused init wrote to the buffer"
    );
}
