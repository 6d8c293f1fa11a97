//! Writers in random key order race each other's splits and merges, in plain and
//! row-compressed trees, through a pool much smaller than the tree: the descents a writer takes
//! (routed through the inner nodes' copies, or latched) must always land on the leaf that owns
//! the key, and a split's parent copy must stay the parent's. If this breaks, a key lands
//! outside its leaf's fences (`check` reports it), a write is lost, or a thread deadlocks.
//!
//! `BARRACUDA_STRESS_ROUNDS` repeats each case (CI runs one round).

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use barracuda_btree::testing::{MemAllocator, ZipMemStore};
use barracuda_btree::{BTree, PlaceholderLog, TreeContext, ZipIndex};
use barracuda_buffer_pool::{BufferPool, PoolConfig};
use barracuda_page::PageSize;
use barracuda_row_compression::{BlockSize, Codec, CompressionStats};

const WRITERS: u64 = 4;
const OPS_PER_WRITER: u64 = 5_000;
/// Keys a writer draws from: few enough that puts replace and deletes find rows, so leaves
/// both fill and empty.
const KEYS_PER_WRITER: u64 = 1_500;

fn rounds() -> u64 {
    std::env::var("BARRACUDA_STRESS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
}

fn compressed_tree(block: BlockSize, frames: usize) -> BTree {
    let ps = PageSize::K4;
    let stats = Arc::new(CompressionStats::new());
    let store = Arc::new(ZipMemStore::new(
        ps,
        &[],
        &[(3, block.bytes())],
        stats.clone(),
    ));
    let pool = BufferPool::new(
        PoolConfig::new(ps)
            .capacity_pages(frames)
            .capture_before_images(true)
            .keep_described_from(true),
        store,
    )
    .unwrap();
    let ctx = TreeContext::new(
        pool,
        Arc::new(MemAllocator::new()),
        Arc::new(PlaceholderLog::default()),
    );
    let zip = Arc::new(ZipIndex::new(3, block, Codec::Lz4, ps, stats));
    BTree::create(ctx, 3, 9).unwrap().with_compression(zip)
}

/// xorshift64: the writers' key and length choices.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Writer `w`'s keys interleave with the others' so that they share leaves.
fn key(w: u64, k: u64) -> [u8; 8] {
    (k * WRITERS + w).to_be_bytes()
}

fn value(w: u64, k: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{w}:{k}:").into_bytes();
    v.resize(len, b'a' + (k % 26) as u8);
    v
}

/// Runs the writers on `tree` and checks it against each writer's model.
fn race(tree: &BTree, seed: u64) {
    let models: Vec<BTreeMap<[u8; 8], Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let tree = tree.clone();
                s.spawn(move || {
                    let mut model = BTreeMap::new();
                    let mut x = (seed ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
                    for _ in 0..OPS_PER_WRITER {
                        let k = next(&mut x) % KEYS_PER_WRITER;
                        let key = key(w, k);
                        if next(&mut x).is_multiple_of(3) {
                            let found = tree.delete(&key).unwrap();
                            assert_eq!(found, model.remove(&key).is_some(), "delete {w}:{k}");
                        } else {
                            // Mostly short rows, some long ones that split leaves early.
                            let len = if next(&mut x).is_multiple_of(8) {
                                700
                            } else {
                                40
                            };
                            let value = value(w, k, len);
                            let replaced = tree.put(&key, &value).unwrap();
                            assert_eq!(replaced, model.insert(key, value).is_some(), "put {w}:{k}");
                        }
                    }
                    model
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let stats = tree.check().unwrap();
    let expected: usize = models.iter().map(BTreeMap::len).sum();
    assert_eq!(stats.records, expected as u64, "seed {seed}");
    let want: BTreeMap<_, _> = models.into_iter().flatten().collect();
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree.range(..).map(Result::unwrap).collect();
    assert!(
        got.iter()
            .map(|(k, v)| (k.as_slice(), v))
            .eq(want.iter().map(|(k, v)| (k.as_slice(), v))),
        "seed {seed}: the tree's rows differ from the writers' models"
    );
}

#[test]
fn random_writers_keep_a_plain_tree_whole() {
    for round in 0..rounds() {
        race(&common::tree(PageSize::K4, 64), 0x5EED + round);
    }
}

#[test]
fn random_writers_keep_a_compressed_tree_whole() {
    for round in 0..rounds() {
        race(&compressed_tree(BlockSize::K2, 64), 0xC0DE + round);
    }
}
