//! Page 0 of every tablespace (the space header) and the allocation bitmap pages.
//!
//! Format (offsets from the page start, `P` = page size):
//! `{ FIL header | magic u32 @38 | format_version u32 @42 | space_id u32 @46 | page_size_shift u8
//!    @50 | reserved u8 @51 | flags u32 @52 | size_in_pages u32 @56 | free_hint u32 @60 |
//!    reserved [16] @64 | bitmap [P/2] @80 | reserved zeros | trailer }`.
//! Page 0 carries [`SPACE_MAGIC`] and all fields; a further bitmap page (page number a non-zero
//! multiple of [`pages_per_bitmap`]) carries [`BITMAP_MAGIC`], the same version, space id and
//! shift, and zeros in the other header fields. Both use page type `SpaceHeader`.
//! InnoDB: FSP_HDR on page 0 and XDES pages every `page_size` pages; we keep one bit per page
//! instead of extent descriptors with lists.

use crate::bytes::{put_u32, put_u8, u32_at, u8_at};
use crate::error::PageError;
use crate::header::{check_type, claimed_page_id, FileHeader, PageType, FIL_HEADER_SIZE};
use crate::ids::{PageId, PageNo, PageSize, SpaceId};

/// Magic of page 0 (ASCII `"BRCS"`, little-endian).
pub const SPACE_MAGIC: u32 = u32::from_le_bytes(*b"BRCS");
/// Magic of a further allocation bitmap page (ASCII `"BRCB"`, little-endian).
pub const BITMAP_MAGIC: u32 = u32::from_le_bytes(*b"BRCB");
/// The space header format version written by this crate.
pub const SPACE_FORMAT_VERSION: u32 = 1;

/// Offset of the magic (u32).
pub const OFF_SPACE_MAGIC: usize = FIL_HEADER_SIZE;
/// Offset of the format version (u32).
pub const OFF_SPACE_VERSION: usize = FIL_HEADER_SIZE + 4;
/// Offset of the space id copy (u32).
pub const OFF_SPACE_SPACE_ID: usize = FIL_HEADER_SIZE + 8;
/// Offset of `log2(page size)` (u8).
pub const OFF_SPACE_PAGE_SHIFT: usize = FIL_HEADER_SIZE + 12;
/// Offset of the flags (u32).
pub const OFF_SPACE_FLAGS: usize = FIL_HEADER_SIZE + 14;
/// Offset of the size in pages (u32).
pub const OFF_SPACE_SIZE: usize = FIL_HEADER_SIZE + 18;
/// Offset of the free-page hint (u32).
pub const OFF_SPACE_FREE_HINT: usize = FIL_HEADER_SIZE + 22;
/// Offset of the allocation bitmap.
pub const BITMAP_START: usize = 80;
/// The bytes of page 0 that change as pages are allocated and freed: the size in pages and
/// the free-page hint ([`SpaceHeader::write_counters`] writes them and nothing else).
pub const SPACE_COUNTERS: std::ops::Range<usize> = OFF_SPACE_SIZE..OFF_SPACE_FREE_HINT + 4;

/// Flags bits 0..=3: ROW_FORMAT=COMPRESSED block size as `ssize` (0 = not compressed, else
/// KEY_BLOCK_SIZE = `512 << ssize`, 1..=5). InnoDB: FSP_FLAGS_ZIP_SSIZE.
pub const FLAG_ZIP_SSIZE_MASK: u32 = 0xF;
/// Flags bits 4..=5: page compression algorithm (0 none, 1 zlib, 2 lz4, 3 reserved).
pub const FLAG_PAGE_COMPRESSION_MASK: u32 = 0x3 << 4;
/// Flags bits 6..=9: page compression level (0..=9; 0 = algorithm default).
pub const FLAG_COMPRESSION_LEVEL_MASK: u32 = 0xF << 6;
/// Flags bits that MUST be zero in this format version.
pub const FLAG_RESERVED_MASK: u32 =
    !(FLAG_ZIP_SSIZE_MASK | FLAG_PAGE_COMPRESSION_MASK | FLAG_COMPRESSION_LEVEL_MASK);

/// Pages tracked by one bitmap: `4 * page_size` (65536 pages = 1 GiB at 16 KiB), whose bits take
/// half a page. Bitmap pages sit at page numbers `k * pages_per_bitmap` (page 0 for `k = 0`).
pub const fn pages_per_bitmap(page_size: PageSize) -> u32 {
    (page_size.bytes() * 4) as u32
}

/// The page holding the allocation bit of `page_no`.
pub const fn bitmap_page_for(page_no: PageNo, page_size: PageSize) -> PageNo {
    page_no - page_no % pages_per_bitmap(page_size)
}

/// The index of `page_no`'s bit in its bitmap page.
pub const fn bit_index(page_no: PageNo, page_size: PageSize) -> u32 {
    page_no % pages_per_bitmap(page_size)
}

/// Whether `page_no` is a space header or bitmap page (never allocatable).
pub const fn is_bitmap_page(page_no: PageNo, page_size: PageSize) -> bool {
    bit_index(page_no, page_size) == 0
}

/// The fields of page 0 of a tablespace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpaceHeader {
    /// The tablespace id (also in the file header).
    pub space_id: SpaceId,
    /// The page size of every page of the file.
    pub page_size: PageSize,
    /// Row/page compression flags; see the `FLAG_*` masks. Reserved bits MUST be 0.
    pub flags: u32,
    /// The file's high-water mark: pages `0..size_in_pages` exist in the file.
    pub size_in_pages: u32,
    /// A page number at or below which no free page is expected; a hint only, readers MUST NOT
    /// rely on it for correctness.
    pub free_hint: u32,
}

impl SpaceHeader {
    /// Reads the page size from the first 51 bytes of a tablespace (before the page size is
    /// known), checking the page type and magic.
    pub fn peek_page_size(prefix: &[u8]) -> Result<PageSize, PageError> {
        let id = claimed_page_id(prefix);
        let header = FileHeader::read(prefix)?;
        if header.page_type != PageType::SpaceHeader
            || u32_at(prefix, OFF_SPACE_MAGIC) != Some(SPACE_MAGIC)
        {
            return Err(PageError::corrupt(id, "not a space header page"));
        }
        let shift = u8_at(prefix, OFF_SPACE_PAGE_SHIFT).unwrap_or(0);
        PageSize::from_shift(shift)
            .ok_or_else(|| PageError::corrupt(id, format!("bad page size shift {shift}")))
    }

    /// Decodes page 0. Fails on a wrong size or type, or with [`PageError::Corrupt`] for a bad
    /// magic, version, page size shift (it must match `page_size`), space id (it must match the
    /// file header's), reserved flag bits or non-zero reserved bytes. Never panics.
    pub fn read(buf: &[u8], page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf, page_size, PageType::SpaceHeader)?;
        let corrupt = |what: String| Err(PageError::corrupt(header.page_id(), what));
        if u32_at(buf, OFF_SPACE_MAGIC) != Some(SPACE_MAGIC) {
            return corrupt("space header magic missing".into());
        }
        let version = u32_at(buf, OFF_SPACE_VERSION).unwrap_or(0);
        if version != SPACE_FORMAT_VERSION {
            return corrupt(format!("unsupported space format version {version}"));
        }
        if u8_at(buf, OFF_SPACE_PAGE_SHIFT) != Some(page_size.shift()) {
            return corrupt("page size shift does not match the page size".into());
        }
        let space_id = u32_at(buf, OFF_SPACE_SPACE_ID).unwrap_or(0);
        if space_id != header.space_id {
            return corrupt(format!(
                "space id {space_id} != file header's {}",
                header.space_id
            ));
        }
        let flags = u32_at(buf, OFF_SPACE_FLAGS).unwrap_or(0);
        if flags & FLAG_RESERVED_MASK != 0 {
            return corrupt(format!("reserved space flags set: {flags:#x}"));
        }
        let reserved_zero = u8_at(buf, OFF_SPACE_PAGE_SHIFT + 1) == Some(0)
            && buf
                .get(OFF_SPACE_FREE_HINT + 4..BITMAP_START)
                .is_some_and(|r| r.iter().all(|&b| b == 0));
        if !reserved_zero {
            return corrupt("reserved space header bytes are not zero".into());
        }
        Ok(Self {
            space_id,
            page_size,
            flags,
            size_in_pages: u32_at(buf, OFF_SPACE_SIZE).unwrap_or(0),
            free_hint: u32_at(buf, OFF_SPACE_FREE_HINT).unwrap_or(0),
        })
    }

    /// Writes the page type and the space header fields into `buf` (page 0), leaving the rest
    /// of the file header and the bitmap unchanged.
    pub fn write(&self, buf: &mut [u8]) {
        crate::bytes::put_u16(
            buf,
            crate::header::OFF_PAGE_TYPE,
            PageType::SpaceHeader.to_u16(),
        );
        put_u32(buf, OFF_SPACE_MAGIC, SPACE_MAGIC);
        put_u32(buf, OFF_SPACE_VERSION, SPACE_FORMAT_VERSION);
        put_u32(buf, OFF_SPACE_SPACE_ID, self.space_id);
        put_u8(buf, OFF_SPACE_PAGE_SHIFT, self.page_size.shift());
        put_u32(buf, OFF_SPACE_FLAGS, self.flags);
        put_u32(buf, OFF_SPACE_SIZE, self.size_in_pages);
        put_u32(buf, OFF_SPACE_FREE_HINT, self.free_hint);
    }

    /// Writes only the size in pages and the free-page hint ([`SPACE_COUNTERS`]) into `buf`
    /// (page 0): what an allocation or a free changes in the header, as a write of a few
    /// bytes a log can describe instead of diffing the page for it.
    pub fn write_counters(&self, buf: &mut [u8]) {
        put_u32(buf, OFF_SPACE_SIZE, self.size_in_pages);
        put_u32(buf, OFF_SPACE_FREE_HINT, self.free_hint);
    }

    /// Formats a whole page 0: zeroes `buf`, writes the file header (page 0 of `space_id`,
    /// no links, LSN 0), the fields, and marks page 0 used in the bitmap.
    pub fn format(&self, buf: &mut [u8]) -> Result<(), PageError> {
        if buf.len() != self.page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: self.page_size.bytes(),
                found: buf.len(),
            });
        }
        buf.fill(0);
        FileHeader::new(PageId::new(self.space_id, 0), PageType::SpaceHeader).write(buf);
        self.write(buf);
        AllocationBitmap::open(buf, self.page_size)?.set_used(0, true)
    }
}

/// Formats `buf` as the allocation bitmap page `page_no` (a non-zero multiple of
/// [`pages_per_bitmap`]) of `space_id`, with only its own bit (bit 0) set.
pub fn format_bitmap_page(
    buf: &mut [u8],
    page_size: PageSize,
    space_id: SpaceId,
    page_no: PageNo,
) -> Result<(), PageError> {
    if buf.len() != page_size.bytes() {
        return Err(PageError::WrongSize {
            expected: page_size.bytes(),
            found: buf.len(),
        });
    }
    if page_no == 0 || !is_bitmap_page(page_no, page_size) {
        return Err(PageError::Invalid {
            what: format!("page {page_no} is not a bitmap page number"),
        });
    }
    buf.fill(0);
    FileHeader::new(PageId::new(space_id, page_no), PageType::SpaceHeader).write(buf);
    put_u32(buf, OFF_SPACE_MAGIC, BITMAP_MAGIC);
    put_u32(buf, OFF_SPACE_VERSION, SPACE_FORMAT_VERSION);
    put_u32(buf, OFF_SPACE_SPACE_ID, space_id);
    put_u8(buf, OFF_SPACE_PAGE_SHIFT, page_size.shift());
    AllocationBitmap::open(buf, page_size)?.set_used(0, true)
}

/// A view of the allocation bitmap of page 0 or of a further bitmap page: bit `i` (byte `i / 8`,
/// mask `1 << (i % 8)`) is 1 when page `bitmap_page_no + i` is in use.
#[derive(Debug)]
pub struct AllocationBitmap<B> {
    buf: B,
    page_size: PageSize,
}

impl<B: AsRef<[u8]>> AllocationBitmap<B> {
    /// Opens the bitmap of a space header or bitmap page; fails on a wrong size, type, magic or
    /// page size shift. Never panics.
    pub fn open(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf.as_ref(), page_size, PageType::SpaceHeader)?;
        let b = buf.as_ref();
        let magic = u32_at(b, OFF_SPACE_MAGIC);
        if magic != Some(SPACE_MAGIC) && magic != Some(BITMAP_MAGIC) {
            return Err(PageError::corrupt(
                header.page_id(),
                "allocation bitmap magic missing",
            ));
        }
        if u8_at(b, OFF_SPACE_PAGE_SHIFT) != Some(page_size.shift()) {
            return Err(PageError::corrupt(
                header.page_id(),
                "page size shift does not match",
            ));
        }
        Ok(Self { buf, page_size })
    }

    fn bits(&self) -> &[u8] {
        let len = pages_per_bitmap(self.page_size) as usize / 8;
        self.buf
            .as_ref()
            .get(BITMAP_START..BITMAP_START + len)
            .unwrap_or(&[])
    }

    /// Number of pages this bitmap tracks ([`pages_per_bitmap`]).
    pub fn capacity(&self) -> u32 {
        pages_per_bitmap(self.page_size)
    }

    /// Whether page `i` (relative to this bitmap's page) is used. Indexes beyond
    /// [`capacity`](Self::capacity) read as used, so they are never handed out.
    pub fn is_used(&self, i: u32) -> bool {
        self.bits()
            .get(i as usize / 8)
            .is_none_or(|&byte| byte & (1 << (i % 8)) != 0)
    }

    /// The first free index `>= from`, if any.
    pub fn find_free(&self, from: u32) -> Option<u32> {
        let bits = self.bits();
        let mut i = from;
        while i < self.capacity() {
            let byte = *bits.get(i as usize / 8)?;
            if byte == 0xFF && i.is_multiple_of(8) {
                i += 8;
                continue;
            }
            if byte & (1 << (i % 8)) == 0 {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// The first index `>= from`, aligned to `run` (a non-zero multiple of 8, such as
    /// [`PageSize::pages_per_extent`]), starting `run` consecutive free pages: a whole free
    /// extent. `None` if there is none or `run` is not a non-zero multiple of 8.
    pub fn find_free_run(&self, from: u32, run: u32) -> Option<u32> {
        if run == 0 || !run.is_multiple_of(8) {
            return None;
        }
        let bytes = (run / 8) as usize;
        let first = from.div_ceil(run) as usize;
        self.bits()
            .chunks_exact(bytes)
            .enumerate()
            .skip(first)
            .find(|(_, chunk)| chunk.iter().all(|&b| b == 0))
            .map(|(k, _)| k as u32 * run)
    }

    /// Number of used pages tracked by this bitmap.
    pub fn count_used(&self) -> u32 {
        self.bits().iter().map(|b| b.count_ones()).sum()
    }
}

/// The offset in its bitmap page of the byte that holds bit `i` (a page's
/// [`bit_index`]): the one byte [`AllocationBitmap::set_used`] changes.
pub const fn bitmap_byte_offset(i: u32) -> usize {
    BITMAP_START + i as usize / 8
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> AllocationBitmap<B> {
    /// Marks page `i` used or free. Fails with [`PageError::OutOfRange`] beyond the capacity.
    pub fn set_used(&mut self, i: u32, used: bool) -> Result<(), PageError> {
        let len = pages_per_bitmap(self.page_size) as usize / 8;
        let out = PageError::OutOfRange {
            index: i as usize,
            len: self.capacity() as usize,
        };
        let byte = self
            .buf
            .as_mut()
            .get_mut(BITMAP_START..BITMAP_START + len)
            .and_then(|bits| bits.get_mut(i as usize / 8))
            .ok_or(out)?;
        if used {
            *byte |= 1 << (i % 8);
        } else {
            *byte &= !(1 << (i % 8));
        }
        Ok(())
    }

    /// Marks pages `start..start + count` used or free (for whole extents).
    pub fn set_range(&mut self, start: u32, count: u32, used: bool) -> Result<(), PageError> {
        for i in start..start.saturating_add(count) {
            self.set_used(i, used)?;
        }
        Ok(())
    }
}

// The space header round trip at every page size (peek, fresh bitmap, sealing, refusal at
// another size) is the testkit's `law_space_header_round_trip`.
#[cfg(test)]
mod tests {
    use super::*;

    fn header(ps: PageSize) -> SpaceHeader {
        SpaceHeader {
            space_id: 7,
            page_size: ps,
            flags: 3 | (2 << 4) | (6 << 6),
            size_in_pages: 1000,
            free_hint: 5,
        }
    }

    #[test]
    fn header_rejects_reserved_flags_and_bad_magic() {
        let ps = PageSize::K4;
        let mut buf = vec![0u8; ps.bytes()];
        let mut h = header(ps);
        h.flags = 1 << 20;
        h.format(&mut buf).expect("format");
        assert!(matches!(
            SpaceHeader::read(&buf, ps),
            Err(PageError::Corrupt { .. })
        ));
        header(ps).format(&mut buf).expect("format");
        put_u32(&mut buf, OFF_SPACE_MAGIC, 0);
        assert!(SpaceHeader::read(&buf, ps).is_err());
        assert!(SpaceHeader::read(&buf, PageSize::K8).is_err());
    }

    #[test]
    fn bitmap_positions() {
        let ps = PageSize::K16;
        let per = pages_per_bitmap(ps);
        assert_eq!(per, 65536);
        assert_eq!(bitmap_page_for(5, ps), 0);
        assert_eq!(bitmap_page_for(per + 3, ps), per);
        assert_eq!(bit_index(per + 3, ps), 3);
        assert!(is_bitmap_page(2 * per, ps));
        for ps in PageSize::ALL {
            // The bitmap fits in the page, and each bitmap covers whole extents.
            assert!(BITMAP_START + pages_per_bitmap(ps) as usize / 8 <= ps.bytes() - 8);
            assert_eq!(pages_per_bitmap(ps) % ps.pages_per_extent(), 0);
        }
    }

    #[test]
    fn allocate_free_and_find() {
        let ps = PageSize::K4;
        let mut buf = vec![0u8; ps.bytes()];
        format_bitmap_page(&mut buf, ps, 3, pages_per_bitmap(ps)).expect("format");
        let mut bm = AllocationBitmap::open(&mut buf, ps).expect("open");
        assert_eq!(bm.find_free(0), Some(1));
        bm.set_range(1, 20, true).expect("in range");
        assert_eq!(bm.find_free(0), Some(21));
        bm.set_used(9, false).expect("in range");
        assert_eq!(bm.find_free(0), Some(9));
        assert_eq!(bm.count_used(), 20);
        let ext = ps.pages_per_extent();
        assert_eq!(bm.find_free_run(0, ext), Some(ext));
        bm.set_used(ext + 5, true).expect("in range");
        assert_eq!(bm.find_free_run(0, ext), Some(2 * ext));
        assert!(bm.set_used(bm.capacity(), true).is_err());
        assert!(bm.is_used(bm.capacity()));
        bm.set_range(0, bm.capacity(), true).expect("in range");
        assert_eq!(bm.find_free(0), None);
        assert_eq!(bm.count_used(), bm.capacity());
        assert!(format_bitmap_page(&mut [0u8; 4096], ps, 3, 5).is_err());
    }
}
