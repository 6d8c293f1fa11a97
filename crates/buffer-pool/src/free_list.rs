//! The free list: frames holding no page (InnoDB: `buf_pool->free`).
//!
//! A stack (the most recently freed frame is reused first, its memory is likely still cached).
//! The length is mirrored in an atomic so policies and the LRU manager can read it without the
//! LRU mutex.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The free list. Mutated under the pool's LRU mutex.
pub(crate) struct FreeList {
    frames: Vec<u32>,
}

impl FreeList {
    /// A free list holding every frame of a `capacity`-frame pool.
    pub(crate) fn full(capacity: usize) -> Self {
        Self {
            frames: (0..capacity as u32).rev().collect(),
        }
    }

    pub(crate) fn pop(&mut self, len_mirror: &AtomicUsize) -> Option<u32> {
        let f = self.frames.pop();
        len_mirror.store(self.frames.len(), Relaxed);
        f
    }

    pub(crate) fn push(&mut self, f: u32, len_mirror: &AtomicUsize) {
        self.frames.push(f);
        len_mirror.store(self.frames.len(), Relaxed);
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }
}
