//! Overflow pages: the chain of pages holding the part of a large value that is not inline.
//!
//! Format: `{ FIL header (next = next page of the chain or FIL_NULL, prev = previous page or
//! FIL_NULL) | payload_len u32 @38 | reserved u32 @42 (0) | payload @46 | zero padding | trailer }`.
//! InnoDB: FIL_PAGE_TYPE_BLOB with BTR_BLOB_HDR_PART_LEN / BTR_BLOB_HDR_NEXT_PAGE_NO; we keep the
//! next pointer in the file header instead of duplicating it.

use crate::bytes::{put, put_u16, put_u32, slice_at, u32_at, zero};
use crate::error::PageError;
use crate::header::{
    check_type, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE, OFF_NEXT, OFF_PAGE_TYPE,
};
use crate::ids::{PageNo, PageSize};

/// Offset of the payload length (u32).
pub const OFF_PAYLOAD_LEN: usize = FIL_HEADER_SIZE;
/// Offset of a reserved u32 (MUST be 0).
pub const OFF_OVERFLOW_RESERVED: usize = FIL_HEADER_SIZE + 4;
/// Offset of the first payload byte.
pub const OVERFLOW_PAYLOAD_START: usize = FIL_HEADER_SIZE + 8;

/// Payload bytes one overflow page holds: `page_size - 46 - 8` (16330 at 16 KiB).
pub const fn payload_capacity(page_size: PageSize) -> usize {
    page_size.bytes() - OVERFLOW_PAYLOAD_START - FIL_TRAILER_SIZE
}

/// Pages needed to store `len` bytes in an overflow chain.
pub const fn pages_for(len: u64, page_size: PageSize) -> u64 {
    len.div_ceil(payload_capacity(page_size) as u64)
}

/// A decoded overflow page: its payload and the next page of the chain.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OverflowPage<'a> {
    /// This page's part of the value.
    pub payload: &'a [u8],
    /// The next page of the chain, or `FIL_NULL` at the end.
    pub next: PageNo,
}

impl<'a> OverflowPage<'a> {
    /// Decodes an overflow page. Fails on a wrong size or page type, or with
    /// [`PageError::Corrupt`] when the payload length exceeds the capacity or the reserved field
    /// is not zero. Never panics.
    pub fn read(buf: &'a [u8], page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf, page_size, PageType::Overflow)?;
        let corrupt = |what: String| PageError::corrupt(header.page_id(), what);
        let len = u32_at(buf, OFF_PAYLOAD_LEN).unwrap_or(u32::MAX) as usize;
        if len > payload_capacity(page_size) {
            return Err(corrupt(format!(
                "overflow payload length {len} exceeds capacity"
            )));
        }
        if u32_at(buf, OFF_OVERFLOW_RESERVED) != Some(0) {
            return Err(corrupt("overflow reserved field is not zero".into()));
        }
        let payload = slice_at(buf, OVERFLOW_PAYLOAD_START, len)
            .ok_or_else(|| corrupt("overflow payload out of bounds".into()))?;
        Ok(Self {
            payload,
            next: header.next,
        })
    }

    /// Formats the body of an overflow page: sets the page type to `Overflow` and the next link,
    /// writes as much of `payload` as fits and zero-fills the rest of the payload area. Returns
    /// the number of payload bytes consumed (`min(payload.len(), payload_capacity)`).
    ///
    /// Leaves page number, space id, prev link and LSN to the caller (via
    /// [`FileHeader`](crate::FileHeader)); fails only with [`PageError::WrongSize`].
    pub fn write(
        buf: &mut [u8],
        page_size: PageSize,
        payload: &[u8],
        next: PageNo,
    ) -> Result<usize, PageError> {
        if buf.len() != page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: page_size.bytes(),
                found: buf.len(),
            });
        }
        let n = payload.len().min(payload_capacity(page_size));
        let part = payload.get(..n).unwrap_or(&[]);
        put_u16(buf, OFF_PAGE_TYPE, PageType::Overflow.to_u16());
        put_u32(buf, OFF_NEXT, next);
        put_u32(buf, OFF_PAYLOAD_LEN, n as u32);
        put_u32(buf, OFF_OVERFLOW_RESERVED, 0);
        put(buf, OVERFLOW_PAYLOAD_START, part);
        zero(
            buf,
            OVERFLOW_PAYLOAD_START + n,
            page_size.bytes() - FIL_TRAILER_SIZE,
        );
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{seal_page, verify_page, FileHeader, PageId, FIL_NULL};

    #[test]
    fn a_value_round_trips_through_a_chain() {
        let ps = PageSize::K4;
        let value: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut pages = Vec::new();
        let mut rest = value.as_slice();
        let count = pages_for(value.len() as u64, ps);
        for no in 0..count as u32 {
            let mut buf = vec![0u8; ps.bytes()];
            let mut h = FileHeader::new(PageId::new(1, 10 + no), PageType::Overflow);
            h.prev = if no == 0 { FIL_NULL } else { 9 + no };
            h.write(&mut buf);
            let next = if u64::from(no) + 1 == count {
                FIL_NULL
            } else {
                11 + no
            };
            let used = OverflowPage::write(&mut buf, ps, rest, next).expect("right size");
            rest = rest.get(used..).unwrap_or(&[]);
            seal_page(&mut buf);
            assert_eq!(verify_page(&buf, PageId::new(1, 10 + no), ps), Ok(()));
            pages.push(buf);
        }
        assert!(rest.is_empty());
        let mut back = Vec::new();
        for (i, buf) in pages.iter().enumerate() {
            let page = OverflowPage::read(buf, ps).expect("valid");
            back.extend_from_slice(page.payload);
            assert_eq!(page.next == FIL_NULL, i + 1 == pages.len());
        }
        assert_eq!(back, value);
    }

    #[test]
    fn bad_lengths_are_corrupt_not_panics() {
        let ps = PageSize::K4;
        let mut buf = vec![0u8; ps.bytes()];
        OverflowPage::write(&mut buf, ps, b"abc", FIL_NULL).expect("right size");
        put_u32(&mut buf, OFF_PAYLOAD_LEN, u32::MAX);
        assert!(matches!(
            OverflowPage::read(&buf, ps),
            Err(PageError::Corrupt { .. })
        ));
        assert!(OverflowPage::read(buf.get(..100).unwrap_or(&[]), ps).is_err());
    }
}
