//! Replays the checked-in fuzz corpus (`fuzz/corpus/<target>/*`) through the same logic as the
//! fuzz targets, so that `cargo test` catches a regression on any input a fuzzer ever kept. A
//! failure names the file; reproduce it with `cargo fuzz run <target> <file>`. The test also
//! fails if the corpus is missing or a target's directory is empty, and if the corpus lacks a
//! seed the generator produces (regenerate with
//! `cargo run -p barracuda-testkit --example gen_fuzz_corpus`).

use barracuda_testkit::corpus;
use barracuda_testkit::fuzz_targets::{self, TARGETS};
use std::path::{Path, PathBuf};

/// Corpus directories of fuzz targets whose logic lives above this crate, replayed by their
/// own test: `open_path` needs the whole engine (`barracuda::fuzzing`,
/// crates/engine/tests/fuzz_open_corpus.rs), the redo targets the redo crate
/// (`barracuda_redo::fuzzing`, crates/redo/tests/fuzz_redo_corpus.rs), `doublewrite_file` the
/// doublewrite crate (`barracuda_doublewrite::fuzzing`, crates/doublewrite/tests/fuzz_corpus.rs),
/// `page_compressed_decode` the page-compression crate
/// (`barracuda_page_compression::fuzzing`, crates/page-compression/tests/fuzz_corpus.rs),
/// `row_compressed_decode` the row-compression crate (`barracuda_row_compression::fuzzing`,
/// crates/row-compression/tests/fuzz_corpus.rs).
const REPLAYED_ELSEWHERE: [&str; 6] = [
    "open_path",
    "redo_records",
    "redo_log_scan",
    "doublewrite_file",
    "page_compressed_decode",
    "row_compressed_decode",
];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_file_replays_cleanly() {
    let root = corpus_dir();
    assert!(root.is_dir(), "fuzz corpus missing at {}", root.display());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read the corpus directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for target in TARGETS {
        assert!(
            dirs.iter().any(|d| d.ends_with(target)),
            "no corpus directory for target {target}"
        );
    }
    let mut failures = Vec::new();
    let mut total = 0;
    for dir in dirs {
        let target = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("UTF-8 directory name")
            .to_owned();
        if REPLAYED_ELSEWHERE.contains(&target.as_str()) {
            continue;
        }
        let inputs = files(&dir);
        assert!(!inputs.is_empty(), "corpus of {target} is empty");
        for file in inputs {
            let data = std::fs::read(&file).expect("read a corpus file");
            let outcome = std::panic::catch_unwind(|| fuzz_targets::run(&target, &data));
            match outcome {
                Ok(true) => total += 1,
                Ok(false) => panic!("{}: no fuzz target named {target}", file.display()),
                Err(_) => failures.push(file.display().to_string()),
            }
        }
    }
    assert!(total > 0, "the corpus holds no file");
    assert!(
        failures.is_empty(),
        "corpus inputs that fail: {failures:#?}"
    );
}

#[test]
fn every_generated_seed_is_checked_in() {
    let root = corpus_dir();
    for seed in corpus::seeds().expect("seeds generate") {
        let path = root.join(seed.target).join(&seed.name);
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (regenerate the corpus)", path.display()));
        assert!(
            on_disk == seed.bytes,
            "{} differs from the generator (regenerate the corpus)",
            path.display()
        );
    }
}

#[test]
fn valid_seeds_are_valid() {
    use barracuda_page::{verify_page, FileHeader, PageSize};
    let seeds = corpus::seeds().expect("seeds generate");
    let total: usize = seeds.iter().map(|s| s.bytes.len()).sum();
    assert!(total < 2 << 20, "seed corpus of {total} bytes is too big");
    let mut verified = 0;
    for seed in &seeds {
        for (ps, image) in fuzz_targets::page_images(&seed.bytes) {
            let page_id = FileHeader::read(&image).map(|h| h.page_id());
            if let Ok(id) = page_id {
                if verify_page(&image, id, ps).is_ok() {
                    verified += 1;
                }
            }
            assert!(PageSize::ALL.contains(&ps));
        }
    }
    // Every target has sealed pages of every size among its seeds.
    assert!(verified >= 30, "only {verified} seeds are sealed pages");
}
