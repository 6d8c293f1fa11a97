//! The bytes of `doublewrite.dblwr` (`docs/FORMATS.md` §11): the file header (page 0), the
//! geometry it records, and the area descriptors. Pure encoding and decoding — no I/O — and
//! every decoder is total: hostile bytes give a typed refusal, never a panic.

use std::fmt;

use barracuda_page::header::{OFF_LSN, OFF_PAGE_NO, OFF_SPACE_ID};
use barracuda_page::{Lsn, PageId, PageSize, FIL_HEADER_SIZE};

/// Name of the doublewrite file inside the database directory.
pub const FILE_NAME: &str = "doublewrite.dblwr";

/// Magic of the file header (page 0): `"BRDW"` read as a little-endian `u32`.
pub const HEADER_MAGIC: u32 = u32::from_le_bytes(*b"BRDW");

/// Magic of an area descriptor page: `"BRDA"` read as a little-endian `u32`.
pub const DESCRIPTOR_MAGIC: u32 = u32::from_le_bytes(*b"BRDA");

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes of page 0 covered by the header CRC (the CRC itself follows at this offset).
const HEADER_CRC_OFFSET: usize = 24;

/// Bytes of the fixed part of a descriptor; entries follow.
pub const DESCRIPTOR_HEADER_LEN: usize = 32;

/// Bytes of one descriptor entry.
pub const ENTRY_LEN: usize = 24;

/// The most entries a descriptor page of `page_size` holds.
pub const fn max_entries(page_size: PageSize) -> u32 {
    ((page_size.bytes() - DESCRIPTOR_HEADER_LEN) / ENTRY_LEN) as u32
}

/// The most pages one batch area may hold: what one descriptor page holds at the smallest page
/// size (4 KiB), so that a geometry is valid whatever the database's page size.
pub const MAX_PAGES_PER_AREA: u32 = max_entries(PageSize::K4);

/// Upper bound of [`Geometry::batch_areas`] and of [`Geometry::single_page_slots`]: far above
/// any useful value, and low enough that a hostile header cannot make a reader walk millions of
/// areas.
pub const MAX_AREAS_PER_KIND: u32 = 256;

/// The most batch areas [`Geometry::for_pool_pages`] gives a large buffer pool.
pub const MAX_POOL_SCALED_AREAS: u32 = 32;

/// The shortest image a slot may hold: a page's file header, which names the page and its LSN.
pub const MIN_IMAGE_LEN: usize = FIL_HEADER_SIZE;

/// Which flushes an area serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AreaKind {
    /// Batches of up to [`Geometry::pages_per_area`] pages (the page cleaner, LRU batches).
    Batch,
    /// One page written by a thread that needs a free frame now (InnoDB's single-page flush);
    /// these slots are separate so such a thread never waits behind a batch.
    SinglePage,
}

impl fmt::Display for AreaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AreaKind::Batch => "batch",
            AreaKind::SinglePage => "single-page",
        })
    }
}

/// What an area's copy holds, recorded in each descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CopyContent {
    /// The descriptor and every page image: a torn page is repaired (`On`).
    #[default]
    Images,
    /// The descriptor only (page ids and LSNs): a torn page is detected and named, not
    /// repaired (`DetectOnly`, MySQL 8.0.30's `DETECT_ONLY`).
    DescriptorsOnly,
}

impl CopyContent {
    /// The descriptor's `kind` byte.
    const fn to_byte(self) -> u8 {
        match self {
            CopyContent::Images => 1,
            CopyContent::DescriptorsOnly => 2,
        }
    }

    const fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(CopyContent::Images),
            2 => Some(CopyContent::DescriptorsOnly),
            _ => None,
        }
    }
}

/// The layout of the file: how many areas of each kind and how big. Recorded in the header;
/// a file whose geometry differs from the configured one is recreated at open.
///
/// Page 0 is the header; then the batch areas, each a descriptor page followed by
/// `pages_per_area` image slots; then the single-page slots, each a descriptor page and one
/// image slot (an area of capacity 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Number of batch areas (at least 1). Each can hold one batch in flight.
    pub batch_areas: u32,
    /// Pages per batch area, 1 ..= [`MAX_PAGES_PER_AREA`]: the largest batch one
    /// [`protect`](crate::Doublewrite::protect) call takes.
    pub pages_per_area: u32,
    /// Number of single-page slots (at least 1).
    pub single_page_slots: u32,
}

impl Default for Geometry {
    /// Two batch areas of 128 pages and 8 single-page slots (see the crate documentation for
    /// why these numbers).
    fn default() -> Self {
        Geometry {
            batch_areas: 2,
            pages_per_area: 128,
            single_page_slots: 8,
        }
    }
}

impl Geometry {
    /// Batch areas whose image slots together hold about an eighth of the pages of a buffer
    /// pool of `pool_pages` pages — between 2 (the [default](Geometry::default)) and
    /// [`MAX_POOL_SCALED_AREAS`] — with the default's 128 pages per area and 8 single-page
    /// slots.
    ///
    /// Why more than two: an area may be overwritten only once the data files its last batch
    /// went to are synced, so with two areas every other batch waits for a data-file sync (of
    /// the two batches before it) — a sharp checkpoint of N batches pays ~N/2 data syncs
    /// between its copy syncs, each of which the device serialises behind the copies. With
    /// areas for an eighth of the pool, flushing the whole pool syncs the data files about
    /// eight times (each sync covering the batches written since the last one). Measured
    /// (`barracuda lab doublewrite`, 512 MiB pool, ~12,800 pages flushed): 32 areas flushed in
    /// 0.38–0.44 s what 2 areas flushed in 0.55–0.79 s (`docs/EXPERIMENTS.md` §8). The cap
    /// keeps the file at ~65 MiB at 16 KiB pages.
    pub fn for_pool_pages(pool_pages: u64) -> Geometry {
        let default = Geometry::default();
        let slots_wanted = pool_pages / 8;
        let areas = (slots_wanted / u64::from(default.pages_per_area)).clamp(
            u64::from(default.batch_areas),
            u64::from(MAX_POOL_SCALED_AREAS),
        );
        Geometry {
            batch_areas: areas as u32,
            ..default
        }
    }

    /// Checks the bounds; the error says which one is broken.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_AREAS_PER_KIND).contains(&self.batch_areas) {
            return Err(format!(
                "batch_areas = {} is outside 1..={MAX_AREAS_PER_KIND}",
                self.batch_areas
            ));
        }
        if !(1..=MAX_PAGES_PER_AREA).contains(&self.pages_per_area) {
            return Err(format!(
                "pages_per_area = {} is outside 1..={MAX_PAGES_PER_AREA} (one descriptor page \
                 at 4 KiB holds {MAX_PAGES_PER_AREA} entries)",
                self.pages_per_area
            ));
        }
        if !(1..=MAX_AREAS_PER_KIND).contains(&self.single_page_slots) {
            return Err(format!(
                "single_page_slots = {} is outside 1..={MAX_AREAS_PER_KIND}",
                self.single_page_slots
            ));
        }
        Ok(())
    }

    /// Number of areas, batch areas first: indices `0..batch_areas` are batch areas, the rest
    /// single-page slots.
    pub fn areas(&self) -> u32 {
        self.batch_areas + self.single_page_slots
    }

    /// The kind of area `index`.
    pub fn kind_of(&self, index: u32) -> AreaKind {
        if index < self.batch_areas {
            AreaKind::Batch
        } else {
            AreaKind::SinglePage
        }
    }

    /// Image slots of area `index`.
    pub fn capacity(&self, index: u32) -> u32 {
        match self.kind_of(index) {
            AreaKind::Batch => self.pages_per_area,
            AreaKind::SinglePage => 1,
        }
    }

    /// The page number (in units of the page size) of area `index`'s descriptor page.
    pub fn descriptor_page(&self, index: u32) -> u64 {
        let batch_span = 1 + u64::from(self.pages_per_area);
        if index < self.batch_areas {
            1 + u64::from(index) * batch_span
        } else {
            1 + u64::from(self.batch_areas) * batch_span + u64::from(index - self.batch_areas) * 2
        }
    }

    /// Pages of the whole file, header included.
    pub fn total_pages(&self) -> u64 {
        1 + u64::from(self.batch_areas) * (1 + u64::from(self.pages_per_area))
            + u64::from(self.single_page_slots) * 2
    }
}

fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    let bytes = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    let bytes = buf.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Writes `v` at `off`; the callers size their buffers, so a miss is a bug in this module.
fn put(buf: &mut [u8], off: usize, v: &[u8]) {
    buf[off..off + v.len()].copy_from_slice(v);
}

/// Writes the file header for `page_size` and `geometry` into `page` (one page, zeroed by the
/// caller beyond the header).
pub fn encode_header(page: &mut [u8], page_size: PageSize, geometry: Geometry) {
    put(page, 0, &HEADER_MAGIC.to_le_bytes());
    put(page, 4, &FORMAT_VERSION.to_le_bytes());
    put(page, 8, &(page_size.bytes() as u32).to_le_bytes());
    put(page, 12, &geometry.batch_areas.to_le_bytes());
    put(page, 16, &geometry.pages_per_area.to_le_bytes());
    put(page, 20, &geometry.single_page_slots.to_le_bytes());
    let crc = barracuda_page::crc32c(&page[..HEADER_CRC_OFFSET]);
    put(page, HEADER_CRC_OFFSET, &crc.to_le_bytes());
}

/// Decodes the file header from the start of `page`: the page size and geometry it records,
/// or why it is not a valid header.
pub fn decode_header(page: &[u8]) -> Result<(PageSize, Geometry), String> {
    let short = || format!("{} bytes are too short for the file header", page.len());
    let magic = u32_at(page, 0).ok_or_else(short)?;
    if magic != HEADER_MAGIC {
        return Err(format!("bad header magic {magic:#010x}"));
    }
    let stored = u32_at(page, HEADER_CRC_OFFSET).ok_or_else(short)?;
    let computed = barracuda_page::crc32c(page.get(..HEADER_CRC_OFFSET).ok_or_else(short)?);
    if stored != computed {
        return Err(format!(
            "header CRC {stored:#010x} does not match the computed {computed:#010x}"
        ));
    }
    let version = u32_at(page, 4).ok_or_else(short)?;
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        ));
    }
    let raw_size = u32_at(page, 8).ok_or_else(short)?;
    let page_size = PageSize::from_bytes(raw_size as usize)
        .ok_or_else(|| format!("page size {raw_size} is not a supported page size"))?;
    let geometry = Geometry {
        batch_areas: u32_at(page, 12).ok_or_else(short)?,
        pages_per_area: u32_at(page, 16).ok_or_else(short)?,
        single_page_slots: u32_at(page, 20).ok_or_else(short)?,
    };
    geometry.validate()?;
    Ok((page_size, geometry))
}

/// One entry of a descriptor: a page the area's batch writes in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The page.
    pub id: PageId,
    /// Its page LSN (the LSN in the image's file header).
    pub lsn: Lsn,
    /// Bytes of the image in its slot; 0 in a descriptors-only area.
    pub image_len: u32,
    /// CRC-32C of those bytes; 0 in a descriptors-only area.
    pub image_crc: u32,
}

/// A decoded area descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// Batch sequence number: grows over the file's life, orders copies of equal LSN.
    pub seq: u64,
    /// The area's index (its position in the geometry).
    pub area: u32,
    /// Whether the slots hold images.
    pub content: CopyContent,
    /// The pages, in slot order (entry `i`'s image is in slot `i`).
    pub entries: Vec<Entry>,
}

/// Writes `desc` into `page` (one page of at least `32 + 24 × entries` bytes) and zeroes the
/// rest of the page.
pub fn encode_descriptor(page: &mut [u8], desc: &Descriptor) {
    page.fill(0);
    put(page, 8, &desc.seq.to_le_bytes());
    put(page, 16, &desc.area.to_le_bytes());
    put(page, 20, &(desc.entries.len() as u32).to_le_bytes());
    page[24] = desc.content.to_byte();
    for (i, e) in desc.entries.iter().enumerate() {
        let at = DESCRIPTOR_HEADER_LEN + i * ENTRY_LEN;
        put(page, at, &e.id.space_id.to_le_bytes());
        put(page, at + 4, &e.id.page_no.to_le_bytes());
        put(page, at + 8, &e.lsn.to_le_bytes());
        put(page, at + 16, &e.image_len.to_le_bytes());
        put(page, at + 20, &e.image_crc.to_le_bytes());
    }
    let end = DESCRIPTOR_HEADER_LEN + desc.entries.len() * ENTRY_LEN;
    let crc = barracuda_page::crc32c(&page[8..end]);
    put(page, 0, &DESCRIPTOR_MAGIC.to_le_bytes());
    put(page, 4, &crc.to_le_bytes());
}

/// What a descriptor page holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescriptorRead {
    /// Magic 0: the area was never used since the file was created or opened.
    Unused,
    /// A valid descriptor.
    Valid(Descriptor),
    /// Another nonzero magic: not a descriptor at all (an image, or garbage).
    NotDescriptor(String),
    /// Not a valid descriptor; the reason.
    Damaged(String),
}

/// Decodes the descriptor page `page`. `capacity` bounds the entry count (the area's slots, or
/// what fits before the end of the file); `area` is the index the geometry expects there, or
/// `None` when the header is unreadable and positions are not known.
pub fn decode_descriptor(page: &[u8], capacity: u32, area: Option<u32>) -> DescriptorRead {
    match u32_at(page, 0) {
        Some(0) => return DescriptorRead::Unused,
        Some(DESCRIPTOR_MAGIC) => {}
        Some(magic) => {
            return DescriptorRead::NotDescriptor(format!("bad descriptor magic {magic:#010x}"))
        }
        None => return DescriptorRead::Damaged(format!("{} bytes are too short", page.len())),
    }
    match try_decode_descriptor(page, capacity, area) {
        Ok(d) => DescriptorRead::Valid(d),
        Err(why) => DescriptorRead::Damaged(why),
    }
}

/// Decodes a page whose magic is [`DESCRIPTOR_MAGIC`].
fn try_decode_descriptor(
    page: &[u8],
    capacity: u32,
    area: Option<u32>,
) -> Result<Descriptor, String> {
    let short = || format!("{} bytes are too short for a descriptor", page.len());
    let count = u32_at(page, 20).ok_or_else(short)?;
    let fits = (page.len().saturating_sub(DESCRIPTOR_HEADER_LEN) / ENTRY_LEN) as u32;
    if count == 0 || count > capacity || count > fits {
        return Err(format!(
            "entry count {count} is outside 1..={}",
            capacity.min(fits)
        ));
    }
    let end = DESCRIPTOR_HEADER_LEN + count as usize * ENTRY_LEN;
    let stored = u32_at(page, 4).ok_or_else(short)?;
    let computed = barracuda_page::crc32c(page.get(8..end).ok_or_else(short)?);
    if stored != computed {
        return Err(format!(
            "descriptor CRC {stored:#010x} does not match the computed {computed:#010x}"
        ));
    }
    let seq = u64_at(page, 8).ok_or_else(short)?;
    let index = u32_at(page, 16).ok_or_else(short)?;
    if let Some(expected) = area {
        if index != expected {
            return Err(format!(
                "descriptor of area {index} found at area {expected}"
            ));
        }
    }
    let kind = *page.get(24).ok_or_else(short)?;
    let content =
        CopyContent::from_byte(kind).ok_or_else(|| format!("unknown descriptor kind {kind}"))?;
    if page.get(25..DESCRIPTOR_HEADER_LEN).ok_or_else(short)? != [0u8; 7] {
        return Err("reserved descriptor bytes 25..32 are not zero".to_owned());
    }
    let mut entries = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let at = DESCRIPTOR_HEADER_LEN + i * ENTRY_LEN;
        let e = Entry {
            id: PageId::new(
                u32_at(page, at).ok_or_else(short)?,
                u32_at(page, at + 4).ok_or_else(short)?,
            ),
            lsn: u64_at(page, at + 8).ok_or_else(short)?,
            image_len: u32_at(page, at + 16).ok_or_else(short)?,
            image_crc: u32_at(page, at + 20).ok_or_else(short)?,
        };
        if content == CopyContent::DescriptorsOnly && (e.image_len != 0 || e.image_crc != 0) {
            return Err(format!(
                "entry {i} of a descriptors-only area has an image length or CRC"
            ));
        }
        entries.push(e);
    }
    Ok(Descriptor {
        seq,
        area: index,
        content,
        entries,
    })
}

/// Checks that `slot` (one image slot, `P` bytes or fewer at the end of a short file) holds
/// the image `entry` describes: its length fits, its CRC-32C matches, and its own file header
/// names the same page and LSN. Returns the image bytes.
pub fn check_image<'a>(
    entry: &Entry,
    slot: &'a [u8],
    page_size: PageSize,
) -> Result<&'a [u8], String> {
    let len = entry.image_len as usize;
    if len < MIN_IMAGE_LEN || len > page_size.bytes() {
        return Err(format!(
            "image length {len} is outside {MIN_IMAGE_LEN}..={}",
            page_size.bytes()
        ));
    }
    let image = slot.get(..len).ok_or_else(|| {
        format!(
            "the image slot ends after {} of its {len} bytes",
            slot.len()
        )
    })?;
    let crc = barracuda_page::crc32c(image);
    if crc != entry.image_crc {
        return Err(format!(
            "image CRC {crc:#010x} does not match the descriptor's {:#010x}",
            entry.image_crc
        ));
    }
    let claimed = PageId::new(
        u32_at(image, OFF_SPACE_ID).unwrap_or(u32::MAX),
        u32_at(image, OFF_PAGE_NO).unwrap_or(u32::MAX),
    );
    let lsn = u64_at(image, OFF_LSN).unwrap_or(u64::MAX);
    if claimed != entry.id || lsn != entry.lsn {
        return Err(format!(
            "the image's header names {claimed} at LSN {lsn}, the descriptor {} at LSN {}",
            entry.id, entry.lsn
        ));
    }
    Ok(image)
}

/// The page id and page LSN an image's own file header claims, if it is long enough to have
/// one.
pub fn image_identity(image: &[u8]) -> Option<(PageId, Lsn)> {
    if image.len() < MIN_IMAGE_LEN {
        return None;
    }
    Some((
        PageId::new(u32_at(image, OFF_SPACE_ID)?, u32_at(image, OFF_PAGE_NO)?),
        u64_at(image, OFF_LSN)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_each_damage() {
        let g = Geometry::default();
        let mut page = vec![0u8; 4096];
        encode_header(&mut page, PageSize::K16, g);
        assert_eq!(decode_header(&page), Ok((PageSize::K16, g)));
        for byte in 0..28 {
            let mut bad = page.clone();
            bad[byte] ^= 0x10;
            assert!(decode_header(&bad).is_err(), "flipped byte {byte} accepted");
        }
        assert!(decode_header(&page[..20]).is_err());
    }

    /// The examples of docs/FORMATS.md §11.1 and §11.2, byte for byte.
    #[test]
    fn bytes_match_the_documented_examples() {
        let mut header = vec![0u8; 16384];
        encode_header(&mut header, PageSize::K16, Geometry::default());
        assert_eq!(
            header[..28],
            [
                0x42, 0x52, 0x44, 0x57, 0x01, 0, 0, 0, 0x00, 0x40, 0, 0, 0x02, 0, 0, 0, 0x80, 0, 0,
                0, 0x08, 0, 0, 0, 0x17, 0x7E, 0x4F, 0xD8
            ]
        );
        assert!(header[28..].iter().all(|&b| b == 0));
        let mut page = vec![0u8; 16384];
        encode_descriptor(
            &mut page,
            &Descriptor {
                seq: 7,
                area: 1,
                content: CopyContent::Images,
                entries: vec![Entry {
                    id: PageId::new(3, 9),
                    lsn: 0x1234,
                    image_len: 16384,
                    image_crc: 0xAABB_CCDD,
                }],
            },
        );
        assert_eq!(
            page[..56],
            [
                0x42, 0x52, 0x44, 0x41, 0x92, 0x78, 0x6C, 0xB0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 0x34, 0x12, 0, 0, 0, 0,
                0, 0, 0x00, 0x40, 0, 0, 0xDD, 0xCC, 0xBB, 0xAA
            ]
        );
        assert!(page[56..].iter().all(|&b| b == 0));
        assert_eq!(Geometry::default().total_pages(), 275);
    }

    #[test]
    fn pool_scaled_geometry_holds_an_eighth_of_the_pool_within_its_bounds() {
        let areas = |pool_pages| Geometry::for_pool_pages(pool_pages).batch_areas;
        assert_eq!(areas(0), 2);
        assert_eq!(areas(1024), 2); // a 16 MiB pool at 16 KiB pages
        assert_eq!(areas(8 * 128 * 5), 5);
        assert_eq!(areas(32_768), 32); // 512 MiB
        assert_eq!(areas(1 << 30), MAX_POOL_SCALED_AREAS);
        let g = Geometry::for_pool_pages(32_768);
        assert_eq!((g.pages_per_area, g.single_page_slots), (128, 8));
        assert_eq!(g.validate(), Ok(()));
    }

    #[test]
    fn geometry_places_areas_back_to_back() {
        let g = Geometry {
            batch_areas: 2,
            pages_per_area: 3,
            single_page_slots: 2,
        };
        assert_eq!(
            (0..4).map(|i| g.descriptor_page(i)).collect::<Vec<_>>(),
            [1, 5, 9, 11]
        );
        assert_eq!(g.total_pages(), 13);
        assert_eq!(g.kind_of(1), AreaKind::Batch);
        assert_eq!(g.kind_of(2), AreaKind::SinglePage);
        assert_eq!(g.capacity(3), 1);
        assert_eq!(MAX_PAGES_PER_AREA, 169);
        assert!(Geometry {
            pages_per_area: 170,
            ..g
        }
        .validate()
        .is_err());
        assert!(Geometry {
            batch_areas: 0,
            ..g
        }
        .validate()
        .is_err());
        assert!(Geometry {
            single_page_slots: 0,
            ..g
        }
        .validate()
        .is_err());
        assert!(Geometry::default().validate().is_ok());
    }

    #[test]
    fn descriptor_round_trips_and_its_crc_covers_every_entry_byte() {
        let desc = Descriptor {
            seq: 7,
            area: 1,
            content: CopyContent::Images,
            entries: vec![
                Entry {
                    id: PageId::new(3, 9),
                    lsn: 100,
                    image_len: 4096,
                    image_crc: 5,
                },
                Entry {
                    id: PageId::new(0, 1),
                    lsn: 90,
                    image_len: 2048,
                    image_crc: 6,
                },
            ],
        };
        let mut page = vec![0xAAu8; 4096];
        encode_descriptor(&mut page, &desc);
        assert_eq!(
            decode_descriptor(&page, 2, Some(1)),
            DescriptorRead::Valid(desc.clone())
        );
        assert!(matches!(
            decode_descriptor(&page, 1, Some(1)),
            DescriptorRead::Damaged(_)
        ));
        assert!(matches!(
            decode_descriptor(&page, 2, Some(0)),
            DescriptorRead::Damaged(_)
        ));
        for byte in 0..DESCRIPTOR_HEADER_LEN + 2 * ENTRY_LEN {
            let mut bad = page.clone();
            bad[byte] ^= 1;
            assert!(
                !matches!(
                    decode_descriptor(&bad, 2, Some(1)),
                    DescriptorRead::Valid(_)
                ),
                "flipped byte {byte} accepted"
            );
        }
        assert_eq!(
            decode_descriptor(&[0u8; 4096], 2, None),
            DescriptorRead::Unused
        );
    }
}
