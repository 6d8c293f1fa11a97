//! One conformance suite run against every back end: if a back end diverges from the
//! [`PageFile`] contract (exact reads, past-EOF error, vectored writes, set_len, punch hole,
//! concurrent disjoint writers, untorn writes done or refused as `Unsupported`), the engine
//! above it would silently read wrong pages.
//!
//! All buffers are [`AlignedBuf`] and all offsets/lengths multiples of 4096, so the same tests
//! also run on O_DIRECT files.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::sync::Arc;

use barracuda_io::{
    AlignedBuf, Backend, FaultyFile, IoErrorKind, MemFile, OpenOptions, PageFile, PunchOutcome,
    StdFile, UringFile,
};
use tempfile::TempDir;

const PAGE: usize = 4096;

/// A page whose every byte depends on `seed` and the position (never all zeros).
fn page(seed: u64, len: usize) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len);
    for (i, x) in b.iter_mut().enumerate() {
        *x = ((seed as usize * 31 + i / 7) % 251 + 1) as u8;
    }
    b
}

fn create() -> OpenOptions {
    OpenOptions::new().create(true).truncate(true)
}

/// The file under test and the directory that must outlive it.
struct Subject {
    file: Arc<dyn PageFile>,
    _dir: TempDir,
}

type Factory = fn(&TempDir) -> Result<Arc<dyn PageFile>, String>;

fn open_std(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    Ok(Arc::new(
        StdFile::open(dir.path().join("t.ibd"), &create()).map_err(|e| e.to_string())?,
    ))
}

fn open_std_direct(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    match StdFile::open(dir.path().join("t.ibd"), &create().direct(true)) {
        Ok(f) => Ok(Arc::new(f)),
        Err(e) if e.kind() == IoErrorKind::Unsupported => Err(format!("O_DIRECT refused: {e}")),
        Err(e) => panic!("open O_DIRECT: {e}"),
    }
}

fn open_uring_with(dir: &TempDir, opts: OpenOptions) -> Result<Arc<dyn PageFile>, String> {
    match UringFile::open(dir.path().join("t.ibd"), &opts) {
        Ok(f) => Ok(Arc::new(f)),
        Err(e) if e.op() == barracuda_io::Op::Uring => {
            Err(format!("!!!!! io_uring REFUSED BY THE KERNEL: {e} !!!!!"))
        }
        Err(e) if e.kind() == IoErrorKind::Unsupported => Err(format!("O_DIRECT refused: {e}")),
        Err(e) => panic!("open io_uring: {e}"),
    }
}

fn open_uring(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    open_uring_with(dir, create())
}

fn open_uring_direct(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    open_uring_with(dir, create().direct(true))
}

fn open_auto(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    barracuda_io::open_file(dir.path().join("t.ibd"), &create(), Backend::Auto)
        .map_err(|e| e.to_string())
}

#[expect(clippy::unnecessary_wraps, reason = "must have the Factory signature")]
fn open_mem(_dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    Ok(Arc::new(MemFile::new("conformance")))
}

fn open_faulty_mem(_dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    Ok(Arc::new(
        FaultyFile::new(MemFile::new("conformance")).map_err(|e| e.to_string())?,
    ))
}

/// A memory file on a pretended atomic-write device, so the suite sees untorn writes land.
fn open_faulty_atomic(_dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    let f = FaultyFile::new(MemFile::new("conformance")).map_err(|e| e.to_string())?;
    f.pretend_atomic_writes(Some(4 * PAGE as u32));
    Ok(Arc::new(f))
}

fn open_faulty_std(dir: &TempDir) -> Result<Arc<dyn PageFile>, String> {
    let inner = StdFile::open(dir.path().join("t.ibd"), &create()).map_err(|e| e.to_string())?;
    Ok(Arc::new(FaultyFile::new(inner).map_err(|e| e.to_string())?))
}

fn subject(name: &str, factory: Factory) -> Option<Subject> {
    let dir = tempfile::tempdir().expect("tempdir");
    match factory(&dir) {
        Ok(file) => Some(Subject { file, _dir: dir }),
        Err(reason) => {
            eprintln!("SKIPPED conformance for back end `{name}`: {reason}");
            None
        }
    }
}

fn read_vec(f: &dyn PageFile, offset: u64, len: usize) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len);
    f.read_at(&mut b, offset).expect("read");
    b
}

fn round_trip(f: &dyn PageFile) {
    let a = page(1, PAGE);
    let b = page(2, 4 * PAGE);
    f.write_at(&a, 0).unwrap();
    f.write_at(&b, 3 * PAGE as u64).unwrap();
    assert_eq!(read_vec(f, 0, PAGE), a);
    assert_eq!(read_vec(f, 3 * PAGE as u64, 4 * PAGE), b);
    // The never-written gap below EOF reads as zeros, without error.
    assert!(read_vec(f, PAGE as u64, 2 * PAGE).iter().all(|&x| x == 0));
    assert_eq!(f.len().unwrap(), 7 * PAGE as u64);
    // Overwrite in place.
    let c = page(3, PAGE);
    f.write_at(&c, 4 * PAGE as u64).unwrap();
    assert_eq!(read_vec(f, 4 * PAGE as u64, PAGE), c);
}

fn read_past_eof(f: &dyn PageFile) {
    let a = page(4, 2 * PAGE);
    f.write_at(&a, 0).unwrap();
    // Entirely beyond EOF.
    let mut buf = page(9, PAGE);
    let err = f.read_at(&mut buf, 2 * PAGE as u64).unwrap_err();
    assert!(err.is_past_eof(), "{err}");
    assert_eq!(err.kind(), IoErrorKind::PastEof);
    assert!(buf.iter().all(|&x| x == 0), "beyond-EOF part is zeroed");
    assert!(
        err.to_string().contains("t.ibd") || err.to_string().contains("mem:"),
        "{err}"
    );
    // Straddling EOF: the part below EOF is filled, the rest zeroed, still an error.
    let mut buf = page(9, 2 * PAGE);
    let err = f.read_at(&mut buf, PAGE as u64).unwrap_err();
    assert!(err.is_past_eof(), "{err}");
    assert_eq!(buf[..PAGE], a[PAGE..]);
    assert!(buf[PAGE..].iter().all(|&x| x == 0));
    // Sparse extension: zeros, no error.
    f.set_len(4 * PAGE as u64).unwrap();
    assert!(read_vec(f, 2 * PAGE as u64, 2 * PAGE)
        .iter()
        .all(|&x| x == 0));
}

fn vectored(f: &dyn PageFile) {
    // More writes than one io_uring submission queue holds (64), out of order.
    let n = 150usize;
    let pages: Vec<AlignedBuf> = (0..n).map(|i| page(i as u64 + 10, PAGE)).collect();
    let writes: Vec<(u64, &[u8])> = (0..n)
        .rev()
        .map(|i| ((i * PAGE) as u64, &pages[i][..]))
        .collect();
    f.write_vectored_at(&writes).unwrap();
    assert_eq!(f.len().unwrap(), (n * PAGE) as u64);
    let mut bufs: Vec<AlignedBuf> = (0..n).map(|_| AlignedBuf::zeroed(PAGE)).collect();
    let mut reads: Vec<(u64, &mut [u8])> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ((i * PAGE) as u64, &mut b[..]))
        .collect();
    f.read_vectored_at(&mut reads).unwrap();
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(b, &pages[i], "page {i}");
    }
    // A vectored read reaching past EOF reports it.
    let mut tail = AlignedBuf::zeroed(PAGE);
    let mut head = AlignedBuf::zeroed(PAGE);
    let mut reads: Vec<(u64, &mut [u8])> =
        vec![(0, &mut head[..]), ((n * PAGE) as u64, &mut tail[..])];
    assert!(f.read_vectored_at(&mut reads).unwrap_err().is_past_eof());
    // Empty batch.
    f.write_vectored_at(&[]).unwrap();
}

fn set_len(f: &dyn PageFile) {
    assert!(f.is_empty().unwrap());
    f.set_len(16 * PAGE as u64).unwrap();
    assert_eq!(f.len().unwrap(), 16 * PAGE as u64);
    assert!(!f.is_empty().unwrap());
    let a = page(5, 16 * PAGE);
    f.write_at(&a, 0).unwrap();
    f.set_len(4 * PAGE as u64).unwrap();
    assert_eq!(f.len().unwrap(), 4 * PAGE as u64);
    assert_eq!(read_vec(f, 0, 4 * PAGE)[..], a[..4 * PAGE]);
    // Regrown bytes are zeros, not the old data.
    f.set_len(8 * PAGE as u64).unwrap();
    assert!(read_vec(f, 4 * PAGE as u64, 4 * PAGE)
        .iter()
        .all(|&x| x == 0));
    f.set_len(0).unwrap();
    assert!(f.is_empty().unwrap());
}

fn sync(f: &dyn PageFile) {
    f.write_at(&page(6, PAGE), 0).unwrap();
    f.sync_data().unwrap();
    f.write_at(&page(7, PAGE), PAGE as u64).unwrap();
    f.sync_all().unwrap();
    assert_eq!(read_vec(f, PAGE as u64, PAGE), page(7, PAGE));
}

fn punch_hole(f: &dyn PageFile) {
    const MIB: usize = 1 << 20;
    let data = page(8, MIB);
    f.write_at(&data, 0).unwrap();
    f.sync_data().unwrap();
    let before = f.allocated_bytes().unwrap();
    assert!(
        before >= MIB as u64 / 2,
        "written data is allocated: {before}"
    );
    let (hole_at, hole_len) = (256 * 1024usize, 512 * 1024usize);
    let outcome = f.punch_hole(hole_at as u64, hole_len as u64).unwrap();
    let back = read_vec(f, 0, MIB);
    assert_eq!(f.len().unwrap(), MIB as u64, "punching keeps the length");
    match outcome {
        PunchOutcome::Punched => {
            assert!(back[hole_at..hole_at + hole_len].iter().all(|&x| x == 0));
            assert_eq!(back[..hole_at], data[..hole_at]);
            assert_eq!(back[hole_at + hole_len..], data[hole_at + hole_len..]);
            let after = f.allocated_bytes().unwrap();
            assert!(
                after + hole_len as u64 / 2 <= before,
                "allocated bytes drop: {before} -> {after}"
            );
        }
        PunchOutcome::Unsupported => {
            eprintln!("{}: file system refuses hole punching", f.backend_name());
            assert_eq!(back, data, "refused punch leaves data unchanged");
            assert_eq!(
                f.punch_hole(0, PAGE as u64).unwrap(),
                PunchOutcome::Unsupported
            );
        }
    }
    // Zero-length and beyond-EOF punches are harmless.
    f.punch_hole(0, 0).unwrap();
    f.punch_hole(2 * MIB as u64, PAGE as u64).unwrap();
    assert_eq!(f.len().unwrap(), MIB as u64);
}

fn concurrent_writers(f: &Arc<dyn PageFile>) {
    let threads = 4usize;
    let per_thread = 32usize;
    std::thread::scope(|s| {
        for t in 0..threads {
            let f = Arc::clone(f);
            s.spawn(move || {
                for i in 0..per_thread {
                    let pno = i * threads + t; // interleaved, disjoint
                    let p = page(pno as u64 * 7 + 1, PAGE);
                    if i % 2 == 0 {
                        f.write_at(&p, (pno * PAGE) as u64).unwrap();
                    } else {
                        f.write_vectored_at(&[((pno * PAGE) as u64, &p[..])])
                            .unwrap();
                    }
                    assert_eq!(read_vec(&*f, (pno * PAGE) as u64, PAGE), p);
                }
            });
        }
    });
    for pno in 0..threads * per_thread {
        assert_eq!(
            read_vec(&**f, (pno * PAGE) as u64, PAGE),
            page(pno as u64 * 7 + 1, PAGE)
        );
    }
}

fn misaligned_direct(f: &dyn PageFile) {
    let align = f.alignment();
    if align <= 1 {
        return;
    }
    let buf = AlignedBuf::zeroed(2 * PAGE);
    // Buffer address off by one.
    let err = f.write_at(&buf[1..=PAGE], 0).unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Unaligned, "{err}");
    assert!(err.to_string().contains("O_DIRECT"), "{err}");
    // Offset not aligned.
    let err = f.write_at(&buf[..PAGE], 100).unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Unaligned);
    // Length not aligned.
    let mut rbuf = AlignedBuf::zeroed(PAGE);
    let err = f.read_at(&mut rbuf[..100], 0).unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Unaligned);
}

/// An untorn write either lands whole (only where the file reports an atomic-write unit) or is
/// refused as `Unsupported` changing nothing — the engine's per-file fallback depends on that
/// kind. A length that is not a power of two is refused everywhere.
fn atomic_write(f: &dyn PageFile) {
    let old = page(1, PAGE);
    f.write_at(&old, 0).unwrap();
    let new = page(2, PAGE);
    let mut back = AlignedBuf::zeroed(PAGE);
    let now = match f.write_atomic_at(&new, 0) {
        Ok(()) => {
            assert!(
                f.atomic_write_unit().is_some_and(|u| u as usize >= PAGE),
                "{}: an untorn write without an atomic-write unit",
                f.backend_name()
            );
            &new
        }
        Err(e) => {
            assert!(e.is_unsupported(), "{}: {e}", f.backend_name());
            assert_eq!(e.op(), barracuda_io::Op::AtomicWrite);
            &old
        }
    };
    f.read_at(&mut back, 0).unwrap();
    assert_eq!(&back, now, "{}", f.backend_name());
    let odd = page(3, 3 * PAGE);
    let err = f.write_atomic_at(&odd, 0).unwrap_err();
    assert!(err.is_unsupported(), "{}: {err}", f.backend_name());
    f.read_at(&mut back, 0).unwrap();
    assert_eq!(&back, now, "a refused untorn write changed nothing");
    assert_eq!(f.len().unwrap(), PAGE as u64);
}

fn metadata(f: &dyn PageFile) {
    assert!(!f.backend_name().is_empty());
    assert!(!f.path().as_os_str().is_empty());
    if let Some(unit) = f.atomic_write_unit() {
        assert!(unit.is_power_of_two());
    }
    eprintln!(
        "back end {}: alignment {}, atomic_write_unit {:?}",
        f.backend_name(),
        f.alignment(),
        f.atomic_write_unit()
    );
}

macro_rules! conformance {
    ($($backend:ident => $factory:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            fn open() -> Option<Subject> {
                subject(stringify!($backend), $factory)
            }

            #[test]
            fn round_trip() {
                if let Some(s) = open() { super::round_trip(&*s.file) }
            }

            #[test]
            fn read_past_eof() {
                if let Some(s) = open() { super::read_past_eof(&*s.file) }
            }

            #[test]
            fn vectored() {
                if let Some(s) = open() { super::vectored(&*s.file) }
            }

            #[test]
            fn set_len() {
                if let Some(s) = open() { super::set_len(&*s.file) }
            }

            #[test]
            fn sync() {
                if let Some(s) = open() { super::sync(&*s.file) }
            }

            #[test]
            fn punch_hole() {
                if let Some(s) = open() { super::punch_hole(&*s.file) }
            }

            #[test]
            fn concurrent_writers() {
                if let Some(s) = open() { super::concurrent_writers(&s.file) }
            }

            #[test]
            fn misaligned_direct() {
                if let Some(s) = open() { super::misaligned_direct(&*s.file) }
            }

            #[test]
            fn atomic_write() {
                if let Some(s) = open() { super::atomic_write(&*s.file) }
            }

            #[test]
            fn metadata() {
                if let Some(s) = open() { super::metadata(&*s.file) }
            }
        }
    )*};
}

conformance! {
    std_file => open_std,
    std_direct => open_std_direct,
    uring => open_uring,
    uring_direct => open_uring_direct,
    auto => open_auto,
    memory => open_mem,
    faulty_memory => open_faulty_mem,
    faulty_std => open_faulty_std,
    faulty_atomic => open_faulty_atomic,
}
