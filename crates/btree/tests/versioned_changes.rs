//! The versioned record operations: transaction fields are written and kept (through splits
//! and merges), and what a versioned change replaces or removes is handed back whole, its
//! overflow chain still allocated until the caller frees or restores it.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::Arc;

use barracuda_btree::{testing::MemAllocator, BTree, PlaceholderLog, StoredValue, TreeContext};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{IndexPage, PageId, PageSize, SysFields};

fn tree(page_size: PageSize) -> (BTree, Arc<MemAllocator>) {
    let store = Arc::new(MemStore::new(page_size));
    store.create_space(1, u32::MAX);
    let pool = BufferPool::new(PoolConfig::new(page_size).capacity_pages(256), store).unwrap();
    let alloc = Arc::new(MemAllocator::new());
    let ctx = TreeContext::new(pool, alloc.clone(), Arc::new(PlaceholderLog::default()));
    (BTree::create(ctx, 1, 7).unwrap(), alloc)
}

/// The leaf page holding `key` (its range covers it), found by reading the space's pages.
fn leaf_of(tree: &BTree, key: &[u8]) -> PageId {
    let size = tree.context().pool().page_size();
    (0..1000)
        .map(|no| PageId::new(1, no))
        .find(|&id| {
            let Ok(guard) = tree.context().pool().get_shared(id) else {
                return false;
            };
            let Ok(page) = IndexPage::open(&guard[..], size) else {
                return false;
            };
            let (Ok(first), Ok(last)) = (page.key(0), page.key(page.len().saturating_sub(1)))
            else {
                return false;
            };
            page.level() == 0 && first <= key && key <= last
        })
        .unwrap()
}

fn sys(trx_id: u64, roll_ptr: u64, deleted: bool) -> SysFields {
    SysFields {
        trx_id,
        roll_ptr,
        deleted,
    }
}

#[test]
fn a_versioned_put_writes_the_fields_and_returns_the_record_it_replaced() {
    let (tree, _) = tree(PageSize::K4);
    assert_eq!(
        tree.put_versioned(b"k", b"one", sys(5, 50, false)).unwrap(),
        None
    );
    let stored = tree.get_stored(b"k").unwrap().unwrap();
    assert_eq!(stored.sys, sys(5, 50, false));
    assert_eq!(stored.value, StoredValue::Inline(b"one".to_vec()));
    // A plain reader sees the newest value, whatever its fields say.
    assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&b"one"[..]));

    let old = tree
        .put_versioned(b"k", b"two", sys(6, 60, true))
        .unwrap()
        .unwrap();
    assert_eq!(old.sys, sys(5, 50, false));
    assert_eq!(old.value, StoredValue::Inline(b"one".to_vec()));
    assert_eq!(
        tree.get_stored(b"k").unwrap().unwrap().sys,
        sys(6, 60, true)
    );
    assert_eq!(tree.get_stored(b"absent").unwrap(), None);
}

#[test]
fn a_replaced_overflow_value_keeps_its_chain_until_it_is_freed_or_restored() {
    let (tree, alloc) = tree(PageSize::K4);
    let root_only = alloc.allocated_pages(1);
    let big_old = vec![0xA1u8; 20_000];
    let big_new = vec![0xB2u8; 30_000];
    tree.put_versioned(b"blob", &big_old, sys(1, 10, false))
        .unwrap();
    let with_old = alloc.allocated_pages(1);
    let old = tree
        .put_versioned(b"blob", &big_new, sys(2, 20, false))
        .unwrap()
        .unwrap();
    let StoredValue::Overflow { total_len, .. } = old.value else {
        panic!("an off-page value: {old:?}");
    };
    assert_eq!(total_len, 20_000);
    // Both chains are allocated, and the old one still reads back.
    assert!(alloc.allocated_pages(1) > with_old);
    assert_eq!(tree.read_stored(&old.value).unwrap(), big_old);
    assert_eq!(tree.get(b"blob").unwrap().unwrap(), big_new);

    // A rollback puts the old version back and frees the chain of the version it undoes.
    let undone = tree
        .put_stored(b"blob", &old.value, old.sys)
        .unwrap()
        .unwrap();
    assert_eq!(undone.sys, sys(2, 20, false));
    tree.free_stored(&undone.value).unwrap();
    assert_eq!(tree.get(b"blob").unwrap().unwrap(), big_old);
    assert_eq!(
        tree.get_stored(b"blob").unwrap().unwrap().sys,
        sys(1, 10, false)
    );
    assert_eq!(alloc.allocated_pages(1), with_old, "no page leaked");
    tree.check().unwrap();

    // Purge removes the record and then frees its chain.
    let removed = tree.remove_stored(b"blob").unwrap().unwrap();
    assert_eq!(tree.get(b"blob").unwrap(), None);
    assert_eq!(tree.read_stored(&removed.value).unwrap(), big_old);
    tree.free_stored(&removed.value).unwrap();
    assert_eq!(tree.remove_stored(b"blob").unwrap(), None);
    // Every page but the root leaf is free again.
    assert_eq!(alloc.allocated_pages(1), root_only);
    tree.check().unwrap();
}

#[test]
fn transaction_fields_survive_splits_and_merges() {
    let (tree, _) = tree(PageSize::K4);
    let n = 3000u64;
    let key = |i: u64| i.to_be_bytes();
    for i in 0..n {
        tree.put_versioned(&key(i), &[0x5A; 120], sys(i + 1, i * 7, i % 3 == 0))
            .unwrap();
    }
    assert!(tree.check().unwrap().height >= 2, "splits happened");
    // Deleting most records merges leaves and moves records between them.
    for i in (0..n).filter(|i| i % 10 != 0) {
        tree.remove_stored(&key(i)).unwrap().unwrap();
    }
    tree.check().unwrap();
    for i in (0..n).filter(|i| i % 10 == 0) {
        let stored = tree.get_stored(&key(i)).unwrap().unwrap();
        assert_eq!(stored.sys, sys(i + 1, i * 7, i % 3 == 0), "key {i}");
    }
}

#[test]
fn a_plain_put_writes_records_without_history() {
    let (tree, _) = tree(PageSize::K4);
    tree.put_versioned(b"k", b"v", sys(9, 90, true)).unwrap();
    tree.put(b"k", b"w").unwrap();
    assert_eq!(tree.get_stored(b"k").unwrap().unwrap().sys, SysFields::NONE);
}

#[test]
fn restoring_an_inline_value_too_long_for_the_leaf_is_refused() {
    let (tree, _) = tree(PageSize::K4);
    let err = tree
        .put_stored(b"k", &StoredValue::Inline(vec![0; 4000]), SysFields::NONE)
        .unwrap_err();
    assert!(err.to_string().contains("longer than the limit"), "{err}");
    assert_eq!(tree.get(b"k").unwrap(), None);
}

/// `change_in_place`: done in one mtr when the change fits the leaf, with the record it
/// replaces handed to the caller first; declined (nothing changed, the caller not asked) when
/// it needs an overflow chain or a split; nothing to do for a delete-mark of an absent or
/// marked record; and a caller that declines leaves the tree as it was.
#[test]
fn a_change_in_place_is_made_only_where_it_fits_and_hands_over_what_it_replaces() {
    use barracuda_btree::{InPlace, InPlaceOutcome};
    let (tree, _) = tree(PageSize::K4);
    tree.put_versioned(b"k", b"one", sys(1, 10, false)).unwrap();
    let mut seen = Vec::new();
    let outcome = tree
        .change_in_place(b"k", InPlace::Put(b"two"), &mut |_, current| {
            seen.push(current.cloned());
            Ok(Some(sys(2, 20, false)))
        })
        .unwrap();
    assert_eq!(outcome, InPlaceOutcome::Done);
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].as_ref().map(|r| (r.sys, r.value.clone())),
        Some((sys(1, 10, false), StoredValue::Inline(b"one".to_vec())))
    );
    let now = tree.get_stored(b"k").unwrap().unwrap();
    assert_eq!(
        (now.sys, now.value),
        (sys(2, 20, false), StoredValue::Inline(b"two".to_vec()))
    );

    // A delete-mark keeps the value; a second one and one of an absent key do nothing.
    let mark = |key: &[u8], trx: u64| {
        tree.change_in_place(key, InPlace::DeleteMark, &mut |_, _| {
            Ok(Some(sys(trx, 30, true)))
        })
        .unwrap()
    };
    assert_eq!(mark(b"k", 3), InPlaceOutcome::Done);
    assert_eq!(mark(b"k", 4), InPlaceOutcome::Unchanged);
    assert_eq!(mark(b"absent", 5), InPlaceOutcome::Unchanged);
    let now = tree.get_stored(b"k").unwrap().unwrap();
    assert_eq!(
        (now.sys, now.value),
        (sys(3, 30, true), StoredValue::Inline(b"two".to_vec()))
    );

    // Off-page: not here, and the caller is not asked.
    let mut asked = false;
    let big = vec![1u8; 9000];
    let outcome = tree
        .change_in_place(b"k", InPlace::Put(&big), &mut |_, _| {
            asked = true;
            Ok(Some(sys(6, 60, false)))
        })
        .unwrap();
    assert_eq!((outcome, asked), (InPlaceOutcome::NotHere, false));

    // A caller that declines changes nothing.
    let outcome = tree
        .change_in_place(b"new", InPlace::Put(b"v"), &mut |_, current| {
            assert!(current.is_none());
            Ok(None)
        })
        .unwrap();
    assert_eq!(outcome, InPlaceOutcome::NotHere);
    assert_eq!(tree.get_stored(b"new").unwrap(), None);

    // A full leaf: inserts go in place until one needs a split, which is declined.
    let value = [9u8; 300];
    let mut placed = 0u32;
    loop {
        let key = placed.to_be_bytes();
        let outcome = tree
            .change_in_place(&key, InPlace::Put(&value), &mut |_, _| {
                Ok(Some(sys(7, 70, false)))
            })
            .unwrap();
        if outcome == InPlaceOutcome::NotHere {
            break;
        }
        assert_eq!(outcome, InPlaceOutcome::Done);
        placed += 1;
        assert!(
            placed < 100,
            "a 4 KiB leaf cannot take 100 records of 300 bytes"
        );
    }
    assert!(placed > 5);
    assert_eq!(tree.check().unwrap().records, u64::from(placed) + 1);
}

/// `put_run_in_place`: a run goes into the first row's leaf in one mtr, the caller asked once
/// with the current records of the rows the leaf takes; the run stops at a full leaf (no
/// split), at a key past a non-rightmost leaf's last key, at an off-page value and at an
/// unsorted key; the caller's shorter answer places only that prefix.
#[test]
fn a_run_of_puts_takes_what_its_leaf_holds_and_what_the_caller_logged() {
    let (tree, _) = tree(PageSize::K4);
    let key = |i: u32| i.to_be_bytes();
    let value = [7u8; 100];
    // Into the empty root leaf: existing row 5 is handed over, the rest are absent.
    tree.put_versioned(&key(5), b"old", sys(1, 10, false))
        .unwrap();
    let keys: Vec<[u8; 4]> = (0..20).map(key).collect();
    let rows: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &value[..])).collect();
    let mut asked = Vec::new();
    let placed = tree
        .put_run_in_place(&rows, &mut |_, currents| {
            asked.push(currents.to_vec());
            Ok(currents.iter().map(|_| sys(2, 20, false)).collect())
        })
        .unwrap();
    assert_eq!(placed, 20);
    assert_eq!(asked.len(), 1, "one call for the run");
    assert_eq!(asked[0].len(), 20);
    assert!(asked[0]
        .iter()
        .enumerate()
        .all(|(i, c)| c.is_some() == (i == 5)));
    for k in &keys {
        assert_eq!(tree.get_stored(k).unwrap().unwrap().sys, sys(2, 20, false));
    }

    // A run longer than a 4 KiB leaf holds stops where the leaf is full: nothing split.
    let keys: Vec<[u8; 4]> = (20..200).map(key).collect();
    let rows: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &value[..])).collect();
    let placed = tree
        .put_run_in_place(&rows, &mut |_, c| {
            Ok(c.iter().map(|_| sys(3, 30, false)).collect())
        })
        .unwrap();
    assert!(placed > 0 && placed < 180, "{placed}");
    assert_eq!(tree.check().unwrap().leaf_pages, 1);
    assert_eq!(tree.get_stored(&key(20 + placed as u32)).unwrap(), None);
    // The rest by plain puts (splits), then a run over every leaf: past a leaf's last key it
    // goes on in the next row's leaf, still one mtr and one call of the caller's.
    for k in &keys[placed..] {
        tree.put_versioned(k, &value, sys(3, 30, false)).unwrap();
    }
    let leaves = tree.check().unwrap().leaf_pages;
    assert!(leaves > 2, "{leaves}");
    let spanning: Vec<[u8; 4]> = (0..200).step_by(2).map(key).collect();
    let rows: Vec<(&[u8], &[u8])> = spanning.iter().map(|k| (&k[..], &b"new"[..])).collect();
    let mut calls = 0;
    let placed = tree
        .put_run_in_place(&rows, &mut |_, c| {
            calls += 1;
            Ok(c.iter().map(|_| sys(4, 40, false)).collect())
        })
        .unwrap();
    assert_eq!((placed, calls), (rows.len(), 1), "over {leaves} leaves");
    for k in &spanning {
        assert_eq!(tree.get_stored(k).unwrap().unwrap().sys, sys(4, 40, false));
    }
    assert_eq!(tree.check().unwrap().leaf_pages, leaves, "nothing split");

    // A leaf another thread holds latched (here: this one, shared) ends the run before its
    // rows, at once; the rows before it are placed, those from it on untouched.
    let held = leaf_of(&tree, &key(150));
    let latch = tree.context().pool().get_shared(held).unwrap();
    let placed = tree
        .put_run_in_place(&rows, &mut |_, c| {
            Ok(c.iter().map(|_| sys(5, 50, false)).collect())
        })
        .unwrap();
    drop(latch);
    assert!(placed > 0 && placed < 75, "{placed}");
    let stopped_at = tree.get_stored(&spanning[placed]).unwrap().unwrap();
    assert_eq!(
        stopped_at.sys,
        sys(4, 40, false),
        "the first row not placed is untouched"
    );
    assert_eq!(
        tree.get_stored(&spanning[placed - 1]).unwrap().unwrap().sys,
        sys(5, 50, false)
    );
    assert_eq!(
        leaf_of(&tree, &spanning[placed]),
        held,
        "it stopped at the held leaf"
    );

    // An off-page value or an unsorted key ends the run; a caller logging only two rows
    // places two; a caller logging none places none (and nothing changes).
    let big = vec![1u8; 9000];
    let rows: Vec<(&[u8], &[u8])> = vec![(&b"a1"[..], &b"x"[..]), (b"a2", &big), (b"a3", b"x")];
    let placed = tree
        .put_run_in_place(&rows, &mut |_, c| {
            Ok(c.iter().map(|_| sys(5, 50, false)).collect())
        })
        .unwrap();
    assert_eq!(placed, 1);
    let rows: Vec<(&[u8], &[u8])> = vec![(&b"b2"[..], &b"x"[..]), (b"b1", b"x")];
    let placed = tree
        .put_run_in_place(&rows, &mut |_, c| {
            Ok(c.iter().map(|_| sys(5, 50, false)).collect())
        })
        .unwrap();
    assert_eq!(placed, 1);
    let rows: Vec<(&[u8], &[u8])> = vec![(&b"c1"[..], &b"x"[..]), (b"c2", b"x"), (b"c3", b"x")];
    let placed = tree
        .put_run_in_place(&rows, &mut |_, _| Ok(vec![sys(6, 60, false); 2]))
        .unwrap();
    assert_eq!(placed, 2);
    assert_eq!(tree.get_stored(b"c3").unwrap(), None);
    let placed = tree
        .put_run_in_place(&[(&b"d1"[..], &b"x"[..])], &mut |_, _| Ok(Vec::new()))
        .unwrap();
    assert_eq!(placed, 0);
    assert_eq!(tree.get_stored(b"d1").unwrap(), None);
    tree.check().unwrap();
}
