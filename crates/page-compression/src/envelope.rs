//! The on-disk envelope of a page-compressed image (FORMATS.md §12): the 38-byte file header
//! with page type 17, the algorithm, original page type and payload length in its
//! type-specific field, then the compressed body. Its checksum covers every stored byte.

use barracuda_page::{FileHeader, Lsn, PageId, PageSize, PageType, FIL_HEADER_SIZE};

use crate::error::PageCompressionError;
use crate::Algorithm;

/// The page type of an envelope (MariaDB: `FIL_PAGE_PAGE_COMPRESSED`).
pub const PAGE_COMPRESSED: u16 = PageType::RESERVED_PAGE_COMPRESSED;

/// Offset of the page type (u16), as in every page.
const OFF_TYPE: usize = 24;
/// Offset of the algorithm code (u8): 1 zlib (raw deflate), 2 LZ4 (block format).
const OFF_ALGORITHM: usize = 26;
/// Offset of the original page's type (u16).
const OFF_ORIGINAL_TYPE: usize = 27;
/// Offset of the payload length (u32).
const OFF_PAYLOAD_LEN: usize = 29;
/// Offset of a reserved byte (MUST be 0).
const OFF_RESERVED: usize = 33;
/// Offset of the space id (u32), as in every page.
const OFF_SPACE_ID: usize = 34;
/// The first payload byte.
pub(crate) const PAYLOAD_START: usize = FIL_HEADER_SIZE;

/// What an envelope's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvelopeHeader {
    /// The page's id, as the original page carried it.
    pub page_id: PageId,
    /// The original page's LSN.
    pub lsn: Lsn,
    /// The algorithm the payload was compressed with (a zlib level is not recorded: it only
    /// matters to the compressor).
    pub algorithm: AlgorithmCode,
    /// The original page's type.
    pub original_type: PageType,
    /// Header plus payload: the bytes the checksum covers (the image on disk is this length
    /// rounded up to the file-system block, padded with zeros).
    pub stored_len: usize,
}

/// The algorithm as recorded in an envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmCode {
    /// Raw deflate (zlib's algorithm without its header and Adler-32: the envelope's CRC-32C
    /// already covers the bytes).
    Zlib,
    /// LZ4 block format.
    Lz4,
}

impl AlgorithmCode {
    /// The on-disk code.
    pub const fn code(self) -> u8 {
        match self {
            Self::Zlib => 1,
            Self::Lz4 => 2,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Zlib),
            2 => Some(Self::Lz4),
            _ => None,
        }
    }
}

impl From<Algorithm> for AlgorithmCode {
    fn from(a: Algorithm) -> Self {
        match a {
            Algorithm::Zlib { .. } => Self::Zlib,
            Algorithm::Lz4 => Self::Lz4,
        }
    }
}

/// True when `image` carries the envelope's page type at offset 24. A cheap dispatch for the
/// read path, not a verification ([`verify_envelope`] is).
pub fn is_page_compressed(image: &[u8]) -> bool {
    image
        .get(OFF_TYPE..OFF_TYPE + 2)
        .is_some_and(|t| t == PAGE_COMPRESSED.to_le_bytes())
}

/// Writes the envelope header for `original` (a sealed page whose header was read as
/// `header`) and a payload of `payload_len` bytes already at [`PAYLOAD_START`] of `out`, then
/// its checksum. Returns the stored length.
pub(crate) fn write_header(
    out: &mut [u8],
    header: &FileHeader,
    algorithm: AlgorithmCode,
    payload_len: usize,
) -> usize {
    let stored_len = PAYLOAD_START + payload_len;
    out[4..8].copy_from_slice(&header.page_no.to_le_bytes());
    out[8..12].copy_from_slice(&header.prev.to_le_bytes());
    out[12..16].copy_from_slice(&header.next.to_le_bytes());
    out[16..24].copy_from_slice(&header.lsn.to_le_bytes());
    out[OFF_TYPE..OFF_TYPE + 2].copy_from_slice(&PAGE_COMPRESSED.to_le_bytes());
    out[OFF_ALGORITHM] = algorithm.code();
    out[OFF_ORIGINAL_TYPE..OFF_ORIGINAL_TYPE + 2]
        .copy_from_slice(&header.page_type.to_u16().to_le_bytes());
    // `payload_len < page size <= 64 KiB`: it fits a u32.
    out[OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 4]
        .copy_from_slice(&u32::try_from(payload_len).unwrap_or(u32::MAX).to_le_bytes());
    out[OFF_RESERVED] = 0;
    out[OFF_SPACE_ID..OFF_SPACE_ID + 4].copy_from_slice(&header.space_id.to_le_bytes());
    let crc = barracuda_page::crc32c(&out[4..stored_len]);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
    stored_len
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Checks an envelope without decompressing it, in this order: the image is at most a page
/// and holds a header; the type is 17; the payload length fits the page; the checksum over the
/// stored bytes matches (a torn or damaged image fails here); the algorithm, original type and
/// reserved byte are valid; the page number and space id are `expected`'s.
pub fn verify_envelope(
    image: &[u8],
    expected: PageId,
    page_size: PageSize,
) -> Result<EnvelopeHeader, PageCompressionError> {
    let bad = |what: String| PageCompressionError::Envelope {
        page: expected,
        what,
    };
    if image.len() > page_size.bytes() || image.len() < PAYLOAD_START {
        return Err(bad(format!(
            "image of {} bytes (a page holds {}, the header {PAYLOAD_START})",
            image.len(),
            page_size.bytes()
        )));
    }
    let page_type = u16_at(image, OFF_TYPE).unwrap_or(0);
    if page_type != PAGE_COMPRESSED {
        return Err(bad(format!(
            "page type {page_type}, expected {PAGE_COMPRESSED} (page-compressed)"
        )));
    }
    let payload_len = u32_at(image, OFF_PAYLOAD_LEN).unwrap_or(u32::MAX) as usize;
    let stored_len = PAYLOAD_START.saturating_add(payload_len);
    if stored_len > image.len() {
        return Err(bad(format!(
            "payload length {payload_len} runs past the {}-byte image",
            image.len()
        )));
    }
    let stored = u32_at(image, 0).unwrap_or(0);
    let computed = barracuda_page::crc32c(image.get(4..stored_len).unwrap_or(&[]));
    if stored != computed {
        return Err(PageCompressionError::Checksum {
            page: expected,
            stored,
            computed,
        });
    }
    let algorithm = image
        .get(OFF_ALGORITHM)
        .copied()
        .and_then(AlgorithmCode::from_code)
        .ok_or_else(|| bad(format!("unknown algorithm {:?}", image.get(OFF_ALGORITHM))))?;
    let raw_original = u16_at(image, OFF_ORIGINAL_TYPE).unwrap_or(u16::MAX);
    let original_type = PageType::from_u16(raw_original)
        .ok_or_else(|| bad(format!("unknown original page type {raw_original}")))?;
    if image.get(OFF_RESERVED) != Some(&0) {
        return Err(bad("reserved byte is not zero".into()));
    }
    let page_no = u32_at(image, 4).unwrap_or(0);
    let space_id = u32_at(image, OFF_SPACE_ID).unwrap_or(0);
    if page_no != expected.page_no || space_id != expected.space_id {
        return Err(bad(format!(
            "the image belongs to page {space_id}:{page_no}"
        )));
    }
    Ok(EnvelopeHeader {
        page_id: expected,
        lsn: u64_at(image, 16).unwrap_or(0),
        algorithm,
        original_type,
        stored_len,
    })
}

/// The prev and next links the envelope carries for the original header.
pub(crate) fn links(image: &[u8]) -> (u32, u32) {
    (
        u32_at(image, 8).unwrap_or(0),
        u32_at(image, 12).unwrap_or(0),
    )
}
