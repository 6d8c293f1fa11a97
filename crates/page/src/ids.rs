//! Identifiers and sizes shared by every layer: page size, page id, LSN.

use std::fmt;

/// A log sequence number: a byte position in the (logical, ever-growing) redo stream.
///
/// Pages carry the LSN of their newest change; `0` means "never changed under the log".
pub type Lsn = u64;

/// Tablespace id. Space 0 is the system tablespace (`system.ibs`, the catalog).
pub type SpaceId = u32;

/// Page number inside one tablespace: the page lives at byte `page_no * page_size` of its file.
pub type PageNo = u32;

/// The "no page" value for prev/next links and child pointers (InnoDB: `FIL_NULL`).
pub const FIL_NULL: PageNo = u32::MAX;

/// Identity of a page: which tablespace, which page in it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct PageId {
    /// The tablespace the page belongs to.
    pub space_id: SpaceId,
    /// The page's number inside its tablespace.
    pub page_no: PageNo,
}

impl PageId {
    /// Builds a page id.
    pub const fn new(space_id: SpaceId, page_no: PageNo) -> Self {
        Self { space_id, page_no }
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {}:{}", self.space_id, self.page_no)
    }
}

/// The page size of a database, chosen once at creation (InnoDB: `innodb_page_size`).
///
/// Default = 16 KiB. Allowed: 4, 8, 16, 32 and 64 KiB. Larger pages compress better under hole
/// punching on 4 KiB file-system blocks; smaller ones waste less on random point reads.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
pub enum PageSize {
    /// 4 KiB pages.
    K4,
    /// 8 KiB pages.
    K8,
    /// 16 KiB pages (the default, as InnoDB's).
    #[default]
    K16,
    /// 32 KiB pages.
    K32,
    /// 64 KiB pages.
    K64,
}

impl PageSize {
    /// All supported sizes, smallest first.
    pub const ALL: [PageSize; 5] = [Self::K4, Self::K8, Self::K16, Self::K32, Self::K64];

    /// The size in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Self::K4 => 4 << 10,
            Self::K8 => 8 << 10,
            Self::K16 => 16 << 10,
            Self::K32 => 32 << 10,
            Self::K64 => 64 << 10,
        }
    }

    /// `log2(bytes)`, the form stored on disk (12..=16).
    pub const fn shift(self) -> u8 {
        match self {
            Self::K4 => 12,
            Self::K8 => 13,
            Self::K16 => 14,
            Self::K32 => 15,
            Self::K64 => 16,
        }
    }

    /// The size with `bytes` bytes, or `None` if that is not a supported page size.
    pub const fn from_bytes(bytes: usize) -> Option<Self> {
        match bytes {
            4096 => Some(Self::K4),
            8192 => Some(Self::K8),
            16384 => Some(Self::K16),
            32768 => Some(Self::K32),
            65536 => Some(Self::K64),
            _ => None,
        }
    }

    /// The size whose [`shift`](Self::shift) is `shift`, or `None`.
    pub const fn from_shift(shift: u8) -> Option<Self> {
        match shift {
            12 => Some(Self::K4),
            13 => Some(Self::K8),
            14 => Some(Self::K16),
            15 => Some(Self::K32),
            16 => Some(Self::K64),
            _ => None,
        }
    }

    /// Pages per extent: the unit of allocation and of read-ahead. An extent is 1 MiB
    /// (64 pages at 16 KiB), as in InnoDB for page sizes up to 16 KiB; 64 pages for larger ones.
    pub const fn pages_per_extent(self) -> u32 {
        match self {
            Self::K4 => 256,
            Self::K8 => 128,
            Self::K16 | Self::K32 | Self::K64 => 64,
        }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} KiB", self.bytes() >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_round_trips_through_bytes_and_shift() {
        for size in PageSize::ALL {
            assert_eq!(PageSize::from_bytes(size.bytes()), Some(size));
            assert_eq!(PageSize::from_shift(size.shift()), Some(size));
            assert_eq!(1usize << size.shift(), size.bytes());
        }
        assert_eq!(PageSize::from_bytes(1000), None);
        assert_eq!(PageSize::from_shift(11), None);
    }
}

/// A small multiplicative hasher for page ids (two `u32`s), for hash maps keyed by [`PageId`]:
/// much cheaper than SipHash. Not collision-resistant: use it where the number of keys is
/// bounded by memory the caller sized (the buffer pool, recovery's page cache), so that crafted
/// ids can slow lookups down but not make them unbounded.
#[derive(Default, Clone, Copy, Debug)]
pub struct PageIdHasher(u64);

/// The [`std::hash::BuildHasher`] of [`PageIdHasher`]: `HashMap<PageId, V, PageIdBuildHasher>`.
pub type PageIdBuildHasher = std::hash::BuildHasherDefault<PageIdHasher>;

impl std::hash::Hasher for PageIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
