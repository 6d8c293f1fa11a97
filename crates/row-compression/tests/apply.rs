//! `Compressor::apply`, the one call the B-tree makes per change to a compressed page: after
//! every change the block decompresses to the frame; a change that does not fit leaves both as
//! they were; a page the frame refuses leaves both as they were; recompressions tell the
//! padding whether they fitted.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use barracuda_page::{
    seal_page, zero_unused_space, IndexPage, PageId, PageSize, Record, SysFields,
};
use barracuda_row_compression::{
    AdaptivePadding, Applied, BlockSize, Change, Codec, CompressedPage, Compressor,
    PaddingSettings, Recompression, RowCompressionError,
};
use proptest::prelude::*;

const ID: PageId = PageId::new(9, 4);

fn canonical(frame: &[u8], ps: PageSize) -> Vec<u8> {
    let mut c = frame.to_vec();
    zero_unused_space(&mut c, ps).unwrap();
    seal_page(&mut c);
    c
}

fn value(seed: u64, len: usize, noisy: bool) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if noisy {
                x as u8
            } else {
                b"the page of a tree "[(i + (x % 3) as usize) % 19]
            }
        })
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, usize, bool),
    Update(usize, usize, bool),
    Mark(usize, u64),
    Remove(usize),
    Link(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u32..10_000, 1usize..400, prop::bool::weighted(0.2)).prop_map(|(k, l, n)| Op::Insert(k, l, n)),
        2 => (any::<usize>(), 1usize..400, prop::bool::weighted(0.2)).prop_map(|(i, l, n)| Op::Update(i, l, n)),
        2 => (any::<usize>(), 1u64..1 << 40).prop_map(|(i, t)| Op::Mark(i, t)),
        1 => any::<usize>().prop_map(Op::Remove),
        1 => any::<u32>().prop_map(Op::Link),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_change_keeps_frame_and_block_in_step(
        ops in prop::collection::vec(op(), 1..250),
        block in prop::sample::select(vec![BlockSize::K1, BlockSize::K2, BlockSize::K4, BlockSize::K8]),
        lz4 in any::<bool>(),
    ) {
        let ps = PageSize::K16;
        let codec = if lz4 { Codec::Lz4 } else { Codec::Zlib { level: 6 } };
        let padding = AdaptivePadding::new(ps.bytes(), PaddingSettings::default());
        let how = Recompression { codec, padding: Some(&padding), stats: None };
        let mut c = Compressor::new();
        let mut frame = IndexPage::init(vec![0u8; ps.bytes()], ps, ID, 0, 1).unwrap().into_inner();
        let mut zip = c.compress(&mut frame, ps, block, codec, None).unwrap();
        for op in &ops {
            let n = IndexPage::open_trusted(&frame[..], ps).unwrap().len();
            let key;
            let v;
            let old;
            let change = match *op {
                Op::Insert(k, len, noisy) => {
                    key = format!("k{k:08}").into_bytes();
                    let Err(pos) = IndexPage::open_trusted(&frame[..], ps).unwrap().search(&key) else { continue };
                    v = value(u64::from(k), len, noisy);
                    Change::Insert { pos, record: Record::inline(&key, &v) }
                }
                Op::Update(i, len, noisy) if n > 0 => {
                    let pos = i % n;
                    key = IndexPage::open_trusted(&frame[..], ps).unwrap().key(pos).unwrap().to_vec();
                    v = value(i as u64, len, noisy);
                    Change::Replace { pos, record: Record::inline(&key, &v) }
                }
                Op::Mark(i, trx) if n > 0 => {
                    let pos = i % n;
                    old = { let mut b = Vec::new(); IndexPage::open_trusted(&frame[..], ps).unwrap().record(pos).unwrap().encode_to(&mut b).unwrap(); b };
                    let rec = Record::decode_exact(&old).unwrap();
                    Change::Replace { pos, record: rec.with_sys(SysFields { trx_id: trx, roll_ptr: trx + 3, deleted: true }) }
                }
                Op::Remove(i) if n > 0 => Change::Remove { pos: i % n },
                Op::Link(next) => {
                    v = next.to_le_bytes().to_vec();
                    Change::Write { offset: 12, bytes: &v }
                }
                _ => continue,
            };
            let before = (frame.clone(), zip.clone());
            match c.apply(&mut frame, &mut zip, &change, how) {
                Ok(Applied::Logged) => {}
                Ok(Applied::Recompressed) => {
                    prop_assert_eq!(zip.log_len(), 0);
                }
                Err(RowCompressionError::DoesNotFit { .. } | RowCompressionError::Page { .. }) => {
                    prop_assert!(frame == before.0 && zip == before.1, "a refused {:?} changed something", op);
                }
                Err(e) => return Err(TestCaseError::fail(format!("{op:?}: {e}"))),
            }
            let mut out = vec![0u8; ps.bytes()];
            c.decompress(&zip, &mut out, None).unwrap();
            prop_assert!(out == canonical(&frame, ps), "after {:?} the block decompresses to another page", op);
        }
    }
}

/// A block in borrowed memory, recompressed in place by `apply` when its log fills, and the
/// padding told of each recompression.
#[test]
fn recompressions_happen_in_place_and_reach_the_padding() {
    let ps = PageSize::K16;
    let padding = AdaptivePadding::new(ps.bytes(), PaddingSettings::default());
    let stats = barracuda_row_compression::CompressionStats::new();
    let how = Recompression {
        codec: Codec::Lz4,
        padding: Some(&padding),
        stats: Some(&stats),
    };
    let mut c = Compressor::new();
    let mut frame = IndexPage::init(vec![0u8; ps.bytes()], ps, ID, 0, 1)
        .unwrap()
        .into_inner();
    let mut memory = vec![0u8; 2048];
    c.compress_into(&mut frame, ps, Codec::Lz4, &mut memory, None)
        .unwrap();
    let mut outcomes = Vec::new();
    for k in 0..400u32 {
        let key = format!("k{k:08}").into_bytes();
        let v = value(u64::from(k), 40, false);
        let mut zip = CompressedPage::open(&mut memory[..], ID, ps).unwrap();
        let change = Change::Insert {
            pos: k as usize,
            record: Record::inline(&key, &v),
        };
        match c.apply(&mut frame, &mut zip, &change, how) {
            Ok(applied) => outcomes.push(applied),
            Err(RowCompressionError::DoesNotFit { .. }) => break,
            Err(e) => panic!("{e}"),
        }
    }
    let recompressed = outcomes
        .iter()
        .filter(|&&a| a == Applied::Recompressed)
        .count();
    assert!(
        recompressed > 0 && outcomes.len() > recompressed,
        "{outcomes:?}"
    );
    let row = stats.snapshot()[1];
    assert_eq!(row.block_size, 2048);
    assert_eq!(
        row.compress_ops as usize,
        recompressed + 1,
        "every recompression and the failure counted"
    );
    assert_eq!(row.compress_ops_ok as usize, recompressed);
    let zip = CompressedPage::open(&memory[..], ID, ps).unwrap();
    let mut out = vec![0u8; ps.bytes()];
    c.decompress(&zip, &mut out, None).unwrap();
    assert_eq!(out, canonical(&frame, ps));
}
