//! Bytes on disk are untrusted: an overflow record whose `total_len` is crafted beyond the 4 GiB
//! limit (with a valid checksum) is refused when its page is read — an error naming the file and
//! page — instead of sizing a buffer from it and aborting the process.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

mod common;

use common::chain;

use barracuda::{Engine, EngineOptions, PageSize, TableOptions};
use barracuda_page::seal_page;

const PS: PageSize = PageSize::K4;
const KEY: &[u8] = b"HOSTILE-OVERFLOW-KEY";
/// Bytes from an overflow record's start to its key: kind, key_len, prefix_len, total_len,
/// first_page, trx_id, roll_ptr (FORMATS.md, index records).
const OVERFLOW_HEADER: usize = barracuda_page::OVERFLOW_HEADER_SIZE;
/// Offset of `total_len` inside an overflow record.
const TOTAL_LEN_AT: usize = 5;

fn options() -> EngineOptions {
    EngineOptions::default()
        .page_size(PS)
        .buffer_pool_bytes(64 * 4096)
}

fn crafted_total_len_is_refused(total_len: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, KEY, &vec![0xAB; 20_000]).unwrap(); // off-page at 4 KiB pages
    db.close().unwrap();

    let path = tmp.path().join("tables/t.ibd");
    let mut bytes = std::fs::read(&path).unwrap();
    let key_at = bytes
        .windows(KEY.len())
        .position(|w| w == KEY)
        .expect("the leaf holds the key");
    let len_at = key_at - OVERFLOW_HEADER + TOTAL_LEN_AT;
    bytes[len_at..len_at + 8].copy_from_slice(&total_len.to_le_bytes());
    let page_no = key_at / PS.bytes();
    seal_page(&mut bytes[page_no * PS.bytes()..(page_no + 1) * PS.bytes()]);
    std::fs::write(&path, bytes).unwrap();

    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    let err = db.get(&t, KEY).unwrap_err();
    let text = chain(&err);
    assert!(text.contains("t.ibd"), "names the file: {text}");
    assert!(
        text.contains(&format!("{page_no}")),
        "names the page: {text}"
    );
    assert!(text.contains("4 GiB"), "says what is wrong: {text}");
}

#[test]
fn an_overflow_length_just_above_the_limit_is_refused() {
    crafted_total_len_is_refused(u64::from(u32::MAX) + 1);
}

#[test]
fn the_largest_overflow_length_is_refused_without_aborting() {
    crafted_total_len_is_refused(u64::MAX);
}
