//! Replays the corpora of the `redo_records` and `redo_log_scan` fuzz targets
//! (`fuzz/corpus/<target>/*`) through [`barracuda_redo::fuzzing::run`], the same code as the
//! fuzz targets, so that `cargo test` catches a regression on any input the fuzzer ever kept.
//! A failure names the file; reproduce it with
//! `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run <target> corpus/<target>/<file>`. Also fails if
//! a seed the generator produces is missing or stale (regenerate with
//! `cargo run -p barracuda-redo --example gen_redo_fuzz_corpus`).

use barracuda_redo::fuzzing::{run, seeds, TARGETS};
use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

#[test]
fn every_corpus_file_replays_cleanly() {
    for target in TARGETS {
        let dir = corpus_dir(target);
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
            let ran = std::panic::catch_unwind(|| run(target, &data));
            assert!(
                !matches!(ran, Ok(false)),
                "{target} is not a target run knows"
            );
            if ran.is_err() {
                failures.push(file.display().to_string());
            }
        }
        assert!(
            failures.is_empty(),
            "{target}: {} of {} corpus inputs fail: {failures:#?}",
            failures.len(),
            files.len()
        );
    }
}

#[test]
fn every_generated_seed_is_checked_in() {
    let seeds = seeds().expect("seeds generate");
    for target in TARGETS {
        assert!(
            seeds.iter().any(|s| s.target == target),
            "no seed for {target}"
        );
    }
    for seed in seeds {
        let path = corpus_dir(seed.target).join(&seed.name);
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (regenerate the corpus)", path.display()));
        assert!(
            on_disk == seed.bytes,
            "{} differs from the generator (regenerate the corpus)",
            path.display()
        );
    }
}
