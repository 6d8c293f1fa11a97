//! Page guards: a pin plus a page latch, released (latch first, then pin) on drop.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::SeqCst;

use barracuda_page::{Lsn, PageId};
use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

use crate::descriptor::Descriptor;
use crate::frame::FrameBuf;
use crate::inner::Inner;

/// One pin (buffer-fix) on a frame, already taken; dropping it unpins.
pub(crate) struct Pin<'a> {
    desc: &'a Descriptor,
}

impl<'a> Pin<'a> {
    /// Wraps a pin the caller has already taken.
    pub(crate) fn new(desc: &'a Descriptor) -> Self {
        Self { desc }
    }
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        self.desc.unpin();
    }
}

/// A page pinned in the pool and latched shared (InnoDB: `RW_S_LATCH`): many readers at once,
/// including a flusher writing the page out. Derefs to the page bytes.
pub struct SharedGuard<'a> {
    // Field order matters: the latch is released before the pin.
    latch: RwLockReadGuard<'a, FrameBuf>,
    _pin: Pin<'a>,
    id: PageId,
}

impl<'a> SharedGuard<'a> {
    pub(crate) fn new(latch: RwLockReadGuard<'a, FrameBuf>, pin: Pin<'a>, id: PageId) -> Self {
        Self {
            latch,
            _pin: pin,
            id,
        }
    }

    /// The page held.
    pub fn page_id(&self) -> PageId {
        self.id
    }
}

impl Deref for SharedGuard<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.latch
    }
}

impl fmt::Debug for SharedGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedGuard")
            .field("page_id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A page pinned in the pool and latched exclusively (InnoDB: `RW_X_LATCH`). Derefs mutably to
/// the page bytes; call [`mark_dirty`](Self::mark_dirty) after changing them.
pub struct ExclusiveGuard<'a> {
    latch: RwLockWriteGuard<'a, FrameBuf>,
    pin: Pin<'a>,
    inner: &'a Inner,
    frame: u32,
    id: PageId,
}

impl<'a> ExclusiveGuard<'a> {
    pub(crate) fn new(
        inner: &'a Inner,
        frame: u32,
        latch: RwLockWriteGuard<'a, FrameBuf>,
        pin: Pin<'a>,
        id: PageId,
    ) -> Self {
        Self {
            latch,
            pin,
            inner,
            frame,
            id,
        }
    }

    /// The page held.
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// Records a change made under this latch at `lsn`: newest modification = max(newest, `lsn`);
    /// if the page was clean, oldest modification = `lsn` and the page joins the flush list.
    /// The pool writes it later only after `PageStore::flush_log_up_to(newest)` (the WAL rule).
    /// InnoDB: `buf_flush_note_modification`. A page whose space was discarded is not re-dirtied.
    pub fn mark_dirty(&mut self, lsn: Lsn) {
        self.inner.mark_dirty(self.frame, lsn);
    }

    /// Whether the page has changes not yet written.
    pub fn is_dirty(&self) -> bool {
        self.inner.frames.frame(self.frame).desc.is_dirty()
    }

    /// The newest modification LSN recorded with [`mark_dirty`](Self::mark_dirty).
    pub fn newest_modification(&self) -> Lsn {
        self.inner
            .frames
            .frame(self.frame)
            .desc
            .newest_lsn
            .load(SeqCst)
    }

    /// Turns the exclusive latch into a shared one without letting another writer in between.
    pub fn downgrade(self) -> SharedGuard<'a> {
        let Self { latch, pin, id, .. } = self;
        SharedGuard::new(RwLockWriteGuard::downgrade(latch), pin, id)
    }
}

impl Deref for ExclusiveGuard<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.latch
    }
}

impl DerefMut for ExclusiveGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.latch
    }
}

impl fmt::Debug for ExclusiveGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExclusiveGuard")
            .field("page_id", &self.id)
            .finish_non_exhaustive()
    }
}
