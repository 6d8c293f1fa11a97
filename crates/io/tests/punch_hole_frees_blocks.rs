//! Hole punching on a real file must free blocks (page compression saves nothing otherwise),
//! and a file system that refuses must degrade to `PunchOutcome::Unsupported` with the data
//! untouched — never an error that would fail a page write.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use barracuda_io::{AlignedBuf, OpenOptions, PageFile, PunchOutcome, StdFile, UringFile};

const MIB: usize = 1 << 20;

fn check(f: &dyn PageFile) {
    let mut data = AlignedBuf::zeroed(MIB);
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i % 253 + 1) as u8;
    }
    f.write_at(&data, 0).unwrap();
    f.sync_all().unwrap();
    let before = f.allocated_bytes().unwrap();
    eprintln!("{}: allocated before punch: {before}", f.backend_name());
    let outcome = f.punch_hole(256 * 1024, 512 * 1024).unwrap();
    let mut back = AlignedBuf::zeroed(MIB);
    f.read_at(&mut back, 0).unwrap();
    assert_eq!(f.len().unwrap(), MIB as u64);
    match outcome {
        PunchOutcome::Punched => {
            let after = f.allocated_bytes().unwrap();
            eprintln!(
                "{}: punch supported; allocated after: {after}",
                f.backend_name()
            );
            assert!(before >= MIB as u64, "1 MiB written is allocated: {before}");
            assert!(after <= before - 512 * 1024, "{before} -> {after}");
            assert!(back[256 * 1024..768 * 1024].iter().all(|&b| b == 0));
            assert_eq!(back[..256 * 1024], data[..256 * 1024]);
            assert_eq!(back[768 * 1024..], data[768 * 1024..]);
        }
        PunchOutcome::Unsupported => {
            eprintln!(
                "{}: THIS FILE SYSTEM REFUSES HOLE PUNCHING; checking the fallback path",
                f.backend_name()
            );
            assert_eq!(back, data, "refused punch leaves data unchanged");
            assert_eq!(f.punch_hole(0, 4096).unwrap(), PunchOutcome::Unsupported);
        }
    }
}

#[test]
fn punch_hole_on_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = StdFile::open(dir.path().join("t.ibd"), &OpenOptions::new().create(true)).unwrap();
    check(&f);
}

#[test]
fn punch_hole_through_io_uring_file() {
    let dir = tempfile::tempdir().unwrap();
    match UringFile::open(dir.path().join("t.ibd"), &OpenOptions::new().create(true)) {
        Ok(f) => check(&f),
        Err(e) => eprintln!("!!!!! SKIPPED: io_uring refused by the kernel: {e} !!!!!"),
    }
}

/// `block_size` is the unit hole punching frees in: punching one block-aligned block out of a
/// fully written file frees exactly that block, and punching less than a block frees nothing.
#[test]
fn block_size_is_the_unit_punching_frees() {
    let dir = tempfile::tempdir().unwrap();
    let f = StdFile::open(dir.path().join("t.ibd"), &OpenOptions::new().create(true)).unwrap();
    let block = u64::from(f.block_size());
    assert!(
        block >= 512 && block.is_power_of_two(),
        "block size {block}"
    );
    let data = vec![0x5au8; 16 * block as usize];
    f.write_at(&data, 0).unwrap();
    f.sync_all().unwrap();
    let before = f.allocated_bytes().unwrap();
    if f.punch_hole(4 * block + 1, block - 1).unwrap() == PunchOutcome::Unsupported {
        eprintln!("THIS FILE SYSTEM REFUSES HOLE PUNCHING; nothing to check");
        return;
    }
    assert_eq!(
        f.allocated_bytes().unwrap(),
        before,
        "a partial block stays"
    );
    f.punch_hole(8 * block, block).unwrap();
    assert_eq!(f.allocated_bytes().unwrap(), before - block);
}

#[test]
fn memory_files_report_the_block_they_count_in() {
    let f = barracuda_io::MemFile::new("m.ibd");
    assert_eq!(u64::from(f.block_size()), barracuda_io::MEM_BLOCK_BYTES);
}

/// `FaultyFileSystem::refuse_punch_hole` makes its files behave like a file system without
/// hole punching — files opened before and after the switch — and switching it off again
/// punches (the engine's refusal path is tested on it).
#[test]
fn a_faulty_file_system_can_refuse_hole_punching() {
    use barracuda_io::{FaultyFileSystem, FileSystem};
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(std::path::Path::new("/d")).unwrap();
    let opts = OpenOptions::new().create(true);
    let before = fs.open(std::path::Path::new("/d/a"), &opts).unwrap();
    fs.refuse_punch_hole(true);
    let after = fs.open(std::path::Path::new("/d/b"), &opts).unwrap();
    for f in [&before, &after] {
        f.write_at(&[7u8; 16384], 0).unwrap();
        assert_eq!(f.punch_hole(4096, 8192).unwrap(), PunchOutcome::Unsupported);
        let mut back = vec![0u8; 16384];
        f.read_at(&mut back, 0).unwrap();
        assert!(
            back.iter().all(|&b| b == 7),
            "a refused punch changes nothing"
        );
        assert_eq!(f.allocated_bytes().unwrap(), 16384);
    }
    fs.refuse_punch_hole(false);
    assert_eq!(after.punch_hole(4096, 8192).unwrap(), PunchOutcome::Punched);
    assert_eq!(after.allocated_bytes().unwrap(), 8192);
}
