//! A row-compressed tree is the same map as a plain one, through log-full recompressions,
//! splits forced by blocks that cannot take a record, evictions that drop frames and blocks
//! and reads that decompress them again; and its pages reach the store as blocks.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use barracuda_btree::testing::{MemAllocator, ZipMemStore};
use barracuda_btree::{BTree, PlaceholderLog, TreeContext, ZipIndex};
use barracuda_buffer_pool::{BufferPool, PoolConfig};
use barracuda_page::PageSize;
use barracuda_row_compression::{BlockSize, Codec, CompressionStats};
use proptest::prelude::*;

const SPACE: u32 = 3;

struct Setup {
    tree: BTree,
    store: Arc<ZipMemStore>,
    pool: Arc<BufferPool>,
    stats: Arc<CompressionStats>,
}

fn compressed_tree(block: BlockSize, codec: Codec, frames: usize) -> Setup {
    let ps = PageSize::K4;
    let stats = Arc::new(CompressionStats::new());
    let store = Arc::new(ZipMemStore::new(
        ps,
        &[],
        &[(SPACE, block.bytes())],
        stats.clone(),
    ));
    let pool = BufferPool::new(
        PoolConfig::new(ps)
            .capacity_pages(frames)
            .capture_before_images(true)
            .keep_described_from(true),
        store.clone(),
    )
    .unwrap();
    let ctx = TreeContext::new(
        pool.clone(),
        Arc::new(MemAllocator::new()),
        Arc::new(PlaceholderLog::default()),
    );
    let zip = Arc::new(ZipIndex::new(SPACE, block, codec, ps, stats.clone()));
    let tree = BTree::create(ctx, SPACE, 9).unwrap().with_compression(zip);
    Setup {
        tree,
        store,
        pool,
        stats,
    }
}

/// Words from a small vocabulary: values that compress about as well as text.
fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "the ", "river ", "of ", "a ", "stone ", "quietly ", "north ", "and ", "bright ",
        "window ", "under ", "seven ",
    ];
    let mut out = Vec::with_capacity(len + 8);
    let mut x = seed | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % 12) as usize].as_bytes());
    }
    out.truncate(len);
    out
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u64, usize, bool),
    Delete(u16),
    Get(u16),
    Scan,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u16..500, any::<u64>(), prop_oneof![4 => 0usize..300, 1 => 300usize..1500], any::<bool>())
            .prop_map(|(k, s, n, random)| Op::Put(k, s, n, random)),
        4 => (0u16..500).prop_map(Op::Delete),
        2 => (0u16..500).prop_map(Op::Get),
        1 => Just(Op::Scan),
    ]
}

fn value_of(seed: u64, len: usize, random: bool) -> Vec<u8> {
    if random {
        // Incompressible: a block holds only a few such records.
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    } else {
        text(seed, len)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_compressed_tree_matches_the_model(
        block in prop_oneof![Just(BlockSize::K1), Just(BlockSize::K2), Just(BlockSize::K4)],
        lz4 in any::<bool>(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let codec = if lz4 { Codec::Lz4 } else { Codec::Zlib { level: 6 } };
        let s = compressed_tree(block, codec, 16);
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, seed, len, random) => {
                    let key = k.to_be_bytes();
                    let value = value_of(seed, len, random);
                    let replaced = s.tree.put(&key, &value).unwrap();
                    prop_assert_eq!(replaced, model.insert(key.to_vec(), value).is_some());
                }
                Op::Delete(k) => {
                    let key = k.to_be_bytes();
                    prop_assert_eq!(s.tree.delete(&key).unwrap(), model.remove(&key[..]).is_some());
                }
                Op::Get(k) => {
                    let key = k.to_be_bytes();
                    prop_assert_eq!(s.tree.get(&key).unwrap(), model.get(&key[..]).cloned());
                }
                Op::Scan => {
                    let got: Vec<_> = s.tree.range(..).map(Result::unwrap).collect();
                    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
        s.tree.check().unwrap();
        // Everything again after the pool wrote it all and forgot it: read back from blocks.
        s.pool.flush_all().unwrap();
        let got: Vec<_> = s.tree.range(..).map(Result::unwrap).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn text_rows_reach_the_store_as_blocks_and_are_read_back_from_them() {
    let s = compressed_tree(BlockSize::K1, Codec::Zlib { level: 6 }, 16);
    for i in 0u32..3000 {
        s.tree
            .put(&i.to_be_bytes(), &text(u64::from(i), 120))
            .unwrap();
    }
    s.pool.flush_all().unwrap();
    let stats = s.tree.check().unwrap();
    let cmp = s.stats.snapshot();
    let k1 = cmp.iter().find(|r| r.block_size == 1024).unwrap();
    assert!(k1.compress_ops_ok > 0, "{cmp:?}");
    // 3000 rows of 120 bytes do not fit a few 4 KiB pages: the leaves are many, and all but
    // a few (a page may be left plain when a split half does not fit) are stored as blocks.
    assert!(
        s.store.blocks_stored() as u64 + 2 >= stats.leaf_pages + stats.internal_pages,
        "{} blocks for {stats:?}",
        s.store.blocks_stored()
    );
    // The pool of 16 frames cannot hold them: reads decompressed blocks.
    for i in (0u32..3000).step_by(7) {
        assert_eq!(
            s.tree.get(&i.to_be_bytes()).unwrap(),
            Some(text(u64::from(i), 120)),
            "row {i}"
        );
    }
    let k1 = s
        .stats
        .snapshot()
        .into_iter()
        .find(|r| r.block_size == 1024)
        .unwrap();
    assert!(k1.uncompress_ops > 0, "reads went through decompression");
    assert!(s.pool.stats().zip_frames > 0);
}

#[test]
fn records_that_do_not_compress_split_pages_until_they_fit() {
    let s = compressed_tree(BlockSize::K1, Codec::Zlib { level: 6 }, 32);
    let plain = compressed_tree(BlockSize::K4, Codec::Zlib { level: 6 }, 32);
    for i in 0u32..400 {
        let value = value_of(u64::from(i) * 7919, 300, true);
        s.tree.put(&i.to_be_bytes(), &value).unwrap();
        plain.tree.put(&i.to_be_bytes(), &value).unwrap();
    }
    for i in 0u32..400 {
        assert_eq!(
            s.tree.get(&i.to_be_bytes()).unwrap(),
            Some(value_of(u64::from(i) * 7919, 300, true))
        );
    }
    let small = s.tree.check().unwrap();
    let large = plain.tree.check().unwrap();
    // About two 300-byte random records fit a 1 KiB block, a dozen a 4 KiB page.
    assert!(
        small.leaf_pages >= 3 * large.leaf_pages,
        "1 KiB blocks: {small:?}; 4 KiB blocks: {large:?}"
    );
    let k1 = s
        .stats
        .snapshot()
        .into_iter()
        .find(|r| r.block_size == 1024)
        .unwrap();
    assert!(
        k1.compress_ops > k1.compress_ops_ok,
        "some compressions failed and forced splits: {k1:?}"
    );
}
