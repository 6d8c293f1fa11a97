//! The 38-byte file header and 8-byte trailer every page carries; checksums and verification.
//!
//! Format (offsets from the page start, `P` = page size):
//! `{ checksum u32 | page_no u32 | prev u32 | next u32 | lsn u64 | page_type u16 |
//!    type_specific u64 | space_id u32 } ... body ... { lsn_low u32 | magic u32 }` at `P - 8`.
//! InnoDB: FIL_PAGE_SPACE_OR_CHKSUM .. FIL_PAGE_ARCH_LOG_NO_OR_SPACE_ID, FIL_PAGE_END_LSN_OLD_CHKSUM.

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::error::PageError;
use crate::ids::{Lsn, PageId, PageNo, PageSize, SpaceId};

/// Size of the file header at the start of every page.
pub const FIL_HEADER_SIZE: usize = 38;
/// Size of the trailer at the end of every page.
pub const FIL_TRAILER_SIZE: usize = 8;
/// Format magic in the last 4 bytes of every sealed page: ASCII `"BRC1"` read as a
/// little-endian u32. It names the checksum algorithm (CRC-32C over bytes `4..P`) and the page
/// format version, so that all-zero, foreign and garbage pages are told apart from torn ones.
pub const TRAILER_MAGIC: u32 = u32::from_le_bytes(*b"BRC1");

/// Offset of the CRC-32C checksum.
pub const OFF_CHECKSUM: usize = 0;
/// Offset of the page number.
pub const OFF_PAGE_NO: usize = 4;
/// Offset of the previous page number (same level / chain), or [`FIL_NULL`](crate::FIL_NULL).
pub const OFF_PREV: usize = 8;
/// Offset of the next page number (same level / chain), or [`FIL_NULL`](crate::FIL_NULL).
pub const OFF_NEXT: usize = 12;
/// Offset of the page LSN.
pub const OFF_LSN: usize = 16;
/// Offset of the page type.
pub const OFF_PAGE_TYPE: usize = 24;
/// Offset of the 8-byte type-specific field.
pub const OFF_TYPE_SPECIFIC: usize = 26;
/// Offset of the space id.
pub const OFF_SPACE_ID: usize = 34;

/// What a page holds. Stored as a u16 at offset 24.
///
/// Unknown values, including the reserved ones listed as constants, decode to
/// [`PageError::UnknownPageType`] until the issue that implements them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PageType {
    /// Allocated but not (or no longer) in use (InnoDB: FIL_PAGE_TYPE_ALLOCATED). Value 0.
    Free,
    /// Page 0 of a tablespace (space header + first allocation bitmap) and the further
    /// allocation bitmap pages (InnoDB: FIL_PAGE_TYPE_FSP_HDR / XDES). Value 1.
    SpaceHeader,
    /// A B+tree node (InnoDB: FIL_PAGE_INDEX). Value 2.
    Index,
    /// A page of an overflow chain holding part of a large value (InnoDB: FIL_PAGE_TYPE_BLOB).
    /// Value 3.
    Overflow,
    /// A page of the catalog in `system.ibs`. Value 4.
    Catalog,
    /// A page of a transaction's undo log (InnoDB: FIL_PAGE_UNDO_LOG). Value 18.
    Undo,
    /// The transaction system page of the undo tablespace: the next transaction id, the
    /// history list, the active logs (InnoDB: FIL_PAGE_TYPE_TRX_SYS and the rollback segment
    /// header). Value 19.
    TrxSys,
}

impl PageType {
    /// Reserved: a ROW_FORMAT=COMPRESSED index page image (InnoDB: FIL_PAGE_INDEX on a zip page).
    pub const RESERVED_COMPRESSED_INDEX: u16 = 16;
    /// Reserved: a page-compressed (punch-hole) image (MariaDB: FIL_PAGE_PAGE_COMPRESSED).
    pub const RESERVED_PAGE_COMPRESSED: u16 = 17;

    /// The on-disk value.
    pub const fn to_u16(self) -> u16 {
        match self {
            Self::Free => 0,
            Self::SpaceHeader => 1,
            Self::Index => 2,
            Self::Overflow => 3,
            Self::Catalog => 4,
            Self::Undo => 18,
            Self::TrxSys => 19,
        }
    }

    /// The type with on-disk value `v`, or `None` for unknown and reserved values.
    pub const fn from_u16(v: u16) -> Option<Self> {
        match v {
            0 => Some(Self::Free),
            1 => Some(Self::SpaceHeader),
            2 => Some(Self::Index),
            3 => Some(Self::Overflow),
            4 => Some(Self::Catalog),
            18 => Some(Self::Undo),
            19 => Some(Self::TrxSys),
            _ => None,
        }
    }
}

/// The decoded file header of a page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileHeader {
    /// CRC-32C of the page except these 4 bytes, as stored (set by [`seal_page`]).
    pub checksum: u32,
    /// The page's own number in its tablespace.
    pub page_no: PageNo,
    /// Previous page on the same B-tree level / chain, or `FIL_NULL`.
    pub prev: PageNo,
    /// Next page on the same B-tree level / chain, or `FIL_NULL`.
    pub next: PageNo,
    /// LSN of the newest change applied to the page.
    pub lsn: Lsn,
    /// What the page holds.
    pub page_type: PageType,
    /// Type-specific 8 bytes; reserved (written 0) for all current types.
    pub type_specific: u64,
    /// The tablespace the page belongs to.
    pub space_id: SpaceId,
}

impl FileHeader {
    /// A header for a fresh page: no links (`FIL_NULL`), LSN 0, checksum 0, type-specific 0.
    pub const fn new(page_id: PageId, page_type: PageType) -> Self {
        Self {
            checksum: 0,
            page_no: page_id.page_no,
            prev: crate::FIL_NULL,
            next: crate::FIL_NULL,
            lsn: 0,
            page_type,
            type_specific: 0,
            space_id: page_id.space_id,
        }
    }

    /// The page's id as claimed by this header.
    pub const fn page_id(&self) -> PageId {
        PageId::new(self.space_id, self.page_no)
    }

    /// Decodes the header from the first 38 bytes of `buf`.
    ///
    /// Fails with [`PageError::WrongSize`] if `buf` is shorter than the header and with
    /// [`PageError::UnknownPageType`] for an unknown page type. Checks nothing else (use
    /// [`verify_page`] for that).
    pub fn read(buf: &[u8]) -> Result<Self, PageError> {
        let short = || PageError::WrongSize {
            expected: FIL_HEADER_SIZE,
            found: buf.len(),
        };
        let raw_type = u16_at(buf, OFF_PAGE_TYPE).ok_or_else(short)?;
        let page_no = u32_at(buf, OFF_PAGE_NO).ok_or_else(short)?;
        let space_id = u32_at(buf, OFF_SPACE_ID).ok_or_else(short)?;
        let page_type = PageType::from_u16(raw_type).ok_or(PageError::UnknownPageType {
            page: PageId::new(space_id, page_no),
            found: raw_type,
        })?;
        Ok(Self {
            checksum: u32_at(buf, OFF_CHECKSUM).ok_or_else(short)?,
            page_no,
            prev: u32_at(buf, OFF_PREV).ok_or_else(short)?,
            next: u32_at(buf, OFF_NEXT).ok_or_else(short)?,
            lsn: u64_at(buf, OFF_LSN).ok_or_else(short)?,
            page_type,
            type_specific: u64_at(buf, OFF_TYPE_SPECIFIC).ok_or_else(short)?,
            space_id,
        })
    }

    /// Writes all header fields (including the stored `checksum`) into the first 38 bytes.
    ///
    /// # Panics
    /// In debug builds, if `buf` is shorter than [`FIL_HEADER_SIZE`] (release builds write
    /// nothing out of bounds).
    pub fn write(&self, buf: &mut [u8]) {
        put_u32(buf, OFF_CHECKSUM, self.checksum);
        put_u32(buf, OFF_PAGE_NO, self.page_no);
        put_u32(buf, OFF_PREV, self.prev);
        put_u32(buf, OFF_NEXT, self.next);
        put_u64(buf, OFF_LSN, self.lsn);
        put_u16(buf, OFF_PAGE_TYPE, self.page_type.to_u16());
        put_u64(buf, OFF_TYPE_SPECIFIC, self.type_specific);
        put_u32(buf, OFF_SPACE_ID, self.space_id);
    }
}

/// The page id claimed by the header of `buf` (zeros where the buffer is too short). Used to
/// name pages in errors.
pub(crate) fn claimed_page_id(buf: &[u8]) -> PageId {
    PageId::new(
        u32_at(buf, OFF_SPACE_ID).unwrap_or(0),
        u32_at(buf, OFF_PAGE_NO).unwrap_or(0),
    )
}

/// Sets the page LSN field of a page (header only; [`seal_page`] copies it to the trailer).
pub fn set_page_lsn(buf: &mut [u8], lsn: Lsn) {
    put_u64(buf, OFF_LSN, lsn);
}

/// The page LSN stored in the header, or `None` if `buf` is shorter than the header.
pub fn page_lsn(buf: &[u8]) -> Option<Lsn> {
    u64_at(buf, OFF_LSN)
}

/// CRC-32C of a page except its checksum field (bytes `4..len`), as stored at offset 0.
///
/// Returns the CRC of the empty input for buffers of 4 bytes or fewer.
pub fn checksum(buf: &[u8]) -> u32 {
    crate::crc32c(buf.get(OFF_CHECKSUM + 4..).unwrap_or(&[]))
}

/// Seals a page just before it goes to disk: writes the trailer (low 32 bits of the header's
/// page LSN, then [`TRAILER_MAGIC`]) and then the checksum over the result.
///
/// `buf` must be a whole page; buffers shorter than header + trailer are left unchanged
/// (debug builds panic). After sealing, [`verify_page`] succeeds for the header's page id.
pub fn seal_page(buf: &mut [u8]) {
    let len = buf.len();
    debug_assert!(
        len >= FIL_HEADER_SIZE + FIL_TRAILER_SIZE,
        "seal_page: {len}-byte buffer"
    );
    if len < FIL_HEADER_SIZE + FIL_TRAILER_SIZE {
        return;
    }
    let lsn_low = u32_at(buf, OFF_LSN).unwrap_or(0);
    put_u32(buf, len - FIL_TRAILER_SIZE, lsn_low);
    put_u32(buf, len - 4, TRAILER_MAGIC);
    let crc = checksum(buf);
    put_u32(buf, OFF_CHECKSUM, crc);
}

/// Verifies a page read from disk, checking in this order (the first failure is returned):
///
/// 1. the length is `page_size` ([`PageError::WrongSize`]);
/// 2. the trailer magic; if it is wrong, an all-zero page gives [`PageError::AllZero`] (never
///    written) and anything else [`PageError::BadTrailerMagic`];
/// 3. the trailer LSN bits equal the low 32 bits of the header LSN ([`PageError::LsnMismatch`],
///    a torn write);
/// 4. the CRC-32C ([`PageError::ChecksumMismatch`]);
/// 5. the page type is known ([`PageError::UnknownPageType`]);
/// 6. the page number and then the space id are the expected ones ([`PageError::WrongPageNo`],
///    [`PageError::WrongSpaceId`]): the page is intact but misplaced.
///
/// It does not look inside the page body; type-specific decoders do that.
pub fn verify_page(buf: &[u8], expected: PageId, page_size: PageSize) -> Result<(), PageError> {
    let size = page_size.bytes();
    if buf.len() != size {
        return Err(PageError::WrongSize {
            expected: size,
            found: buf.len(),
        });
    }
    let magic = u32_at(buf, size - 4).unwrap_or(0);
    if magic != TRAILER_MAGIC {
        if buf.iter().all(|&b| b == 0) {
            return Err(PageError::AllZero { page: expected });
        }
        return Err(PageError::BadTrailerMagic {
            page: expected,
            found: magic,
        });
    }
    let header_low = u32_at(buf, OFF_LSN).unwrap_or(0);
    let trailer = u32_at(buf, size - FIL_TRAILER_SIZE).unwrap_or(0);
    if header_low != trailer {
        return Err(PageError::LsnMismatch {
            page: expected,
            header_low,
            trailer,
        });
    }
    let stored = u32_at(buf, OFF_CHECKSUM).unwrap_or(0);
    let computed = checksum(buf);
    if stored != computed {
        return Err(PageError::ChecksumMismatch {
            page: expected,
            stored,
            computed,
        });
    }
    let header = FileHeader::read(buf)?;
    if header.page_no != expected.page_no {
        return Err(PageError::WrongPageNo {
            expected,
            found: header.page_no,
        });
    }
    if header.space_id != expected.space_id {
        return Err(PageError::WrongSpaceId {
            expected,
            found: header.space_id,
        });
    }
    Ok(())
}

/// Checks that `buf` is one page of `page_size` whose header has type `expected`; returns the
/// header. Shared by the type-specific decoders.
/// [`check_type`] for hot paths: reads only the size and the type field when they match, and
/// decodes the whole header only to build the error.
#[inline]
pub(crate) fn check_type_only(
    buf: &[u8],
    page_size: PageSize,
    expected: PageType,
) -> Result<(), PageError> {
    if buf.len() == page_size.bytes()
        && crate::bytes::u16_at(buf, OFF_PAGE_TYPE) == Some(expected.to_u16())
    {
        return Ok(());
    }
    check_type(buf, page_size, expected).map(|_| ())
}

pub(crate) fn check_type(
    buf: &[u8],
    page_size: PageSize,
    expected: PageType,
) -> Result<FileHeader, PageError> {
    if buf.len() != page_size.bytes() {
        return Err(PageError::WrongSize {
            expected: page_size.bytes(),
            found: buf.len(),
        });
    }
    let header = FileHeader::read(buf)?;
    if header.page_type != expected {
        return Err(PageError::WrongPageType {
            page: header.page_id(),
            expected,
            found: header.page_type,
        });
    }
    Ok(header)
}

// The header round trip (and the short-buffer refusal) is the testkit's
// `law_file_header_round_trip`; single-bit flips anywhere, boundaries included, are
// `law_bit_flip_detected` (`crates/testkit/tests/{round_trips,bit_flips}.rs`).
#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(page_size: PageSize, id: PageId) -> Vec<u8> {
        let mut buf = vec![0u8; page_size.bytes()];
        let mut h = FileHeader::new(id, PageType::Index);
        h.lsn = 0x1234_5678_9abc_def0;
        h.prev = 7;
        h.write(&mut buf);
        for (i, b) in buf.iter_mut().enumerate().skip(FIL_HEADER_SIZE).take(500) {
            *b = (i * 31) as u8;
        }
        seal_page(&mut buf);
        buf
    }

    #[test]
    fn page_type_values_round_trip_and_reserved_are_unknown() {
        for v in 0..=u16::MAX {
            if let Some(t) = PageType::from_u16(v) {
                assert_eq!(t.to_u16(), v);
            }
        }
        for v in [
            PageType::RESERVED_COMPRESSED_INDEX,
            PageType::RESERVED_PAGE_COMPRESSED,
        ] {
            assert_eq!(PageType::from_u16(v), None);
        }
    }

    #[test]
    fn sealed_page_verifies_for_every_size() {
        for ps in PageSize::ALL {
            let id = PageId::new(3, 42);
            let buf = sealed(ps, id);
            assert_eq!(verify_page(&buf, id, ps), Ok(()));
            assert_eq!(page_lsn(&buf), Some(0x1234_5678_9abc_def0));
        }
    }

    #[test]
    fn verify_reports_why() {
        let ps = PageSize::K8;
        let id = PageId::new(2, 10);
        let buf = sealed(ps, id);
        let zero = vec![0u8; ps.bytes()];
        assert_eq!(
            verify_page(&zero, id, ps),
            Err(PageError::AllZero { page: id })
        );
        assert!(matches!(
            verify_page(buf.get(..4096).unwrap_or(&[]), id, ps),
            Err(PageError::WrongSize {
                expected: 8192,
                found: 4096
            })
        ));
        // Torn: header LSN changed without resealing.
        let mut torn = buf.clone();
        set_page_lsn(&mut torn, 99);
        assert!(matches!(
            verify_page(&torn, id, ps),
            Err(PageError::LsnMismatch { .. })
        ));
        let mut body = buf.clone();
        if let Some(b) = body.get_mut(100) {
            *b ^= 0xff;
        }
        assert!(matches!(
            verify_page(&body, id, ps),
            Err(PageError::ChecksumMismatch { .. })
        ));
        let mut garbage = buf.clone();
        put_u32(&mut garbage, ps.bytes() - 4, 0x1234);
        assert!(matches!(
            verify_page(&garbage, id, ps),
            Err(PageError::BadTrailerMagic { found: 0x1234, .. })
        ));
        assert_eq!(
            verify_page(&buf, PageId::new(2, 11), ps),
            Err(PageError::WrongPageNo {
                expected: PageId::new(2, 11),
                found: 10
            })
        );
        assert_eq!(
            verify_page(&buf, PageId::new(3, 10), ps),
            Err(PageError::WrongSpaceId {
                expected: PageId::new(3, 10),
                found: 2
            })
        );
        let mut unknown = buf;
        put_u16(&mut unknown, OFF_PAGE_TYPE, 999);
        seal_page(&mut unknown);
        assert!(matches!(
            verify_page(&unknown, id, ps),
            Err(PageError::UnknownPageType { found: 999, .. })
        ));
    }
}
