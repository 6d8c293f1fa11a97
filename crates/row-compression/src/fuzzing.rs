//! The `row_compressed_decode` fuzz target's logic (cargo feature `fuzzing`), shared by
//! `fuzz/fuzz_targets/row_compressed_decode.rs` and the corpus replay test
//! (`tests/fuzz_corpus.rs`), so that an input the fuzzer finds replays in `cargo test` once it
//! is in `fuzz/corpus/row_compressed_decode/`.
//!
//! Input: byte 0 picks the page size (`4 KiB << (b % 5)`), byte 1 the block size
//! (`1 KiB << (b % 5)`; a block larger than the page is skipped), bytes 2..10 the expected page
//! id (space id, page number; little-endian u32s), the rest is the block, cut to the block size
//! (a shorter input is skipped).
//!
//! What must hold, whatever the bytes:
//! - reading ([`CompressedPage::from_unverified`], [`CompressedPage::from_block`]),
//!   decompressing and every `log_*` method return, never panic; a refused `log_*` leaves the
//!   block as it was;
//! - the verified path accepts exactly what the unverified path accepts once the block is
//!   sealed, and decodes it to the same page;
//! - a block that decompresses gives a page that opens ([`IndexPage::open`]) and verifies
//!   ([`verify_page`]: it is sealed), the same page every time; compressing that page again
//!   into the same block size either fails with [`RowCompressionError::DoesNotFit`] or gives a
//!   block with an empty log that decompresses to the same page; sealing the block and reading
//!   it back gives the same page;
//! - a change logged on such a block beside the same change made to the page through
//!   [`IndexPage`] either fails with [`RowCompressionError::LogFull`] or decompresses to the
//!   changed page.

use barracuda_page::header::{OFF_PREV, OFF_TYPE_SPECIFIC};
use barracuda_page::{
    max_key_len, seal_page, verify_page, zero_unused_space, IndexPage, PageId, PageSize, Record,
    SysFields, ValueRef, FIL_NULL,
};

use crate::codec::CODE_LZ4;
use crate::{seal_block, verify_block, BlockSize, Codec, CompressedPage, Compressor};
use crate::{Result, RowCompressionError};

/// The fuzz target's name, which is also its corpus directory.
pub const TARGET: &str = "row_compressed_decode";

/// Runs one input.
///
/// # Panics
/// If reading, decompressing, recompressing or logging misbehaves: see the module
/// documentation.
pub fn row_compressed_decode(data: &[u8]) {
    let Some((page_size, block_size, id, block)) = parse(data) else {
        return;
    };
    let unverified = CompressedPage::from_unverified(block, id, page_size);
    let verified = CompressedPage::from_block(block, id, page_size);
    match (&verified, &unverified) {
        (Ok(v), Ok(u)) => assert!(v == u, "the two paths read the block differently"),
        (Ok(_), Err(e)) => panic!("from_block accepted a block from_unverified refuses: {e}"),
        (Err(_), Ok(_)) => assert!(
            verify_block(block, id).is_err(),
            "a block that verifies and reads unverified is refused by from_block"
        ),
        (Err(_), Err(_)) => {}
    }
    let mut c = Compressor::new();
    // Sealed, the block passes the checksum: the verified path then decides as the other.
    let mut sealed = block.to_vec();
    seal_block(&mut sealed);
    let resealed = CompressedPage::from_block(&sealed, id, page_size);
    assert_eq!(
        resealed.is_ok(),
        unverified.is_ok(),
        "sealing the block changed whether it reads: {resealed:?} / {unverified:?}"
    );
    let Ok(mut zip) = unverified else {
        return;
    };
    let decoded = decompressed(&mut c, &zip);
    if let Ok(r) = &resealed {
        let again = decompressed(&mut c, r);
        assert!(
            again.as_ref().ok() == decoded.as_ref().ok() && again.is_ok() == decoded.is_ok(),
            "the sealed copy decompresses differently"
        );
    }
    let Ok(page) = decoded else {
        poke(&mut c, &mut zip);
        return;
    };
    let lsn = {
        let index = IndexPage::open(&page[..], page_size)
            .unwrap_or_else(|e| panic!("a decompressed page does not open: {e}"));
        index.page_lsn()
    };
    verify_page(&page, id, page_size)
        .unwrap_or_else(|e| panic!("a decompressed page does not verify: {e}"));
    let again = decompressed(&mut c, &zip).expect("a block decompresses every time");
    assert!(again == page, "a block decompresses to two different pages");

    let codec = codec_of(block);
    recompress(&mut c, &page, block_size, codec);

    let mut sealed_zip = zip.clone();
    sealed_zip.seal(lsn);
    let read = CompressedPage::from_block(sealed_zip.as_bytes(), id, page_size)
        .unwrap_or_else(|e| panic!("a sealed block does not read back: {e}"));
    let back = decompressed(&mut c, &read).expect("a sealed block decompresses");
    assert!(back == page, "sealing the block changed its page");

    apply_changes(&mut c, zip, page, block_size, codec);
}

/// Splits an input into page size, block size, page id and block.
fn parse(data: &[u8]) -> Option<(PageSize, BlockSize, PageId, &[u8])> {
    let (&ps, rest) = data.split_first()?;
    let (&bs, rest) = rest.split_first()?;
    let page_size = *PageSize::ALL.get(usize::from(ps) % 5)?;
    let block_size = *BlockSize::ALL.get(usize::from(bs) % 5)?;
    if block_size.bytes() > page_size.bytes() {
        return None;
    }
    let word = |i: usize| -> Option<u32> {
        let b: [u8; 4] = rest.get(i..i + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(b))
    };
    let id = PageId::new(word(0)?, word(4)?);
    let block = rest.get(8..8 + block_size.bytes())?;
    Some((page_size, block_size, id, block))
}

/// The codec a block's header names (deflate for anything but LZ4's code: only used on blocks
/// that decompressed).
fn codec_of(block: &[u8]) -> Codec {
    if block.get(OFF_TYPE_SPECIFIC) == Some(&CODE_LZ4) {
        Codec::Lz4
    } else {
        Codec::Zlib { level: 6 }
    }
}

fn decompressed(c: &mut Compressor, zip: &CompressedPage) -> Result<Vec<u8>> {
    let mut out = vec![0u8; zip.page_size().bytes()];
    c.decompress(zip, &mut out, None)?;
    Ok(out)
}

/// What a block must decompress to after `frame` changed: the frame with its unused space
/// zeroed, sealed.
fn canonical(frame: &[u8], page_size: PageSize) -> Vec<u8> {
    let mut c = frame.to_vec();
    zero_unused_space(&mut c, page_size)
        .unwrap_or_else(|e| panic!("a frame changed through IndexPage does not zero: {e}"));
    seal_page(&mut c);
    c
}

/// Compressing a decompressed page again gives a block of the same page, or does not fit.
fn recompress(c: &mut Compressor, page: &[u8], block: BlockSize, codec: Codec) {
    let page_size = PageSize::from_bytes(page.len()).expect("a page of a page size");
    let mut frame = page.to_vec();
    match c.compress(&mut frame, page_size, block, codec, None) {
        Ok(zip) => {
            assert_eq!(zip.log_len(), 0, "a fresh block has an empty log");
            let back = decompressed(c, &zip)
                .unwrap_or_else(|e| panic!("a fresh block does not decompress: {e}"));
            assert!(back == page, "compress then decompress changed the page");
        }
        Err(RowCompressionError::DoesNotFit { .. }) => {}
        Err(e) => panic!("a decompressed page does not compress: {e}"),
    }
}

/// The changes tried on an accepted block, in this order.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// New transaction fields and a flipped delete mark (leaf), or a new child (internal) for
    /// the middle record: the trailer only.
    Mark,
    /// The first leaf record's value replaced by a short inline one: a log entry.
    Replace,
    /// A record with a new key, after the last (or the empty key, first).
    Insert,
    /// The prev link, written in place.
    Link,
    /// The first record removed.
    Remove,
    /// The second half of the records removed and the page compacted.
    Truncate,
}

const CHANGES: [Change; 7] = [
    Change::Mark,
    Change::Replace,
    Change::Insert,
    Change::Link,
    Change::Remove,
    Change::Truncate,
    Change::Insert,
];

/// Makes each of [`CHANGES`] to `frame` through [`IndexPage`] and logs it on `zip`; after
/// each, the block decompresses to the frame. A full log recompresses, as the engine does.
fn apply_changes(
    c: &mut Compressor,
    mut zip: CompressedPage,
    mut frame: Vec<u8>,
    block: BlockSize,
    codec: Codec,
) {
    let page_size = zip.page_size();
    refusals(&mut zip);
    for change in CHANGES {
        let before = (frame.clone(), zip.clone());
        let Some(logged) = apply(change, &mut frame, &mut zip, page_size) else {
            frame = before.0;
            continue;
        };
        match logged {
            Ok(()) => {
                let got = decompressed(c, &zip)
                    .unwrap_or_else(|e| panic!("after logging {change:?}: {e}"));
                assert!(
                    got == canonical(&frame, page_size),
                    "after logging {change:?} the block decompresses to another page"
                );
            }
            Err(RowCompressionError::LogFull { .. }) => {
                assert!(zip == before.1, "a refused {change:?} changed the block");
                match c.compress(&mut frame, page_size, block, codec, None) {
                    Ok(z) => zip = z,
                    Err(RowCompressionError::DoesNotFit { .. }) => return,
                    Err(e) => panic!("recompressing after a full log: {e}"),
                }
                let got =
                    decompressed(c, &zip).unwrap_or_else(|e| panic!("a recompressed block: {e}"));
                assert!(
                    got == canonical(&frame, page_size),
                    "recompressed after {change:?}"
                );
            }
            Err(e) => panic!("logging {change:?}: {e}"),
        }
    }
}

/// Changes a compressed page must refuse, leaving it as it was.
fn refusals(zip: &mut CompressedPage) {
    let before = zip.clone();
    let n = zip.len();
    let refused = [
        zip.log_write(0, &[1, 2, 3, 4]),
        zip.log_write(OFF_TYPE_SPECIFIC, &[9]),
        zip.log_remove(n),
        zip.log_truncate(n + 1),
        zip.log_insert(n + 1, &Record::inline(b"", b"")),
    ];
    for r in refused {
        assert!(
            matches!(r, Err(RowCompressionError::BadChange { .. })),
            "a change the block cannot take: {r:?}"
        );
    }
    assert!(*zip == before, "a refused change changed the block");
}

/// The encoding of `rec`, to decode as an owned copy while the page changes.
fn encoded(rec: &Record<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    rec.encode_to(&mut out).ok()?;
    Some(out)
}

/// Makes `change` to `frame` and logs it on `zip`: `None` when the page refused it (nothing
/// logged), else what logging answered.
fn apply(
    change: Change,
    frame: &mut [u8],
    zip: &mut CompressedPage,
    page_size: PageSize,
) -> Option<Result<()>> {
    let mut page = IndexPage::open_trusted(&mut frame[..], page_size).ok()?;
    let n = page.len();
    match change {
        Change::Mark | Change::Replace => {
            let i = if matches!(change, Change::Mark) {
                n / 2
            } else {
                0
            };
            let old_bytes = encoded(&page.record(i).ok()?)?;
            let old = Record::decode_exact(&old_bytes).ok()?;
            let value = b"replaced by the fuzz target";
            let new = match (change, old.value) {
                (Change::Mark, ValueRef::Child(child)) => {
                    let child = if child == 0 { 1 } else { child - 1 };
                    page.set_child(i, child).ok()?;
                    Record::child(old.key, child)
                }
                (Change::Mark, _) => {
                    let new = old.with_sys(SysFields {
                        trx_id: old.sys.trx_id ^ 1,
                        roll_ptr: old.sys.roll_ptr ^ 1,
                        deleted: !old.sys.deleted,
                    });
                    page.replace(i, &new).ok()?;
                    new
                }
                (_, ValueRef::Child(_)) => return None,
                _ => {
                    let new = Record::inline(old.key, value).with_sys(old.sys);
                    page.replace(i, &new).ok()?;
                    new
                }
            };
            Some(zip.log_replace(i, &old, &new))
        }
        Change::Insert => {
            let mut key = match n.checked_sub(1) {
                Some(last) => page.key(last).ok()?.to_vec(),
                None => b"fuzz".to_vec(),
            };
            if n > 0 {
                key.push(0);
            }
            if key.len() > max_key_len(page_size) {
                key.clear();
            }
            let Err(pos) = page.search(&key) else {
                return None;
            };
            let rec = if page.is_leaf() {
                Record::inline(&key, b"a row the fuzz target inserted").with_sys(SysFields {
                    trx_id: 5,
                    roll_ptr: 6,
                    deleted: false,
                })
            } else {
                Record::child(&key, 3)
            };
            page.insert(pos, &rec).ok()?;
            Some(zip.log_insert(pos, &rec))
        }
        Change::Link => {
            let prev = page.prev();
            let prev = if prev == FIL_NULL { 5 } else { FIL_NULL };
            page.set_prev(prev);
            Some(zip.log_write(OFF_PREV, &prev.to_le_bytes()))
        }
        Change::Remove => {
            if n == 0 {
                return None;
            }
            page.remove(0).ok()?;
            Some(zip.log_remove(0))
        }
        Change::Truncate => {
            let at = n / 2;
            page.remove_range(at..n).ok()?;
            page.compact();
            Some(zip.log_truncate(at))
        }
    }
}

/// One `log_*` call on a block.
type LogCall<'a> = dyn Fn(&mut CompressedPage) -> Result<()> + 'a;

/// Logging on a block that reads but does not decompress: every call returns, a refused one
/// changes nothing, and decompressing afterwards returns too.
fn poke(c: &mut Compressor, zip: &mut CompressedPage) {
    let n = zip.len();
    let inline = Record::inline(b"", b"x");
    let marked = inline.with_sys(SysFields {
        trx_id: 1,
        roll_ptr: 2,
        deleted: true,
    });
    let child = Record::child(b"", 1);
    let calls: [&LogCall; 8] = [
        &|z| z.log_replace(0, &inline, &marked),
        &|z| z.log_replace(0, &child, &Record::child(b"", 2)),
        &|z| z.log_insert(0, &inline),
        &|z| z.log_insert(n, &child),
        &|z| z.log_write(OFF_PREV, &[7, 0, 0, 0]),
        &|z| z.log_write(200, &[1, 2, 3]),
        &|z| z.log_remove(0),
        &|z| z.log_truncate(n / 2),
    ];
    for call in calls {
        let before = zip.clone();
        if call(zip).is_err() {
            assert!(*zip == before, "a refused change changed the block");
        }
        let mut out = vec![0u8; zip.page_size().bytes()];
        let _ = c.decompress(zip, &mut out, None);
    }
}

/// The shape of one seed.
struct Seed {
    page_size: PageSize,
    block: BlockSize,
    codec: Codec,
    /// 0: a leaf; above: an internal page.
    level: u16,
    /// Records on the page when it is compressed.
    records: u32,
    /// Records inserted (and others changed) through the log afterwards.
    logged: u32,
}

/// Deflate at InnoDB's default level.
const ZLIB: Codec = Codec::Zlib { level: 6 };

const SEEDS: [Seed; 12] = [
    seed(PageSize::K4, BlockSize::K1, ZLIB, 0, 12, 0),
    seed(PageSize::K4, BlockSize::K2, Codec::Lz4, 0, 20, 4),
    seed(PageSize::K8, BlockSize::K4, ZLIB, 0, 40, 6),
    seed(PageSize::K16, BlockSize::K1, Codec::Lz4, 0, 10, 2),
    seed(PageSize::K16, BlockSize::K4, ZLIB, 0, 60, 8),
    seed(PageSize::K16, BlockSize::K8, Codec::Lz4, 0, 80, 0),
    seed(PageSize::K16, BlockSize::K2, ZLIB, 1, 60, 10),
    seed(PageSize::K16, BlockSize::K16, Codec::Lz4, 1, 200, 0),
    seed(PageSize::K32, BlockSize::K8, Codec::Lz4, 0, 120, 10),
    seed(PageSize::K64, BlockSize::K16, ZLIB, 0, 300, 12),
    seed(PageSize::K64, BlockSize::K4, Codec::Lz4, 1, 150, 6),
    seed(PageSize::K8, BlockSize::K8, ZLIB, 0, 30, 3),
];

const fn seed(
    page_size: PageSize,
    block: BlockSize,
    codec: Codec,
    level: u16,
    records: u32,
    logged: u32,
) -> Seed {
    Seed {
        page_size,
        block,
        codec,
        level,
        records,
        logged,
    }
}

/// Text-like bytes (words from a small vocabulary), so that values compress as rows do.
fn text(seed: u32, len: usize) -> Vec<u8> {
    const WORDS: [&str; 8] = [
        "the ",
        "row ",
        "of ",
        "a ",
        "compressed ",
        "page ",
        "and ",
        "index ",
    ];
    let mut x = u64::from(seed) * 0x9E37_79B9 + 1;
    let mut out = Vec::with_capacity(len + 12);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS.get((x % 8) as usize).unwrap_or(&"").as_bytes());
    }
    out.truncate(len);
    out
}

/// Record `k` of a seed: on a leaf, inline with `value`, every fifth an overflow record with a
/// prefix of it, every third delete-marked; on an internal page, a child pointer.
fn seed_record<'a>(key: &'a [u8], value: &'a [u8], k: u32, level: u16) -> Record<'a> {
    if level > 0 {
        return Record::child(key, 1000 + k);
    }
    let sys = SysFields {
        trx_id: u64::from(k) * 31 + 7,
        roll_ptr: u64::from(k) << 20 | 3,
        deleted: k.is_multiple_of(3),
    };
    if k % 5 == 4 {
        let prefix = value.get(..value.len().min(20)).unwrap_or_default();
        Record::overflow(key, prefix, 100_000 + u64::from(k), 500 + k).with_sys(sys)
    } else {
        Record::inline(key, value).with_sys(sys)
    }
}

/// Builds one seed's block: `records` records (fewer if they do not fit the block),
/// compressed, then `logged` inserts and as many delete marks and removals through the log.
fn build(s: &Seed, id: PageId) -> Option<CompressedPage> {
    let ps = s.page_size;
    let key_of = |k: u32| format!("key{k:06}").into_bytes();
    let value_of = |k: u32| text(k, 10 + (k as usize * 37) % 140);
    let mut records = s.records;
    let mut c = Compressor::new();
    loop {
        let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, id, s.level, 77).ok()?;
        page.set_page_lsn(u64::from(s.records) * 1000 + 5);
        for k in 0..records {
            let (key, value) = (key_of(2 * k), value_of(k));
            let rec = seed_record(&key, &value, k, s.level);
            if page.insert(k as usize, &rec).is_err() {
                break;
            }
        }
        let mut frame = page.into_inner();
        match c.compress(&mut frame, ps, s.block, s.codec, None) {
            Ok(mut zip) => {
                log_seed_changes(s, &mut frame, &mut zip, records);
                zip.seal(u64::from(s.records) * 1000 + 5);
                return Some(zip);
            }
            Err(RowCompressionError::DoesNotFit { .. }) if records > 1 => records /= 2,
            Err(_) => return None,
        }
    }
}

/// The logged part of a seed: inserts between the compressed records (odd keys), a delete
/// mark, a removal, a link write; stops at the first full log.
fn log_seed_changes(s: &Seed, frame: &mut [u8], zip: &mut CompressedPage, records: u32) {
    let ps = s.page_size;
    let Ok(mut page) = IndexPage::open_trusted(&mut frame[..], ps) else {
        return;
    };
    for j in 0..s.logged.min(records) {
        let k = records + j;
        let key = format!("key{:06}", 2 * j + 1).into_bytes();
        let value = text(k, 30 + (k as usize * 13) % 90);
        let rec = seed_record(&key, &value, k, s.level);
        let Err(pos) = page.search(&key) else {
            continue;
        };
        if page.insert(pos, &rec).is_err() {
            return;
        }
        if zip.log_insert(pos, &rec).is_err() {
            let _ = page.remove(pos);
            return;
        }
    }
    if s.logged == 0 {
        return;
    }
    let old = page.record(1).ok().and_then(|r| encoded(&r));
    if let Some(old) = old.as_deref().and_then(|b| Record::decode_exact(b).ok()) {
        let new = match old.value {
            ValueRef::Child(c) => Record::child(old.key, c + 1),
            _ => old.with_sys(SysFields {
                trx_id: 999,
                roll_ptr: 1234,
                deleted: true,
            }),
        };
        if page.replace(1, &new).is_ok() && zip.log_replace(1, &old, &new).is_err() {
            let _ = page.replace(1, &old);
        }
    }
    if page.len() > 2 && zip.log_remove(2).is_ok() {
        let _ = page.remove(2);
    }
    if zip.log_write(OFF_PREV, &11u32.to_le_bytes()).is_ok() {
        page.set_prev(11);
    }
}

/// Valid blocks as fuzz inputs, with their file names in the corpus: zlib and LZ4, page sizes
/// 4 to 64 KiB, block sizes 1 to 16 KiB, leaf pages with inline, overflow and delete-marked
/// records and internal pages, fresh or with a modification log. The seeds the fuzzer starts
/// from.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, s) in SEEDS.iter().enumerate() {
        let id = PageId::new(7, 3 + i as u32);
        let Some(zip) = build(s, id) else {
            continue;
        };
        let ps_selector = PageSize::ALL.iter().position(|&p| p == s.page_size);
        let block_selector = BlockSize::ALL.iter().position(|&b| b == s.block);
        let (Some(ps_selector), Some(block_selector)) = (ps_selector, block_selector) else {
            continue;
        };
        let mut input = vec![ps_selector as u8, block_selector as u8];
        input.extend_from_slice(&id.space_id.to_le_bytes());
        input.extend_from_slice(&id.page_no.to_le_bytes());
        input.extend_from_slice(zip.as_bytes());
        let name = format!(
            "seed-{}k-{}k-{}-{}-{}",
            s.page_size.bytes() >> 10,
            s.block.kib(),
            s.codec.name(),
            if s.level == 0 { "leaf" } else { "internal" },
            if zip.log_len() == 0 {
                "fresh"
            } else {
                "logged"
            },
        );
        out.push((name, input));
    }
    out
}
