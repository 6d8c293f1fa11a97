//! Writes the seed corpora of the `redo_records` and `redo_log_scan` fuzz targets
//! ([`barracuda_redo::fuzzing::seeds`]) to `fuzz/corpus/<target>/`, or under the directory
//! given as the first argument.
//!
//! `cargo run -p barracuda-redo --example gen_redo_fuzz_corpus [-- <dir>]`. Files the fuzzer
//! added are left alone; seeds are overwritten.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus"),
        PathBuf::from,
    );
    let seeds = barracuda_redo::fuzzing::seeds()?;
    let mut bytes = 0;
    for seed in &seeds {
        let dir = root.join(seed.target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(&seed.name), &seed.bytes)?;
        bytes += seed.bytes.len();
    }
    println!(
        "{} seeds, {bytes} bytes, in {}",
        seeds.len(),
        root.display()
    );
    Ok(())
}
