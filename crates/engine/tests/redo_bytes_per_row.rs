//! Redo volume per row stays within 2.5 × the row's own bytes, splits and undo included (issue
//! 8's target of 2 × for byte-range records, plus the undo records of issue 11): 180-byte rows (8-byte key, 172-byte value) inserted through
//! the real tree, in key order and in random order, one row per transaction and 100 rows per
//! transaction, on 16 KiB pages.
//!
//! The figure is the log's growth (`current_lsn` before and after): every byte appended, frame
//! headers, CRCs and commit markers included — what the disk and recovery actually pay. Run with
//! `--nocapture` to see the figures.
//!
//! What would break it: logging whole pages for a change (16 KiB per put), logging a created
//! page's zero bytes, logging a split's moved records twice (once removed from the old page and
//! once as the whole new page is fine; the old page's memmove logged byte by byte is not), or a
//! diff that does not merge near-by changed ranges (a header per few bytes).
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use barracuda::{Durability, Engine, EngineOptions, PageSize, TableOptions};

const ROWS: u64 = 20_000;
const KEY_BYTES: usize = 8;
const VALUE_BYTES: usize = 172;
const ROW_BYTES: usize = KEY_BYTES + VALUE_BYTES;

/// SplitMix64: a deterministic key order without a dependency on a generator's stream stability.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of `k`: big-endian, so that sequential `k` are ascending keys.
#[expect(clippy::big_endian_bytes, reason = "keys compare as bytes")]
fn key(k: u64) -> [u8; KEY_BYTES] {
    k.to_be_bytes()
}

/// A value that is not one repeated byte, so a diff cannot get it for free.
fn value(i: u64) -> Vec<u8> {
    (0..VALUE_BYTES as u64)
        .map(|j| (mix(i.wrapping_mul(31) + j) % 251) as u8)
        .collect()
}

/// Inserts `ROWS` rows in `rows_per_txn` batches and returns the log bytes appended per row.
fn redo_bytes_per_row(random: bool, rows_per_txn: u64) -> f64 {
    let tmp = tempfile::tempdir().unwrap();
    let options = EngineOptions::default()
        .page_size(PageSize::K16)
        .buffer_pool_bytes(64 << 20)
        .redo_log_capacity(256 << 20)
        .durability(Durability::Background);
    let db = Engine::open(tmp.path(), options).unwrap();
    let table = db.create_table("t", TableOptions::default()).unwrap();
    let start = db.status().current_lsn;
    let mut txn = db.begin();
    for i in 0..ROWS {
        let k = if random { mix(i) } else { i };
        txn.put(&table, &key(k), &value(i)).unwrap();
        if (i + 1) % rows_per_txn == 0 {
            txn.commit().unwrap();
            txn = db.begin();
        }
    }
    txn.commit().unwrap();
    let appended = db.status().current_lsn - start;
    let tree = db.check_table(&table).unwrap();
    assert_eq!(tree.records, ROWS);
    let per_row = appended as f64 / ROWS as f64;
    println!(
        "{} inserts, {rows_per_txn} row(s)/transaction: {appended} log bytes for {ROWS} rows of \
         {ROW_BYTES} B = {per_row:.1} B/row ({:.2}x the row); {} leaf pages ({:.0}% full)",
        if random { "random" } else { "sequential" },
        per_row / ROW_BYTES as f64,
        tree.leaf_pages,
        tree.leaf_fill * 100.0
    );
    db.close().unwrap();
    per_row
}

/// Issue 8 set 2 × the row for the tree's own redo. Since issue 11 every row write also logs
/// its undo record (the key of an insert, framed), which the redo must protect too: measured
/// 2.21 × for random inserts 100 to a transaction, where the tree's share was 1.93 ×. Hence
/// 2.5 × per row. A transaction also logs its undo log's start, commit and purge (a page
/// allocated and freed, the transaction system page changed three times: about 220 bytes; InnoDB
/// pays the same kind of cost, less where it reuses cached undo pages), allowed on top as
/// [`PER_TRANSACTION`] over the transaction's rows.
fn assert_within_bound(per_row: f64, rows_per_txn: u64) {
    let bound = 2.5 * ROW_BYTES as f64 + PER_TRANSACTION / rows_per_txn as f64;
    assert!(
        per_row <= bound,
        "{per_row:.1} log bytes per {ROW_BYTES}-byte row ({rows_per_txn} per transaction): \
         over the bound of {bound:.1}"
    );
}

/// The redo a transaction's undo log costs besides its records (see above).
const PER_TRANSACTION: f64 = 250.0;

#[test]
fn sequential_inserts_log_at_most_two_and_a_half_times_the_row() {
    assert_within_bound(redo_bytes_per_row(false, 100), 100);
    assert_within_bound(redo_bytes_per_row(false, 1), 1);
}

#[test]
fn random_inserts_log_at_most_two_and_a_half_times_the_row() {
    assert_within_bound(redo_bytes_per_row(true, 100), 100);
    assert_within_bound(redo_bytes_per_row(true, 1), 1);
}
