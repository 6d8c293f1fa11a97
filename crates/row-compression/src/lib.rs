//! Row-format compression (InnoDB's `ROW_FORMAT=COMPRESSED`, `KEY_BLOCK_SIZE`), the pure half:
//! an index page kept compressed in a block of 1, 2, 4, 8 or 16 KiB, changed without
//! recompression through a **modification log** and an uncompressed **trailer**, and
//! decompressed back into the very same page. No I/O, no buffer pool: the engine keeps the
//! block beside the uncompressed frame and calls the `log_*` method matching each change it
//! makes to the frame; when one fails with [`RowCompressionError::LogFull`] it recompresses
//! the frame, and when that fails with [`RowCompressionError::DoesNotFit`] it splits the page.
//!
//! The block (FORMATS §14): the page's FIL header and index header, uncompressed; the stream
//! (deflate or LZ4) of the record heap and slot directory as they were at compression; the
//! log of changes since; zeros; the trailer — per record, in key order, the first byte
//! (kind and delete mark), `trx_id` and `roll_ptr` of a leaf record or the child page of an
//! internal one, and each overflow record's chain reference. Writing a transaction id, a roll
//! pointer or a delete mark, which MVCC does to every row it touches, changes the trailer only.
//!
//! ```
//! use barracuda_page::{IndexPage, PageId, PageSize, Record, SysFields};
//! use barracuda_row_compression::{BlockSize, Codec, Compressor};
//!
//! let ps = PageSize::K16;
//! let mut frame = IndexPage::init(vec![0u8; ps.bytes()], ps, PageId::new(5, 9), 0, 1)?.into_inner();
//! let mut c = Compressor::new();
//! let mut zip = c.compress(&mut frame, ps, BlockSize::K4, Codec::default(), None)?;
//! let mut page = IndexPage::open_trusted(frame, ps)?;
//!
//! // The same change to the frame and to the block's log.
//! let rec = Record::inline(b"apple", b"a fruit");
//! page.insert(0, &rec)?;
//! zip.log_insert(0, &rec)?;
//! // A delete mark: the trailer only.
//! let marked = rec.with_sys(SysFields { trx_id: 7, roll_ptr: 9, deleted: true });
//! page.replace(0, &marked)?;
//! zip.log_replace(0, &rec, &marked)?;
//!
//! let mut back = vec![0u8; ps.bytes()];
//! c.decompress(&zip, &mut back, None)?;
//! let back = IndexPage::open(&back[..], ps)?;
//! assert_eq!(back.record(0)?, marked);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// InnoDB: storage/innobase/page/page0zip.cc (page_zip_compress, page_zip_decompress,
// page_zip_write_rec, page_zip_dir_*), include/page0zip.ic (the format comment).
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

mod codec;
mod compress;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod layout;
mod mlog;
mod padding;
mod page;
mod stats;
mod step;
mod trailer_edit;

pub use codec::Codec;
pub use compress::Compressor;
pub use error::{Result, RowCompressionError};
pub use layout::{is_compressed_block, seal_block, verify_block, PAGE_TYPE_COMPRESSED_INDEX};
pub use padding::{
    AdaptivePadding, PaddingSettings, GOOD_ROUNDS_TO_SHRINK, PAD_INCREMENT, ROUND_LEN,
};
pub use page::CompressedPage;
pub use stats::{CmpRow, CompressionStats};
pub use step::{Applied, Change, Recompression};

/// A compressed page's block size: InnoDB's `KEY_BLOCK_SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockSize {
    /// 1 KiB.
    K1,
    /// 2 KiB.
    K2,
    /// 4 KiB.
    K4,
    /// 8 KiB (InnoDB's default for a compressed table without KEY_BLOCK_SIZE, at 16 KiB pages).
    K8,
    /// 16 KiB.
    K16,
}

impl BlockSize {
    /// Every block size, smallest first.
    pub const ALL: [BlockSize; 5] = [Self::K1, Self::K2, Self::K4, Self::K8, Self::K16];

    /// Bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Self::K1 => 1 << 10,
            Self::K2 => 2 << 10,
            Self::K4 => 4 << 10,
            Self::K8 => 8 << 10,
            Self::K16 => 16 << 10,
        }
    }

    /// The block size of `bytes` bytes, if it is one.
    pub const fn from_bytes(bytes: usize) -> Option<Self> {
        match bytes {
            1024 => Some(Self::K1),
            2048 => Some(Self::K2),
            4096 => Some(Self::K4),
            8192 => Some(Self::K8),
            16384 => Some(Self::K16),
            _ => None,
        }
    }

    /// The size in KiB (KEY_BLOCK_SIZE's unit).
    pub const fn kib(self) -> usize {
        self.bytes() >> 10
    }
}
