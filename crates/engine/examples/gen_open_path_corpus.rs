//! Writes the seed corpus of the `open_path` fuzz target ([`barracuda::fuzzing::seeds`]) to
//! `fuzz/corpus/open_path/`, or to the directory given as the first argument.
//!
//! `cargo run -p barracuda --example gen_open_path_corpus [-- <dir>]`. Files the fuzzer added
//! are left alone; seeds are overwritten.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../fuzz/corpus")
                .join(barracuda::fuzzing::TARGET)
        },
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir)?;
    let seeds = barracuda::fuzzing::seeds()?;
    let mut bytes = 0;
    for seed in &seeds {
        std::fs::write(dir.join(&seed.name), &seed.bytes)?;
        bytes += seed.bytes.len();
    }
    println!("{} seeds, {bytes} bytes, in {}", seeds.len(), dir.display());
    Ok(())
}
