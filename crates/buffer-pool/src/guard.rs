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
///
/// **A change must be recorded before the guard is released.** Taking the bytes mutably
/// ([`DerefMut`]) counts as changing the page; [`mark_dirty`](Self::mark_dirty) records the
/// change. A guard released with an unrecorded change — an error or panic part-way through a
/// mini-transaction — *poisons* the frame: the pool never writes it and refuses to hand it out
/// again ([`PoolError::PoisonedPage`](crate::PoolError::PoisonedPage)), and it stops writing any
/// page ([`BufferPool::stop_writes`](crate::BufferPool::stop_writes)), so a half-done change can
/// neither be read nor reach disk. Only read through a shared view (`&guard[..]`) when deciding
/// whether to change a page.
pub struct ExclusiveGuard<'a> {
    // Field order matters: the change tracker runs (and may poison the frame) while the latch
    // is still held, so no other thread sees the half-changed page first.
    tracker: ChangeTracker<'a>,
    latch: RwLockWriteGuard<'a, FrameBuf>,
    pin: Pin<'a>,
}

/// Whether an exclusive guard's page was changed since the change was last recorded; poisons
/// the frame when dropped with an unrecorded change.
struct ChangeTracker<'a> {
    inner: &'a Inner,
    frame: u32,
    id: PageId,
    unrecorded_change: bool,
}

impl Drop for ChangeTracker<'_> {
    fn drop(&mut self) {
        if self.unrecorded_change {
            self.inner.poison_frame(self.frame, self.id);
        }
    }
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
            tracker: ChangeTracker {
                inner,
                frame,
                id,
                unrecorded_change: false,
            },
            latch,
            pin,
        }
    }

    /// The page held.
    pub fn page_id(&self) -> PageId {
        self.tracker.id
    }

    /// Records a change made under this latch at `lsn`: newest modification = max(newest, `lsn`);
    /// if the page was clean, oldest modification = `lsn` and the page joins the flush list.
    /// The pool writes it later only after `PageStore::flush_log_up_to(newest)` (the WAL rule).
    /// InnoDB: `buf_flush_note_modification`. A page whose space was discarded is not re-dirtied.
    pub fn mark_dirty(&mut self, lsn: Lsn) {
        self.mark_dirty_since(lsn, lsn);
    }

    /// Records a change logged from `start_lsn` to `end_lsn` (a mini-transaction's range):
    /// newest modification = max(newest, `end_lsn`); if the page was clean, oldest modification
    /// = `start_lsn`, so that a checkpoint at the page's oldest modification replays the whole
    /// mtr. Otherwise as [`mark_dirty`](Self::mark_dirty).
    pub fn mark_dirty_since(&mut self, start_lsn: Lsn, end_lsn: Lsn) {
        self.tracker
            .inner
            .mark_dirty(self.tracker.frame, start_lsn, end_lsn);
        self.tracker.unrecorded_change = false;
    }

    /// Whether the bytes were taken mutably since the last [`mark_dirty`](Self::mark_dirty)
    /// (or since the guard was taken).
    pub fn has_unrecorded_change(&self) -> bool {
        self.tracker.unrecorded_change
    }

    /// Whether the page has changes not yet written.
    pub fn is_dirty(&self) -> bool {
        self.tracker
            .inner
            .frames
            .frame(self.tracker.frame)
            .desc
            .is_dirty()
    }

    /// The newest modification LSN recorded with [`mark_dirty`](Self::mark_dirty).
    pub fn newest_modification(&self) -> Lsn {
        self.tracker
            .inner
            .frames
            .frame(self.tracker.frame)
            .desc
            .newest_lsn
            .load(SeqCst)
    }

    /// Turns the exclusive latch into a shared one without letting another writer in between.
    /// An unrecorded change poisons the frame first (see the type's documentation).
    pub fn downgrade(self) -> SharedGuard<'a> {
        let Self {
            tracker,
            latch,
            pin,
        } = self;
        let id = tracker.id;
        drop(tracker);
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
        self.tracker.unrecorded_change = true;
        &mut self.latch
    }
}

impl fmt::Debug for ExclusiveGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExclusiveGuard")
            .field("page_id", &self.tracker.id)
            .finish_non_exhaustive()
    }
}
