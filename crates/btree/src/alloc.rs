//! Page allocation seam: the B-tree asks the tablespace layer for pages and gives them back.

use barracuda_page::{PageId, PageNo, SpaceId};

use crate::error::Result;

/// Allocates and frees pages of a tablespace. Implemented by the engine's tablespace layer
/// (allocation bitmap, extents, file growth).
pub trait PageAllocator: Send + Sync {
    /// Reserves a free page of `space` and returns its number. The page's content is undefined:
    /// the caller formats it through [`BufferPool::create`](barracuda_buffer_pool::BufferPool::create).
    /// `near` is a hint (a page the new one will be linked to) for locality.
    fn allocate(&self, space: SpaceId, near: Option<PageNo>) -> Result<PageNo>;

    /// Returns a page to the free pool of its tablespace.
    fn free(&self, page: PageId) -> Result<()>;

    /// Returns many pages to the free pool, in as few mini-transactions as the implementation
    /// can (the engine's: one per few allocation bitmaps). Freeing changes only allocation
    /// state, never the pages themselves: their content stays as it was until they are
    /// allocated again, so freeing a chain far larger than the buffer pool needs no frame per
    /// page (the pages stay clean and evictable). A page that cannot be freed (out of range,
    /// already free, listed twice) is an error; pages listed before it may have been freed.
    fn free_pages(&self, pages: &[PageId]) -> Result<()> {
        pages.iter().try_for_each(|&page| self.free(page))
    }
}
