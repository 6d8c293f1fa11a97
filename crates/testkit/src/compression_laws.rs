//! Laws of page compression: zeroing a page's unused bytes keeps what it means, and a page
//! goes through the compressed envelope and back unchanged.

use barracuda_page::index::{HEAP_START, OFF_HEAP_TOP, SLOT_SIZE};
use barracuda_page::{
    seal_page, verify_page, zero_unused_space, IndexPage, PageError, FIL_TRAILER_SIZE,
};
use barracuda_page_compression::{
    is_page_compressed, verify_envelope, Algorithm, Compressed, PageCompressor,
};
use proptest::test_runner::TestCaseError;

use crate::model::page_records;
use crate::strategy::{IndexPageCase, SealedPage};

fn ok<T>(result: Result<T, PageError>, doing: &str) -> Result<T, TestCaseError> {
    result.map_err(|e| TestCaseError::fail(format!("{doing}: {e}")))
}

/// [`zero_unused_space`] changes only bytes no reader looks at: after removing the records at
/// `remove` (indices taken modulo the count, so their bytes become garbage) and filling the
/// free gap with junk, zeroing leaves a page that opens, holds the same records in the same
/// order, has no non-zero byte outside its live records, header, directory and trailer — and
/// zeroing again changes nothing.
pub fn law_zeroing_unused_space_keeps_the_records(
    case: &IndexPageCase,
    remove: &[usize],
) -> Result<(), TestCaseError> {
    let ps = case.page_size;
    let mut page = ok(IndexPage::open(case.bytes.clone(), ps), "open the case")?;
    for &r in remove {
        if page.is_empty() {
            break;
        }
        let len = page.len();
        ok(page.remove(r % len), "remove a record")?;
    }
    let records = page_records(&page);
    let (heap_top, dir_start) = {
        let bytes = page.as_bytes();
        let top = u16::from_le_bytes([bytes[OFF_HEAP_TOP], bytes[OFF_HEAP_TOP + 1]]) as usize;
        (top, ps.bytes() - FIL_TRAILER_SIZE - SLOT_SIZE * page.len())
    };
    let mut bytes = page.into_inner();
    bytes[heap_top..dir_start].fill(0x5A);
    ok(zero_unused_space(&mut bytes, ps), "zero the unused space")?;
    let zeroed = ok(IndexPage::open(&bytes[..], ps), "open the zeroed page")?;
    if page_records(&zeroed) != records {
        return Err(TestCaseError::fail("zeroing changed the records"));
    }
    let live: usize = (0..zeroed.len())
        // `record_size_at` counts the record's slot, which is not in the heap.
        .map(|i| zeroed.record_size_at(i).map(|s| s - SLOT_SIZE))
        .sum::<Result<usize, _>>()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let heap_nonzero = bytes[HEAP_START..heap_top]
        .iter()
        .filter(|&&b| b != 0)
        .count();
    if heap_nonzero > live || bytes[heap_top..dir_start].iter().any(|&b| b != 0) {
        return Err(TestCaseError::fail(format!(
            "bytes survive zeroing: {heap_nonzero} non-zero heap bytes for {live} live"
        )));
    }
    let once = bytes.clone();
    ok(zero_unused_space(&mut bytes, ps), "zero again")?;
    if bytes != once {
        return Err(TestCaseError::fail("zeroing twice changed the page"));
    }
    Ok(())
}

/// Decompress ∘ compress = id for a sealed page: with `algorithm` and a file-system block of
/// `block_size`, the compressor either answers `Plain` or writes an envelope that is shorter
/// than the page by at least one block, is a multiple of the block, carries the page's id,
/// passes [`verify_envelope`], and decompresses to exactly the sealed page.
pub fn law_page_compression_round_trip(
    page: &SealedPage,
    algorithm: Algorithm,
    block_size: u32,
) -> Result<(), TestCaseError> {
    let ps = page.page_size;
    let mut original = page.bytes.clone();
    seal_page(&mut original);
    ok(
        verify_page(&original, page.page_id, ps),
        "the case is sealed",
    )?;
    let mut compressor = PageCompressor::new();
    let mut out = vec![0u8; ps.bytes()];
    let fail = |what: String| TestCaseError::fail(what);
    match compressor
        .compress(&original, ps, algorithm, block_size, &mut out)
        .map_err(|e| fail(format!("compress: {e}")))?
    {
        Compressed::Plain => Ok(()),
        Compressed::Envelope {
            stored_len,
            written_len,
        } => {
            let block = block_size as usize;
            if written_len % block != 0 || written_len + block > ps.bytes() {
                return Err(fail(format!(
                    "written length {written_len} is not a block multiple saving a block"
                )));
            }
            if stored_len > written_len || out[stored_len..written_len].iter().any(|&b| b != 0) {
                return Err(fail(
                    "the padding after the stored bytes is not zero".into(),
                ));
            }
            let image = &out[..written_len];
            if !is_page_compressed(image) {
                return Err(fail("an envelope is not recognised as one".into()));
            }
            verify_envelope(image, page.page_id, ps)
                .map_err(|e| fail(format!("verify_envelope: {e}")))?;
            let mut back = vec![0u8; ps.bytes()];
            compressor
                .decompress(image, page.page_id, ps, &mut back)
                .map_err(|e| fail(format!("decompress: {e}")))?;
            if back != original {
                return Err(fail(
                    "decompress(compress(page)) differs from the page".into(),
                ));
            }
            Ok(())
        }
    }
}
