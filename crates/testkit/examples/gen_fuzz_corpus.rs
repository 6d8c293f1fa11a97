//! Writes the seed corpus of the fuzz targets ([`barracuda_testkit::corpus::seeds`]) to
//! `fuzz/corpus/<target>/<name>`, or under the directory given as the first argument.
//!
//! `cargo run -p barracuda-testkit --example gen_fuzz_corpus [-- <dir>]`. Files the fuzzer
//! added are left alone; seeds are overwritten.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus"),
        PathBuf::from,
    );
    let seeds = barracuda_testkit::corpus::seeds()?;
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
