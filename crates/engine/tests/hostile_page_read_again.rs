//! A page read again skips its structure check only when it is the image checked before: the
//! same page with the same checksum. A page changed on disk while the engine runs — here a
//! leaf whose record length is crafted past the heap, resealed with a valid checksum — is
//! checked whole when read back and refused with an error naming the file and page, although
//! an earlier image of the same page was checked and known.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

mod common;

use std::os::unix::fs::FileExt;

use common::chain;

use barracuda::{Engine, EngineOptions, PageSize, Table, TableOptions};
use barracuda_page::{seal_page, INLINE_HEADER_SIZE};

const PS: PageSize = PageSize::K4;
const ROWS: u32 = 6000;
/// The key of the leaf the test crafts (keys are `k` + 8 decimal digits, unique on disk).
const TARGET: u32 = 4321;

fn options() -> EngineOptions {
    // 64 frames for ~200 leaves: a pass over the keys evicts every page it does not touch.
    EngineOptions::default()
        .page_size(PS)
        .buffer_pool_bytes(64 * 4096)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// Reads every key but `TARGET`, twice: more leaves than the pool holds, so `TARGET`'s leaf
/// is evicted and the later passes read leaves the first one checked.
fn read_all_others(db: &Engine, t: &Table) {
    for _ in 0..2 {
        for i in (0..ROWS).filter(|&i| i != TARGET) {
            assert!(db.get(t, &key(i)).unwrap().is_some());
        }
    }
}

#[test]
fn a_page_changed_on_disk_is_checked_again_when_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for i in 0..ROWS {
        db.put(&t, &key(i), &[b'v'; 100]).unwrap();
    }
    db.close().unwrap();

    let db = Engine::open(tmp.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    assert!(db.get(&t, &key(TARGET)).unwrap().is_some());
    read_all_others(&db, &t);
    let status = db.status();
    assert!(
        status.pages_checked_whole > 0 && status.page_checks_skipped > 0,
        "leaves read again skip the check of the image checked before: {} checked, {} skipped",
        status.pages_checked_whole,
        status.page_checks_skipped
    );

    // The engine holds no change to write: craft the target's leaf in the file under it.
    let path = tmp.path().join("tables/t.ibd");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let key_at = bytes
        .windows(key(TARGET).len())
        .position(|w| w == key(TARGET).as_slice())
        .expect("the leaf holds the key");
    let page_no = key_at / PS.bytes();
    let start = page_no * PS.bytes();
    let mut page = bytes[start..start + PS.bytes()].to_vec();
    // The record's value length (after its kind byte and key length) now reaches past the heap.
    let value_len_at = key_at - start - INLINE_HEADER_SIZE + 3;
    page[value_len_at..value_len_at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    seal_page(&mut page);
    file.write_all_at(&page, start as u64).unwrap();
    file.sync_all().unwrap();

    let err = db.get(&t, &key(TARGET)).unwrap_err();
    let text = chain(&err);
    assert!(text.contains("t.ibd"), "names the file: {text}");
    assert!(
        text.contains(&format!("{page_no}")),
        "names the page: {text}"
    );
}
