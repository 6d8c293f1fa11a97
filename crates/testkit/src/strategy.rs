//! Proptest strategies for every page format, all within the format's limits unless a name says
//! otherwise.
//!
//! Page sizes are weighted towards 4 KiB and 16 KiB ([`page_size`]) so that suites stay fast in
//! debug builds; [`any_page_size`] is uniform. Keys mix a small alphabet (so that model tests hit
//! existing keys) with arbitrary bytes up to the limit.

use crate::model::{IndexModel, IndexOp, OwnedRecord, OwnedValue};
use barracuda_page::catalog::{self, MAX_NAME_LEN};
use barracuda_page::space::FLAG_RESERVED_MASK;
use barracuda_page::{
    index_capacity, max_inline_value_len, max_key_len, max_overflow_prefix_len, payload_capacity,
    seal_page, CatalogEntry, CatalogPage, FileHeader, IndexPage, Lsn, OverflowPage, PageError,
    PageId, PageNo, PageSize, PageType, SpaceHeader, SysFields, FIL_NULL, MAX_ROLL_PTR, MAX_TRX_ID,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

/// A page size, weighted towards the sizes cheap to test: 4 KiB (40 %), 16 KiB (30 %), and
/// 8, 32, 64 KiB (10 % each).
pub fn page_size() -> impl Strategy<Value = PageSize> {
    prop_oneof![
        4 => Just(PageSize::K4),
        1 => Just(PageSize::K8),
        3 => Just(PageSize::K16),
        1 => Just(PageSize::K32),
        1 => Just(PageSize::K64),
    ]
}

/// Any of the five page sizes, uniformly.
pub fn any_page_size() -> impl Strategy<Value = PageSize> {
    proptest::sample::select(PageSize::ALL.to_vec())
}

/// A page number that names a page (never `FIL_NULL`), often a small one.
pub fn page_no() -> impl Strategy<Value = PageNo> {
    prop_oneof![0..64u32, 0..FIL_NULL]
}

/// A prev/next link: `FIL_NULL` or a page number.
pub fn page_link() -> impl Strategy<Value = PageNo> {
    prop_oneof![1 => Just(FIL_NULL), 3 => page_no()]
}

/// A page id: a space id (often small) and a [`page_no`].
pub fn page_id() -> impl Strategy<Value = PageId> {
    (prop_oneof![0..4u32, any::<u32>()], page_no()).prop_map(|(s, p)| PageId::new(s, p))
}

/// An LSN, often small, sometimes anywhere in `u64`.
pub fn lsn() -> impl Strategy<Value = Lsn> {
    prop_oneof![0..(1u64 << 20), any::<u64>()]
}

/// One of the page types this format version knows.
pub fn page_type() -> impl Strategy<Value = PageType> {
    proptest::sample::select(vec![
        PageType::Free,
        PageType::SpaceHeader,
        PageType::Index,
        PageType::Overflow,
        PageType::Catalog,
    ])
}

/// A file header with every field arbitrary (the type among the known ones).
pub fn file_header() -> impl Strategy<Value = FileHeader> {
    (
        any::<u32>(),
        page_id(),
        page_link(),
        page_link(),
        lsn(),
        page_type(),
        any::<u64>(),
    )
        .prop_map(
            |(checksum, id, prev, next, lsn, page_type, type_specific)| FileHeader {
                checksum,
                page_no: id.page_no,
                prev,
                next,
                lsn,
                page_type,
                type_specific,
                space_id: id.space_id,
            },
        )
}

/// Bytes of a length in `len`, generated from a seed: cheap for long strings (proptest's
/// `vec(any::<u8>(), ..)` builds one value tree per byte). Shrinks the length, not the contents.
pub fn filler(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<u8>> {
    (len, any::<u64>()).prop_map(|(len, seed)| {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    })
}

/// A key of at most `max_len` bytes: short keys over `a..=d` (which collide often), short
/// arbitrary keys, or arbitrary keys of any length up to `max_len`.
pub fn key(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => vec(b'a'..=b'd', 0..=max_len.min(3)),
        3 => vec(any::<u8>(), 0..=max_len.min(16)),
        1 => filler(0..=max_len),
    ]
}

/// A value for a record with a `key_len`-byte key on a page of `level`, such that the record is
/// within [`max_record_size`](barracuda_page::max_record_size): inline or overflow values on leaves (mostly short inline ones),
/// child pointers above.
pub fn value(page_size: PageSize, level: u16, key_len: usize) -> BoxedStrategy<OwnedValue> {
    if level > 0 {
        return page_no().prop_map(OwnedValue::Child).boxed();
    }
    let max_inline = max_inline_value_len(page_size, key_len);
    let max_prefix = max_overflow_prefix_len(page_size, key_len);
    prop_oneof![
        12 => vec(any::<u8>(), 0..=max_inline.min(48)).prop_map(OwnedValue::Inline),
        1 => filler(0..=max_inline).prop_map(OwnedValue::Inline),
        2 => overflow_value(max_prefix),
    ]
    .boxed()
}

/// A well-formed overflow value whose inline prefix is at most `max_prefix` bytes.
fn overflow_value(max_prefix: usize) -> impl Strategy<Value = OwnedValue> {
    (
        prop_oneof![
            3 => vec(any::<u8>(), 0..=max_prefix.min(32)),
            1 => filler(0..=max_prefix),
        ],
        // A prefix is under 64 KiB, so half the limit leaves room for it.
        prop_oneof![
            1..100_000u64,
            1..=(barracuda_page::index::MAX_OVERFLOW_LEN >> 1)
        ],
        0..FIL_NULL,
    )
        .prop_map(|(prefix, rest, first_page)| OwnedValue::Overflow {
            total_len: prefix.len() as u64 + rest,
            prefix,
            first_page,
        })
}

/// A record a page of `level` accepts: key within [`max_key_len`], whole record within
/// [`max_record_size`](barracuda_page::max_record_size), the right kind for the level (inline or
/// overflow on leaves, child pointers above).
pub fn record(page_size: PageSize, level: u16) -> impl Strategy<Value = OwnedRecord> {
    // Key and value are drawn independently (no flat_map: cheaper, and shrinks better), then
    // the value is cut to what the key leaves room for.
    (
        key(max_key_len(page_size)),
        value(page_size, level, 0),
        sys_fields(level),
    )
        .prop_map(move |(k, v, sys)| {
            let v = fit_value(page_size, k.len(), v);
            OwnedRecord::new(k, v).with_sys(sys)
        })
}

/// Transaction fields for a record on a page of `level`: on leaves mostly none, otherwise any
/// id and roll pointer in range, delete-marked or not; on internal pages always none.
pub fn sys_fields(level: u16) -> BoxedStrategy<SysFields> {
    if level > 0 {
        return Just(SysFields::NONE).boxed();
    }
    prop_oneof![
        1 => Just(SysFields::NONE),
        3 => (0..=MAX_TRX_ID, 0..=MAX_ROLL_PTR, any::<bool>()).prop_map(
            |(trx_id, roll_ptr, deleted)| SysFields {
                trx_id,
                roll_ptr,
                deleted,
            }
        ),
    ]
    .boxed()
}

/// Cuts an inline value or an overflow prefix to the longest that fits with a `key_len`-byte
/// key.
fn fit_value(page_size: PageSize, key_len: usize, value: OwnedValue) -> OwnedValue {
    match value {
        OwnedValue::Inline(mut v) => {
            v.truncate(max_inline_value_len(page_size, key_len));
            OwnedValue::Inline(v)
        }
        OwnedValue::Overflow {
            mut prefix,
            total_len,
            first_page,
        } => {
            prefix.truncate(max_overflow_prefix_len(page_size, key_len));
            OwnedValue::Overflow {
                prefix,
                total_len,
                first_page,
            }
        }
        child @ OwnedValue::Child(_) => child,
    }
}

/// Records with strictly increasing keys that all fit together in one page of `page_size`
/// (often nearly filling it), each accepted by a page of `level`.
pub fn sorted_records(page_size: PageSize, level: u16) -> impl Strategy<Value = Vec<OwnedRecord>> {
    // Enough small records to fill a page; the big ones are skipped once it is full.
    let max_count = index_capacity(page_size) / 24;
    prop_oneof![
        2 => vec(record(page_size, level), 0..=24),
        1 => vec(record(page_size, level), 0..=max_count),
    ]
    .prop_map(move |records| fit_in_page(page_size, records))
}

/// Keeps, in generation order, the records whose key is new and which still fit; returns them
/// sorted by key.
fn fit_in_page(page_size: PageSize, records: Vec<OwnedRecord>) -> Vec<OwnedRecord> {
    let mut model = IndexModel::default();
    let mut free = index_capacity(page_size);
    for r in records {
        let size = r.size_bytes();
        if size <= free && !model.map.contains_key(&r.key) {
            free -= size;
            model.map.insert(r.key, (r.value, r.sys));
        }
    }
    model.records()
}

/// A page level: mostly 0 (leaf), sometimes 1..=3.
pub fn level() -> impl Strategy<Value = u16> {
    prop_oneof![3 => Just(0u16), 1 => 1..=3u16]
}

/// A valid index page built with [`IndexPage::from_records`], with the parameters and records
/// it was built from (the model). Not sealed.
#[derive(Clone, Debug)]
pub struct IndexPageCase {
    /// The page size.
    pub page_size: PageSize,
    /// The page's id (written in its file header).
    pub page_id: PageId,
    /// The page's level (0 = leaf).
    pub level: u16,
    /// The index id in the index header.
    pub index_id: u64,
    /// The prev link in the file header.
    pub prev: PageNo,
    /// The next link in the file header.
    pub next: PageNo,
    /// The page LSN in the file header.
    pub lsn: Lsn,
    /// The records, in key order: the model of the page.
    pub records: Vec<OwnedRecord>,
    /// The page bytes.
    pub bytes: Vec<u8>,
}

impl IndexPageCase {
    /// Builds the page from its parameters. Fails if the records are not strictly sorted or do
    /// not fit, as [`IndexPage::from_records`] does.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per page parameter; a builder would only rename them"
    )]
    pub fn build(
        page_size: PageSize,
        page_id: PageId,
        level: u16,
        index_id: u64,
        prev: PageNo,
        next: PageNo,
        lsn: Lsn,
        records: Vec<OwnedRecord>,
    ) -> Result<Self, PageError> {
        let mut page = IndexPage::from_records(
            vec![0u8; page_size.bytes()],
            page_size,
            page_id,
            level,
            index_id,
            records.iter().map(OwnedRecord::as_record),
        )?;
        page.set_prev(prev);
        page.set_next(next);
        page.set_page_lsn(lsn);
        Ok(Self {
            page_size,
            page_id,
            level,
            index_id,
            prev,
            next,
            lsn,
            records,
            bytes: page.into_inner(),
        })
    }

    /// The model of the page.
    pub fn model(&self) -> IndexModel {
        IndexModel::from_records(&self.records)
    }

    /// Opens (and validates) the page, as a reader would.
    pub fn open(&self) -> Result<IndexPage<&[u8]>, PageError> {
        IndexPage::open(self.bytes.as_slice(), self.page_size)
    }
}

/// A whole valid index page of `page_size` (leaf or internal, often nearly full) and its model.
pub fn index_page(page_size: PageSize) -> impl Strategy<Value = IndexPageCase> {
    level()
        .prop_flat_map(move |level| {
            (
                Just(level),
                sorted_records(page_size, level),
                page_id(),
                any::<u64>(),
                page_link(),
                page_link(),
                lsn(),
            )
        })
        .prop_filter_map(
            "IndexPage::from_records rejected sorted_records (see law_index_page_round_trip)",
            move |(level, records, id, index_id, prev, next, lsn)| {
                IndexPageCase::build(page_size, id, level, index_id, prev, next, lsn, records).ok()
            },
        )
        // Boxed: the unboxed value tree is large enough to overflow a test thread's stack
        // when nested in unions.
        .boxed()
}

/// A sealed page of some type, as it would be written to disk.
#[derive(Clone, Debug)]
pub struct SealedPage {
    /// The page size.
    pub page_size: PageSize,
    /// Where the page belongs: [`verify_page`](barracuda_page::verify_page) succeeds for it.
    pub page_id: PageId,
    /// What the page holds.
    pub page_type: PageType,
    /// The sealed bytes.
    pub bytes: Vec<u8>,
}

impl SealedPage {
    fn seal(page_size: PageSize, page_id: PageId, page_type: PageType, mut bytes: Vec<u8>) -> Self {
        seal_page(&mut bytes);
        Self {
            page_size,
            page_id,
            page_type,
            bytes,
        }
    }
}

/// A sealed page of `page_size` of any type: index, catalog, space header, overflow or free
/// (an arbitrary body under a `Free` header).
pub fn sealed_page(page_size: PageSize) -> impl Strategy<Value = SealedPage> {
    prop_oneof![
        3 => index_page(page_size).prop_map(move |c| {
            SealedPage::seal(page_size, c.page_id, PageType::Index, c.bytes)
        }).boxed(),
        1 => (page_id(), lsn(), catalog_page(page_size)).prop_filter_map(
            "catalog_page() must encode",
            move |(id, lsn, cat)| {
                let mut buf = vec![0u8; page_size.bytes()];
                let mut h = FileHeader::new(id, PageType::Catalog);
                h.lsn = lsn;
                h.write(&mut buf);
                cat.write(&mut buf, page_size).ok()?;
                Some(SealedPage::seal(page_size, id, PageType::Catalog, buf))
            }
        ).boxed(),
        1 => (space_header(page_size), lsn()).prop_filter_map(
            "space_header() must format",
            move |(h, lsn)| {
                let mut buf = vec![0u8; page_size.bytes()];
                h.format(&mut buf).ok()?;
                barracuda_page::set_page_lsn(&mut buf, lsn);
                let id = PageId::new(h.space_id, 0);
                Some(SealedPage::seal(page_size, id, PageType::SpaceHeader, buf))
            }
        ).boxed(),
        1 => overflow_page(page_size).prop_filter_map(
            "overflow_page() must encode",
            move |o| {
                let (buf, _) = o.encode().ok()?;
                Some(SealedPage::seal(page_size, o.page_id, PageType::Overflow, buf))
            }
        ).boxed(),
        1 => (page_id(), lsn(), vec(any::<u8>(), 0..=64)).prop_map(move |(id, lsn, body)| {
            let mut buf = vec![0u8; page_size.bytes()];
            let mut h = FileHeader::new(id, PageType::Free);
            h.lsn = lsn;
            h.write(&mut buf);
            if let Some(dst) = buf.get_mut(100..100 + body.len()) {
                dst.copy_from_slice(&body);
            }
            SealedPage::seal(page_size, id, PageType::Free, buf)
        }).boxed(),
    ]
    .boxed()
}

/// A record for model tests on a page of `level`: mostly within the limits ([`record`]), rarely
/// one the page must reject (key too long, record too large, or the wrong kind for the level).
pub fn op_record(page_size: PageSize, level: u16) -> impl Strategy<Value = OwnedRecord> {
    let max_key = max_key_len(page_size);
    let too_long_key = filler(max_key + 1..=max_key + 8);
    let big = max_inline_value_len(page_size, 0) + 1;
    prop_oneof![
        24 => record(page_size, level).boxed(),
        1 => too_long_key.prop_map(move |k| {
            let v = if level > 0 { OwnedValue::Child(1) } else { OwnedValue::Inline(Vec::new()) };
            OwnedRecord::new(k, v)
        }).boxed(),
        1 => (vec(any::<u8>(), 0..=4), big..=big + 16).prop_map(|(k, len)| {
            OwnedRecord::new(k, OwnedValue::Inline(vec![0x5A; len]))
        }).boxed(),
        1 => (key(8), value(page_size, u16::from(level == 0), 0))
            .prop_map(|(k, v)| OwnedRecord::new(k, v)).boxed(),
    ]
}

/// A value for a replace on a page of `level`: sized for an empty key (so that with the actual
/// key it may exceed [`max_record_size`](barracuda_page::max_record_size), which the page must reject), rarely of the wrong kind.
pub fn op_value(page_size: PageSize, level: u16) -> impl Strategy<Value = OwnedValue> {
    prop_oneof![
        12 => value(page_size, level, 0),
        1 => value(page_size, u16::from(level == 0), 0),
    ]
}

/// Up to `max_ops` operations on an index page of `page_size` and `level`: inserts (mostly at the
/// right position, sometimes at an arbitrary one), replaces, removes and compactions, with
/// records of [`op_record`] and values of [`op_value`].
pub fn index_ops(
    page_size: PageSize,
    level: u16,
    max_ops: usize,
) -> impl Strategy<Value = Vec<IndexOp>> {
    let op = prop_oneof![
        8 => op_record(page_size, level).prop_map(IndexOp::Insert),
        1 => (any::<Index>(), op_record(page_size, level))
            .prop_map(|(at, record)| IndexOp::InsertAt { at, record }),
        3 => (any::<Index>(), op_value(page_size, level), sys_fields(level))
            .prop_map(|(at, value, sys)| IndexOp::Replace { at, value, sys }),
        3 => any::<Index>().prop_map(|at| IndexOp::Remove { at }),
        1 => Just(IndexOp::Compact),
    ];
    vec(op, 0..=max_ops)
}

/// A table name: 1..=64 bytes of UTF-8, ASCII identifiers or arbitrary characters.
pub fn table_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_$]{0,63}",
        // At most 16 chars of at most 4 bytes: never more than MAX_NAME_LEN bytes.
        vec(any::<char>(), 1..=MAX_NAME_LEN / 4).prop_map(String::from_iter),
    ]
}

/// A valid catalog entry.
pub fn catalog_entry() -> impl Strategy<Value = CatalogEntry> {
    (
        table_name(),
        any::<u32>(),
        page_no(),
        any::<u64>(),
        any::<[u8; 4]>(),
        any::<u32>(),
    )
        .prop_map(
            |(name, space_id, root_page_no, index_id, opts, flags)| CatalogEntry {
                name,
                space_id,
                root_page_no,
                index_id,
                row_format: opts[0],
                key_block_size: opts[1],
                page_compression: opts[2],
                compression_level: opts[3],
                flags,
            },
        )
}

/// A catalog page of `page_size` with 0..=capacity valid entries.
pub fn catalog_page(page_size: PageSize) -> impl Strategy<Value = CatalogPage> {
    let cap = catalog::capacity(page_size);
    (
        page_link(),
        any::<u32>(),
        any::<u64>(),
        any::<u16>(),
        prop_oneof![vec(catalog_entry(), 0..=4), vec(catalog_entry(), 0..=cap)],
    )
        .prop_map(
            |(next_catalog_page, next_space_id, next_index_id, flags, entries)| CatalogPage {
                next_catalog_page,
                next_space_id,
                next_index_id,
                flags,
                entries,
            },
        )
}

/// A valid space header for `page_size` (reserved flag bits clear).
pub fn space_header(page_size: PageSize) -> impl Strategy<Value = SpaceHeader> {
    (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(
        move |(space_id, flags, size_in_pages, free_hint)| SpaceHeader {
            space_id,
            page_size,
            flags: flags & !FLAG_RESERVED_MASK,
            size_in_pages,
            free_hint,
        },
    )
}

/// An overflow page to encode: its place in the chain and a payload that may exceed the
/// page's capacity (the encoder then takes what fits).
#[derive(Clone, Debug)]
pub struct OverflowCase {
    /// The page size.
    pub page_size: PageSize,
    /// The page's id.
    pub page_id: PageId,
    /// Previous page of the chain, or `FIL_NULL`.
    pub prev: PageNo,
    /// Next page of the chain, or `FIL_NULL`.
    pub next: PageNo,
    /// The page LSN.
    pub lsn: Lsn,
    /// The bytes to store; only the first [`payload_capacity`] fit.
    pub payload: Vec<u8>,
}

impl OverflowCase {
    /// Encodes the page (file header, then [`OverflowPage::write`]); returns the bytes and the
    /// number of payload bytes stored.
    pub fn encode(&self) -> Result<(Vec<u8>, usize), PageError> {
        let mut buf = vec![0u8; self.page_size.bytes()];
        let mut h = FileHeader::new(self.page_id, PageType::Overflow);
        h.prev = self.prev;
        h.lsn = self.lsn;
        h.write(&mut buf);
        let used = OverflowPage::write(&mut buf, self.page_size, &self.payload, self.next)?;
        Ok((buf, used))
    }
}

/// An overflow page of `page_size`: payloads are short, up to the capacity, or a little over.
pub fn overflow_page(page_size: PageSize) -> impl Strategy<Value = OverflowCase> {
    let cap = payload_capacity(page_size);
    (
        page_id(),
        page_link(),
        page_link(),
        lsn(),
        prop_oneof![
            2 => vec(any::<u8>(), 0..=64),
            1 => filler(0..=cap + 64),
        ],
    )
        .prop_map(move |(page_id, prev, next, lsn, payload)| OverflowCase {
            page_size,
            page_id,
            prev,
            next,
            lsn,
            payload,
        })
}

/// One edit of a byte string: where (biased to the first and last 96 bytes, where headers and
/// slot directories live) and the new byte.
#[derive(Clone, Copy, Debug)]
pub struct ByteEdit {
    /// 0: anywhere; 1: in the first 96 bytes; 2: in the last 96 bytes.
    pub region: u8,
    /// Position inside the region.
    pub at: Index,
    /// The byte written.
    pub byte: u8,
}

impl ByteEdit {
    /// Applies the edit to `bytes` (no-op on an empty slice).
    pub fn apply(&self, bytes: &mut [u8]) {
        let len = bytes.len();
        if len == 0 {
            return;
        }
        let window = len.min(96);
        let off = match self.region {
            1 => self.at.index(window),
            2 => len - 1 - self.at.index(window),
            _ => self.at.index(len),
        };
        if let Some(b) = bytes.get_mut(off) {
            *b = self.byte;
        }
    }
}

/// A [`ByteEdit`].
pub fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    (0..3u8, any::<Index>(), any::<u8>()).prop_map(|(region, at, byte)| ByteEdit {
        region,
        at,
        byte,
    })
}

/// Bytes for decoders to choke on: short random strings, random 4 KiB pages, valid sealed pages
/// with a few bytes changed (resealed or not), and truncated valid pages.
pub fn arbitrary_page_bytes() -> impl Strategy<Value = Vec<u8>> {
    let mutated = page_size()
        .prop_flat_map(|ps| (sealed_page(ps), vec(byte_edit(), 1..=8), any::<bool>()))
        .prop_map(|(page, edits, reseal)| {
            let mut bytes = page.bytes;
            for e in &edits {
                e.apply(&mut bytes);
            }
            if reseal {
                seal_page(&mut bytes);
            }
            bytes
        })
        .boxed();
    let truncated = page_size()
        .prop_flat_map(|ps| (sealed_page(ps), any::<Index>()))
        .prop_map(|(page, at)| {
            let mut bytes = page.bytes;
            bytes.truncate(at.index(bytes.len()));
            bytes
        })
        .boxed();
    prop_oneof![
        2 => vec(any::<u8>(), 0..=128),
        1 => filler(4096..=4096),
        4 => mutated,
        1 => truncated,
    ]
}
