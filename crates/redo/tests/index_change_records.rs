//! INDEX_INSERT, INDEX_REPLACE, INDEX_REMOVE and INDEX_TRUNCATE (`docs/FORMATS.md` §10.1): a
//! change made to an index page by `IndexPage::{insert, replace, remove}` (or a split's
//! `remove_range` + `compact`) and logged as one of these records
//! replays to the same bytes, whatever the page held (fragmented heaps that the insert must
//! compact included); and a record that does not fit the page it is replayed on is an error,
//! never a panic.
//!
//! What would break it: a replay that differs from the change in any byte (the insert-direction
//! hints, the heap top after a compaction, zeroed slots), a record encoding that does not
//! round-trip, or a decoder that trusts the position or the record's lengths.

use barracuda_page::{IndexPage, PageId, PageSize, Record};
use barracuda_redo::record::{apply_mtr, decode, MtrWriter, Record as RedoRecord, RecordError};
use proptest::prelude::*;

const P: PageSize = PageSize::K4;
const PAGE: PageId = PageId::new(3, 9);

/// One change: 0 insert, 1 replace, 2 remove, 3 truncate (rarer); a key seed; a value length.
type Op = (u8, u16, usize);

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        (
            prop_oneof![10 => 0u8..3, 1 => Just(3u8)],
            any::<u16>(),
            0usize..400,
        ),
        1..120,
    )
}

/// Applies `op` to `page` if it can, logging it to `w`; returns whether it changed the page.
fn change(page: &mut IndexPage<&mut [u8]>, w: &mut MtrWriter, op: Op) -> bool {
    let (kind, seed, value_len) = op;
    let key = format!("k{:05}", seed % 700);
    let value = vec![u8::try_from(seed % 251).unwrap_or(0); value_len];
    let rec = Record::inline(key.as_bytes(), &value);
    let found = page.search(key.as_bytes());
    match (kind, found) {
        (0, Err(pos)) => page.insert(pos, &rec).is_ok() && w.index_insert(PAGE, pos, &rec).is_ok(),
        (1, Ok(pos)) => page.replace(pos, &rec).is_ok() && w.index_replace(PAGE, pos, &rec).is_ok(),
        (2, Ok(pos)) => page.remove(pos).is_ok() && w.index_remove(PAGE, pos).is_ok(),
        (3, _) => {
            // What a split leaves of the page it splits.
            let n = page.len();
            let at = usize::from(seed) % (n + 1);
            page.remove_range(at..n).is_ok() && {
                page.compact();
                w.index_truncate(PAGE, at).is_ok()
            }
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn index_changes_replay_to_the_same_bytes(ops in ops()) {
        let mut live = vec![0u8; P.bytes()];
        IndexPage::init(live.as_mut_slice(), P, PAGE, 0, 1).expect("init");
        let mut replica = live.clone();
        // One mtr per few changes, as the B-tree logs one per change and a split several.
        for chunk in ops.chunks(3) {
            let mut w = MtrWriter::new(P);
            let mut page = IndexPage::open(live.as_mut_slice(), P).expect("valid");
            let mut changed = 0;
            for &op in chunk {
                changed += usize::from(change(&mut page, &mut w, op));
            }
            let mtr = w.finish();
            let records = decode(&mtr, P).expect("decodes");
            prop_assert_eq!(records.len(), changed);
            for r in &records {
                let is_index_change = matches!(
                    r,
                    RedoRecord::IndexInsert { .. }
                        | RedoRecord::IndexReplace { .. }
                        | RedoRecord::IndexRemove { .. }
                        | RedoRecord::IndexTruncate { .. }
                );
                prop_assert!(is_index_change, "{r:?}");
            }
            apply_mtr(PAGE, &mut replica, &mtr).expect("replays");
            prop_assert!(replica == live, "replica differs after {chunk:?}");
        }
        IndexPage::open(replica.as_slice(), P).expect("the replica is a valid page");
    }

    /// Any change record replayed onto a page it was not made for fails or changes the page;
    /// it never panics.
    #[test]
    fn a_change_replayed_on_the_wrong_page_never_panics(
        ops in ops(),
        pos in 0usize..2048,
        kind in 0u8..4,
        junk in proptest::collection::vec(any::<u8>(), P.bytes()),
    ) {
        let mut live = vec![0u8; P.bytes()];
        IndexPage::init(live.as_mut_slice(), P, PAGE, 0, 1).expect("init");
        {
            let mut page = IndexPage::open(live.as_mut_slice(), P).expect("valid");
            let mut w = MtrWriter::new(P);
            for &op in &ops {
                change(&mut page, &mut w, op);
            }
        }
        let rec = Record::inline(b"zz", b"value");
        let mut w = MtrWriter::new(P);
        match kind {
            0 => w.index_insert(PAGE, pos, &rec),
            1 => w.index_replace(PAGE, pos, &rec),
            2 => w.index_remove(PAGE, pos),
            _ => w.index_truncate(PAGE, pos),
        }
        .expect("a position inside a page");
        let mtr = w.finish();
        for mut target in [live, junk] {
            match apply_mtr(PAGE, &mut target, &mtr) {
                Ok(_) | Err(RecordError::Invalid { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}

#[test]
fn the_writer_refuses_a_position_no_page_has_and_a_change_after_free() {
    let mut w = MtrWriter::new(P);
    assert!(matches!(
        w.index_remove(PAGE, P.bytes() / 2),
        Err(RecordError::Invalid { .. })
    ));
    w.free_page(PAGE);
    assert!(matches!(
        w.index_insert(PAGE, 0, &Record::inline(b"k", b"v")),
        Err(RecordError::Invalid { .. })
    ));
    assert!(matches!(
        w.index_remove(PAGE, 0),
        Err(RecordError::Invalid { .. })
    ));
}

/// A record given in its encoding logs the same bytes as the record given as a value; bytes
/// that are not exactly one record are refused and leave nothing behind.
#[test]
fn an_encoded_record_logs_as_its_value_does_and_bad_bytes_are_refused() {
    let rec = Record::inline(b"key-7", b"value bytes");
    let mut encoded = Vec::new();
    rec.encode_to(&mut encoded).unwrap();
    let (mut by_value, mut by_bytes) = (MtrWriter::new(P), MtrWriter::new(P));
    by_value.index_insert(PAGE, 3, &rec).unwrap();
    by_value.index_replace(PAGE, 1, &rec).unwrap();
    by_bytes.index_insert_encoded(PAGE, 3, &encoded).unwrap();
    by_bytes.index_replace_encoded(PAGE, 1, &encoded).unwrap();
    assert_eq!(by_value.as_bytes(), by_bytes.as_bytes());
    let before = by_bytes.as_bytes().len();
    let mut trailing = encoded.clone();
    trailing.push(0);
    for bad in [&encoded[..encoded.len() - 1], &trailing[..], &[][..]] {
        let err = by_bytes.index_insert_encoded(PAGE, 0, bad).unwrap_err();
        assert!(err.to_string().contains("invalid record"), "{err}");
        assert_eq!(by_bytes.as_bytes().len(), before, "nothing appended");
    }
}
