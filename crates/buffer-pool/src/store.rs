//! The seam to the tablespace layer: where pages come from and go to.

use barracuda_page::{Lsn, PageId, SpaceId};

use crate::StoreError;

/// Where pages come from and go to: implemented by the engine's tablespace layer
/// (InnoDB: `fil_io` under `buf_read_page` / `buf_flush_write_block_low`).
///
/// The pool calls it without holding any pool-wide lock; a page being read is X-latched, a page
/// being written is S-latched (readers continue).
pub trait PageStore: Send + Sync + 'static {
    /// Reads page `id` into `buf` (exactly `page_size` bytes), verifying it (checksum etc.). A
    /// page of a row-compressed space stored as a block is read as the page it holds,
    /// decompressed: the pool reads such a page without a block slot when the compressed-only
    /// copy it meant to use was taken by another thread meanwhile.
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError>;

    /// Writes a batch of page images (the store seals/compresses a copy; the frames are S-latched
    /// meanwhile). Every image is a page (`page_size` bytes) or, for a page of a row-compressed
    /// space, its compressed block ([`zip_block_bytes`](Self::zip_block_bytes) bytes, its header
    /// the page's FIL header with the page LSN, unsealed).
    fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<(), StoreError>;

    /// The size of the compressed blocks in which `space` keeps its index pages (row
    /// compression, `KEY_BLOCK_SIZE`), or `None` for a space of plain pages (the default). The
    /// pool then gives each page it reads from `space` a block of that size
    /// ([`read_page_with_block`](Self::read_page_with_block)).
    fn zip_block_bytes(&self, _space: SpaceId) -> Option<usize> {
        None
    }

    /// Decompresses `block` (as [`read_page_with_block`](Self::read_page_with_block) gave
    /// it, kept in the pool since) into `buf`, the page it holds: a compressed-only page read
    /// back without I/O. Verify as a read would. Default: an error (a store without blocks is
    /// never asked).
    fn decompress_block(
        &self,
        id: PageId,
        _block: &[u8],
        _buf: &mut [u8],
    ) -> Result<(), StoreError> {
        Err(StoreError::new(id, NoBlocks))
    }

    /// Reads page `id` of a space with compressed blocks: the block as stored into `block`
    /// (exactly [`zip_block_bytes`](Self::zip_block_bytes) bytes) and the page it holds,
    /// decompressed and verified, into `buf`. Returns `Ok(false)` when the page is stored
    /// plain — not every page of such a space is an index page, and one that did not fit its
    /// block is written whole — with the page in `buf` and `block` unspecified. Default: a
    /// plain read.
    fn read_page_with_block(
        &self,
        id: PageId,
        buf: &mut [u8],
        _block: &mut [u8],
    ) -> Result<bool, StoreError> {
        self.read_page(id, buf).map(|()| false)
    }

    /// WAL rule hook: make the log durable up to `lsn` before a page whose newest change has that
    /// LSN is written (InnoDB: `log_write_up_to` in `buf_flush_write_block_low`). Default: no-op.
    fn flush_log_up_to(&self, _lsn: Lsn) -> Result<(), StoreError> {
        Ok(())
    }

    /// Pages whose newest modification is at or above this LSN must not be written yet: their
    /// change belongs to a commit unit the log has not closed (a transaction being applied),
    /// and must not reach disk before the whole unit is in the log. The pool skips such pages
    /// when it picks pages to write, and re-checks under the page latch. Default: no barrier.
    fn write_barrier(&self) -> Lsn {
        Lsn::MAX
    }

    /// Whether page `id` may be written although its newest change is behind the
    /// [`write_barrier`](Self::write_barrier): a page the open unit allocated (it was free
    /// before the unit began, so whatever it holds on disk is irrelevant if the unit is lost).
    /// Asked only for pages behind the barrier. Default: none is.
    fn exempt_from_barrier(&self, _id: PageId) -> bool {
        false
    }

    /// Number of pages allocated in `space` (read-ahead never reads past it). `None` = unknown space.
    fn space_size_pages(&self, space: SpaceId) -> Option<u32>;

    /// Asked after [`write_pages`](Self::write_pages) failed: why no page may be written any
    /// more (a sync of a file failed, so writes made before it may be lost while a retried sync
    /// reports success), or `None` when the batch may simply be retried later. On `Some` the
    /// pool stops its writes for good, as for a poisoned frame. Default: `None`.
    fn writes_must_stop(&self) -> Option<String> {
        None
    }
}

/// The error of a store asked to decompress a block it never gave.
#[derive(Debug, thiserror::Error)]
#[error("this page store keeps no compressed blocks")]
struct NoBlocks;
