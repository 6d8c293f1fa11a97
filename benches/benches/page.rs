//! Page-format hot paths: CRC-32C of a page (GB/s), seal + verify, file header encode/decode,
//! and index page search, insert and open (ns per operation) on pages of 8-byte big-endian keys
//! with 180-byte values.
//!
//! `cargo bench -p barracuda-benches --bench page -- --warm-up-time 1 --measurement-time 3`

use barracuda_benches::{be_key, leaf_page, sealed_page, Rng};
use barracuda_page::{
    checksum, seal_page, verify_page, FileHeader, IndexPage, PageId, PageSize, PageType, Record,
};
use criterion::{criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const ID: PageId = PageId::new(4, 1234);
const SIZES: [PageSize; 3] = [PageSize::K4, PageSize::K16, PageSize::K64];
const VALUE_LEN: usize = 180;

fn size_label(ps: PageSize) -> String {
    format!("{}KiB", ps.bytes() >> 10)
}

/// CRC-32C over bytes 4..P of one page.
fn bench_checksum(c: &mut Criterion) {
    let mut group = c.benchmark_group("checksum");
    for ps in SIZES {
        let page = sealed_page(ps, ID);
        group.throughput(Throughput::Bytes(ps.bytes() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(size_label(ps)),
            &page,
            |b, p| {
                b.iter(|| checksum(black_box(p)));
            },
        );
    }
    group.finish();
}

/// `seal_page` (trailer + checksum) and `verify_page` (all six checks) of one page.
fn bench_seal_verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("seal_verify");
    for ps in SIZES {
        let page = sealed_page(ps, ID);
        group.throughput(Throughput::Bytes(ps.bytes() as u64));
        let mut buf = page.clone();
        group.bench_function(BenchmarkId::new("seal", size_label(ps)), |b| {
            b.iter(|| seal_page(black_box(&mut buf)));
        });
        group.bench_function(BenchmarkId::new("verify", size_label(ps)), |b| {
            b.iter(|| verify_page(black_box(&page), ID, ps));
        });
    }
    group.finish();
}

/// `FileHeader::write` and `FileHeader::read` of the 38-byte header.
fn bench_file_header(c: &mut Criterion) {
    let mut group = c.benchmark_group("file_header");
    let mut h = FileHeader::new(ID, PageType::Index);
    h.lsn = 99;
    h.prev = 1233;
    let mut buf = [0u8; 64];
    h.write(&mut buf);
    group.bench_function("encode", |b| {
        b.iter(|| black_box(&h).write(black_box(&mut buf)));
    });
    group.bench_function("decode", |b| b.iter(|| FileHeader::read(black_box(&buf))));
    group.finish();
}

/// Binary search for a random existing key in a full leaf.
fn bench_index_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("index_search");
    for ps in SIZES {
        let (page, n) = leaf_page(ps, usize::MAX, 1, VALUE_LEN).expect("full leaf");
        let mut rng = Rng::new(0x005E_A2C4);
        let id = format!("{}/{n}recs", size_label(ps));
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter_batched(
                || be_key(rng.below(n as u64)),
                |key| page.search(black_box(&key)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

/// Search for a random existing key in a full leaf whose keys are spread unevenly (`i⁴`): the
/// interpolation's first guess is wrong, and the gallop and bisection after it are what count.
fn bench_index_search_uneven(c: &mut Criterion) {
    let mut group = c.benchmark_group("index_search_uneven");
    for ps in SIZES {
        let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(1, 3), 0, 7)
            .expect("a page of the right size");
        let value = vec![0xA5u8; VALUE_LEN];
        let mut keys = Vec::new();
        for i in 0u64.. {
            let key = be_key(i.pow(4));
            if page
                .insert(page.len(), &Record::inline(&key, &value))
                .is_err()
            {
                break;
            }
            keys.push(key);
        }
        let mut rng = Rng::new(0x005E_A2C4);
        let id = format!("{}/{}recs", size_label(ps), keys.len());
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter_batched(
                || keys[rng.below(keys.len() as u64) as usize],
                |key| page.search(black_box(&key)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

/// Insert of one record at a random position of a half-full leaf (keys 0, 2, 4, ...; the new
/// key is odd so it always lands between two records), at the position a search found. Each
/// iteration starts from a fresh copy of the half-full page; the copy and the search are not
/// timed.
fn bench_index_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("index_insert");
    let value = vec![0x5Au8; VALUE_LEN];
    for ps in SIZES {
        let (_, full) = leaf_page(ps, usize::MAX, 1, VALUE_LEN).expect("full leaf");
        let (half, n) = leaf_page(ps, full / 2, 2, VALUE_LEN).expect("half-full leaf");
        let mut rng = Rng::new(0x001A_5E47);
        let id = format!("{}/{n}recs", size_label(ps));
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter_batched_ref(
                || {
                    let key = be_key(2 * rng.below(n as u64) + 1);
                    let pos = match half.search(&key) {
                        Ok(i) | Err(i) => i,
                    };
                    (half.clone(), key, pos)
                },
                |(page, key, pos)| page.insert(black_box(*pos), &Record::inline(key, &value)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

/// `IndexPage::open` — the full structural validation every page read from disk gets — of a
/// full leaf whose records were inserted in random key order (so heap order is not key order).
fn bench_index_open(c: &mut Criterion) {
    let mut group = c.benchmark_group("index_open");
    let value = vec![0x5Au8; VALUE_LEN];
    for ps in SIZES {
        let (empty, _) = leaf_page(ps, 0, 1, VALUE_LEN).expect("empty leaf");
        let mut page = empty.clone();
        let mut rng = Rng::new(0x0BE2_0BE2);
        loop {
            let key = be_key(rng.below(1 << 40));
            let Err(pos) = page.search(&key) else {
                continue;
            };
            if page.insert(pos, &Record::inline(&key, &value)).is_err() {
                break;
            }
        }
        let bytes = page.as_bytes().to_vec();
        let id = format!("{}/{}recs", size_label(ps), page.len());
        group.throughput(Throughput::Bytes(ps.bytes() as u64));
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter(|| IndexPage::open(black_box(bytes.as_slice()), ps).map(|p| p.len()));
        });
    }
    group.finish();
}

/// The group run by `criterion_main!` (in a private module: the macro's `pub fn` is not API).
mod group {
    use super::{
        bench_checksum, bench_file_header, bench_index_insert, bench_index_open,
        bench_index_search, bench_index_search_uneven, bench_seal_verify,
    };
    criterion::criterion_group!(
        benches,
        bench_checksum,
        bench_seal_verify,
        bench_file_header,
        bench_index_search,
        bench_index_search_uneven,
        bench_index_insert,
        bench_index_open
    );
}
criterion_main!(group::benches);
