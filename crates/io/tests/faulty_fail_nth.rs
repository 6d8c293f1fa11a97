//! Injected EIO / ENOSPC must come back as errors whose kind the engine can recognise
//! (`is_eio`, `is_no_space`, raw errno), hit exactly the N-th operation, and change nothing —
//! otherwise error-path tests of the engine test nothing.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use barracuda_io::faulty::{ErrorKind, OpKind};
use barracuda_io::{FaultPlan, FaultyFile, IoErrorKind, MemFile, Op, PageFile, PunchOutcome};

fn file() -> FaultyFile<MemFile> {
    let f = FaultyFile::new(MemFile::new("errors")).unwrap();
    f.write_at(&[7; 8192], 0).unwrap();
    f.sync_data().unwrap();
    f
}

#[test]
fn nth_write_fails_with_eio_once() {
    let f = file();
    f.fail_nth(OpKind::Write, 3, ErrorKind::Eio);
    f.write_at(&[1; 512], 0).unwrap();
    f.write_at(&[1; 512], 512).unwrap();
    let err = f.write_at(&[9; 512], 1024).unwrap_err();
    assert!(err.is_eio(), "{err}");
    assert_eq!(err.kind(), IoErrorKind::Eio);
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!((err.op(), err.offset(), err.len()), (Op::Write, 1024, 512));
    assert!(err.to_string().contains("mem:errors"), "{err}");
    let mut b = [0; 512];
    f.read_at(&mut b, 1024).unwrap();
    assert_eq!(b, [7; 512], "failed write changed nothing");
    f.write_at(&[9; 512], 1024).unwrap(); // one-shot
}

#[test]
fn nth_sync_fails_with_enospc_and_nothing_becomes_durable() {
    let f = file();
    f.fail_nth(OpKind::Sync, 1, ErrorKind::Enospc);
    f.write_at(&[2; 512], 0).unwrap();
    let err = f.sync_data().unwrap_err();
    assert!(err.is_no_space(), "{err}");
    assert_eq!(err.kind(), IoErrorKind::NoSpace);
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    f.crash().unwrap();
    let mut b = [0; 512];
    f.read_at(&mut b, 0).unwrap();
    assert_eq!(b, [7; 512]);
}

#[test]
fn every_kind_can_fail() {
    for (kind, err) in [
        (OpKind::Read, ErrorKind::Eio),
        (OpKind::Write, ErrorKind::Enospc),
        (OpKind::Sync, ErrorKind::Eio),
        (OpKind::SetLen, ErrorKind::Enospc),
        (OpKind::PunchHole, ErrorKind::Eio),
        (OpKind::AtomicWrite, ErrorKind::Eio),
    ] {
        let f = FaultyFile::with_plan(
            MemFile::with_contents("k", &[3; 8192]),
            FaultPlan::new()
                .fail_nth(kind, 2, err)
                .atomic_writes(Some(4096)),
        )
        .unwrap();
        let run = |f: &FaultyFile<MemFile>| -> barracuda_io::Result<()> {
            let mut b = [0; 512];
            match kind {
                OpKind::Read => f.read_at(&mut b, 0),
                OpKind::Write => f.write_vectored_at(&[(0, &b[..])]),
                OpKind::Sync => f.sync_all(),
                OpKind::SetLen => f.set_len(4096),
                OpKind::PunchHole => f.punch_hole(0, 4096).map(|_| ()),
                OpKind::AtomicWrite => f.write_atomic_at(&[5; 4096], 4096),
            }
        };
        run(&f).unwrap();
        let e = run(&f).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(err.errno()), "{kind}: {e}");
        assert_eq!(e.is_eio(), err == ErrorKind::Eio);
        assert_eq!(e.is_no_space(), err == ErrorKind::Enospc);
        run(&f).unwrap();
        assert_eq!(f.op_count(kind), 3);
    }
}

#[test]
fn named_failpoints() {
    let plan = FaultPlan::new()
        .failpoint("faulty_file::read::err", 1, ErrorKind::Eio)
        .expect("known failpoint");
    let f = FaultyFile::with_plan(MemFile::with_contents("n", &[1; 4096]), plan).unwrap();
    let mut b = [0; 16];
    assert!(f.read_at(&mut b, 0).unwrap_err().is_eio());
    f.read_at(&mut b, 0).unwrap();
    f.fail_nth(OpKind::Read, 1, ErrorKind::Eio);
    f.clear_failpoints();
    f.read_at(&mut b, 0).unwrap();
}

#[test]
fn refused_punch_hole_is_an_outcome_not_an_error() {
    let f = file();
    f.refuse_punch_hole(true);
    let before = f.allocated_bytes().unwrap();
    assert_eq!(f.punch_hole(0, 4096).unwrap(), PunchOutcome::Unsupported);
    assert_eq!(f.punch_hole(4096, 4096).unwrap(), PunchOutcome::Unsupported);
    let mut b = [0; 8192];
    f.read_at(&mut b, 0).unwrap();
    assert_eq!(b, [7; 8192], "data unchanged");
    assert_eq!(f.allocated_bytes().unwrap(), before);
    f.refuse_punch_hole(false);
    assert_eq!(f.punch_hole(0, 4096).unwrap(), PunchOutcome::Punched);
    assert_eq!(f.allocated_bytes().unwrap(), before - 4096);
}
