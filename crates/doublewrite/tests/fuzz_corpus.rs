//! Replays the corpus of the `doublewrite_file` fuzz target (`fuzz/corpus/doublewrite_file/*`)
//! through [`barracuda_doublewrite::fuzzing::doublewrite_file`], the same code as the fuzz
//! target, so that `cargo test` catches a regression on any input the fuzzer ever kept. A
//! failure names the file; reproduce it with
//! `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run doublewrite_file corpus/doublewrite_file/<file>`.
//! Also fails if a seed the generator produces is missing or stale (regenerate with
//! `cargo run -p barracuda-doublewrite --example gen_doublewrite_fuzz_corpus`).

use barracuda_doublewrite::fuzzing::{doublewrite_file, seeds, TARGET};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(TARGET)
}

#[test]
fn every_corpus_file_replays_cleanly() {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no input", dir.display());
    let mut failures = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("read a corpus file");
        if std::panic::catch_unwind(|| doublewrite_file(&data)).is_err() {
            failures.push(file.display().to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus inputs fail: {failures:#?}",
        failures.len(),
        files.len()
    );
}

#[test]
fn every_generated_seed_is_checked_in() {
    for seed in seeds().expect("seeds generate") {
        let path = corpus_dir().join(&seed.name);
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (regenerate the corpus)", path.display()));
        assert!(
            on_disk == seed.bytes,
            "{} differs from the generator (regenerate the corpus)",
            path.display()
        );
    }
}
