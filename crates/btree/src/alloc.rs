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
}
