//! The `page_compressed_decode` fuzz target's logic (cargo feature `fuzzing`), shared by
//! `fuzz/fuzz_targets/page_compressed_decode.rs` and the corpus replay test, so that an input
//! the fuzzer finds replays in `cargo test` once it is in `fuzz/corpus/page_compressed_decode/`.
//!
//! Input: byte 0 picks the page size (`4 KiB << (b % 5)`), bytes 1..9 the expected page id
//! (space id, page number; little-endian u32s), the rest is the image (cut to a page). The
//! decoder must not panic; and whatever it accepts must be a page that verifies and that the
//! compressor turns back into an envelope the decoder accepts again, giving the same page.

use barracuda_page::{verify_page, PageId, PageSize};

use crate::{verify_envelope, Algorithm, Compressed, PageCompressor};

/// The fuzz target's name, which is also its corpus directory.
pub const TARGET: &str = "page_compressed_decode";

/// Runs one input.
///
/// # Panics
/// If the decoder misbehaves: see the module documentation.
pub fn page_compressed_decode(data: &[u8]) {
    let Some((&size, rest)) = data.split_first() else {
        return;
    };
    let page_size = match size % 5 {
        0 => PageSize::K4,
        1 => PageSize::K8,
        2 => PageSize::K16,
        3 => PageSize::K32,
        _ => PageSize::K64,
    };
    let word = |i: usize| -> u32 {
        let mut b = [0u8; 4];
        for (k, slot) in b.iter_mut().enumerate() {
            *slot = rest.get(i + k).copied().unwrap_or(0);
        }
        u32::from_le_bytes(b)
    };
    let id = PageId::new(word(0), word(4));
    let image = rest.get(8..).unwrap_or(&[]);
    let image = &image[..image.len().min(page_size.bytes())];
    let verified = verify_envelope(image, id, page_size);
    let mut codec = PageCompressor::new();
    let mut page = vec![0u8; page_size.bytes()];
    let decoded = codec.decompress(image, id, page_size, &mut page);
    assert_eq!(
        verified.is_ok(),
        decoded.is_ok() || matches!(decoded, Err(crate::PageCompressionError::Payload { .. })),
        "decompress accepted an envelope verify_envelope refuses, or the reverse: {verified:?} / {decoded:?}"
    );
    let Ok(header) = decoded else {
        return;
    };
    verify_page(&page, id, page_size).expect("a decompressed page verifies");
    let algorithm = match header.algorithm {
        crate::AlgorithmCode::Zlib => Algorithm::Zlib { level: 6 },
        crate::AlgorithmCode::Lz4 => Algorithm::Lz4,
    };
    let mut again = vec![0u8; page_size.bytes()];
    match codec
        .compress(&page, page_size, algorithm, 512, &mut again)
        .expect("a verified page compresses")
    {
        Compressed::Plain => {}
        Compressed::Envelope { written_len, .. } => {
            let mut back = vec![0u8; page_size.bytes()];
            codec
                .decompress(&again[..written_len], id, page_size, &mut back)
                .expect("a fresh envelope decompresses");
            assert_eq!(back, page, "compress then decompress changed the page");
        }
    }
}

/// A few valid envelopes (zlib and LZ4, several page sizes) as fuzz inputs, with their file
/// names in the corpus: the seeds the fuzzer starts from.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    use barracuda_page::{seal_page, IndexPage, Record};
    let mut out = Vec::new();
    for (selector, ps) in [(0u8, PageSize::K4), (2, PageSize::K16), (4, PageSize::K64)] {
        for algorithm in [Algorithm::Zlib { level: 6 }, Algorithm::Lz4] {
            let id = PageId::new(7, 3);
            let Ok(mut page) = IndexPage::init(vec![0u8; ps.bytes()], ps, id, 0, 11) else {
                continue;
            };
            for i in 0..20u8 {
                let key = [b'k', i];
                let value = format!("value {i} of a page-compressed seed; ").repeat(4);
                if page
                    .insert(usize::from(i), &Record::inline(&key, value.as_bytes()))
                    .is_err()
                {
                    break;
                }
            }
            let mut bytes = page.into_inner();
            seal_page(&mut bytes);
            let mut image = vec![0u8; ps.bytes()];
            if let Ok(Compressed::Envelope { written_len, .. }) =
                PageCompressor::new().compress(&bytes, ps, algorithm, 512, &mut image)
            {
                let mut input = vec![selector];
                input.extend_from_slice(&id.space_id.to_le_bytes());
                input.extend_from_slice(&id.page_no.to_le_bytes());
                input.extend_from_slice(image.get(..written_len).unwrap_or(&image));
                out.push((
                    format!("seed-{}k-{}", ps.bytes() / 1024, algorithm.name()),
                    input,
                ));
            }
        }
    }
    out
}
