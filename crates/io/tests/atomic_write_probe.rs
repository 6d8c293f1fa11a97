//! The atomic-write probe decides whether a database may skip doublewrite: it must say
//! "supported" only where an untorn page write really succeeded, give a reason otherwise, and
//! never leave its scratch file behind.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::path::Path;

use barracuda_io::faulty::{ErrorKind, OpKind};
use barracuda_io::{
    probe_atomic_writes, AtomicWriteProbe, AtomicWriteRefusal, Backend, FaultyFileSystem,
    FileSystem, OpenOptions, OsFileSystem, PageFile, StdFile, ATOMIC_WRITE_PROBE_FILE,
};

const PAGE: usize = 16 * 1024;

fn db_fs() -> FaultyFileSystem {
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    fs
}

fn probe(fs: &FaultyFileSystem, page_size: usize) -> AtomicWriteProbe {
    let answer = probe_atomic_writes(fs, Path::new("/db"), page_size);
    assert_eq!(
        fs.list_dir(Path::new("/db")).unwrap(),
        Vec::<std::path::PathBuf>::new(),
        "the probe left a file ({answer})"
    );
    answer
}

#[test]
fn on_this_machines_disk_the_answer_matches_statx_and_gives_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    for backend in [Backend::Std, Backend::Auto] {
        let answer = probe_atomic_writes(&OsFileSystem::new(backend), dir.path(), PAGE);
        eprintln!("{backend:?} on {}: {answer}", dir.path().display());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "the probe left {ATOMIC_WRITE_PROBE_FILE}"
        );
        // What the file system itself says, asked directly.
        let scratch = dir.path().join("statx");
        let unit = StdFile::open(&scratch, &OpenOptions::new().create(true).direct(true))
            .ok()
            .and_then(|f| f.atomic_write_unit());
        std::fs::remove_file(&scratch).unwrap();
        match unit {
            Some(unit) if unit as usize >= PAGE => {
                eprintln!("this disk claims untorn writes up to {unit} bytes");
            }
            _ => {
                let why = answer.refusal().map(ToString::to_string);
                assert!(
                    why.as_ref().is_some_and(|w| !w.is_empty()),
                    "statx says no untorn {PAGE}-byte writes here (unit {unit:?}), so the probe \
                     must refuse with a reason: {answer}"
                );
                assert!(answer.to_string().contains("not supported"), "{answer}");
            }
        }
    }
}

#[test]
fn a_pretending_file_system_is_supported_and_a_plain_one_is_not() {
    let fs = db_fs();
    assert_eq!(
        probe(&fs, PAGE),
        AtomicWriteProbe::Unsupported(AtomicWriteRefusal::NoAtomicWriteUnit)
    );
    fs.pretend_atomic_writes(Some(PAGE as u32));
    let answer = probe(&fs, PAGE);
    assert_eq!(answer, AtomicWriteProbe::Supported { unit: PAGE as u32 });
    assert!(answer.is_supported() && answer.refusal().is_none());
    assert_eq!(
        fs.op_count(OpKind::AtomicWrite),
        1,
        "support was shown by an untorn write, not assumed from the unit"
    );
    assert_eq!(
        probe(&fs, 2 * PAGE),
        AtomicWriteProbe::Unsupported(AtomicWriteRefusal::UnitTooSmall {
            unit: PAGE as u32,
            page_size: 2 * PAGE
        })
    );
    let small = probe(&fs, 2 * PAGE).to_string();
    assert!(small.contains("16384 < 32768"), "{small}");
}

#[test]
fn a_refused_or_failed_write_is_a_reason_and_leaves_no_file() {
    let fs = db_fs();
    fs.pretend_atomic_writes(Some(PAGE as u32));
    fs.fail_nth(OpKind::AtomicWrite, 1, ErrorKind::Einval);
    match probe(&fs, PAGE) {
        AtomicWriteProbe::Unsupported(AtomicWriteRefusal::WriteRefused { errno, error }) => {
            assert_eq!(errno, Some(libc::EINVAL));
            assert!(error.contains(ATOMIC_WRITE_PROBE_FILE), "{error}");
        }
        other => panic!("an untorn write refused with EINVAL: {other}"),
    }
    fs.fail_nth(OpKind::Write, 1, ErrorKind::Enospc);
    assert!(
        matches!(
            probe(&fs, PAGE),
            AtomicWriteProbe::Unsupported(AtomicWriteRefusal::ScratchFile { .. })
        ),
        "the scratch page's plain write failed"
    );
    assert_eq!(
        probe(&fs, 3000),
        AtomicWriteProbe::Unsupported(AtomicWriteRefusal::BadPageSize { page_size: 3000 })
    );
    // A directory that does not exist: the scratch file cannot be created.
    let missing = probe_atomic_writes(&fs, Path::new("/nowhere"), PAGE);
    assert!(
        matches!(
            missing,
            AtomicWriteProbe::Unsupported(AtomicWriteRefusal::ScratchFile { .. })
        ),
        "{missing}"
    );
    assert!(probe(&fs, PAGE).is_supported(), "failpoints were one-shot");
}

#[test]
fn a_scratch_file_left_by_a_crash_is_replaced_and_removed() {
    let fs = db_fs();
    let stale = Path::new("/db").join(ATOMIC_WRITE_PROBE_FILE);
    let f = fs.open(&stale, &OpenOptions::new().create(true)).unwrap();
    f.write_at(&[7; 100], 0).unwrap();
    drop(f);
    fs.pretend_atomic_writes(Some(PAGE as u32));
    assert!(probe(&fs, PAGE).is_supported());
}
