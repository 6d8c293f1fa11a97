//! Page compression (issue 10): compress and decompress one sealed index page of real text
//! (rows of 1–4 KB from the committed GCIDE excerpt, `tests/data/gcide-excerpt.txt`), zlib at
//! levels 1 and 6 and LZ4, at 16 and 64 KiB pages, in MB/s of page bytes; and the envelope's
//! ratio on 4 KiB blocks printed once per case. Which deflate back end `flate2` uses is a
//! workspace setting (`Cargo.toml`); EXPERIMENTS.md compares them.
//!
//! `cargo bench -p barracuda-benches --bench page_compression -- --warm-up-time 1 --measurement-time 3`

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use barracuda_benches::be_key;
use barracuda_page::{seal_page, zero_unused_space, IndexPage, PageId, PageSize, Record};
use barracuda_page_compression::{Algorithm, Compressed, PageCompressor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const ID: PageId = PageId::new(4, 77);
const BLOCK: u32 = 4096;

/// A full leaf of text rows starting at `offset` in the excerpt, sealed.
fn text_page(ps: PageSize, text: &[u8], offset: usize) -> Vec<u8> {
    let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, ID, 0, 1).expect("page");
    let mut at = offset;
    for i in 0u32.. {
        let len = 1000 + (i as usize * 769) % 3000;
        let Some(value) = text.get(at..at + len) else {
            break;
        };
        let key = be_key(u64::from(i));
        if page
            .insert(i as usize, &Record::inline(&key, value))
            .is_err()
        {
            break;
        }
        at += len;
    }
    let mut bytes = page.into_inner();
    zero_unused_space(&mut bytes, ps).expect("valid page");
    seal_page(&mut bytes);
    bytes
}

fn excerpt() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/gcide-excerpt.txt"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bench_codecs(c: &mut Criterion) {
    let text = excerpt();
    let algorithms = [
        ("zlib1", Algorithm::Zlib { level: 1 }),
        ("zlib6", Algorithm::Zlib { level: 6 }),
        ("lz4", Algorithm::Lz4),
    ];
    for ps in [PageSize::K16, PageSize::K64] {
        let page = text_page(ps, &text, 100_000);
        let label = format!("{}KiB", ps.bytes() >> 10);
        let mut group = c.benchmark_group(format!("page_compression/{label}"));
        group.throughput(Throughput::Bytes(ps.bytes() as u64));
        for (name, algorithm) in algorithms {
            let mut codec = PageCompressor::new();
            let mut image = vec![0u8; ps.bytes()];
            let outcome = codec
                .compress(&page, ps, algorithm, BLOCK, &mut image)
                .expect("compress");
            let Compressed::Envelope {
                written_len,
                stored_len,
            } = outcome
            else {
                eprintln!("{label} {name}: stored plain");
                continue;
            };
            eprintln!(
                "{label} {name}: {stored_len} bytes stored, {written_len} written: {:.2}x on 4 KiB blocks",
                ps.bytes() as f64 / written_len as f64
            );
            group.bench_function(BenchmarkId::new("compress", name), |b| {
                b.iter(|| {
                    codec
                        .compress(black_box(&page), ps, algorithm, BLOCK, &mut image)
                        .expect("compress")
                });
            });
            let stored = image[..written_len].to_vec();
            let mut back = vec![0u8; ps.bytes()];
            group.bench_function(BenchmarkId::new("decompress", name), |b| {
                b.iter(|| {
                    codec
                        .decompress(black_box(&stored), ID, ps, &mut back)
                        .expect("decompress")
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_codecs);
criterion_main!(benches);
