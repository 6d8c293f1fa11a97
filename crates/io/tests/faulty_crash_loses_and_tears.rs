//! The fault-injecting file must really lose unsynced writes and tear them at sector
//! granularity at a crash; otherwise the engine's crash-recovery tests (doublewrite, redo)
//! would pass against a storage model kinder than real disks.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::sync::Arc;

use barracuda_io::faulty::OpKind;
use barracuda_io::{CrashMode, FaultPlan, FaultyFile, MemFile, PageFile, StdFile};

const KIB16: usize = 16 * 1024;

fn fill(byte: u8, len: usize) -> Vec<u8> {
    vec![byte; len]
}

fn read(f: &dyn PageFile, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0; len];
    f.read_at(&mut b, offset).unwrap();
    b
}

/// A file whose durable image is three 16 KiB pages of 0x11.
fn synced_file(mode: CrashMode) -> Arc<FaultyFile<MemFile>> {
    let f =
        FaultyFile::with_plan(MemFile::new("crash"), FaultPlan::new().crash_mode(mode)).unwrap();
    f.write_at(&fill(0x11, 3 * KIB16), 0).unwrap();
    f.sync_data().unwrap();
    Arc::new(f)
}

#[test]
fn unsynced_writes_are_lost_synced_ones_survive() {
    let f = synced_file(CrashMode::DropUnsynced);
    f.write_at(&fill(0x22, KIB16), 0).unwrap();
    f.sync_data().unwrap();
    f.write_at(&fill(0x33, KIB16), KIB16 as u64).unwrap();
    f.write_at(&fill(0x44, KIB16), 3 * KIB16 as u64).unwrap(); // extends the file
    f.set_len(10 * KIB16 as u64).unwrap();
    assert_eq!(f.unsynced_ops(), 3);
    // Live view before the crash has everything.
    assert_eq!(read(&*f, KIB16 as u64, KIB16), fill(0x33, KIB16));

    let report = f.crash().unwrap();
    assert_eq!(report.writes.len(), 2);
    assert!(report.writes.iter().all(|w| w.persisted_bytes == 0));
    assert_eq!(report.lost_metadata_ops, 1);
    assert_eq!(f.unsynced_ops(), 0);
    assert_eq!(
        f.len().unwrap(),
        3 * KIB16 as u64,
        "extension and set_len lost"
    );
    assert_eq!(
        read(&*f, 0, KIB16),
        fill(0x22, KIB16),
        "synced write survives"
    );
    assert_eq!(
        read(&*f, KIB16 as u64, KIB16),
        fill(0x11, KIB16),
        "unsynced write lost"
    );
    assert_eq!(f.durable_image(), f.inner().contents());
}

/// Asserts that `page` (written as `new` over `old`) is `k` sectors of new then old bytes.
fn assert_sector_prefix(page: &[u8], new: u8, old: u8, sector: usize, persisted: u64) -> usize {
    let new_bytes = page.iter().take_while(|&&b| b == new).count();
    assert!(
        page[new_bytes..].iter().all(|&b| b == old),
        "after the prefix only old bytes"
    );
    assert_eq!(
        new_bytes % sector,
        0,
        "tear at a {sector}-byte boundary, got {new_bytes}"
    );
    assert_eq!(new_bytes as u64, persisted, "report matches the image");
    new_bytes / sector
}

fn tears_at(sector: usize) {
    let mut torn = 0;
    let mut seen_prefixes = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let f = synced_file(CrashMode::TearUnsynced {
            sector: sector as u32,
            seed,
        });
        f.write_at(&fill(0xAA, KIB16), KIB16 as u64).unwrap();
        let report = f.crash().unwrap();
        let page = read(&*f, KIB16 as u64, KIB16);
        let k = assert_sector_prefix(&page, 0xAA, 0x11, sector, report.writes[0].persisted_bytes);
        seen_prefixes.insert(k);
        if k > 0 && k < KIB16 / sector {
            torn += 1;
            assert_eq!(report.torn_writes(), 1);
        }
        // Neighbours untouched.
        assert_eq!(read(&*f, 0, KIB16), fill(0x11, KIB16));
        assert_eq!(read(&*f, 2 * KIB16 as u64, KIB16), fill(0x11, KIB16));
    }
    assert!(
        torn > 32,
        "most crashes tear a 16 KiB write into {sector}-byte sectors: {torn}/64"
    );
    assert!(
        seen_prefixes.len() > 3,
        "different seeds tear at different sectors: {seen_prefixes:?}"
    );
}

#[test]
fn torn_16k_write_has_new_512_byte_sectors_then_old() {
    tears_at(512);
}

#[test]
fn torn_16k_write_has_new_4k_sectors_then_old() {
    tears_at(4096);
}

#[test]
fn same_seed_tears_the_same_way() {
    let run = || {
        let f = synced_file(CrashMode::TearUnsynced {
            sector: 512,
            seed: 7,
        });
        f.write_at(&fill(0xAB, KIB16), 0).unwrap();
        f.write_at(&fill(0xCD, KIB16), 2 * KIB16 as u64).unwrap();
        f.crash().unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn pretended_atomic_writes_are_never_torn_plain_writes_still_are() {
    let (mut whole, mut plain_torn) = (0, 0);
    for seed in 0..64 {
        let f = synced_file(CrashMode::TearUnsynced { sector: 512, seed });
        f.pretend_atomic_writes(Some(KIB16 as u32));
        assert_eq!(f.atomic_write_unit(), Some(KIB16 as u32));
        f.write_atomic_at(&fill(0xAA, KIB16), KIB16 as u64).unwrap();
        // The same size, aligned, but a plain write: the device may tear it.
        f.write_at(&fill(0xBB, KIB16), 2 * KIB16 as u64).unwrap();
        let report = f.crash().unwrap();
        let p = report.writes[0].persisted_bytes;
        assert!(
            p == 0 || p == KIB16 as u64,
            "seed {seed}: atomic write persisted {p} bytes"
        );
        whole += usize::from(p == KIB16 as u64);
        let q = report.writes[1].persisted_bytes;
        plain_torn += usize::from(q > 0 && q < KIB16 as u64);
    }
    assert!(
        whole > 0 && whole < 64,
        "atomic writes are all or nothing, both seen: {whole}"
    );
    assert!(plain_torn > 0, "plain writes tear on an atomic device too");
}

#[test]
fn crash_through_an_arc_while_other_threads_write() {
    let f = synced_file(CrashMode::DropUnsynced);
    let writer = {
        let f = Arc::clone(&f);
        std::thread::spawn(move || {
            for i in 0..200u64 {
                f.write_at(&fill(0x55, 512), (i % 96) * 512).unwrap();
            }
        })
    };
    f.crash().unwrap();
    writer.join().unwrap();
    f.crash().unwrap();
    assert_eq!(read(&*f, 0, 3 * KIB16), fill(0x11, 3 * KIB16));
    assert!(f.op_count(OpKind::Write) >= 201);
}

#[test]
fn crash_restores_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = barracuda_io::OpenOptions::new().create(true);
    let inner = StdFile::open(dir.path().join("t.ibd"), &opts).unwrap();
    let f = FaultyFile::new(inner).unwrap();
    f.write_at(&fill(1, KIB16), 0).unwrap();
    f.sync_all().unwrap();
    f.write_at(&fill(2, KIB16), 0).unwrap();
    f.write_at(&fill(3, KIB16), KIB16 as u64).unwrap();
    f.crash().unwrap();
    drop(f);
    let reopened = StdFile::open(dir.path().join("t.ibd"), &opts).unwrap();
    assert_eq!(reopened.len().unwrap(), KIB16 as u64);
    assert_eq!(read(&reopened, 0, KIB16), fill(1, KIB16));
}
