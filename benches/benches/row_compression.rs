//! Row compression (issue 12), the crate alone: a 16 KiB leaf filled as the B-tree would fill a
//! compressed page — rows inserted in key order, each logged on the block, the page recompressed
//! when the log is full, and the page full when recompression no longer fits — then the time to
//! decompress it (what a point select that misses the uncompressed frame pays) and to compress
//! it, per KEY_BLOCK_SIZE and codec. Two row shapes: GCIDE text rows of 1–4 KB
//! (`tests/data/gcide-excerpt.txt`) and the seed's sysbench-like rows (16 to a 16 KiB page:
//! id, k, c CHAR(120) and pad CHAR(60) of digit groups, four space-padded columns).
//!
//! Printed once per case: rows that fitted, their bytes, and bytes of rows per byte of block.
//!
//! `cargo bench -p barracuda-benches --bench row_compression -- --warm-up-time 1 --measurement-time 3`

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use barracuda_benches::{be_key, Rng};
use barracuda_page::{IndexPage, PageId, PageSize, Record};
use barracuda_row_compression::{
    BlockSize, Codec, CompressedPage, Compressor, RowCompressionError,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const ID: PageId = PageId::new(4, 77);
const PS: PageSize = PageSize::K16;

fn excerpt() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/gcide-excerpt.txt"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Rows of GCIDE text, 1–4 KB, from `offset`.
fn text_rows(text: &[u8], offset: usize) -> Vec<Vec<u8>> {
    let mut at = offset;
    let mut rows = Vec::new();
    for i in 0usize.. {
        let len = 1000 + (i * 769) % 3000;
        let Some(value) = text.get(at..at + len) else {
            break;
        };
        rows.push(value.to_vec());
        at += len;
        if rows.len() == 64 {
            break;
        }
    }
    rows
}

/// sysbench's `c` / `pad` columns: groups of 11 random digits joined by '-'.
fn digit_groups(rng: &mut Rng, groups: usize) -> String {
    (0..groups)
        .map(|_| {
            (0..11)
                .map(|_| char::from(b'0' + rng.below(10) as u8))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The seed's point-select rows: about 1,000 bytes each, so that 16 fit a 16 KiB page.
fn sysbench_rows(n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(12);
    (0..n)
        .map(|i| {
            let mut row = format!(
                "{:>10}{:>10}{:<120}{:<60}",
                i,
                rng.below(1_000_000),
                digit_groups(&mut rng, 10),
                digit_groups(&mut rng, 5)
            );
            for _ in 0..4 {
                let column = digit_groups(&mut rng, 2);
                // Space-padded to 180 characters, as a CHAR(180) column.
                row.push_str(&column);
                row.push_str(&" ".repeat(180usize.saturating_sub(column.len())));
            }
            row.into_bytes()
        })
        .collect()
}

/// The frame and its block after inserting `rows` in key order until the page is full (the
/// next row would not fit the frame, or the page with it would not compress into the block).
fn fill(
    rows: &[Vec<u8>],
    block: BlockSize,
    codec: Codec,
) -> (Vec<u8>, CompressedPage, usize, usize) {
    let mut c = Compressor::new();
    let mut frame = IndexPage::init(vec![0u8; PS.bytes()], PS, ID, 0, 1)
        .expect("page")
        .into_inner();
    let mut zip = c
        .compress(&mut frame, PS, block, codec, None)
        .expect("empty page");
    let (mut n, mut bytes) = (0, 0);
    for (i, value) in rows.iter().enumerate() {
        let key = be_key(i as u64);
        let rec = Record::inline(&key, value);
        let before = frame.clone();
        let mut page = IndexPage::open_trusted(&mut frame[..], PS).expect("frame");
        if page.insert(i, &rec).is_err() {
            break;
        }
        match zip.log_insert(i, &rec) {
            Ok(()) => {}
            Err(RowCompressionError::LogFull { .. }) => {
                match c.compress(&mut frame, PS, block, codec, None) {
                    Ok(z) => zip = z,
                    Err(RowCompressionError::DoesNotFit { .. }) => {
                        frame = before;
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            Err(e) => panic!("{e}"),
        }
        n += 1;
        bytes += key.len() + value.len();
    }
    // As a page is written: recompressed, so its block holds no log.
    let zip = c
        .compress(&mut frame, PS, block, codec, None)
        .expect("a page that fitted");
    (frame, zip, n, bytes)
}

fn bench(c: &mut Criterion) {
    let text = excerpt();
    let shapes = [
        ("gcide", text_rows(&text, 100_000)),
        ("sysbench", sysbench_rows(64)),
    ];
    let codecs = [("zlib6", Codec::Zlib { level: 6 }), ("lz4", Codec::Lz4)];
    for (shape, rows) in &shapes {
        let mut group = c.benchmark_group(format!("row_compression/{shape}"));
        group.throughput(Throughput::Bytes(PS.bytes() as u64));
        for block in [BlockSize::K4, BlockSize::K8] {
            for (name, codec) in codecs {
                let (mut frame, zip, n, bytes) = fill(rows, block, codec);
                eprintln!(
                    "{shape} kbs{} {name}: {n} rows, {bytes} bytes of rows in a {}-byte block: {:.2} bytes of row per byte",
                    block.kib(),
                    block.bytes(),
                    bytes as f64 / block.bytes() as f64
                );
                let id = format!("kbs{}-{name}", block.kib());
                let mut compressor = Compressor::new();
                let mut out = vec![0u8; PS.bytes()];
                group.bench_function(BenchmarkId::new("decompress", &id), |b| {
                    b.iter(|| {
                        compressor
                            .decompress(black_box(&zip), &mut out, None)
                            .expect("decompress");
                    });
                });
                group.bench_function(BenchmarkId::new("compress", &id), |b| {
                    b.iter(|| {
                        compressor
                            .compress(black_box(&mut frame), PS, block, codec, None)
                            .expect("compress")
                    });
                });
            }
        }
        group.finish();
    }
}

/// What a change costs the block beside the frame: logging one insert into a leaf that already
/// holds `n` small rows (the trailer grows by one entry), and a delete mark (the trailer only).
fn bench_log(c: &mut Criterion) {
    let mut group = c.benchmark_group("row_compression/log");
    for n in [16usize, 128] {
        let mut compressor = Compressor::new();
        let mut frame = IndexPage::init(vec![0u8; PS.bytes()], PS, ID, 0, 1)
            .expect("page")
            .into_inner();
        {
            let mut page = IndexPage::open_trusted(&mut frame[..], PS).expect("frame");
            for i in 0..n {
                let key = be_key(2 * i as u64);
                page.insert(i, &Record::inline(&key, b"a small row of text"))
                    .expect("room");
            }
        }
        let zip = compressor
            .compress(&mut frame, PS, BlockSize::K8, Codec::default(), None)
            .expect("fits");
        let key = be_key(2 * (n as u64 / 2) + 1);
        let rec = Record::inline(&key, b"a small row of text");
        group.bench_function(BenchmarkId::new("insert", n), |b| {
            b.iter_batched_ref(
                || zip.clone(),
                |z| z.log_insert(n / 2, black_box(&rec)).expect("room"),
                criterion::BatchSize::SmallInput,
            );
        });
        let old_key = be_key(0);
        let old = Record::inline(&old_key, b"a small row of text");
        let marked = old.with_sys(barracuda_page::SysFields {
            trx_id: 77,
            roll_ptr: 5,
            deleted: true,
        });
        group.bench_function(BenchmarkId::new("delete_mark", n), |b| {
            b.iter_batched_ref(
                || zip.clone(),
                |z| z.log_replace(0, black_box(&old), &marked).expect("room"),
                criterion::BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_log);
criterion_main!(benches);
