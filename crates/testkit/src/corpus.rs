//! The seed corpus of the fuzz targets (`fuzz/corpus/<target>/`): valid pages of every type
//! and size, the same with one bit flipped, torn, truncated or with a header field broken, and
//! random bytes. Deterministic, so that the checked-in files can be regenerated and compared:
//! `cargo run -p barracuda-testkit --example gen_fuzz_corpus` writes them.
//!
//! Pages larger than 16 KiB are stored in the [compact form](crate::fuzz_targets::compact) to
//! keep the corpus small.

use crate::fuzz_targets::compact;
use barracuda_page::catalog::{capacity as catalog_capacity, CATALOG_ENTRIES_START};
use barracuda_page::index::{OFF_GARBAGE, OFF_HEAP_TOP, OFF_LEVEL, OFF_N_RECS};
use barracuda_page::overflow::OFF_PAYLOAD_LEN;
use barracuda_page::space::{format_bitmap_page, pages_per_bitmap, OFF_SPACE_PAGE_SHIFT};
use barracuda_page::undo::{OFF_LOG_STATE, OFF_UNDO_FREE, OFF_UNDO_LAST, UNDO_LOG_DATA};
use barracuda_page::{
    max_inline_value_len, payload_capacity, seal_page, set_page_lsn, AllocationBitmap,
    CatalogEntry, CatalogPage, FileHeader, IndexPage, OverflowPage, PageError, PageId, PageSize,
    PageType, Record, SpaceHeader, TrxSysPage, UndoKind, UndoPage, UndoRecord, FIL_NULL,
};

/// One file of the seed corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seed {
    /// The fuzz target (one of [`TARGETS`](crate::fuzz_targets::TARGETS)), i.e. the directory.
    pub target: &'static str,
    /// The file name.
    pub name: String,
    /// The contents.
    pub bytes: Vec<u8>,
}

/// Deterministic xorshift64: enough for seed contents, and stable across dependency versions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

fn size_tag(ps: PageSize) -> String {
    format!("{}k", ps.bytes() >> 10)
}

fn sealed(mut buf: Vec<u8>) -> Vec<u8> {
    seal_page(&mut buf);
    buf
}

fn flip(mut buf: Vec<u8>, byte: usize, bit: u8) -> Vec<u8> {
    if let Some(b) = buf.get_mut(byte) {
        *b ^= 1 << (bit % 8);
    }
    buf
}

fn put_u16(buf: &mut [u8], off: usize, v: u16) {
    if let Some(dst) = buf.get_mut(off..off + 2) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

fn put_u32(buf: &mut [u8], off: usize, v: u32) {
    if let Some(dst) = buf.get_mut(off..off + 4) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

/// Shape of a generated index page.
#[derive(Clone, Copy)]
enum Fill {
    /// No records.
    Empty,
    /// This many small records.
    Records(usize),
    /// Records until the page is full.
    Full,
    /// Full, then every third record removed (the heap holds garbage).
    Fragmented,
    /// Some records with overflow values.
    Overflow,
}

/// An index page with keys `k000000`, `k000001`, ... (an empty first key on internal pages).
fn index_page(ps: PageSize, level: u16, fill: Fill, rng: &mut Rng) -> Result<Vec<u8>, PageError> {
    let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(3, 17), level, 0x1D)?;
    page.set_prev(16);
    page.set_next(18);
    page.set_page_lsn(0x0123_4567_89AB);
    let limit = match fill {
        Fill::Empty => 0,
        Fill::Records(n) => n,
        Fill::Full | Fill::Fragmented | Fill::Overflow => usize::MAX,
    };
    let mut i = 0;
    while i < limit {
        let key = if level > 0 && i == 0 {
            Vec::new()
        } else {
            format!("k{i:06}").into_bytes()
        };
        let value_len = rng.below(max_inline_value_len(ps, key.len()).min(120));
        let value = rng.bytes(value_len);
        let prefix_len = rng.below(16);
        let prefix = rng.bytes(prefix_len);
        let rec = if level > 0 {
            Record::child(&key, 100 + i as u32)
        } else if matches!(fill, Fill::Overflow) && i % 2 == 1 {
            Record::overflow(&key, &prefix, 100_000 + i as u64, 500 + i as u32)
        } else {
            Record::inline(&key, &value)
        };
        match page.insert(page.len(), &rec) {
            Ok(()) => {}
            Err(PageError::PageFull { .. }) => break,
            Err(e) => return Err(e),
        }
        i += 1;
        if matches!(fill, Fill::Overflow) && i >= 20 {
            break;
        }
    }
    if matches!(fill, Fill::Fragmented) {
        let mut j = page.len();
        while j > 0 {
            j -= 1;
            if j % 3 == 1 {
                page.remove(j)?;
            }
        }
    }
    Ok(page.into_inner())
}

fn catalog_page(ps: PageSize, n: usize) -> Result<Vec<u8>, PageError> {
    let entries = (0..n)
        .map(|i| CatalogEntry {
            name: if i % 5 == 4 {
                format!("tåble_{i}")
            } else {
                format!("t{i}")
            },
            space_id: i as u32 + 1,
            root_page_no: 3,
            index_id: i as u64 + 10,
            row_format: (i % 3) as u8,
            key_block_size: if i % 4 == 0 { 8 } else { 0 },
            page_compression: (i % 3) as u8,
            compression_level: (i % 10) as u8,
            flags: i as u32,
        })
        .collect();
    let cat = CatalogPage {
        next_catalog_page: FIL_NULL,
        next_space_id: n as u32 + 1,
        next_index_id: n as u64 + 10,
        flags: 0,
        entries,
    };
    let mut buf = vec![0u8; ps.bytes()];
    let mut h = FileHeader::new(PageId::new(0, 2), PageType::Catalog);
    h.lsn = 77;
    h.write(&mut buf);
    cat.write(&mut buf, ps)?;
    Ok(buf)
}

fn space_page(ps: PageSize, used: u32) -> Result<Vec<u8>, PageError> {
    let h = SpaceHeader {
        space_id: 5,
        page_size: ps,
        flags: 3 | (1 << 4) | (6 << 6),
        size_in_pages: used.max(1) + 64,
        free_hint: used,
    };
    let mut buf = vec![0u8; ps.bytes()];
    h.format(&mut buf)?;
    AllocationBitmap::open(&mut buf[..], ps)?.set_range(0, used, true)?;
    set_page_lsn(&mut buf, 99);
    Ok(buf)
}

fn bitmap_page(ps: PageSize, used: u32) -> Result<Vec<u8>, PageError> {
    let mut buf = vec![0u8; ps.bytes()];
    format_bitmap_page(&mut buf, ps, 5, pages_per_bitmap(ps))?;
    AllocationBitmap::open(&mut buf[..], ps)?.set_range(0, used, true)?;
    Ok(buf)
}

fn overflow_page(ps: PageSize, len: usize, rng: &mut Rng) -> Result<Vec<u8>, PageError> {
    let mut buf = vec![0u8; ps.bytes()];
    let mut h = FileHeader::new(PageId::new(5, 40), PageType::Overflow);
    h.prev = 39;
    h.lsn = 1000;
    h.write(&mut buf);
    OverflowPage::write(&mut buf, ps, &rng.bytes(len), 41)?;
    Ok(buf)
}

fn free_page(ps: PageSize) -> Vec<u8> {
    let mut buf = vec![0u8; ps.bytes()];
    let mut h = FileHeader::new(PageId::new(5, 9), PageType::Free);
    h.lsn = 5;
    h.write(&mut buf);
    buf
}

/// Adds the raw page if it is at most 16 KiB, and always its compact form.
fn add_page(out: &mut Vec<Seed>, target: &'static str, name: &str, ps: PageSize, page: &[u8]) {
    if ps.bytes() <= 16 << 10 {
        out.push(seed(target, name, page.to_vec()));
    }
    out.push(seed(target, &format!("{name}.compact"), compact(ps, page)));
}

fn seed(target: &'static str, name: &str, bytes: Vec<u8>) -> Seed {
    Seed {
        target,
        name: name.to_owned(),
        bytes,
    }
}

/// Random inputs and truncations of `page`, common to every target.
fn add_noise(out: &mut Vec<Seed>, target: &'static str, page: &[u8], rng: &mut Rng) {
    out.push(seed(target, "random-64", rng.bytes(64)));
    out.push(seed(target, "random-4096", rng.bytes(4096)));
    out.push(seed(target, "zero-4096", vec![0u8; 4096]));
    for len in [37, 38, 100, 4095] {
        let cut = page.get(..len).unwrap_or(page).to_vec();
        out.push(seed(target, &format!("truncated-{len}"), cut));
    }
}

/// The whole seed corpus, in a fixed order.
pub fn seeds() -> Result<Vec<Seed>, PageError> {
    let mut rng = Rng(0x5EED_BA77_ACDA_0001);
    let mut out = Vec::new();
    let k4 = PageSize::K4;

    // page_verify: sealed pages of every type; broken ones.
    let t = "page_verify";
    for ps in PageSize::ALL {
        let tag = size_tag(ps);
        let leaf = sealed(index_page(ps, 0, Fill::Records(12), &mut rng)?);
        add_page(&mut out, t, &format!("index-{tag}"), ps, &leaf);
        add_page(
            &mut out,
            t,
            &format!("free-{tag}"),
            ps,
            &sealed(free_page(ps)),
        );
    }
    let leaf = sealed(index_page(k4, 0, Fill::Full, &mut rng)?);
    out.push(seed(t, "index-4k-full", leaf.clone()));
    out.push(seed(t, "space-4k", sealed(space_page(k4, 70)?)));
    out.push(seed(t, "bitmap-4k", sealed(bitmap_page(k4, 9)?)));
    out.push(seed(t, "catalog-4k", sealed(catalog_page(k4, 6)?)));
    out.push(seed(
        t,
        "overflow-4k",
        sealed(overflow_page(k4, 3000, &mut rng)?),
    ));
    out.push(seed(t, "flip-body", flip(leaf.clone(), 1000, 3)));
    out.push(seed(t, "flip-checksum", flip(leaf.clone(), 0, 0)));
    out.push(seed(t, "flip-lsn", flip(leaf.clone(), 16, 5)));
    out.push(seed(t, "flip-magic", flip(leaf.clone(), 4094, 1)));
    let mut torn = leaf.clone();
    set_page_lsn(&mut torn, 0xFFFF_0000_1234);
    out.push(seed(t, "torn", torn));
    let mut unknown = free_page(k4);
    put_u16(&mut unknown, 24, PageType::RESERVED_COMPRESSED_INDEX);
    out.push(seed(t, "unknown-type", sealed(unknown)));
    add_noise(&mut out, t, &leaf, &mut rng);

    // index_page_decode: leaves and internal pages of every shape; structural corruptions.
    let t = "index_page_decode";
    for (name, level, fill) in [
        ("leaf-empty", 0, Fill::Empty),
        ("leaf-half", 0, Fill::Records(15)),
        ("leaf-full", 0, Fill::Full),
        ("leaf-fragmented", 0, Fill::Fragmented),
        ("leaf-overflow", 0, Fill::Overflow),
        ("internal", 1, Fill::Records(40)),
        ("internal-full", 2, Fill::Full),
    ] {
        let page = sealed(index_page(k4, level, fill, &mut rng)?);
        out.push(seed(t, &format!("{name}-4k"), page));
    }
    for ps in [PageSize::K8, PageSize::K16, PageSize::K32, PageSize::K64] {
        let tag = size_tag(ps);
        let page = sealed(index_page(ps, 0, Fill::Records(10), &mut rng)?);
        add_page(&mut out, t, &format!("leaf-{tag}"), ps, &page);
        let page = sealed(index_page(ps, 1, Fill::Records(10), &mut rng)?);
        add_page(&mut out, t, &format!("internal-{tag}"), ps, &page);
    }
    let base = index_page(k4, 0, Fill::Fragmented, &mut rng)?;
    let corruptions: [(&str, usize, u16); 5] = [
        ("bad-n-recs", OFF_N_RECS, 2000),
        ("bad-heap-top", OFF_HEAP_TOP, 30),
        ("bad-garbage", OFF_GARBAGE, 1),
        ("leaf-as-internal", OFF_LEVEL, 1),
        ("bad-slot", k4.bytes() - 8 - 4, 4000),
    ];
    for (name, off, v) in corruptions {
        let mut page = base.clone();
        put_u16(&mut page, off, v);
        out.push(seed(t, name, page));
    }
    let mut swapped = index_page(k4, 0, Fill::Records(5), &mut rng)?;
    // Swap the slots of records 0 and 1 (slot i is the u16 at P - 8 - 2 * (i + 1)).
    let (s0, s1) = (k4.bytes() - 10, k4.bytes() - 12);
    swapped.swap(s0, s1);
    swapped.swap(s0 + 1, s1 + 1);
    out.push(seed(t, "keys-out-of-order", swapped));
    out.push(seed(
        t,
        "flip-slot-dir",
        flip(base.clone(), k4.bytes() - 20, 2),
    ));
    add_noise(&mut out, t, &base, &mut rng);

    // catalog_decode: empty, some, full pages; broken entries.
    let t = "catalog_decode";
    out.push(seed(t, "empty-4k", sealed(catalog_page(k4, 0)?)));
    out.push(seed(t, "some-4k", sealed(catalog_page(k4, 7)?)));
    out.push(seed(
        t,
        "full-4k",
        sealed(catalog_page(k4, catalog_capacity(k4))?),
    ));
    let full16 = catalog_page(PageSize::K16, catalog_capacity(PageSize::K16))?;
    out.push(seed(t, "full-16k", sealed(full16)));
    for ps in [PageSize::K8, PageSize::K32, PageSize::K64] {
        let page = sealed(catalog_page(ps, 3)?);
        add_page(&mut out, t, &format!("some-{}", size_tag(ps)), ps, &page);
    }
    let base = catalog_page(k4, 5)?;
    let entry = CATALOG_ENTRIES_START;
    let broken: [(&str, usize, u8); 5] = [
        ("bad-magic", 38, b'X'),
        ("too-many-entries", 43, 0x7F),
        ("name-len-zero", entry, 0),
        ("name-not-utf8", entry + 32, 0xFF),
        ("padding-not-zero", entry + 95, 1),
    ];
    for (name, off, v) in broken {
        let mut page = base.clone();
        if let Some(b) = page.get_mut(off) {
            *b = v;
        }
        out.push(seed(t, name, page));
    }
    add_noise(&mut out, t, &base, &mut rng);

    // space_decode: space headers, bitmap pages and overflow pages; broken fields.
    let t = "space_decode";
    for ps in PageSize::ALL {
        let tag = size_tag(ps);
        let space = sealed(space_page(ps, 3 + ps.pages_per_extent())?);
        add_page(&mut out, t, &format!("space-{tag}"), ps, &space);
        let bitmap = sealed(bitmap_page(ps, 2)?);
        add_page(&mut out, t, &format!("bitmap-{tag}"), ps, &bitmap);
        let small = sealed(overflow_page(ps, 40, &mut rng)?);
        add_page(&mut out, t, &format!("overflow-small-{tag}"), ps, &small);
    }
    out.push(seed(
        t,
        "bitmap-full-16k",
        bitmap_page(PageSize::K16, pages_per_bitmap(PageSize::K16))?,
    ));
    let full = overflow_page(k4, payload_capacity(k4), &mut rng)?;
    out.push(seed(t, "overflow-full-4k", full.clone()));
    let mut bad_len = full.clone();
    put_u32(
        &mut bad_len,
        OFF_PAYLOAD_LEN,
        payload_capacity(k4) as u32 + 1,
    );
    out.push(seed(t, "overflow-bad-len", bad_len));
    let base = space_page(k4, 20)?;
    let broken: [(&str, usize, u8); 4] = [
        ("space-bad-magic", 38, b'X'),
        ("space-bad-version", 42, 2),
        ("space-bad-shift", OFF_SPACE_PAGE_SHIFT, 13),
        ("space-reserved-flags", 55, 0x80),
    ];
    for (name, off, v) in broken {
        let mut page = base.clone();
        if let Some(b) = page.get_mut(off) {
            *b = v;
        }
        out.push(seed(t, name, page));
    }
    add_noise(&mut out, t, &base, &mut rng);

    // undo_decode: undo header pages and later pages with records, cached header pages,
    // transaction system pages; broken fields.
    let t = "undo_decode";
    for ps in PageSize::ALL {
        let tag = size_tag(ps);
        let header = sealed(undo_page(ps, 3, 3, &mut rng)?);
        add_page(&mut out, t, &format!("undo-header-{tag}"), ps, &header);
        let later = sealed(undo_page(ps, 4, 3, &mut rng)?);
        add_page(&mut out, t, &format!("undo-later-{tag}"), ps, &later);
        // A purged log's header page in the header page cache: records kept, state 3.
        let mut cached = undo_page(ps, 3, 3, &mut rng)?;
        UndoPage::open(&mut cached[..], ps)?.set_cached(8, 2);
        add_page(
            &mut out,
            t,
            &format!("undo-cached-{tag}"),
            ps,
            &sealed(cached),
        );
        let mut sys = TrxSysPage::init(vec![0u8; ps.bytes()], ps, PageId::new(9, 1), 512)?;
        sys.set_slot(0, 3);
        sys.set_history(5, 6, 2);
        sys.set_cache_first(7);
        let sys = sealed(sys.as_bytes().to_vec());
        add_page(&mut out, t, &format!("trx-sys-{tag}"), ps, &sys);
    }
    let base = undo_page(k4, 3, 3, &mut rng)?;
    let broken: [(&str, usize, u8); 4] = [
        ("undo-bad-free", OFF_UNDO_FREE + 1, 0x0F),
        ("undo-bad-state", OFF_LOG_STATE, 7),
        ("undo-bad-kind", UNDO_LOG_DATA + 2, 9),
        ("undo-bad-last", OFF_UNDO_LAST, 0),
    ];
    for (name, off, v) in broken {
        let mut page = base.clone();
        if let Some(b) = page.get_mut(off) {
            *b = v;
        }
        out.push(seed(t, name, page));
    }
    add_noise(&mut out, t, &base, &mut rng);
    Ok(out)
}

/// An undo page `page_no` of the log whose header page is `first`, with a few records of
/// every kind.
fn undo_page(ps: PageSize, page_no: u32, first: u32, rng: &mut Rng) -> Result<Vec<u8>, PageError> {
    let prev = if page_no == first { FIL_NULL } else { first };
    let mut page = UndoPage::init(
        vec![0u8; ps.bytes()],
        ps,
        PageId::new(9, page_no),
        first,
        prev,
    )?;
    if page_no == first {
        page.init_log_header(41);
        page.set_record_count(3);
    }
    let old = rng.bytes(60);
    for (undo_no, (kind, payload)) in [
        (UndoKind::Insert, &b"inserted-key"[..]),
        (UndoKind::Update, &old[..]),
        (UndoKind::DeleteMark, &old[..20]),
    ]
    .into_iter()
    .enumerate()
    {
        page.append(&UndoRecord {
            kind,
            space: 5,
            undo_no: undo_no as u32,
            payload,
        })?;
    }
    Ok(page.as_bytes().to_vec())
}
