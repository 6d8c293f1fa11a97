//! Untorn writes (`write_atomic_at`): on a pretended atomic-write device only they survive a
//! crash whole — plain writes of the same page still tear — and every request the kernel would
//! refuse is refused as `Unsupported`, before anything is written. Otherwise the engine's
//! doublewrite-free mode would be tested against a device kinder than a real one, and its
//! per-file fallback could not tell a refusal from a failure.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::path::Path;
use std::sync::Arc;

use barracuda_io::faulty::{ErrorKind, OpKind};
use barracuda_io::{
    AlignedBuf, CrashMode, FaultyFile, FaultyFileSystem, FileSystem, IoError, MemFile, Op,
    OpenOptions, PageFile, StdFile,
};

const PAGE: usize = 16 * 1024;

fn fill(byte: u8, len: usize) -> AlignedBuf {
    AlignedBuf::from_slice(&vec![byte; len])
}

fn read(f: &dyn PageFile, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0; len];
    f.read_at(&mut b, offset).unwrap();
    b
}

/// Bytes of `page` equal to `new` before the first one that is not; the rest must be `old`.
fn new_prefix(page: &[u8], new: u8, old: u8) -> usize {
    let n = page.iter().take_while(|&&b| b == new).count();
    assert!(page[n..].iter().all(|&b| b == old), "new bytes, then old");
    n
}

/// A memory file with three durable pages of 0x11, tearing at 512-byte sectors at a crash.
fn synced(seed: u64, unit: Option<u32>) -> FaultyFile<MemFile> {
    let f = FaultyFile::new(MemFile::new("atomic")).unwrap();
    f.set_crash_mode(CrashMode::TearUnsynced { sector: 512, seed });
    f.pretend_atomic_writes(unit);
    f.write_at(&fill(0x11, 3 * PAGE), 0).unwrap();
    f.sync_data().unwrap();
    f
}

fn assert_refused(err: &IoError, what: &str) {
    assert!(err.is_unsupported(), "{what}: {err}");
    assert_eq!(err.op(), Op::AtomicWrite, "{what}: {err}");
}

#[test]
fn only_untorn_writes_survive_a_crash_whole() {
    let (mut atomic_whole, mut atomic_lost, mut plain_torn) = (0, 0, 0);
    for seed in 0..256 {
        let f = synced(seed, Some(PAGE as u32));
        f.write_atomic_at(&fill(0xAA, PAGE), PAGE as u64).unwrap();
        f.write_at(&fill(0xBB, PAGE), 2 * PAGE as u64).unwrap();
        let report = f.crash().unwrap();
        assert!(report.writes[0].atomic && !report.writes[1].atomic);

        let atomic = new_prefix(&read(&f, PAGE as u64, PAGE), 0xAA, 0x11);
        assert!(
            atomic == 0 || atomic == PAGE,
            "seed {seed}: the untorn write persisted {atomic} of {PAGE} bytes"
        );
        assert_eq!(atomic as u64, report.writes[0].persisted_bytes);
        atomic_whole += usize::from(atomic == PAGE);
        atomic_lost += usize::from(atomic == 0);

        let plain = new_prefix(&read(&f, 2 * PAGE as u64, PAGE), 0xBB, 0x11);
        assert_eq!(plain % 512, 0, "seed {seed}: torn at a sector boundary");
        plain_torn += usize::from(plain > 0 && plain < PAGE);
    }
    assert!(
        atomic_whole > 0 && atomic_lost > 0,
        "an unsynced untorn write is sometimes kept, sometimes lost: {atomic_whole} kept, \
         {atomic_lost} lost of 256"
    );
    assert!(
        plain_torn > 0,
        "a plain write of a page on the same atomic-write device tears in some seed"
    );
}

#[test]
fn synced_untorn_writes_are_durable() {
    let f = synced(3, Some(PAGE as u32));
    f.write_atomic_at(&fill(0xAA, PAGE), 0).unwrap();
    f.sync_data().unwrap();
    f.crash().unwrap();
    assert_eq!(read(&f, 0, PAGE), vec![0xAA; PAGE]);
}

#[test]
fn requests_the_kernel_would_refuse_are_unsupported_and_change_nothing() {
    let f = synced(1, Some(PAGE as u32));
    let big = fill(0xCC, 2 * PAGE);
    let cases: [(&str, &[u8], u64); 4] = [
        ("longer than the unit", &big, 0),
        ("offset not a multiple of the length", &big[..PAGE], 4096),
        ("length not a power of two", &big[..3 * 4096], 0),
        ("shorter than the 512-byte minimum", &big[..256], 0),
    ];
    for (what, buf, offset) in cases {
        let err = f.write_atomic_at(buf, offset).unwrap_err();
        assert_refused(&err, what);
        assert_eq!(err.raw_os_error(), None, "{what}: refused before the write");
    }
    assert_eq!(f.unsynced_ops(), 0, "nothing was written");
    assert_eq!(read(&f, 0, 3 * PAGE), vec![0x11; 3 * PAGE]);
    // Within the rules, shorter than the unit is fine (like an NVMe AWUPF above the page).
    f.write_atomic_at(&big[..4096], 4096).unwrap();

    // No pretended device: refused like on a device without atomic writes.
    let plain = synced(1, None);
    assert_eq!(plain.atomic_write_unit(), None);
    assert_refused(
        &plain.write_atomic_at(&fill(0xCC, PAGE), 0).unwrap_err(),
        "no atomic-write device",
    );
    assert_eq!(plain.unsynced_ops(), 0);
    assert_refused(
        &MemFile::new("m")
            .write_atomic_at(&fill(1, PAGE), 0)
            .unwrap_err(),
        "memory file",
    );
}

#[test]
fn a_buffered_std_file_refuses_and_a_direct_one_obeys_statx() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ibd");
    let opts = OpenOptions::new().create(true);
    let page = fill(0x5A, PAGE);

    let buffered = StdFile::open(&path, &opts).unwrap();
    let err = buffered.write_atomic_at(&page, 0).unwrap_err();
    assert_refused(&err, "buffered");
    assert!(err.to_string().contains("O_DIRECT"), "{err}");
    assert_eq!(buffered.len().unwrap(), 0);

    let Ok(direct) = StdFile::open(&path, &opts.direct(true)) else {
        eprintln!("SKIPPED the O_DIRECT half: the file system refuses O_DIRECT");
        return;
    };
    eprintln!(
        "statx atomic-write unit here: {:?}..={:?}",
        direct.atomic_write_unit_min(),
        direct.atomic_write_unit()
    );
    match direct.atomic_write_unit() {
        Some(max)
            if max as usize >= PAGE && direct.atomic_write_unit_min() <= Some(PAGE as u32) =>
        {
            direct.write_atomic_at(&page, 0).unwrap();
            assert_eq!(read(&direct, 0, PAGE), page.to_vec());
        }
        _ => {
            let err = direct.write_atomic_at(&page, 0).unwrap_err();
            assert_refused(&err, "no atomic-write unit for a page");
            assert_eq!(direct.len().unwrap(), 0);
        }
    }
    // Misaligned for any device.
    let err = direct.write_atomic_at(&page, 512).unwrap_err();
    assert_refused(&err, "offset 512");
}

#[test]
fn a_failpoint_refuses_the_nth_untorn_write_at_run_time() {
    for (error, unsupported) in [
        (ErrorKind::Eopnotsupp, true),
        (ErrorKind::Einval, true),
        (ErrorKind::Eio, false),
    ] {
        let f = synced(0, Some(PAGE as u32));
        f.fail_nth(OpKind::AtomicWrite, 2, error);
        f.write_atomic_at(&fill(1, PAGE), 0).unwrap();
        let err = f.write_atomic_at(&fill(2, PAGE), PAGE as u64).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(error.errno()), "{err}");
        assert_eq!(err.is_unsupported(), unsupported, "{error:?}: {err}");
        assert_eq!(err.is_eio(), !unsupported, "{error:?}: {err}");
        assert_eq!((err.op(), err.offset()), (Op::AtomicWrite, PAGE as u64));
        assert_eq!(
            read(&f, PAGE as u64, PAGE),
            vec![0x11; PAGE],
            "nothing written"
        );
        f.write_atomic_at(&fill(3, PAGE), PAGE as u64).unwrap();
        assert_eq!(f.op_count(OpKind::AtomicWrite), 3);
        assert_eq!(
            f.op_count(OpKind::Write),
            1,
            "untorn writes are not counted as plain writes (only the setup's one)"
        );
    }
    let plan = barracuda_io::FaultPlan::new()
        .failpoint("faulty_file::atomic_write::err", 1, ErrorKind::Einval)
        .expect("a known failpoint");
    let f = FaultyFile::with_plan(MemFile::new("named"), plan.atomic_writes(Some(4096))).unwrap();
    assert!(f
        .write_atomic_at(&fill(1, 4096), 0)
        .unwrap_err()
        .is_unsupported());
    f.write_atomic_at(&fill(1, 4096), 0).unwrap();
}

/// Opens (creating) `name` in `/db` of `fs`, O_DIRECT when `direct`.
fn open(fs: &FaultyFileSystem, name: &str, direct: bool) -> Arc<dyn PageFile> {
    let path = Path::new("/db").join(name);
    fs.open(&path, &OpenOptions::new().create(true).direct(direct))
        .unwrap()
}

#[test]
fn a_file_system_pretends_for_files_opened_before_and_after() {
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let before = open(&fs, "before.ibd", true);
    assert_refused(
        &before.write_atomic_at(&fill(1, PAGE), 0).unwrap_err(),
        "not pretending yet",
    );
    fs.pretend_atomic_writes(Some(PAGE as u32));
    let after = open(&fs, "after.ibd", true);
    for f in [&before, &after] {
        assert_eq!(f.atomic_write_unit(), Some(PAGE as u32));
        f.write_atomic_at(&fill(2, PAGE), 0).unwrap();
    }
    let buffered = open(&fs, "buffered.ibd", false);
    let err = buffered.write_atomic_at(&fill(3, PAGE), 0).unwrap_err();
    assert_refused(&err, "a handle opened without O_DIRECT");
    assert!(err.to_string().contains("O_DIRECT"), "{err}");

    // Counted across the file system, like every failpoint of it.
    fs.fail_nth(OpKind::AtomicWrite, 2, ErrorKind::Eopnotsupp);
    before.write_atomic_at(&fill(4, PAGE), 0).unwrap();
    let err = after.write_atomic_at(&fill(4, PAGE), 0).unwrap_err();
    assert_refused(&err, "the failpoint");
    assert!(err.to_string().contains("after.ibd"), "{err}");

    fs.pretend_atomic_writes(None);
    assert_refused(
        &after.write_atomic_at(&fill(5, PAGE), 0).unwrap_err(),
        "pretending switched off",
    );
    assert_eq!(open(&fs, "later.ibd", true).atomic_write_unit(), None);
}

#[test]
fn on_a_pretending_file_system_untorn_pages_survive_a_crash_whole() {
    let mut plain_torn = 0;
    for seed in 0..64 {
        let fs = FaultyFileSystem::new();
        fs.set_crash_mode(CrashMode::TearUnsynced { sector: 4096, seed });
        fs.pretend_atomic_writes(Some(PAGE as u32));
        fs.create_dir_all(Path::new("/db")).unwrap();
        let f = open(&fs, "t.ibd", true);
        f.write_at(&fill(0x11, 2 * PAGE), 0).unwrap();
        f.sync_all().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        f.write_atomic_at(&fill(0xAA, PAGE), 0).unwrap();
        f.write_at(&fill(0xBB, PAGE), PAGE as u64).unwrap();
        fs.crash().unwrap();

        let f = open(&fs, "t.ibd", true);
        let atomic = new_prefix(&read(&*f, 0, PAGE), 0xAA, 0x11);
        assert!(atomic == 0 || atomic == PAGE, "seed {seed}: {atomic}");
        let plain = new_prefix(&read(&*f, PAGE as u64, PAGE), 0xBB, 0x11);
        plain_torn += usize::from(plain > 0 && plain < PAGE);
        assert_eq!(f.atomic_write_unit(), Some(PAGE as u32), "still pretending");
    }
    assert!(plain_torn > 0, "plain page writes tear in some seed");
}
