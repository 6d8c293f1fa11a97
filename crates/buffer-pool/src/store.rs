//! The seam to the tablespace layer: where pages come from and go to.

use barracuda_page::{Lsn, PageId, SpaceId};

use crate::StoreError;

/// Where pages come from and go to: implemented by the engine's tablespace layer
/// (InnoDB: `fil_io` under `buf_read_page` / `buf_flush_write_block_low`).
///
/// The pool calls it without holding any pool-wide lock; a page being read is X-latched, a page
/// being written is S-latched (readers continue).
pub trait PageStore: Send + Sync + 'static {
    /// Reads page `id` into `buf` (exactly `page_size` bytes), verifying it (checksum etc.).
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError>;

    /// Writes a batch of page images (the store seals/compresses a copy; the frames are S-latched
    /// meanwhile). Every image is exactly `page_size` bytes.
    fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<(), StoreError>;

    /// WAL rule hook: make the log durable up to `lsn` before a page whose newest change has that
    /// LSN is written (InnoDB: `log_write_up_to` in `buf_flush_write_block_low`). Default: no-op.
    fn flush_log_up_to(&self, _lsn: Lsn) -> Result<(), StoreError> {
        Ok(())
    }

    /// Number of pages allocated in `space` (read-ahead never reads past it). `None` = unknown space.
    fn space_size_pages(&self, space: SpaceId) -> Option<u32>;
}
