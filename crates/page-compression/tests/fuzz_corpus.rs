//! Replays the corpus of the `page_compressed_decode` fuzz target
//! (`fuzz/corpus/page_compressed_decode/*`) through
//! [`barracuda_page_compression::fuzzing::page_compressed_decode`], the same code as the fuzz
//! target, so that `cargo test` catches a regression on any input the fuzzer ever kept; and
//! checks that the generated seeds are checked in (regenerate with `cargo run -p
//! barracuda-page-compression --features fuzzing --example gen_page_compression_fuzz_corpus`).

use std::path::{Path, PathBuf};

use barracuda_page_compression::fuzzing::{page_compressed_decode, seeds, TARGET};

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
        if std::panic::catch_unwind(|| page_compressed_decode(&data)).is_err() {
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
    let seeds = seeds();
    assert!(seeds.len() >= 6, "zlib and LZ4 at three page sizes");
    for (name, bytes) in seeds {
        let path = corpus_dir().join(&name);
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (regenerate the corpus)", path.display()));
        assert!(
            on_disk == bytes,
            "{} differs from the generator (regenerate the corpus)",
            path.display()
        );
    }
}

/// Damaged seeds must be refused without a panic: every single-byte change of a seed's
/// envelope either fails verification or (a byte of the zero padding) still decodes.
#[test]
fn every_byte_flip_of_a_seed_is_handled() {
    for (_, seed) in seeds().into_iter().take(2) {
        for i in 9..seed.len() {
            let mut input = seed.clone();
            input[i] ^= 0x20;
            page_compressed_decode(&input);
        }
    }
}
