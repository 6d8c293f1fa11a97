//! The two codecs of the record stream, each writing into a bounded buffer: deflate (raw, no
//! zlib wrapper: the block's CRC covers the stream) and LZ4 (block format). A stream that does
//! not fit stops the codec early — a compression failure costs at most one pass.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

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

/// Codec state kept between pages: a deflate stream costs hundreds of KiB of tables to set up,
/// so one per thread is reused (reset per page).
pub(crate) struct Codecs {
    deflate: Option<(u8, Compress)>,
    inflate: Decompress,
}

impl Codecs {
    pub(crate) fn new() -> Self {
        Self {
            deflate: None,
            inflate: Decompress::new(false),
        }
    }

    /// Compresses `input` into `out`; the stream's length, or `None` when it does not fit.
    pub(crate) fn compress(&mut self, codec: Codec, input: &[u8], out: &mut [u8]) -> Option<usize> {
        match codec {
            Codec::Zlib { level } => {
                let level = level.clamp(1, 9);
                let stream = match &mut self.deflate {
                    Some((l, c)) if *l == level => {
                        c.reset();
                        c
                    }
                    slot => {
                        let (_, c) = slot.insert((
                            level,
                            Compress::new(Compression::new(u32::from(level)), false),
                        ));
                        c
                    }
                };
                match stream.compress(input, out, FlushCompress::Finish) {
                    Ok(Status::StreamEnd) => usize::try_from(stream.total_out()).ok(),
                    _ => None,
                }
            }
            Codec::Lz4 => lz4_flex::block::compress_into(input, out).ok(),
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
                self.inflate.reset(false);
                let status = self
                    .inflate
                    .decompress(input, out, FlushDecompress::Finish)
                    .map_err(|e| format!("the deflate stream is damaged: {e}"))?;
                let produced = self.inflate.total_out();
                let consumed = self.inflate.total_in();
                if status != Status::StreamEnd {
                    return Err(format!(
                        "the deflate stream does not end within the {} bytes the header promises",
                        out.len()
                    ));
                }
                if produced != out.len() as u64 || consumed != input.len() as u64 {
                    return Err(format!(
                        "the deflate stream gives {produced} bytes from {consumed} of {} stored; expected {} bytes",
                        input.len(),
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
