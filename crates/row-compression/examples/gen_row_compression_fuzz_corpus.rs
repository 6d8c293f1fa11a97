//! Writes the seeds of the `row_compressed_decode` fuzz target into
//! `fuzz/corpus/row_compressed_decode/` (run from the workspace root:
//! `cargo run -p barracuda-row-compression --features fuzzing --example
//! gen_row_compression_fuzz_corpus`).

use std::path::Path;

use barracuda_row_compression::fuzzing::{seeds, TARGET};

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(TARGET);
    std::fs::create_dir_all(&dir)?;
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(&name), bytes)?;
        println!("wrote {}", dir.join(name).display());
    }
    Ok(())
}
