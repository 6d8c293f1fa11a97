//! Writes the seed corpus of the `doublewrite_file` fuzz target
//! ([`barracuda_doublewrite::fuzzing::seeds`]) to `fuzz/corpus/doublewrite_file/`, or to the
//! directory given as the first argument.
//!
//! `cargo run -p barracuda-doublewrite --example gen_doublewrite_fuzz_corpus [-- <dir>]` (the
//! crate's dev-dependency on itself turns `fuzzing` on). Files the fuzzer added are left alone;
//! seeds are overwritten.

use std::path::PathBuf;

use barracuda_doublewrite::fuzzing::{seeds, TARGET};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../fuzz/corpus")
                .join(TARGET)
        },
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir)?;
    let seeds = seeds()?;
    let mut bytes = 0;
    for seed in &seeds {
        std::fs::write(dir.join(&seed.name), &seed.bytes)?;
        bytes += seed.bytes.len();
    }
    println!("{} seeds, {bytes} bytes, in {}", seeds.len(), dir.display());
    Ok(())
}
