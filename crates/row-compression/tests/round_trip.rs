//! The crate's laws through its public API: a compressed page decompresses to the page it was
//! made from; a change logged beside the same change to the frame decompresses to the changed
//! frame; a full log refuses cleanly; incompressible records do not fit; damage is an error.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use barracuda_page::{
    seal_page, zero_unused_space, IndexPage, PageId, PageSize, Record, SysFields,
};
use barracuda_row_compression::{
    BlockSize, Codec, CompressedPage, Compressor, RowCompressionError,
};
use proptest::prelude::*;

const ID: PageId = PageId::new(3, 17);

fn empty(ps: PageSize, level: u16) -> Vec<u8> {
    IndexPage::init(vec![0u8; ps.bytes()], ps, ID, level, 42)
        .unwrap()
        .into_inner()
}

/// What decompression must give for `frame`: its unused space zeroed, sealed.
fn canonical(frame: &[u8], ps: PageSize) -> Vec<u8> {
    let mut c = frame.to_vec();
    zero_unused_space(&mut c, ps).unwrap();
    seal_page(&mut c);
    c
}

/// Where two pages first differ, for a failure message short enough to read.
fn first_difference(a: &[u8], b: &[u8]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("lengths {} and {}", a.len(), b.len()));
    }
    // The checksum (bytes 0..4) differs whenever anything else does: report what else.
    let at = a
        .iter()
        .zip(b)
        .skip(4)
        .position(|(x, y)| x != y)
        .map_or(0, |i| i + 4);
    if at == 0 && a[..4] == b[..4] {
        return None;
    }
    let end = (at + 16).min(a.len());
    let covering = |page: &[u8]| {
        let ps = PageSize::from_bytes(page.len()).unwrap();
        let index = IndexPage::open(page, ps).unwrap();
        (0..index.len())
            .map(|i| (i, index.slot(i), index.record(i).unwrap()))
            .filter(|(_, off, r)| *off <= at && at < off + r.encoded_len())
            .map(|(i, off, r)| format!("record {i} at {off}: {r:?}"))
            .collect::<Vec<_>>()
    };
    Some(format!(
        "first difference at byte {at}: {:?} vs {:?} (in {:?} vs {:?})",
        &a[at..end],
        &b[at..end],
        covering(a),
        covering(b),
    ))
}

fn decompressed<B: AsRef<[u8]>>(c: &mut Compressor, zip: &CompressedPage<B>) -> Vec<u8> {
    let mut out = vec![0u8; zip.page_size().bytes()];
    c.decompress(zip, &mut out, None).unwrap();
    out
}

/// Text-like values: words from a small vocabulary, so they compress as rows of text do.
fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "the ",
        "storage ",
        "engine ",
        "page ",
        "of ",
        "a ",
        "tree ",
        "record ",
        "log ",
        "undo ",
        "and ",
        "compressed ",
    ];
    let mut out = Vec::with_capacity(len);
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
    Insert { key: u32, len: usize, trx: u64 },
    Update { pick: usize, len: usize },
    Mark { pick: usize, trx: u64 },
    Remove { pick: usize },
    Overflow { key: u32, first_page: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..5000, 0usize..300, 0u64..1 << 40).prop_map(|(key, len, trx)| Op::Insert { key, len, trx }),
        2 => (any::<usize>(), 0usize..300).prop_map(|(pick, len)| Op::Update { pick, len }),
        2 => (any::<usize>(), 1u64..1 << 40).prop_map(|(pick, trx)| Op::Mark { pick, trx }),
        1 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
        1 => (0u32..5000, 1u32..1000).prop_map(|(key, first_page)| Op::Overflow { key, first_page }),
    ]
}

fn key_of(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// Applies `op` to the frame and logs it on the block; on a full log, recompresses. Returns
/// false once the page is too full to take it (the B-tree would split).
fn apply(
    op: &Op,
    frame: &mut [u8],
    zip: &mut CompressedPage,
    compressor: &mut Compressor,
    ps: PageSize,
    block: BlockSize,
) -> bool {
    let mut page = IndexPage::open_trusted(&mut frame[..], ps).unwrap();
    let n = page.len();
    let logged = match op {
        Op::Insert { key, len, trx } => {
            let k = key_of(*key);
            let Err(pos) = page.search(&k) else {
                return true;
            };
            let v = text(u64::from(*key), *len);
            let rec = Record::inline(&k, &v).with_sys(SysFields {
                trx_id: *trx,
                roll_ptr: trx ^ 0xABCD,
                deleted: false,
            });
            if !page.fits(&rec) {
                return false;
            }
            page.insert(pos, &rec).unwrap();
            zip.log_insert(pos, &rec)
        }
        Op::Overflow { key, first_page } => {
            let k = key_of(*key);
            let Err(pos) = page.search(&k) else {
                return true;
            };
            let prefix = text(u64::from(*key) + 1, 20);
            let rec = Record::overflow(&k, &prefix, 100_000, *first_page);
            if !page.fits(&rec) {
                return false;
            }
            page.insert(pos, &rec).unwrap();
            zip.log_insert(pos, &rec)
        }
        Op::Update { pick, len } if n > 0 => {
            let i = pick % n;
            let old = page.record(i).unwrap();
            let (k, sys) = (old.key.to_vec(), old.sys);
            let old_bytes = {
                let mut b = Vec::new();
                old.encode_to(&mut b).unwrap();
                b
            };
            let v = text(*len as u64 + 7, *len);
            let rec = Record::inline(&k, &v).with_sys(sys);
            if page.replace(i, &rec).is_err() {
                return false;
            }
            let old = Record::decode_exact(&old_bytes).unwrap();
            zip.log_replace(i, &old, &rec)
        }
        Op::Mark { pick, trx } if n > 0 => {
            let i = pick % n;
            let old_bytes = {
                let mut b = Vec::new();
                page.record(i).unwrap().encode_to(&mut b).unwrap();
                b
            };
            let old = Record::decode_exact(&old_bytes).unwrap();
            let new = old.with_sys(SysFields {
                trx_id: *trx,
                roll_ptr: *trx + 1,
                deleted: true,
            });
            page.replace(i, &new).unwrap();
            let free_before = zip.free();
            let logged = zip.log_replace(i, &old, &new);
            assert_eq!(zip.free(), free_before, "a delete mark takes no log space");
            logged
        }
        Op::Remove { pick } if n > 0 => {
            let i = pick % n;
            page.remove(i).unwrap();
            zip.log_remove(i)
        }
        _ => return true,
    };
    match logged {
        Ok(()) => true,
        Err(RowCompressionError::LogFull { .. }) => {
            match compressor.compress(frame, ps, block, Codec::default(), None) {
                Ok(z) => {
                    *zip = z;
                    true
                }
                Err(RowCompressionError::DoesNotFit { .. }) => false,
                Err(e) => panic!("recompression: {e}"),
            }
        }
        Err(e) => panic!("logging {op:?}: {e}"),
    }
}

fn sizes() -> impl Strategy<Value = (PageSize, BlockSize)> {
    prop_oneof![
        Just((PageSize::K16, BlockSize::K8)),
        Just((PageSize::K16, BlockSize::K4)),
        Just((PageSize::K16, BlockSize::K2)),
        Just((PageSize::K16, BlockSize::K1)),
        Just((PageSize::K16, BlockSize::K16)),
        Just((PageSize::K4, BlockSize::K1)),
        Just((PageSize::K64, BlockSize::K16)),
        Just((PageSize::K8, BlockSize::K4)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After every change, logged or recompressed, the block decompresses to the frame.
    #[test]
    fn the_block_always_decompresses_to_the_frame((ps, block) in sizes(), ops in prop::collection::vec(op(), 1..200), lz4 in any::<bool>()) {
        let codec = if lz4 { Codec::Lz4 } else { Codec::Zlib { level: 6 } };
        let mut c = Compressor::new();
        let mut frame = empty(ps, 0);
        let mut zip = c.compress(&mut frame, ps, block, codec, None).unwrap();
        prop_assert_eq!(first_difference(&decompressed(&mut c, &zip), &canonical(&frame, ps)), None);
        for op in &ops {
            // A change that neither logs nor recompresses is where the B-tree splits: this
            // test stops there, with the frame as the block still has it.
            let before = frame.clone();
            if !apply(op, &mut frame, &mut zip, &mut c, ps, block) {
                frame = before;
                break;
            }
            prop_assert_eq!(first_difference(&decompressed(&mut c, &zip), &canonical(&frame, ps)), None, "after {:?}", op);
        }
        // And from its bytes, sealed, as read back from disk.
        let mut zip2 = zip.clone();
        zip2.seal(0);
        let read = CompressedPage::from_block(zip2.as_bytes(), ID, ps).unwrap();
        prop_assert_eq!(first_difference(&decompressed(&mut c, &read), &canonical(&frame, ps)), None);
    }

    /// Flipping any byte of a sealed block is found (checksum) and, unverified, never panics.
    #[test]
    fn a_damaged_block_is_an_error_never_a_panic(flip in any::<usize>(), bit in 0u8..8) {
        let ps = PageSize::K16;
        let mut c = Compressor::new();
        let mut frame = empty(ps, 0);
        let mut zip = c.compress(&mut frame, ps, BlockSize::K4, Codec::default(), None).unwrap();
        for k in 0..40u32 {
            let key = key_of(k * 3);
            let v = text(u64::from(k), 100);
            let rec = Record::inline(&key, &v);
            let mut page = IndexPage::open_trusted(&mut frame[..], ps).unwrap();
            page.insert(k as usize, &rec).unwrap();
            if zip.log_insert(k as usize, &rec).is_err() {
                zip = c.compress(&mut frame, ps, BlockSize::K4, Codec::default(), None).unwrap();
            }
        }
        zip.seal(5);
        let mut bytes = zip.as_bytes().to_vec();
        let at = flip % bytes.len();
        bytes[at] ^= 1 << bit;
        prop_assert!(CompressedPage::from_block(&bytes, ID, ps).is_err());
        if let Ok(z) = CompressedPage::from_unverified(&bytes, ID, ps) {
            let mut out = vec![0u8; ps.bytes()];
            let _ = c.decompress(&z, &mut out, None);
        }
    }
}

#[test]
fn internal_pages_keep_their_children_in_the_trailer() {
    let ps = PageSize::K16;
    let mut c = Compressor::new();
    let mut frame = empty(ps, 1);
    let mut zip = c
        .compress(&mut frame, ps, BlockSize::K2, Codec::Lz4, None)
        .unwrap();
    let mut page = IndexPage::open_trusted(&mut frame[..], ps).unwrap();
    for k in 0..50u32 {
        let key = key_of(k);
        let rec = Record::child(&key, 1000 + k);
        page.insert(k as usize, &rec).unwrap();
        zip.log_insert(k as usize, &rec).unwrap();
    }
    let free = zip.free();
    let key = key_of(7);
    page.set_child(7, 99).unwrap();
    zip.log_replace(7, &Record::child(&key, 1007), &Record::child(&key, 99))
        .unwrap();
    assert_eq!(
        zip.free(),
        free,
        "a child pointer change is a trailer write"
    );
    assert_eq!(decompressed(&mut c, &zip), canonical(&frame, ps));
}

#[test]
fn a_full_log_refuses_without_changing_the_block() {
    let ps = PageSize::K16;
    let mut c = Compressor::new();
    let mut frame = empty(ps, 0);
    let mut zip = c
        .compress(&mut frame, ps, BlockSize::K1, Codec::default(), None)
        .unwrap();
    let mut page = IndexPage::open_trusted(&mut frame[..], ps).unwrap();
    let mut k = 0;
    let refused = loop {
        let key = key_of(k);
        let v = text(u64::from(k), 60);
        let rec = Record::inline(&key, &v);
        let before = zip.clone();
        match zip.log_insert(k as usize, &rec) {
            Ok(()) => page.insert(k as usize, &rec).unwrap(),
            Err(e) => {
                assert_eq!(zip, before, "a refused append changed the block");
                break e;
            }
        }
        k += 1;
    };
    assert!(
        matches!(refused, RowCompressionError::LogFull { .. }),
        "{refused}"
    );
    assert!(k > 3, "{k} records logged in a 1 KiB block");
    // Recompression empties the log: the records compress into the same block.
    let zip = c
        .compress(&mut frame, ps, BlockSize::K1, Codec::default(), None)
        .unwrap();
    assert_eq!(zip.log_len(), 0);
    assert_eq!(decompressed(&mut c, &zip), canonical(&frame, ps));
}

#[test]
fn incompressible_records_do_not_fit_and_say_so() {
    let ps = PageSize::K16;
    let mut frame = empty(ps, 0);
    let mut page = IndexPage::open_trusted(&mut frame[..], ps).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for k in 0..12u32 {
        let v: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        page.insert(k as usize, &Record::inline(&key_of(k), &v))
            .unwrap();
    }
    let mut c = Compressor::new();
    for codec in [Codec::Zlib { level: 9 }, Codec::Lz4] {
        let err = c
            .compress(&mut frame, ps, BlockSize::K8, codec, None)
            .unwrap_err();
        assert!(
            matches!(err, RowCompressionError::DoesNotFit { page, .. } if page == ID),
            "{err}"
        );
    }
    assert!(c
        .compress(&mut frame, ps, BlockSize::K16, Codec::Lz4, None)
        .is_ok());
}

#[test]
fn a_block_larger_than_the_page_is_refused() {
    let ps = PageSize::K4;
    let mut frame = empty(ps, 0);
    let err = Compressor::new()
        .compress(&mut frame, ps, BlockSize::K8, Codec::default(), None)
        .unwrap_err();
    assert!(
        matches!(
            err,
            RowCompressionError::BadBlockSize {
                block: 8192,
                page_size: 4096
            }
        ),
        "{err}"
    );
}

/// A block that lives elsewhere (as in the buffer pool's memory): compressed into the caller's
/// bytes, changed through a view over them, decompressed from them; and a recompression that
/// does not fit leaves those bytes as they were.
#[test]
fn a_block_in_borrowed_memory_is_changed_in_place_and_survives_a_failed_recompression() {
    let ps = PageSize::K16;
    let mut c = Compressor::new();
    let mut frame = empty(ps, 0);
    let mut memory = vec![0u8; 4096];
    c.compress_into(&mut frame, ps, Codec::Lz4, &mut memory, None)
        .unwrap();
    for k in 0..20u32 {
        let key = key_of(k);
        let v = text(u64::from(k), 80);
        let rec = Record::inline(&key, &v);
        IndexPage::open_trusted(&mut frame[..], ps)
            .unwrap()
            .insert(k as usize, &rec)
            .unwrap();
        let mut view = CompressedPage::open(&mut memory[..], ID, ps).unwrap();
        if view.log_insert(k as usize, &rec).is_err() {
            c.compress_into(&mut frame, ps, Codec::Lz4, &mut memory, None)
                .unwrap();
        }
    }
    let view = CompressedPage::open(&memory[..], ID, ps).unwrap();
    assert_eq!(view.len(), 20);
    assert_eq!(
        first_difference(&decompressed(&mut c, &view), &canonical(&frame, ps)),
        None
    );
    // Records of random bytes do not fit a 4 KiB block: the block in memory is kept.
    let before = memory.clone();
    let mut noisy = empty(ps, 0);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    {
        let mut page = IndexPage::open_trusted(&mut noisy[..], ps).unwrap();
        for k in 0..10u32 {
            let v: Vec<u8> = (0..1000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            page.insert(k as usize, &Record::inline(&key_of(k), &v))
                .unwrap();
        }
    }
    let err = c
        .compress_into(&mut noisy, ps, Codec::Lz4, &mut memory, None)
        .unwrap_err();
    assert!(
        matches!(err, RowCompressionError::DoesNotFit { .. }),
        "{err}"
    );
    assert_eq!(
        memory, before,
        "a failed recompression wrote into the block"
    );
}
