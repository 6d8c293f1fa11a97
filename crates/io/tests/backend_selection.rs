//! `open_file` must give the engine the back end it asked for, and `Backend::Auto` must say why
//! it did not pick io_uring; a silent fallback would make performance results unexplainable.

use barracuda_io::{open_file, uring_fallback_reason, Backend, OpenOptions};

#[test]
fn each_backend_opens_and_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    let opts = OpenOptions::new().create(true);
    let path = dir.path().join("t.ibd");
    let name = |b| open_file(&path, &opts, b).map(|f| f.backend_name());
    assert_eq!(name(Backend::Std).unwrap(), "std");
    assert_eq!(name(Backend::Memory).unwrap(), "memory");
    match name(Backend::StdDirect) {
        Ok(n) => assert_eq!(n, "std+direct"),
        Err(e) => eprintln!("O_DIRECT refused here: {e}"),
    }
    let auto = name(Backend::Auto).unwrap();
    match uring_fallback_reason() {
        None => {
            assert_eq!(auto, "io_uring");
            assert_eq!(name(Backend::Uring).unwrap(), "io_uring");
        }
        Some(reason) => {
            eprintln!("!!!!! io_uring unavailable, Auto fell back to std: {reason} !!!!!");
            assert_eq!(auto, "std");
            assert!(name(Backend::Uring).is_err());
        }
    }
}

#[test]
fn open_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.ibd");
    let err = open_file(&path, &OpenOptions::new(), Backend::Std).unwrap_err();
    assert_eq!(err.kind(), barracuda_io::IoErrorKind::NotFound);
    assert!(err.to_string().contains("missing.ibd"), "{err}");
}

#[test]
fn memory_backend_is_a_page_file() {
    let f = open_file("space1.ibd", &OpenOptions::new(), Backend::Memory).unwrap();
    f.write_at(b"hello", 10).unwrap();
    let mut b = [0; 5];
    f.read_at(&mut b, 10).unwrap();
    assert_eq!(&b, b"hello");
    assert!(f.path().to_string_lossy().contains("space1.ibd"));
}
