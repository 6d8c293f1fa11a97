//! What a structure change acquires before its first change.
//!
//! A split or a merge changes several pages in one mini-transaction and cannot be taken back
//! half-way (an abandoned mtr poisons its pages, see [`crate::Mtr`]). So every step that can fail
//! — reading a sibling, allocating a page, finding a frame — happens first, into a
//! [`Held`]; the change itself then only takes from it. Taking something the plan did not
//! acquire is a bug in the plan, reported as an error (and the mtr is abandoned).

use barracuda_buffer_pool::{ExclusiveGuard, FrameReservation};
use barracuda_page::{PageId, PageNo};

use crate::error::{BTreeError, Result};
use crate::tree::BTree;

/// Pages latched, pages allocated and frames reserved ahead of a structure change.
pub(crate) struct Held<'a> {
    tree: &'a BTree,
    /// Sibling pages latched exclusively (split: right neighbours; merge: neighbours and the
    /// right node's right neighbour).
    latched: Vec<ExclusiveGuard<'a>>,
    /// Allocated page numbers not used yet, taken from the end.
    new_pages: Vec<PageNo>,
    /// Frames for the new pages.
    frames: Option<FrameReservation<'a>>,
}

impl<'a> Held<'a> {
    /// Starts a structure change's plan. Its caller holds the latches of the pages the change
    /// starts from (the leaf and its latched ancestors) and has neither latched the siblings
    /// nor changed anything yet: the structure epoch is bumped now, so that whoever latches any
    /// page this change will touch after it does sees a new epoch, and a last-insert position
    /// found before it is void (`append.rs`).
    pub(crate) fn new(tree: &'a BTree) -> Self {
        tree.note_structure_change();
        Self {
            tree,
            latched: Vec::new(),
            new_pages: Vec::new(),
            frames: None,
        }
    }

    /// Latches `page_no` exclusively (once, however often it is asked for).
    pub(crate) fn latch(&mut self, page_no: PageNo) -> Result<()> {
        let id = self.tree.page_id(page_no);
        if !self.latched.iter().any(|g| g.page_id() == id) {
            self.latched.push(self.tree.ctx.pool.get_exclusive(id)?);
        }
        Ok(())
    }

    /// A page latched by [`latch`](Self::latch) and not taken yet.
    pub(crate) fn get(&self, page_no: PageNo) -> Option<&ExclusiveGuard<'a>> {
        let id = self.tree.page_id(page_no);
        self.latched.iter().find(|g| g.page_id() == id)
    }

    /// Allocates `count` new pages near `near` and reserves a frame for each. On an error what
    /// was allocated so far is given back when `self` is dropped.
    pub(crate) fn allocate(&mut self, count: usize, near: PageNo) -> Result<()> {
        for _ in 0..count {
            let page = self.tree.ctx.alloc.allocate(self.tree.space, Some(near))?;
            self.new_pages.push(page);
        }
        // Taken last from the end: reverse so the first allocated (nearest) is used first.
        self.new_pages.reverse();
        self.frames = Some(self.tree.ctx.pool.reserve_frames(count)?);
        Ok(())
    }

    /// A latched page, taken out of the plan.
    pub(crate) fn take_latched(&mut self, page_no: PageNo) -> Result<ExclusiveGuard<'a>> {
        let id = self.tree.page_id(page_no);
        match self.latched.iter().position(|g| g.page_id() == id) {
            Some(i) => Ok(self.latched.swap_remove(i)),
            None => Err(plan_error(id, "a page the change needs was not latched")),
        }
    }

    /// A new page, created (zeroed, latched) in a reserved frame.
    pub(crate) fn take_new_page(&mut self, for_page: PageId) -> Result<ExclusiveGuard<'a>> {
        let (Some(page_no), Some(frames)) = (self.new_pages.pop(), self.frames.as_mut()) else {
            return Err(plan_error(for_page, "the change needs more new pages"));
        };
        let id = self.tree.page_id(page_no);
        Ok(self.tree.ctx.pool.create_reserved(frames, id)?)
    }
}

/// Dropping releases what the change did not use: latches, frames, and the unused new pages,
/// which go back to the allocator (nothing points to them: they were never linked). Drop it
/// after the mtr committed, since freeing a page is a change of its own. A failure to free
/// only leaks the page, so it is logged, not returned.
impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.latched.clear();
        self.frames = None;
        for page_no in std::mem::take(&mut self.new_pages) {
            let id = self.tree.page_id(page_no);
            if let Err(err) = self.tree.ctx.alloc.free(id) {
                tracing::warn!(%err, %id, "could not free an unused page reserved for a structure change; it leaks");
            }
        }
    }
}

fn plan_error(page: PageId, what: &str) -> BTreeError {
    BTreeError::corrupt(page, format!("structure change plan: {what}"))
}
