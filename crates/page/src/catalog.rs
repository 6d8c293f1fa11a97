//! Catalog pages in `system.ibs`: the list of tables (name, space, root page, options).
//!
//! Format: `{ FIL header (next = next catalog page or FIL_NULL) | magic u32 @38 | n_entries u16
//! @42 | flags u16 @44 | next_space_id u32 @46 | next_index_id u64 @50 | reserved [6] @58 |
//! entries [n_entries × 96] @64 | zeros | trailer }`. Entry:
//! `{ name_len u8 | row_format u8 | key_block_size u8 | page_compression u8 | compression_level u8
//! | reserved [3] | space_id u32 | root_page_no u32 | index_id u64 | flags u32 | reserved u32 |
//! name [64] (UTF-8, zero-padded) }`.
//! Field semantics are the engine's; this module keeps them byte-exact.

use crate::bytes::{
    get_array, put, put_u16, put_u32, put_u64, put_u8, u16_at, u32_at, u64_at, u8_at, zero,
};
use crate::error::PageError;
use crate::header::{
    check_type, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE, OFF_NEXT, OFF_PAGE_TYPE,
};
use crate::ids::{PageNo, PageSize, SpaceId};

/// Magic of a catalog page (ASCII `"BRCT"`, little-endian).
pub const CATALOG_MAGIC: u32 = u32::from_le_bytes(*b"BRCT");
/// Offset of the magic.
pub const OFF_CATALOG_MAGIC: usize = FIL_HEADER_SIZE;
/// Offset of the entry count (u16).
pub const OFF_CATALOG_N_ENTRIES: usize = FIL_HEADER_SIZE + 4;
/// Offset of the engine-defined flags (u16).
pub const OFF_CATALOG_FLAGS: usize = FIL_HEADER_SIZE + 6;
/// Offset of the next space id to hand out (u32).
pub const OFF_CATALOG_NEXT_SPACE_ID: usize = FIL_HEADER_SIZE + 8;
/// Offset of the next index id to hand out (u64).
pub const OFF_CATALOG_NEXT_INDEX_ID: usize = FIL_HEADER_SIZE + 12;
/// Offset of the first entry.
pub const CATALOG_ENTRIES_START: usize = 64;
/// Bytes of one entry.
pub const CATALOG_ENTRY_SIZE: usize = 96;
/// Longest table name in bytes.
pub const MAX_NAME_LEN: usize = 64;
const NAME_OFFSET: usize = 32;

/// One table of the catalog. Semantics of the option bytes belong to the engine.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CatalogEntry {
    /// Table name: UTF-8, 1..=64 bytes.
    pub name: String,
    /// The table's tablespace.
    pub space_id: SpaceId,
    /// Root page of the table's clustered B-tree.
    pub root_page_no: PageNo,
    /// The id of that B-tree (written in its index pages).
    pub index_id: u64,
    /// Row format code (engine-defined).
    pub row_format: u8,
    /// KEY_BLOCK_SIZE in KiB for ROW_FORMAT=COMPRESSED, 0 = none.
    pub key_block_size: u8,
    /// Page compression: 0 none, 1 zlib, 2 lz4.
    pub page_compression: u8,
    /// Compression level (engine-defined range).
    pub compression_level: u8,
    /// Engine-defined flags.
    pub flags: u32,
}

/// A decoded catalog page.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CatalogPage {
    /// The next catalog page (stored in the file header's `next`), or `FIL_NULL`.
    pub next_catalog_page: PageNo,
    /// The next space id the engine will assign (meaningful on the first catalog page).
    pub next_space_id: SpaceId,
    /// The next index id the engine will assign (meaningful on the first catalog page).
    pub next_index_id: u64,
    /// Engine-defined flags (meaningful on the first catalog page).
    pub flags: u16,
    /// The entries, in stored order.
    pub entries: Vec<CatalogEntry>,
}

/// How many entries fit on a catalog page (41 at 4 KiB, 169 at 16 KiB).
pub const fn capacity(page_size: PageSize) -> usize {
    (page_size.bytes() - CATALOG_ENTRIES_START - FIL_TRAILER_SIZE) / CATALOG_ENTRY_SIZE
}

impl CatalogEntry {
    fn check(&self) -> Result<(), PageError> {
        if self.name.is_empty() || self.name.len() > MAX_NAME_LEN {
            return Err(PageError::Invalid {
                what: format!("catalog name of {} bytes (1..=64 allowed)", self.name.len()),
            });
        }
        Ok(())
    }

    fn encode(&self, buf: &mut [u8], off: usize) {
        zero(buf, off, off + CATALOG_ENTRY_SIZE);
        put_u8(buf, off, self.name.len() as u8);
        put_u8(buf, off + 1, self.row_format);
        put_u8(buf, off + 2, self.key_block_size);
        put_u8(buf, off + 3, self.page_compression);
        put_u8(buf, off + 4, self.compression_level);
        put_u32(buf, off + 8, self.space_id);
        put_u32(buf, off + 12, self.root_page_no);
        put_u64(buf, off + 16, self.index_id);
        put_u32(buf, off + 24, self.flags);
        put(buf, off + NAME_OFFSET, self.name.as_bytes());
    }

    fn decode(buf: &[u8], off: usize) -> Result<Self, String> {
        let e: [u8; CATALOG_ENTRY_SIZE] = get_array(buf, off).ok_or("entry out of bounds")?;
        let name_len = usize::from(u8_at(&e, 0).unwrap_or(0));
        if name_len == 0 || name_len > MAX_NAME_LEN {
            return Err(format!("name length {name_len}"));
        }
        let (name, pad) = e
            .get(NAME_OFFSET..)
            .unwrap_or(&[])
            .split_at_checked(name_len)
            .ok_or("name out of bounds")?;
        let reserved_zero = e.get(5..8).is_some_and(|r| r == [0; 3]) && u32_at(&e, 28) == Some(0);
        if !reserved_zero || pad.iter().any(|&b| b != 0) {
            return Err("reserved or padding bytes are not zero".into());
        }
        let name = std::str::from_utf8(name).map_err(|_| "name is not UTF-8")?;
        Ok(Self {
            name: name.to_owned(),
            row_format: u8_at(&e, 1).unwrap_or(0),
            key_block_size: u8_at(&e, 2).unwrap_or(0),
            page_compression: u8_at(&e, 3).unwrap_or(0),
            compression_level: u8_at(&e, 4).unwrap_or(0),
            space_id: u32_at(&e, 8).unwrap_or(0),
            root_page_no: u32_at(&e, 12).unwrap_or(0),
            index_id: u64_at(&e, 16).unwrap_or(0),
            flags: u32_at(&e, 24).unwrap_or(0),
        })
    }
}

impl CatalogPage {
    /// Decodes a catalog page. Fails on a wrong size or type, or with [`PageError::Corrupt`] for
    /// a bad magic, an entry count above [`capacity`], an invalid entry (name length, UTF-8,
    /// non-zero padding or reserved bytes). Never panics.
    pub fn read(buf: &[u8], page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf, page_size, PageType::Catalog)?;
        let corrupt = |what: String| PageError::corrupt(header.page_id(), what);
        if u32_at(buf, OFF_CATALOG_MAGIC) != Some(CATALOG_MAGIC) {
            return Err(corrupt("catalog magic missing".into()));
        }
        let n = usize::from(u16_at(buf, OFF_CATALOG_N_ENTRIES).unwrap_or(u16::MAX));
        if n > capacity(page_size) {
            return Err(corrupt(format!("{n} catalog entries exceed the capacity")));
        }
        let entries = (0..n)
            .map(|i| {
                CatalogEntry::decode(buf, CATALOG_ENTRIES_START + i * CATALOG_ENTRY_SIZE)
                    .map_err(|what| corrupt(format!("catalog entry {i}: {what}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            next_catalog_page: header.next,
            next_space_id: u32_at(buf, OFF_CATALOG_NEXT_SPACE_ID).unwrap_or(0),
            next_index_id: u64_at(buf, OFF_CATALOG_NEXT_INDEX_ID).unwrap_or(0),
            flags: u16_at(buf, OFF_CATALOG_FLAGS).unwrap_or(0),
            entries,
        })
    }

    /// Encodes the page body into `buf`: page type, next link, magic, fields, entries, and zeros
    /// up to the trailer. Leaves page number, space id, prev and LSN to the caller.
    ///
    /// Fails without writing on a wrong size, more entries than [`capacity`], or an invalid name
    /// ([`PageError::Invalid`]).
    pub fn write(&self, buf: &mut [u8], page_size: PageSize) -> Result<(), PageError> {
        if buf.len() != page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: page_size.bytes(),
                found: buf.len(),
            });
        }
        if self.entries.len() > capacity(page_size) {
            return Err(PageError::Invalid {
                what: format!(
                    "{} catalog entries, capacity {}",
                    self.entries.len(),
                    capacity(page_size)
                ),
            });
        }
        self.entries.iter().try_for_each(CatalogEntry::check)?;
        put_u16(buf, OFF_PAGE_TYPE, PageType::Catalog.to_u16());
        put_u32(buf, OFF_NEXT, self.next_catalog_page);
        zero(buf, FIL_HEADER_SIZE, page_size.bytes() - FIL_TRAILER_SIZE);
        put_u32(buf, OFF_CATALOG_MAGIC, CATALOG_MAGIC);
        put_u16(buf, OFF_CATALOG_N_ENTRIES, self.entries.len() as u16);
        put_u16(buf, OFF_CATALOG_FLAGS, self.flags);
        put_u32(buf, OFF_CATALOG_NEXT_SPACE_ID, self.next_space_id);
        put_u64(buf, OFF_CATALOG_NEXT_INDEX_ID, self.next_index_id);
        for (i, e) in self.entries.iter().enumerate() {
            e.encode(buf, CATALOG_ENTRIES_START + i * CATALOG_ENTRY_SIZE);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FIL_NULL;

    fn entry(i: u32) -> CatalogEntry {
        CatalogEntry {
            name: format!("table_{i}_é"),
            space_id: i + 1,
            root_page_no: 3,
            index_id: u64::from(i) << 40,
            row_format: 1,
            key_block_size: 8,
            page_compression: 2,
            compression_level: 6,
            flags: 0xABCD,
        }
    }

    // The round trip itself is the testkit's `law_catalog_page_round_trip`, but its strategy
    // draws the entry count at random and never past capacity: the edge pinned down here is not
    // reliably met there. A page of exactly `capacity` entries round-trips, one more is refused,
    // and 169 fit at 16 KiB (the figure the architecture notes quote).
    #[test]
    fn a_full_catalog_page_round_trips_and_one_more_entry_is_refused() {
        for ps in PageSize::ALL {
            let page = CatalogPage {
                flags: 0,
                next_catalog_page: FIL_NULL,
                next_space_id: 99,
                next_index_id: 1234,
                entries: (0..capacity(ps) as u32).map(entry).collect(),
            };
            let mut buf = vec![0u8; ps.bytes()];
            page.write(&mut buf, ps).expect("fits");
            assert_eq!(CatalogPage::read(&buf, ps), Ok(page.clone()));
            let mut over = page;
            over.entries.push(entry(1000));
            assert!(over.write(&mut buf, ps).is_err());
        }
        assert_eq!(capacity(PageSize::K16), 169);
    }

    #[test]
    fn bad_names_are_rejected_both_ways() {
        let ps = PageSize::K4;
        let mut buf = vec![0u8; ps.bytes()];
        for name in [String::new(), "x".repeat(65)] {
            let page = CatalogPage {
                flags: 0,
                entries: vec![CatalogEntry { name, ..entry(0) }],
                ..CatalogPage::default()
            };
            assert!(matches!(
                page.write(&mut buf, ps),
                Err(PageError::Invalid { .. })
            ));
        }
        let page = CatalogPage {
            flags: 0,
            entries: vec![CatalogEntry {
                name: "x".repeat(64),
                ..entry(0)
            }],
            ..CatalogPage::default()
        };
        page.write(&mut buf, ps).expect("64 bytes is allowed");
        assert_eq!(CatalogPage::read(&buf, ps), Ok(page));
        // Invalid UTF-8 in the stored name.
        put_u8(&mut buf, CATALOG_ENTRIES_START + NAME_OFFSET, 0xFF);
        assert!(matches!(
            CatalogPage::read(&buf, ps),
            Err(PageError::Corrupt { .. })
        ));
        put_u8(&mut buf, CATALOG_ENTRIES_START, 0);
        assert!(CatalogPage::read(&buf, ps).is_err());
    }
}
