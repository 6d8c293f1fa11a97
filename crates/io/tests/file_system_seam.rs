//! The file-system seam: failpoints of a `FaultyFileSystem` count across all its files, a crash
//! undoes directory entries whose directory was never synced, handles do not outlive a crash,
//! and `OsFileSystem` does the same operations on the real file system. Engine crash and
//! error-path tests build on exactly these promises.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use barracuda_io::faulty::{ErrorKind, OpKind};
use barracuda_io::{
    FaultyFileSystem, FileSystem, IoErrorKind, Op, OpenOptions, OsFileSystem, PageFile,
};

fn create() -> OpenOptions {
    OpenOptions::new().create(true)
}

/// A file system with directory `/db` and, in it, synced files `a` and `b` of 4 KiB each.
fn two_files() -> (FaultyFileSystem, Arc<dyn PageFile>, Arc<dyn PageFile>) {
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let a = fs.open(Path::new("/db/a"), &create()).unwrap();
    let b = fs.open(Path::new("/db/b"), &create()).unwrap();
    for f in [&a, &b] {
        f.write_at(&[1; 4096], 0).unwrap();
        f.sync_all().unwrap();
    }
    fs.sync_dir(Path::new("/db")).unwrap();
    (fs, a, b)
}

fn read4(f: &dyn PageFile) -> Vec<u8> {
    let mut buf = vec![0; 4096];
    f.read_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn failpoints_count_operations_of_all_files_together() {
    let (fs, a, b) = two_files();
    fs.fail_nth(OpKind::Write, 3, ErrorKind::Eio);
    a.write_at(&[2; 4096], 0).unwrap();
    b.write_at(&[2; 4096], 0).unwrap();
    let err = a.write_at(&[3; 4096], 0).unwrap_err();
    assert!(err.is_eio(), "{err}");
    assert_eq!(err.op(), Op::Write);
    assert_eq!(
        err.path(),
        Path::new("/db/a"),
        "the error names the file hit"
    );
    assert_eq!(
        read4(&*a),
        vec![2; 4096],
        "the failed write changed nothing"
    );
    b.write_at(&[4; 4096], 0).unwrap(); // fired once

    fs.fail_nth(OpKind::Read, 2, ErrorKind::Enospc);
    read4(&*b);
    let err = b.read_at(&mut [0; 16], 0).unwrap_err();
    assert!(err.is_no_space(), "{err}");
    assert_eq!(err.path(), Path::new("/db/b"));
}

#[test]
fn op_counts_cover_every_file_and_directory_syncs() {
    let (fs, a, b) = two_files();
    // two_files: 2 writes, 2 file syncs, 1 directory sync.
    assert_eq!(fs.op_count(OpKind::Write), 2);
    assert_eq!(fs.op_count(OpKind::Sync), 3);
    a.set_len(8192).unwrap();
    b.punch_hole(0, 4096).unwrap();
    read4(&*a);
    assert_eq!(fs.op_count(OpKind::SetLen), 1);
    assert_eq!(fs.op_count(OpKind::PunchHole), 1);
    assert_eq!(fs.op_count(OpKind::Read), 1);

    fs.fail_nth(OpKind::Sync, 1, ErrorKind::Eio);
    let err = fs.sync_dir(Path::new("/db")).unwrap_err();
    assert_eq!((err.op(), err.path()), (Op::SyncDir, Path::new("/db")));
    assert!(err.is_eio(), "{err}");
}

#[test]
fn cleared_failpoints_do_not_fire() {
    let (fs, a, _b) = two_files();
    fs.fail_nth(OpKind::Write, 1, ErrorKind::Eio);
    fs.clear_failpoints();
    a.write_at(&[5; 4096], 0).unwrap();
}

#[test]
fn a_created_file_survives_a_crash_only_after_its_directory_is_synced() {
    let fs = FaultyFileSystem::new();
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    let path = dir.join("t.ibd");
    let f = fs.open(&path, &create()).unwrap();
    f.write_at(&[7; 4096], 0).unwrap();
    f.sync_all().unwrap();
    assert!(
        !fs.is_entry_durable(&path),
        "file data synced, directory entry not"
    );

    let report = fs.crash().unwrap();
    assert_eq!(report.lost_entries, vec![path.clone()]);
    assert!(
        !fs.exists(&path).unwrap(),
        "an unsynced directory entry is lost"
    );

    let f = fs.open(&path, &create()).unwrap();
    f.write_at(&[7; 4096], 0).unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(dir).unwrap();
    assert!(fs.is_entry_durable(&path));
    fs.crash().unwrap();
    let f = fs.open(&path, &OpenOptions::new()).unwrap();
    assert_eq!(read4(&*f), vec![7; 4096]);
}

#[test]
fn removal_and_rename_are_undone_by_a_crash_before_the_directory_sync() {
    let (fs, _a, _b) = two_files();
    let (a, b, c) = (
        PathBuf::from("/db/a"),
        PathBuf::from("/db/b"),
        PathBuf::from("/db/c"),
    );
    fs.remove(&a).unwrap();
    fs.rename(&b, &c).unwrap();
    assert_eq!(fs.list_dir(Path::new("/db")).unwrap(), vec![c.clone()]);

    let report = fs.crash().unwrap();
    assert_eq!(report.lost_entries, vec![c.clone()]);
    assert_eq!(report.restored_entries, vec![a.clone(), b.clone()]);
    assert_eq!(
        fs.list_dir(Path::new("/db")).unwrap(),
        vec![a.clone(), b.clone()]
    );
    let restored = fs.open(&a, &OpenOptions::new()).unwrap();
    assert_eq!(
        read4(&*restored),
        vec![1; 4096],
        "the removed file's durable bytes"
    );

    fs.remove(&a).unwrap();
    fs.rename(&b, &c).unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    let report = fs.crash().unwrap();
    assert!(report.lost_entries.is_empty() && report.restored_entries.is_empty());
    assert_eq!(fs.list_dir(Path::new("/db")).unwrap(), vec![c]);
}

#[test]
fn a_crash_drops_unsynced_data_and_kills_older_handles() {
    let (fs, a, _b) = two_files();
    a.write_at(&[9; 4096], 0).unwrap();
    fs.crash().unwrap();
    let err = a.read_at(&mut [0; 16], 0).unwrap_err();
    assert!(err.to_string().contains("crashed"), "{err}");
    let err = a.write_at(&[9; 16], 0).unwrap_err();
    assert_eq!(err.path(), Path::new("/db/a"));
    let reopened = fs.open(Path::new("/db/a"), &OpenOptions::new()).unwrap();
    assert_eq!(read4(&*reopened), vec![1; 4096], "unsynced write lost");
}

#[test]
fn reopening_a_path_sees_the_same_bytes() {
    let (fs, a, _b) = two_files();
    a.write_at(&[6; 4096], 0).unwrap(); // unsynced, but live
    let again = fs.open(Path::new("/db/a"), &OpenOptions::new()).unwrap();
    assert_eq!(read4(&*again), vec![6; 4096]);
    let truncated = fs
        .open(Path::new("/db/a"), &create().truncate(true))
        .unwrap();
    assert_eq!(truncated.len().unwrap(), 0);
    assert_eq!(
        fs.file(Path::new("/db/a")).unwrap().durable_image(),
        vec![1; 4096],
        "truncation at open is not durable before a sync"
    );
}

#[test]
fn opens_fail_as_posix_says_and_name_the_path() {
    let (fs, _a, _b) = two_files();
    let err = fs
        .open(Path::new("/db/missing"), &OpenOptions::new())
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::NotFound);
    assert_eq!((err.op(), err.path()), (Op::Open, Path::new("/db/missing")));
    let err = fs.open(Path::new("/nodir/x"), &create()).unwrap_err();
    assert_eq!(
        err.kind(),
        IoErrorKind::NotFound,
        "parent directory missing"
    );
    let err = fs
        .open(Path::new("/db/a"), &OpenOptions::new().create_new(true))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
    let err = fs
        .open(Path::new("/db/new"), &create().read_only(true))
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::NotFound, "read-only never creates");

    let ro = fs
        .open(Path::new("/db/a"), &OpenOptions::new().read_only(true))
        .unwrap();
    let err = ro.write_at(&[0; 16], 0).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    assert_eq!(read4(&*ro), vec![1; 4096]);

    let err = fs.remove(Path::new("/db/missing")).unwrap_err();
    assert_eq!((err.op(), err.kind()), (Op::Remove, IoErrorKind::NotFound));
    let err = fs.sync_dir(Path::new("/db/a")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR));
    let err = fs.create_dir_all(Path::new("/db/a/sub")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR));
}

#[test]
fn os_file_system_creates_lists_renames_syncs_and_removes() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = OsFileSystem::new(barracuda_io::Backend::Std);
    let dir = tmp.path().join("x").join("tables");
    fs.create_dir_all(&dir).unwrap();
    fs.create_dir_all(&dir).unwrap(); // existing: not an error
    assert!(fs.exists(&dir).unwrap());

    let a = dir.join("a.ibd");
    let f = fs.open(&a, &create()).unwrap();
    f.write_at(&[3; 4096], 0).unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(&dir).unwrap();
    let b = dir.join("b.ibd");
    fs.rename(&a, &b).unwrap();
    fs.open(&dir.join("c.ibd"), &create()).unwrap();
    assert_eq!(
        fs.list_dir(&dir).unwrap(),
        vec![b.clone(), dir.join("c.ibd")]
    );
    assert_eq!(
        read4(&*fs.open(&b, &OpenOptions::new()).unwrap()),
        vec![3; 4096]
    );
    fs.remove(&b).unwrap();
    assert!(!fs.exists(&b).unwrap());

    let err = fs.remove(&b).unwrap_err();
    assert_eq!((err.op(), err.kind()), (Op::Remove, IoErrorKind::NotFound));
    assert!(err.to_string().contains("b.ibd"), "{err}");
    let err = fs.sync_dir(&tmp.path().join("nope")).unwrap_err();
    assert_eq!(err.op(), Op::SyncDir);
    assert!(err.to_string().contains("nope"), "{err}");
    let err = fs.rename(&b, &a).unwrap_err();
    assert!(
        err.to_string().contains("a.ibd"),
        "names the destination too: {err}"
    );
}
