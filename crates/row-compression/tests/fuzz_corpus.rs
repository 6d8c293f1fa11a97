//! Replays the corpus of the `row_compressed_decode` fuzz target
//! (`fuzz/corpus/row_compressed_decode/*`) through
//! [`barracuda_row_compression::fuzzing::row_compressed_decode`], the same code as the fuzz
//! target, so that `cargo test` catches a regression on any input the fuzzer ever kept; checks
//! that the generated seeds are checked in (regenerate with `cargo run -p
//! barracuda-row-compression --features fuzzing --example gen_row_compression_fuzz_corpus`)
//! and that they cover what they claim to.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::path::{Path, PathBuf};

use barracuda_page::{IndexPage, PageId, PageSize, ValueRef};
use barracuda_row_compression::fuzzing::{row_compressed_decode, seeds, TARGET};
use barracuda_row_compression::{BlockSize, CompressedPage, Compressor};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(TARGET)
}

/// A seed's block read back through the verified path, and its page decompressed.
fn open_seed(input: &[u8]) -> (CompressedPage, Vec<u8>) {
    let ps = PageSize::ALL[usize::from(input[0]) % 5];
    let block = BlockSize::ALL[usize::from(input[1]) % 5];
    let word = |i: usize| u32::from_le_bytes(input[i..i + 4].try_into().unwrap());
    let id = PageId::new(word(2), word(6));
    assert_eq!(
        input.len(),
        10 + block.bytes(),
        "a seed is exactly one block"
    );
    let zip = CompressedPage::from_block(&input[10..], id, ps).unwrap();
    let mut page = vec![0u8; ps.bytes()];
    Compressor::new().decompress(&zip, &mut page, None).unwrap();
    (zip, page)
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
        if std::panic::catch_unwind(|| row_compressed_decode(&data)).is_err() {
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
    assert_eq!(seeds.len(), 12, "every seed shape builds");
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

/// The seeds reach what the fuzzer should start from: both codecs, every block size, leaf and
/// internal pages, inline, overflow and delete-marked records, fresh blocks and logged ones.
#[test]
fn the_seeds_cover_codecs_sizes_levels_and_logs() {
    let (mut lz4, mut zlib, mut logged, mut fresh, mut internal) = (0, 0, 0, 0, 0);
    let (mut overflow, mut marked, mut inline) = (0, 0, 0);
    let mut blocks = Vec::new();
    for (name, input) in seeds() {
        let (zip, page) = open_seed(&input);
        assert!(zip.len() >= 5, "{name}: only {} records", zip.len());
        if name.contains("lz4") {
            lz4 += 1;
        } else {
            zlib += 1;
        }
        if zip.log_len() > 0 {
            logged += 1;
        } else {
            fresh += 1;
        }
        blocks.push(zip.block_size());
        let index = IndexPage::open(&page[..], zip.page_size()).unwrap();
        if !index.is_leaf() {
            internal += 1;
        }
        for rec in index.iter() {
            let rec = rec.unwrap();
            match rec.value {
                ValueRef::Overflow { .. } => overflow += 1,
                ValueRef::Inline(_) => inline += 1,
                ValueRef::Child(_) => {}
            }
            marked += usize::from(rec.sys.deleted);
        }
    }
    blocks.sort();
    blocks.dedup();
    assert_eq!(blocks, BlockSize::ALL, "every block size");
    assert!(lz4 >= 3 && zlib >= 3, "{lz4} LZ4 and {zlib} zlib seeds");
    assert!(
        logged >= 3 && fresh >= 2,
        "{logged} logged and {fresh} fresh seeds"
    );
    assert!(internal >= 2, "{internal} internal pages");
    assert!(
        overflow >= 5 && marked >= 5 && inline >= 20,
        "{inline} inline, {overflow} overflow, {marked} delete-marked records"
    );
}

/// Damaged seeds must be refused or decoded without a panic: every single-byte change of the
/// smallest seeds' blocks runs through the target.
#[test]
fn every_byte_flip_of_a_small_seed_is_handled() {
    for (_, seed) in seeds().into_iter().filter(|(_, s)| s.len() <= 2058).take(3) {
        for i in 10..seed.len() {
            let mut input = seed.clone();
            input[i] ^= 0x20;
            row_compressed_decode(&input);
        }
    }
}
