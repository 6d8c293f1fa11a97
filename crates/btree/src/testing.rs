//! Test doubles for code that builds trees without a tablespace (tests, doc examples, benches).

use std::collections::HashMap;

use parking_lot::Mutex;

use barracuda_page::{PageId, PageNo, SpaceId};

use crate::alloc::PageAllocator;
use crate::error::{BTreeError, Result};

/// A page allocator that hands out page numbers from 1 upwards per space and reuses freed ones.
/// It keeps no on-disk state: for tests over an in-memory page store.
#[derive(Debug, Default)]
pub struct MemAllocator {
    spaces: Mutex<HashMap<SpaceId, SpaceState>>,
}

#[derive(Debug, Default)]
struct SpaceState {
    next: PageNo,
    free: Vec<PageNo>,
    allocated: u64,
}

impl MemAllocator {
    /// An allocator with no pages handed out.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pages of `space` currently allocated (handed out and not freed).
    pub fn allocated_pages(&self, space: SpaceId) -> u64 {
        self.spaces.lock().get(&space).map_or(0, |s| s.allocated)
    }
}

impl PageAllocator for MemAllocator {
    fn allocate(&self, space: SpaceId, _near: Option<PageNo>) -> Result<PageNo> {
        let mut spaces = self.spaces.lock();
        let state = spaces.entry(space).or_default();
        state.allocated += 1;
        if let Some(page) = state.free.pop() {
            return Ok(page);
        }
        state.next += 1;
        Ok(state.next)
    }

    fn free(&self, page: PageId) -> Result<()> {
        let mut spaces = self.spaces.lock();
        let state = spaces.entry(page.space_id).or_default();
        if page.page_no == 0 || page.page_no > state.next || state.free.contains(&page.page_no) {
            return Err(BTreeError::Allocation {
                space: page.space_id,
                what: format!("free of page {} that is not allocated", page.page_no),
            });
        }
        state.allocated -= 1;
        state.free.push(page.page_no);
        Ok(())
    }
}
