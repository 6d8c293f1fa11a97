//! Laws of row-format compression (`ROW_FORMAT=COMPRESSED`, crate
//! `barracuda-row-compression`): a page goes through a block and back unchanged; a change
//! logged on a block beside the same change made to the page decompresses to the changed page;
//! a full log is refused cleanly and forces a recompression that empties it; adaptive padding
//! grows while compressions fail and shrinks back after good rounds.

use barracuda_page::{
    seal_page, zero_unused_space, IndexPage, PageError, PageId, PageSize, SysFields,
};
use barracuda_row_compression::{
    verify_block, AdaptivePadding, BlockSize, Codec, CompressedPage, CompressionStats, Compressor,
    PaddingSettings, RowCompressionError, GOOD_ROUNDS_TO_SHRINK, PAD_INCREMENT, ROUND_LEN,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::{IndexOp, OwnedRecord};
use crate::strategy::IndexPageCase;

/// Both codecs, at InnoDB's default deflate level.
pub const CODECS: [Codec; 2] = [Codec::Zlib { level: 6 }, Codec::Lz4];

fn page_ok<T>(result: Result<T, PageError>, doing: &str) -> Result<T, TestCaseError> {
    result.map_err(|e| TestCaseError::fail(format!("{doing}: {e}")))
}

fn zip_ok<T>(result: Result<T, RowCompressionError>, doing: &str) -> Result<T, TestCaseError> {
    result.map_err(|e| TestCaseError::fail(format!("{doing}: {e}")))
}

/// What a block must decompress to for `frame`: its unused space zeroed, sealed.
fn canonical(frame: &[u8], page_size: PageSize) -> Result<Vec<u8>, TestCaseError> {
    let mut c = frame.to_vec();
    page_ok(
        zero_unused_space(&mut c, page_size),
        "zero the unused space",
    )?;
    seal_page(&mut c);
    Ok(c)
}

fn decompressed(c: &mut Compressor, zip: &CompressedPage) -> Result<Vec<u8>, TestCaseError> {
    let mut out = vec![0u8; zip.page_size().bytes()];
    zip_ok(c.decompress(zip, &mut out, None), "decompress")?;
    Ok(out)
}

/// Decompress ∘ compress = id: the case's page `p`, its unused space zeroed and sealed, goes
/// into a block of every size up to the page size with both codecs; each compression either
/// does not fit or gives a block of `p` (its id, size, level and record count, an empty log)
/// that decompresses to exactly `p`, also once sealed and read back through the verified path.
/// Compression leaves `p` as it was; a block that fits means every larger one fits too; a
/// block larger than the page is refused.
pub fn law_row_compression_round_trip(case: &IndexPageCase) -> Result<(), TestCaseError> {
    let ps = case.page_size;
    let p = canonical(&case.bytes, ps)?;
    let n = page_ok(IndexPage::open(&p[..], ps), "open the case")?.len();
    let mut c = Compressor::new();
    for codec in CODECS {
        let mut fitted = None;
        for block in BlockSize::ALL {
            let mut frame = p.clone();
            let result = c.compress(&mut frame, ps, block, codec, None);
            if block.bytes() > ps.bytes() {
                prop_assert!(
                    matches!(result, Err(RowCompressionError::BadBlockSize { .. })),
                    "a {} KiB block of a {} KiB page: {:?}",
                    block.kib(),
                    ps.bytes() >> 10,
                    result.err()
                );
                continue;
            }
            prop_assert!(frame == p, "compression changed a canonical page");
            let mut zip = match result {
                Ok(zip) => zip,
                Err(RowCompressionError::DoesNotFit { page, .. }) => {
                    prop_assert_eq!(page, case.page_id, "DoesNotFit names the page");
                    prop_assert!(
                        fitted.is_none(),
                        "{} fits {:?} but not the larger {:?}",
                        codec.name(),
                        fitted,
                        block
                    );
                    continue;
                }
                Err(e) => return Err(TestCaseError::fail(format!("compress: {e}"))),
            };
            fitted.get_or_insert(block);
            prop_assert_eq!(
                (zip.page_id(), zip.page_size(), zip.block_size()),
                (case.page_id, ps, block)
            );
            prop_assert_eq!((zip.len(), zip.is_leaf()), (n, case.level == 0));
            prop_assert_eq!(zip.log_len(), 0, "a fresh block has an empty log");
            prop_assert_eq!(zip.as_bytes().len(), block.bytes());
            prop_assert!(
                decompressed(&mut c, &zip)? == p,
                "decompress(compress(p)) != p ({}, {:?})",
                codec.name(),
                block
            );
            zip.seal(case.lsn);
            zip_ok(
                verify_block(zip.as_bytes(), case.page_id),
                "verify the block",
            )?;
            let read = zip_ok(
                CompressedPage::from_block(zip.as_bytes(), case.page_id, ps),
                "read the sealed block",
            )?;
            prop_assert!(
                decompressed(&mut c, &read)? == p,
                "a sealed block read back decompresses to another page"
            );
        }
    }
    Ok(())
}

/// What [`law_logged_changes_decompress_to_the_frame`] went through, for a test to check that
/// its cases reach the log's limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogRun {
    /// Records the page started with (after halving it until it fitted the block).
    pub records: usize,
    /// Changes logged.
    pub logged: usize,
    /// Changes refused with `LogFull`.
    pub log_full: usize,
    /// Of those, the ones whose page recompressed into the block.
    pub recompressed: usize,
    /// Of those, the ones whose page did not fit (where the B-tree splits).
    pub split: usize,
}

/// The block always decompresses to the frame: starting from the case's page (its second half
/// dropped until it fits `block`), each of `ops` that the page accepts through [`IndexPage`] is
/// logged on the block (insert, replace, remove, and a compaction as a truncation at the end,
/// which the frame makes as `split_off` does: `remove_range(n..n)`, then `compact`).
/// After every logged change the block decompresses to the frame; a change refused with
/// `LogFull` leaves the block as it was, and the frame is recompressed — into a block with an
/// empty log that decompresses to the frame — or, when it no longer fits, the change is undone
/// (the B-tree would split). Any other error is a failure.
pub fn law_logged_changes_decompress_to_the_frame(
    case: &IndexPageCase,
    ops: &[IndexOp],
    block: BlockSize,
    codec: Codec,
) -> Result<LogRun, TestCaseError> {
    let ps = case.page_size;
    let mut run = LogRun::default();
    if block.bytes() > ps.bytes() {
        return Ok(run);
    }
    let mut c = Compressor::new();
    let mut frame = case.bytes.clone();
    let mut zip = loop {
        match c.compress(&mut frame, ps, block, codec, None) {
            Ok(zip) => break zip,
            Err(RowCompressionError::DoesNotFit { .. }) => {
                let mut page = page_ok(IndexPage::open(&mut frame[..], ps), "open the frame")?;
                let n = page.len();
                prop_assert!(n > 0, "an empty page does not fit a {:?} block", block);
                page_ok(page.remove_range(n / 2..n), "drop the second half")?;
                page.compact();
            }
            Err(e) => return Err(TestCaseError::fail(format!("compress the case: {e}"))),
        }
    };
    run.records = zip.len();
    prop_assert!(decompressed(&mut c, &zip)? == canonical(&frame, ps)?);
    for (step, op) in ops.iter().enumerate() {
        let before = (frame.clone(), zip.clone());
        let Some(logged) = apply(op, &mut frame, &mut zip, ps)? else {
            frame = before.0;
            continue;
        };
        match logged {
            Ok(()) => run.logged += 1,
            Err(RowCompressionError::LogFull { .. }) => {
                run.log_full += 1;
                prop_assert!(
                    zip == before.1,
                    "step {}: a refused {:?} changed the block",
                    step,
                    op
                );
                match c.compress(&mut frame, ps, block, codec, None) {
                    Ok(z) => {
                        prop_assert_eq!(z.log_len(), 0, "a recompressed block's log is empty");
                        zip = z;
                        run.recompressed += 1;
                    }
                    Err(RowCompressionError::DoesNotFit { .. }) => {
                        frame = before.0;
                        run.split += 1;
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("recompress: {e}"))),
                }
            }
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "step {step}: logging {op:?}: {e}"
                )))
            }
        }
        prop_assert!(
            decompressed(&mut c, &zip)? == canonical(&frame, ps)?,
            "step {}: after {:?} the block decompresses to another page",
            step,
            op
        );
    }
    Ok(run)
}

/// Makes `op` to `frame` through [`IndexPage`] and logs the same change on `zip`: `None` when
/// the page refuses it (nothing to log).
pub(crate) fn apply(
    op: &IndexOp,
    frame: &mut [u8],
    zip: &mut CompressedPage,
    ps: PageSize,
) -> Result<Option<Result<(), RowCompressionError>>, TestCaseError> {
    let mut page = page_ok(
        IndexPage::open_trusted(&mut frame[..], ps),
        "open the frame",
    )?;
    let n = page.len();
    Ok(match op {
        IndexOp::Insert(rec) | IndexOp::InsertAt { record: rec, .. } => {
            let pos = match (op, page.search(&rec.key)) {
                (IndexOp::InsertAt { at, .. }, _) => at.index(n + 1),
                (_, Err(pos)) => pos,
                (_, Ok(_)) => return Ok(None),
            };
            let rec = rec.as_record();
            page.insert(pos, &rec)
                .ok()
                .map(|()| zip.log_insert(pos, &rec))
        }
        IndexOp::Replace { at, value, sys } if n > 0 => {
            let i = at.index(n);
            let old = OwnedRecord::from_record(&page_ok(page.record(i), "read a record")?);
            let new = OwnedRecord::new(old.key.clone(), value.clone()).with_sys(*sys);
            page.replace(i, &new.as_record())
                .ok()
                .map(|()| zip.log_replace(i, &old.as_record(), &new.as_record()))
        }
        IndexOp::Remove { at } if n > 0 => {
            let i = at.index(n);
            page.remove(i).ok().map(|()| zip.log_remove(i))
        }
        IndexOp::Compact => {
            // A compaction is logged as a truncation at the end, which replays as what
            // `split_off` leaves: no record removed (the insert hints forgotten), then compacted.
            page_ok(page.remove_range(n..n), "remove no record")?;
            page.compact();
            Some(zip.log_truncate(n))
        }
        IndexOp::Replace { .. } | IndexOp::Remove { .. } => None,
    })
}

/// Text-like bytes from `seed`: words of a small vocabulary, so that they compress as rows do.
fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 10] = [
        "the ",
        "row ",
        "of ",
        "a ",
        "table ",
        "with ",
        "compressed ",
        "pages ",
        "and ",
        "logs ",
    ];
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 12);
    while out.len() < len {
        x = xorshift(x);
        out.extend_from_slice(WORDS.get((x % 10) as usize).unwrap_or(&"").as_bytes());
    }
    out.truncate(len);
    out
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// A full log forces recompression: rows with text values (keys and lengths from `seed`) are
/// inserted into an empty leaf page of `page_size` and logged on its block until the log is
/// full. Each `LogFull` leaves the block as it was, and recompressing the frame (the row
/// included) gives a block whose log is empty (`log_len() == 0`) and which decompresses to the
/// frame. The law fails unless at least one `LogFull` is seen and recompressed before the page
/// fills or stops fitting the block; it stops after three.
pub fn law_full_log_forces_recompression(
    page_size: PageSize,
    block: BlockSize,
    codec: Codec,
    seed: u64,
) -> Result<(), TestCaseError> {
    if block.bytes() > page_size.bytes() {
        return Ok(());
    }
    let id = PageId::new(4, 44);
    let mut frame = page_ok(
        IndexPage::init(vec![0u8; page_size.bytes()], page_size, id, 0, 8),
        "init",
    )?
    .into_inner();
    let mut c = Compressor::new();
    let mut zip = zip_ok(
        c.compress(&mut frame, page_size, block, codec, None),
        "an empty page compresses",
    )?;
    let (mut log_full, mut recompressed) = (0, 0);
    let mut x = seed.max(1);
    while recompressed < 3 {
        x = xorshift(x);
        let key = format!("row{:09}", x % 1_000_000_000).into_bytes();
        let value = text(x, 20 + (x >> 40) as usize % 100);
        let sys = SysFields {
            trx_id: x >> 20,
            roll_ptr: x >> 10,
            deleted: x.is_multiple_of(7),
        };
        let rec = barracuda_page::Record::inline(&key, &value).with_sys(sys);
        let mut page = page_ok(IndexPage::open_trusted(&mut frame[..], page_size), "open")?;
        let Err(pos) = page.search(&key) else {
            continue;
        };
        if !page.fits(&rec) {
            break;
        }
        page_ok(page.insert(pos, &rec), "insert")?;
        let before = zip.clone();
        match zip.log_insert(pos, &rec) {
            Ok(()) => continue,
            Err(RowCompressionError::LogFull { needed, free, .. }) => {
                prop_assert!(zip == before, "a refused insert changed the block");
                prop_assert!(
                    needed > free,
                    "LogFull with {} needed and {} free",
                    needed,
                    free
                );
                log_full += 1;
            }
            Err(e) => return Err(TestCaseError::fail(format!("log_insert: {e}"))),
        }
        match c.compress(&mut frame, page_size, block, codec, None) {
            Ok(z) => {
                prop_assert_eq!(z.log_len(), 0, "the recompressed block's log is not empty");
                prop_assert!(
                    decompressed(&mut c, &z)? == canonical(&frame, page_size)?,
                    "the recompressed block is not the frame"
                );
                zip = z;
                recompressed += 1;
            }
            Err(RowCompressionError::DoesNotFit { .. }) => break,
            Err(e) => return Err(TestCaseError::fail(format!("recompress: {e}"))),
        }
    }
    prop_assert!(
        log_full > 0 && recompressed > 0,
        "{} LogFull and {} recompressions before the page filled ({:?} block, {})",
        log_full,
        recompressed,
        block,
        codec.name()
    );
    Ok(())
}

/// Feeds one round of [`ROUND_LEN`] outcomes, `failures` of them failures, in an order taken
/// from `seed`.
fn round(padding: &AdaptivePadding, failures: u32, seed: u64) {
    let mut left = failures.min(ROUND_LEN);
    let mut x = seed | 1;
    for i in 0..ROUND_LEN {
        x = xorshift(x);
        let remaining = ROUND_LEN - i;
        // Fail with probability left / remaining: exactly `failures` in the round.
        let fail = left > 0 && (left == remaining || x % u64::from(remaining) < u64::from(left));
        if fail {
            left -= 1;
        }
        padding.record(!fail);
    }
}

/// Adaptive padding (InnoDB's defaults: 5 % threshold, pad at most 50 %): for a page of
/// `page_size`, `bad_rounds` rounds in which `failures` of the [`ROUND_LEN`] compressions fail
/// (more than 5 %) each grow the pad by [`PAD_INCREMENT`] (up to below the maximum), and the
/// fill limit is the page less the pad; then rounds in which `good_failures` fail (at most
/// 5 %) shrink it by one increment every [`GOOD_ROUNDS_TO_SHRINK`] rounds, back to none, and
/// no further. Outcomes come in an order taken from `seed`.
pub fn law_padding_grows_and_shrinks(
    page_size: PageSize,
    bad_rounds: u32,
    failures: u32,
    good_failures: u32,
    seed: u64,
) -> Result<(), TestCaseError> {
    let settings = PaddingSettings::default();
    let pct = |f: u32| f * 100 / ROUND_LEN;
    prop_assume!(pct(failures) > settings.failure_threshold_pct);
    prop_assume!(pct(good_failures) <= settings.failure_threshold_pct);
    let p = page_size.bytes();
    let max_pad = p * settings.pad_pct_max as usize / 100;
    let padding = AdaptivePadding::new(p, settings);
    prop_assert_eq!((padding.pad(), padding.fill_limit()), (0, p));
    let mut x = seed;
    let mut grown = 0;
    for r in 0..bad_rounds {
        x = xorshift(x | 1);
        round(&padding, failures, x);
        if (grown + 1) * PAD_INCREMENT < max_pad {
            grown += 1;
        }
        prop_assert_eq!(
            padding.pad(),
            grown * PAD_INCREMENT,
            "after bad round {}",
            r
        );
        prop_assert_eq!(padding.fill_limit(), p - grown * PAD_INCREMENT);
    }
    prop_assert!(
        bad_rounds == 0 || padding.pad() > 0,
        "failing rounds left no pad"
    );
    let mut shrunk = 0;
    for r in 0..(grown as u32 + 1) * GOOD_ROUNDS_TO_SHRINK {
        x = xorshift(x | 1);
        round(&padding, good_failures, x);
        if (r + 1) % GOOD_ROUNDS_TO_SHRINK == 0 && shrunk < grown {
            shrunk += 1;
        }
        prop_assert_eq!(
            padding.pad(),
            (grown - shrunk) * PAD_INCREMENT,
            "after good round {}",
            r
        );
    }
    prop_assert_eq!(padding.pad(), 0, "good rounds did not shrink the pad away");
    prop_assert_eq!(padding.fill_limit(), p);
    prop_assert_eq!(padding.changes(), (grown as u64, grown as u64));
    Ok(())
}

/// Adaptive padding driven by real compressions: a workload of 4 KiB leaf pages compressed
/// into 1 KiB blocks with `codec`, one in `fail_every` of them (more than 5 % of each round:
/// `fail_every` ≤ 18) full of incompressible values, grows the pad by one increment per round
/// (`bad_rounds` ≤ 14, below the maximum); the same number of
/// rounds of compressible pages only, times [`GOOD_ROUNDS_TO_SHRINK`], shrinks it back to
/// none. The INNODB_CMP counters ([`CompressionStats`]) count every attempt and every failure.
pub fn law_padding_follows_compression_failures(
    codec: Codec,
    fail_every: u32,
    bad_rounds: u32,
) -> Result<(), TestCaseError> {
    let per_round = ROUND_LEN.div_ceil(fail_every.max(1));
    prop_assume!(per_round * 100 / ROUND_LEN > PaddingSettings::default().failure_threshold_pct);
    // Below the pad's maximum (half the page): each failing round grows it.
    prop_assume!((bad_rounds as usize + 1) * PAD_INCREMENT < PageSize::K4.bytes() / 2);
    let ps = PageSize::K4;
    let block = BlockSize::K1;
    let page = |values: &dyn Fn(u64) -> Vec<u8>| -> Result<Vec<u8>, TestCaseError> {
        let mut page = page_ok(
            IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(2, 9), 0, 1),
            "init",
        )?;
        for k in 0..8u64 {
            let key = format!("key{k:04}").into_bytes();
            let value = values(k);
            let rec = barracuda_page::Record::inline(&key, &value);
            page_ok(page.insert(k as usize, &rec), "fill the page")?;
        }
        Ok(page.into_inner())
    };
    let good = page(&|k| text(k + 1, 150))?;
    let bad = page(&|k| {
        let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..150)
            .map(|_| {
                x = xorshift(x);
                (x >> 24) as u8
            })
            .collect()
    })?;
    let padding = AdaptivePadding::new(ps.bytes(), PaddingSettings::default());
    let stats = CompressionStats::new();
    let mut c = Compressor::new();
    let (mut attempts, mut failures) = (0u64, 0u64);
    let mut compress = |page: &[u8], c: &mut Compressor| {
        let ok = c
            .compress(&mut page.to_vec(), ps, block, codec, Some(&stats))
            .is_ok();
        padding.record(ok);
        attempts += 1;
        failures += u64::from(!ok);
    };
    for r in 0..bad_rounds {
        for i in 0..ROUND_LEN {
            compress(if i % fail_every == 0 { &bad } else { &good }, &mut c);
        }
        prop_assert_eq!(
            padding.pad(),
            (r as usize + 1) * PAD_INCREMENT,
            "after failing round {}",
            r
        );
    }
    for _ in 0..bad_rounds * GOOD_ROUNDS_TO_SHRINK * ROUND_LEN {
        compress(&good, &mut c);
    }
    prop_assert_eq!(padding.pad(), 0, "good rounds did not shrink the pad away");
    prop_assert_eq!(
        padding.changes(),
        (u64::from(bad_rounds), u64::from(bad_rounds))
    );
    let row = stats
        .snapshot()
        .into_iter()
        .find(|r| r.block_size == block.bytes())
        .unwrap_or_default();
    prop_assert_eq!(row.compress_ops, attempts);
    prop_assert_eq!(row.compress_ops - row.compress_ops_ok, failures);
    prop_assert_eq!(
        failures,
        u64::from(bad_rounds) * u64::from(per_round),
        "the incompressible pages fit a 1 KiB block"
    );
    Ok(())
}
