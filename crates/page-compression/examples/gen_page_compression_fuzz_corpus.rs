//! Writes the seeds of the `page_compressed_decode` fuzz target into
//! `fuzz/corpus/page_compressed_decode/` (run from the workspace root:
//! `cargo run -p barracuda-page-compression --features fuzzing --example
//! gen_page_compression_fuzz_corpus`).

use std::path::Path;

use barracuda_page_compression::fuzzing::{seeds, TARGET};

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
