//! Frames taken ahead of need, so that creating pages later in a mini-transaction cannot fail.
//!
//! A structure change (a B-tree split) must acquire everything that can fail — pages, frames,
//! latches — before it changes its first byte, because it cannot be taken back half-way. The
//! frames of the pages it will create come from a [`FrameReservation`]; the reservation is the
//! only step that can wait for or fail to find a free frame. InnoDB reserves free *extents* for
//! the same reason (`fsp_reserve_free_extents` before `btr_page_split_and_insert`) and relies on
//! the buffer pool never failing; we make the frame half of it explicit too.

use crate::guard::ExclusiveGuard;
use crate::inner::Inner;
use crate::PoolError;
use barracuda_page::PageId;

/// Free frames owned by one caller; unused ones go back to the free list when it is dropped.
pub struct FrameReservation<'a> {
    inner: &'a Inner,
    frames: Vec<u32>,
}

impl<'a> FrameReservation<'a> {
    /// Takes `count` free frames, evicting or flushing as the free-page policy says. On an error
    /// the frames already taken are given back.
    pub(crate) fn take(inner: &'a Inner, count: usize) -> Result<Self, PoolError> {
        let mut reservation = Self {
            inner,
            frames: Vec::with_capacity(count),
        };
        for _ in 0..count {
            reservation.frames.push(inner.get_free_frame()?);
        }
        Ok(reservation)
    }

    /// Frames still reserved.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether every reserved frame was used.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Creates page `id` in a reserved frame (or in its current frame if the pool holds it):
    /// zeroed, latched exclusively, clean. Fails only if the reservation is used up or the page
    /// is poisoned — both mean the caller's plan was wrong, not that the pool ran short.
    pub(crate) fn create(&mut self, id: PageId) -> Result<ExclusiveGuard<'a>, PoolError> {
        let inner = self.inner;
        inner.create_with(id, || {
            self.frames
                .pop()
                .ok_or(PoolError::ReservationExhausted { page: id })
        })
    }
}

impl Drop for FrameReservation<'_> {
    fn drop(&mut self) {
        for f in self.frames.drain(..) {
            self.inner.return_free(f);
        }
    }
}

impl std::fmt::Debug for FrameReservation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReservation")
            .field("frames", &self.frames.len())
            .finish()
    }
}
