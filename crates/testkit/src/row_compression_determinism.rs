//! The law that lets recovery rebuild a compressed page without logging its image: the block a
//! sequence of changes leaves depends only on the block it started from and the changes — not
//! on what the compressor did before. Recovery starts from the block on disk and replays the
//! redo of the same changes; if the blocks agreed byte for byte, so do the points where the log
//! fills, the recompressions and the splits they force, and the recovered block is the one the
//! crash interrupted. (It holds for one codec build: a different deflate implementation may
//! compress differently, which is why InnoDB logs compressed images by default.)

use barracuda_row_compression::{
    BlockSize, Codec, CompressedPage, Compressor, RowCompressionError,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::IndexOp;
use crate::row_compression_laws::apply;
use crate::strategy::IndexPageCase;

/// The blocks, after each of `ops`, of a page that starts as `case` compressed into `block`,
/// recompressing on `LogFull` and undoing a change that then does not fit (where the B-tree
/// would split). `None` when the case itself does not fit the block.
fn blocks_after_each_change(
    c: &mut Compressor,
    case: &IndexPageCase,
    ops: &[IndexOp],
    block: BlockSize,
    codec: Codec,
) -> Result<Option<Vec<Vec<u8>>>, TestCaseError> {
    let ps = case.page_size;
    let mut frame = case.bytes.clone();
    let mut zip = match c.compress(&mut frame, ps, block, codec, None) {
        Ok(zip) => zip,
        Err(RowCompressionError::DoesNotFit { .. } | RowCompressionError::BadBlockSize { .. }) => {
            return Ok(None)
        }
        Err(e) => return Err(TestCaseError::fail(format!("compress the case: {e}"))),
    };
    let mut out = vec![zip.as_bytes().to_vec()];
    for op in ops {
        let before = frame.clone();
        match apply(op, &mut frame, &mut zip, ps)? {
            None | Some(Ok(())) => {}
            Some(Err(RowCompressionError::LogFull { .. })) => {
                match c.compress(&mut frame, ps, block, codec, None) {
                    Ok(z) => zip = z,
                    Err(RowCompressionError::DoesNotFit { .. }) => frame = before,
                    Err(e) => return Err(TestCaseError::fail(format!("recompress: {e}"))),
                }
            }
            Some(Err(e)) => return Err(TestCaseError::fail(format!("logging {op:?}: {e}"))),
        }
        out.push(zip.as_bytes().to_vec());
    }
    Ok(Some(out))
}

/// Runs `ops` from `case` twice — with a fresh [`Compressor`], and with one that first
/// compressed other pages, some into blocks too small for them — and requires the same block,
/// byte for byte, after every change. `warm_up` are the pages the second compressor sees first.
pub fn law_replay_gives_the_same_blocks(
    case: &IndexPageCase,
    ops: &[IndexOp],
    block: BlockSize,
    codec: Codec,
    warm_up: &[IndexPageCase],
) -> Result<(), TestCaseError> {
    let mut fresh = Compressor::new();
    let Some(first) = blocks_after_each_change(&mut fresh, case, ops, block, codec)? else {
        return Ok(());
    };
    let mut used = Compressor::new();
    for other in warm_up {
        for size in BlockSize::ALL {
            let mut bytes = other.bytes.clone();
            // Fitting or not, each attempt leaves the compressor's state behind it.
            let _attempt: Result<CompressedPage, _> =
                used.compress(&mut bytes, other.page_size, size, codec, None);
        }
    }
    let second = blocks_after_each_change(&mut used, case, ops, block, codec)?
        .ok_or_else(|| TestCaseError::fail("the case fitted one compressor and not the other"))?;
    prop_assert_eq!(first.len(), second.len());
    for (step, (a, b)) in first.iter().zip(&second).enumerate() {
        prop_assert!(
            a == b,
            "after step {} the two compressors' blocks differ (first at byte {:?})",
            step,
            a.iter().zip(b).position(|(x, y)| x != y)
        );
    }
    Ok(())
}
