//! On-disk page formats of Barracuda, with no I/O and no locks.
//!
//! Every page starts with a [`FileHeader`] and ends with a trailer; the formats are specified
//! byte for byte in `docs/FORMATS.md`. All integers are little-endian.
//! Every decoder in this crate is *total*: arbitrary bytes give `Ok` or a typed
//! [`PageError`], never a panic — which is what makes the crate property-testable and fuzzable.
//!
//! - [`header`]: file header, trailer, [`seal_page`] and [`verify_page`];
//! - [`index`]: B+tree pages ([`IndexPage`]);
//! - [`overflow`]: chains of large values ([`OverflowPage`]);
//! - [`space`]: page 0 of a tablespace ([`SpaceHeader`]) and [`AllocationBitmap`]s;
//! - [`catalog`]: the table catalog ([`CatalogPage`]).
//!
//! ```
//! use barracuda_page::{seal_page, verify_page, IndexPage, PageId, PageSize, Record};
//!
//! let ps = PageSize::K4;
//! let id = PageId::new(1, 3);
//! let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, id, 0, 42)?;
//! page.insert(0, &Record::inline(b"b", b"two"))?;
//! let pos = page.search(b"a").unwrap_err();
//! page.insert(pos, &Record::inline(b"a", b"one"))?;
//! page.set_page_lsn(100);
//!
//! let mut bytes = page.into_inner();
//! seal_page(&mut bytes); // just before the write
//! verify_page(&bytes, id, ps)?; // just after the read
//! let page = IndexPage::open(&bytes, ps)?;
//! assert_eq!(page.key(0)?, b"a");
//! assert_eq!(page.search(b"b"), Ok(1));
//! # Ok::<(), barracuda_page::PageError>(())
//! ```
#![deny(clippy::indexing_slicing)]

pub mod bytes;
pub mod catalog;
mod crc;
mod error;
pub mod header;
mod ids;
pub mod index;
pub mod overflow;
mod prefetch;
pub mod space;
pub mod trx_sys;
pub mod undo;
mod unused;

pub use catalog::{CatalogEntry, CatalogPage};
pub use crc::{crc32c, crc32c_append};
pub use error::PageError;
pub use header::{
    checksum, page_lsn, seal_page, set_page_lsn, verify_page, FileHeader, PageType,
    FIL_HEADER_SIZE, FIL_TRAILER_SIZE, TRAILER_MAGIC,
};
pub use ids::{Lsn, PageId, PageIdBuildHasher, PageIdHasher, PageNo, PageSize, SpaceId, FIL_NULL};
pub use index::{
    index_capacity, key_head, max_inline_value_len, max_key_len, max_overflow_prefix_len,
    max_record_size, record_size, IndexPage, Record, RecordRef, SplitPoint, SysFields, ValueRef,
    INLINE_HEADER_SIZE, MAX_ROLL_PTR, MAX_TRX_ID, OVERFLOW_HEADER_SIZE, SYS_FIELDS_SIZE,
};
pub use overflow::{payload_capacity, OverflowPage};
pub use space::{
    bit_index, bitmap_byte_offset, bitmap_page_for, pages_per_bitmap, AllocationBitmap, SpaceHeader,
};
pub use trx_sys::TrxSysPage;
pub use undo::{UndoKind, UndoLogHeader, UndoLogState, UndoPage, UndoRecord};
pub use unused::zero_unused_space;
