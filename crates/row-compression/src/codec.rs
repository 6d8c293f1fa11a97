//! The two codecs of the record stream, each writing into a bounded buffer: deflate (raw, no
//! zlib wrapper: the block's CRC covers the stream) and LZ4 (block format). A stream that does
//! not fit stops the codec early — a compression failure costs at most one pass.

use libdeflater::{CompressionLvl, Compressor, Decompressor};

/// How a table's compressed pages compress their records (a per-table choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// Deflate at `level` 1 (fastest) to 9 (smallest); InnoDB's `innodb_compression_level`
    /// (default 6). Levels outside 1..=9 are clamped.
    Zlib {
        /// The level.
        level: u8,
    },
    /// LZ4 block format: several times faster to compress and decompress, larger output.
    /// Beyond InnoDB.
    Lz4,
}

impl Default for Codec {
    fn default() -> Self {
        Self::Zlib { level: 6 }
    }
}

impl Codec {
    /// The code stored in the block header (FORMATS §14.1).
    pub const fn code(self) -> u8 {
        match self {
            Self::Zlib { .. } => CODE_DEFLATE,
            Self::Lz4 => CODE_LZ4,
        }
    }

    /// `"zlib"` or `"lz4"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Zlib { .. } => "zlib",
            Self::Lz4 => "lz4",
        }
    }
}

/// Block header code of a deflate stream.
pub(crate) const CODE_DEFLATE: u8 = 1;
/// Block header code of an LZ4 block.
pub(crate) const CODE_LZ4: u8 = 2;

/// Codec state kept between pages: a deflate compressor costs hundreds of KiB of tables to set
/// up, so one per thread is reused.
pub(crate) struct Codecs {
    deflate: Option<(u8, Compressor)>,
    inflate: Decompressor,
    /// LZ4's output before it is known to fit (see [`Codecs::compress`]).
    lz4_scratch: Vec<u8>,
}

impl Codecs {
    pub(crate) fn new() -> Self {
        Self {
            deflate: None,
            inflate: Decompressor::new(),
            lz4_scratch: Vec::new(),
        }
    }

    /// Compresses `input` into `out`; the stream's length, or `None` when it does not fit.
    pub(crate) fn compress(&mut self, codec: Codec, input: &[u8], out: &mut [u8]) -> Option<usize> {
        match codec {
            Codec::Zlib { level } => {
                let level = level.clamp(1, 9);
                let compressor = match &mut self.deflate {
                    Some((l, c)) if *l == level => c,
                    slot => {
                        let lvl = CompressionLvl::new(i32::from(level)).ok()?;
                        &mut slot.insert((level, Compressor::new(lvl))).1
                    }
                };
                // libdeflate compresses whole buffers and stops with `InsufficientSpace` when
                // the stream outgrows `out`: no state survives a failed call (zlib-rs's did,
                // and a later call on it could panic — the testkit's laws found it).
                compressor.deflate_compress(input, out).ok()
            }
            Codec::Lz4 => {
                // lz4_flex refuses an output buffer smaller than its worst case
                // (`get_maximum_output_size`, 110 % of the input and more) before compressing
                // anything: given the block's room directly, LZ4 would fit only pages whose
                // records fit uncompressed. Compress into a buffer of the worst case, then keep
                // the stream if it fits.
                let bound = lz4_flex::block::get_maximum_output_size(input.len());
                if out.len() >= bound {
                    return lz4_flex::block::compress_into(input, out).ok();
                }
                self.lz4_scratch.resize(bound, 0);
                let n = lz4_flex::block::compress_into(input, &mut self.lz4_scratch).ok()?;
                out.get_mut(..n)?
                    .copy_from_slice(self.lz4_scratch.get(..n)?);
                Some(n)
            }
        }
    }

    /// Decompresses `input` (a stream of codec `code`) into exactly `out`: an error describing
    /// the damage unless the stream is well formed and yields exactly `out.len()` bytes.
    pub(crate) fn decompress(
        &mut self,
        code: u8,
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(), String> {
        match code {
            CODE_DEFLATE => {
                // The stream must give exactly the page's bytes. Bytes stored after its end
                // (which no writer of ours leaves) are not looked at: the block's checksum
                // covers them.
                let n = self
                    .inflate
                    .deflate_decompress(input, out)
                    .map_err(|e| format!("the deflate stream is damaged: {e}"))?;
                if n != out.len() {
                    return Err(format!(
                        "the deflate stream gives {n} bytes, expected {}",
                        out.len()
                    ));
                }
                Ok(())
            }
            CODE_LZ4 => match lz4_flex::block::decompress_into(input, out) {
                Ok(n) if n == out.len() => Ok(()),
                Ok(n) => Err(format!(
                    "the LZ4 block gives {n} bytes, expected {}",
                    out.len()
                )),
                Err(e) => Err(format!("the LZ4 block is damaged: {e}")),
            },
            other => Err(format!(
                "unknown codec {other} (expected 1 deflate or 2 LZ4)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compressible input whose stream fits a buffer much smaller than the input: both codecs
    /// compress into it (LZ4 once refused any buffer below 110 % of the input), and a buffer
    /// too small for the stream is refused.
    #[test]
    fn a_stream_smaller_than_its_input_fits_a_small_buffer() {
        let input: Vec<u8> = b"a row of a compressed page; ".repeat(100);
        let mut codecs = Codecs::new();
        for codec in [Codec::Zlib { level: 6 }, Codec::Lz4] {
            let mut out = vec![0u8; input.len() / 4];
            let n = codecs.compress(codec, &input, &mut out).unwrap();
            let mut back = vec![0u8; input.len()];
            codecs
                .decompress(codec.code(), &out[..n], &mut back)
                .unwrap();
            assert_eq!(back, input, "{}", codec.name());
            assert_eq!(codecs.compress(codec, &input, &mut out[..n - 1]), None);
        }
    }
}
