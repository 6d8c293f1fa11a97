//! The free list: frames holding no page (InnoDB: `buf_pool->free`).
//!
//! A stack (the most recently freed frame is reused first, its memory is likely still cached)
//! over the frames never used yet, which are handed out in ascending order once the stack is
//! empty: creating the list costs nothing whatever the pool size, and frames (with their lazily
//! built metadata, see `frame.rs`) come into use one chunk after the other.
//! The length is mirrored in an atomic so policies and the LRU manager can read it without the
//! LRU mutex.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The free list. Mutated under its own mutex (`Inner::free`).
pub(crate) struct FreeList {
    /// Frames that held a page and were freed.
    freed: Vec<u32>,
    /// Frames never handed out.
    never_used: Range<u32>,
}

impl FreeList {
    /// A free list holding every frame of a `capacity`-frame pool (`capacity` fits in a `u32`).
    pub(crate) fn full(capacity: usize) -> Self {
        Self {
            freed: Vec::new(),
            never_used: 0..u32::try_from(capacity).unwrap_or(u32::MAX),
        }
    }

    pub(crate) fn pop(&mut self, len_mirror: &AtomicUsize) -> Option<u32> {
        let f = self.freed.pop().or_else(|| self.never_used.next());
        len_mirror.store(self.len(), Relaxed);
        f
    }

    pub(crate) fn push(&mut self, f: u32, len_mirror: &AtomicUsize) {
        self.freed.push(f);
        len_mirror.store(self.len(), Relaxed);
    }

    /// The first frame never handed out (the capacity once every frame has been): frames
    /// from here on are untouched memory, handed out in ascending order.
    pub(crate) fn frontier(&self) -> usize {
        self.never_used.start as usize
    }

    pub(crate) fn len(&self) -> usize {
        self.freed.len() + self.never_used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_frames_are_reused_first_then_unused_ones_in_order() {
        let mirror = AtomicUsize::new(0);
        let mut list = FreeList::full(4);
        assert_eq!(list.len(), 4);
        assert_eq!(list.pop(&mirror), Some(0));
        assert_eq!(list.pop(&mirror), Some(1));
        list.push(0, &mirror);
        assert_eq!(mirror.load(Relaxed), 3);
        assert_eq!(list.pop(&mirror), Some(0));
        assert_eq!(list.pop(&mirror), Some(2));
        assert_eq!(list.pop(&mirror), Some(3));
        assert_eq!(list.pop(&mirror), None);
        assert_eq!(mirror.load(Relaxed), 0);
    }
}
