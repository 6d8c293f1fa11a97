//! Page compression with hole punching (MariaDB's `PAGE_COMPRESSED`), the pure half: a sealed
//! page in, the bytes to write out — a checksummed, self-delimiting envelope rounded up to the
//! file system's block, or "write it plain" — and back. No I/O: the engine writes the image
//! and punches the rest of the page's slot.
//!
//! ```
//! use barracuda_page::{seal_page, IndexPage, PageId, PageSize, Record};
//! use barracuda_page_compression::{Algorithm, Compressed, PageCompressor};
//!
//! let ps = PageSize::K16;
//! let id = PageId::new(5, 9);
//! let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, id, 0, 1)?;
//! page.insert(0, &Record::inline(b"key", &[b'a'; 3000]))?;
//! let mut page = page.into_inner();
//! seal_page(&mut page);
//!
//! let mut codec = PageCompressor::new();
//! let mut image = vec![0u8; ps.bytes()];
//! let Compressed::Envelope { written_len, .. } =
//!     codec.compress(&page, ps, Algorithm::Lz4, 4096, &mut image)?
//! else {
//!     panic!("a page of one repeated byte compresses");
//! };
//! assert_eq!(written_len, 4096); // one block instead of four
//! let mut back = vec![0u8; ps.bytes()];
//! codec.decompress(&image[..written_len], id, ps, &mut back)?;
//! assert_eq!(back, page);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// MariaDB: fil_page_compress / fil_page_decompress (storage/innobase/fil/fil0pagecompress.cc).

mod envelope;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;

use barracuda_page::{seal_page, FileHeader, PageId, PageSize, FIL_HEADER_SIZE, FIL_TRAILER_SIZE};
use libdeflater::{CompressionError, CompressionLvl, Compressor, Decompressor};

pub use envelope::{
    is_page_compressed, verify_envelope, AlgorithmCode, EnvelopeHeader, PAGE_COMPRESSED,
};
pub use error::PageCompressionError;

use envelope::PAYLOAD_START;

/// A page-compression algorithm, chosen per table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Deflate at `level` 1–9 (zlib's levels; a level outside is clamped).
    Zlib {
        /// Compression level, 1 (fastest) to 9 (smallest).
        level: u8,
    },
    /// LZ4 block format (`lz4_flex`): faster, compresses less.
    Lz4,
}

impl Algorithm {
    /// The code stored in the envelope.
    pub fn code(self) -> u8 {
        AlgorithmCode::from(self).code()
    }

    /// `"zlib"` or `"lz4"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Zlib { .. } => "zlib",
            Self::Lz4 => "lz4",
        }
    }
}

/// What to write for one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compressed {
    /// Write the page as it is: compression would not free a file-system block (or the page
    /// cannot be enveloped).
    Plain,
    /// Write `out[..written_len]`: the envelope (`stored_len` bytes) and zero padding to the
    /// block; the rest of the page's slot can be punched out.
    Envelope {
        /// Header plus payload.
        stored_len: usize,
        /// `stored_len` rounded up to the block size; at least one block less than the page.
        written_len: usize,
    },
}

/// Reusable codec state (deflate streams are worth keeping: allocating one costs more than
/// compressing a small page). One per thread.
pub struct PageCompressor {
    deflate: Option<(u8, Compressor)>,
    inflate: Decompressor,
    /// LZ4's output: `lz4_flex` wants room for the worst case, more than a page.
    lz4_out: Vec<u8>,
}

impl std::fmt::Debug for PageCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCompressor")
            .field("zlib_level", &self.deflate.as_ref().map(|(l, _)| *l))
            .finish_non_exhaustive()
    }
}

impl Default for PageCompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl PageCompressor {
    /// A compressor with no stream allocated yet.
    pub fn new() -> Self {
        Self {
            deflate: None,
            inflate: Decompressor::new(),
            lz4_out: Vec::new(),
        }
    }

    /// Compresses the sealed `page` (one page of `page_size`; its checksum is not checked
    /// here — the caller sealed it) into `out` (one page long): the envelope, then zeros up to
    /// the next multiple of `block_size`. Answers [`Compressed::Plain`] when that would not
    /// free at least one block, when `block_size` is not below the page size, or when the page
    /// uses its header's type-specific field (the envelope keeps its own fields there).
    pub fn compress(
        &mut self,
        page: &[u8],
        page_size: PageSize,
        algorithm: Algorithm,
        block_size: u32,
        out: &mut [u8],
    ) -> Result<Compressed, PageCompressionError> {
        let p = page_size.bytes();
        let header = FileHeader::read(page).map_err(|e| PageCompressionError::Input {
            page: PageId::new(0, 0),
            what: e.to_string(),
        })?;
        let id = header.page_id();
        if page.len() != p || out.len() != p {
            return Err(PageCompressionError::Input {
                page: id,
                what: format!(
                    "page of {} bytes and output of {} for a page size of {p}",
                    page.len(),
                    out.len()
                ),
            });
        }
        let block = block_size.max(1) as usize;
        if header.type_specific != 0 || block >= p {
            return Ok(Compressed::Plain);
        }
        // The largest payload that still frees a block once the image is rounded up.
        let limit = (p - block) / block * block - PAYLOAD_START;
        let body = &page[FIL_HEADER_SIZE..p - FIL_TRAILER_SIZE];
        let Some(payload_len) =
            self.compress_body(algorithm, body, &mut out[PAYLOAD_START..][..limit], id)?
        else {
            return Ok(Compressed::Plain);
        };
        let stored_len =
            envelope::write_header(out, &header, AlgorithmCode::from(algorithm), payload_len);
        let written_len = stored_len.div_ceil(block) * block;
        out[stored_len..written_len].fill(0);
        Ok(Compressed::Envelope {
            stored_len,
            written_len,
        })
    }

    /// Compresses `body` into `dst`; `None` when it does not fit.
    fn compress_body(
        &mut self,
        algorithm: Algorithm,
        body: &[u8],
        dst: &mut [u8],
        id: PageId,
    ) -> Result<Option<usize>, PageCompressionError> {
        match algorithm {
            Algorithm::Lz4 => {
                self.lz4_out
                    .resize(lz4_flex::block::get_maximum_output_size(body.len()), 0);
                let n = lz4_flex::block::compress_into(body, &mut self.lz4_out).map_err(|e| {
                    PageCompressionError::Codec {
                        page: id,
                        what: e.to_string(),
                    }
                })?;
                Ok(dst.get_mut(..n).map(|d| {
                    d.copy_from_slice(&self.lz4_out[..n]);
                    n
                }))
            }
            Algorithm::Zlib { level } => {
                let level = level.clamp(1, 9);
                let compressor = match &mut self.deflate {
                    Some((l, c)) if *l == level => c,
                    slot => {
                        let lvl = CompressionLvl::new(i32::from(level)).map_err(|e| {
                            PageCompressionError::Codec {
                                page: id,
                                what: format!("deflate level {level}: {e:?}"),
                            }
                        })?;
                        &mut slot.insert((level, Compressor::new(lvl))).1
                    }
                };
                match compressor.deflate_compress(body, dst) {
                    Ok(n) => Ok(Some(n)),
                    // Output full before the end: it does not fit.
                    Err(CompressionError::InsufficientSpace) => Ok(None),
                }
            }
        }
    }

    /// Verifies `image` ([`verify_envelope`]) and decompresses it into `out` (one page long):
    /// the sealed page exactly as it was compressed.
    pub fn decompress(
        &mut self,
        image: &[u8],
        expected: PageId,
        page_size: PageSize,
        out: &mut [u8],
    ) -> Result<EnvelopeHeader, PageCompressionError> {
        let header = verify_envelope(image, expected, page_size)?;
        let p = page_size.bytes();
        if out.len() != p {
            return Err(PageCompressionError::Input {
                page: expected,
                what: format!("output of {} bytes for a page size of {p}", out.len()),
            });
        }
        let payload = &image[PAYLOAD_START..header.stored_len];
        let body_len = p - FIL_HEADER_SIZE - FIL_TRAILER_SIZE;
        let body = &mut out[FIL_HEADER_SIZE..p - FIL_TRAILER_SIZE];
        let bad = |what: String| PageCompressionError::Payload {
            page: expected,
            what,
        };
        match header.algorithm {
            AlgorithmCode::Lz4 => {
                let n = lz4_flex::block::decompress_into(payload, body)
                    .map_err(|e| bad(e.to_string()))?;
                if n != body_len {
                    return Err(bad(format!("{n} bytes, a page body is {body_len}")));
                }
            }
            AlgorithmCode::Zlib => {
                let n = self
                    .inflate
                    .deflate_decompress(payload, body)
                    .map_err(|e| bad(format!("the deflate stream is damaged: {e}")))?;
                if n != body_len {
                    return Err(bad(format!("{n} bytes, a page body is {body_len}")));
                }
            }
        }
        let (prev, next) = envelope::links(image);
        let original = FileHeader {
            checksum: 0,
            page_no: expected.page_no,
            prev,
            next,
            lsn: header.lsn,
            page_type: header.original_type,
            type_specific: 0,
            space_id: expected.space_id,
        };
        original.write(out);
        seal_page(out);
        Ok(header)
    }
}
