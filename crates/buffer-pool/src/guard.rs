//! Page guards: a pin plus a page latch, released (latch first, then pin) on drop.

use std::any::Any;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::SeqCst;

use barracuda_page::{Lsn, PageId};
use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

use crate::attach::FrameStamp;
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
    pin: Pin<'a>,
    id: PageId,
    frame: u32,
}

impl<'a> SharedGuard<'a> {
    pub(crate) fn new(
        latch: RwLockReadGuard<'a, FrameBuf>,
        pin: Pin<'a>,
        id: PageId,
        frame: u32,
    ) -> Self {
        Self {
            latch,
            pin,
            id,
            frame,
        }
    }

    /// The page held.
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// The frame holding the page and the version of its bytes, which cannot change while this
    /// guard lives.
    pub fn stamp(&self) -> FrameStamp {
        FrameStamp::new(self.frame, self.pin.desc.version())
    }

    /// Attaches `value`, computed from the bytes this guard shows, to the frame, replacing what
    /// was attached. [`BufferPool::attached`](crate::BufferPool::attached) hands it out for as
    /// long as the bytes stay as they are now; it is dropped when the frame is reused.
    pub fn attach(&self, value: Box<dyn Any + Send + Sync>) {
        let desc = self.pin.desc;
        desc.attachment.set(self.id, desc.version(), value);
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
/// the frame when dropped with an unrecorded change. Keeps the page's before-image when the
/// pool captures them.
struct ChangeTracker<'a> {
    inner: &'a Inner,
    frame: u32,
    id: PageId,
    unrecorded_change: bool,
    /// The page was created by this guard (zero-filled, not read): its earlier contents do not
    /// matter, and there is no before-image to keep.
    created: bool,
    /// The frame's version was bumped for this guard's changes (once is enough: nothing can
    /// read the bytes, nor derive a value from them, until the latch is released).
    version_bumped: bool,
    /// The page as it was before the first unrecorded change taken through `DerefMut`.
    before: Option<Box<[u8]>>,
    /// The page as it was before the first unrecorded described change, when the pool keeps
    /// it ([`PoolConfig::keep_described_from`](crate::PoolConfig::keep_described_from)).
    described_from: Option<Box<[u8]>>,
}

impl ChangeTracker<'_> {
    /// Called before every change to the bytes: the first one gives the frame a new version,
    /// so values derived from the old bytes are no longer handed out (`attach.rs`).
    fn will_change(&mut self) {
        if !self.version_bumped {
            self.version_bumped = true;
            self.inner.frames.frame(self.frame).desc.bump_version();
        }
    }

    /// Forgets the before-image (a recorded change starts a new one).
    fn clear_before(&mut self) {
        if let Some(buf) = self.before.take() {
            before_images::give_back(buf);
        }
        if let Some(buf) = self.described_from.take() {
            before_images::give_back(buf);
        }
    }
}

impl Drop for ChangeTracker<'_> {
    fn drop(&mut self) {
        if self.unrecorded_change {
            self.inner.poison_frame(self.frame, self.id);
        }
        self.clear_before();
    }
}

/// Page-sized buffers for before-images, recycled per thread: a mini-transaction takes and
/// returns a few per page it changes, and this keeps that off the allocator.
mod before_images {
    use std::cell::RefCell;

    /// Buffers kept per thread (an mtr changes a handful of pages; a split up the tree a few
    /// more).
    const KEEP: usize = 16;

    thread_local! {
        static SPARE: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
    }

    /// A copy of `page` in a recycled buffer when one of its size is at hand.
    pub(super) fn copy_of(page: &[u8]) -> Box<[u8]> {
        let recycled = SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            let at = spare.iter().rposition(|b| b.len() == page.len())?;
            Some(spare.swap_remove(at))
        });
        match recycled {
            Some(mut buf) => {
                buf.copy_from_slice(page);
                buf
            }
            None => page.into(),
        }
    }

    /// Returns a buffer for later copies.
    pub(super) fn give_back(buf: Box<[u8]>) {
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < KEEP {
                spare.push(buf);
            }
        });
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
                created: false,
                version_bumped: false,
                before: None,
                described_from: None,
            },
            latch,
            pin,
        }
    }

    /// A guard on a page just created (zero-filled, not read from disk).
    pub(crate) fn new_created(
        inner: &'a Inner,
        frame: u32,
        latch: RwLockWriteGuard<'a, FrameBuf>,
        pin: Pin<'a>,
        id: PageId,
    ) -> Self {
        let mut guard = Self::new(inner, frame, latch, pin, id);
        guard.tracker.created = true;
        // Its bytes were zeroed under this latch.
        guard.tracker.will_change();
        guard
    }

    /// Whether this guard created the page ([`BufferPool::create`](crate::BufferPool::create)):
    /// it started all zeros, and whatever the page held before (on disk or in the pool) is
    /// irrelevant — a redo log records it as a page initialisation. Reset by
    /// [`mark_dirty`](Self::mark_dirty).
    pub fn is_created(&self) -> bool {
        self.tracker.created
    }

    /// The page as it was before this guard's first change since the last
    /// [`mark_dirty`](Self::mark_dirty) (or since the guard was taken), when the pool captures
    /// before-images ([`PoolConfig::capture_before_images`](crate::PoolConfig::capture_before_images)).
    /// `None` when nothing was changed, when the pool does not capture, and for a created page
    /// (whose before-image is all zeros, see [`is_created`](Self::is_created)).
    pub fn before_image(&self) -> Option<&[u8]> {
        self.tracker.before.as_deref()
    }

    /// The page bytes, mutably, for a change the caller describes to the log itself (a
    /// logical redo record such as an index insert, replayed by the same code that made the
    /// change) instead of leaving it to a before/after diff: unlike [`DerefMut`] this captures
    /// no before-image, which is the point — a page copy per change is what it saves.
    ///
    /// It counts as a change like `DerefMut` (an unrecorded change poisons the frame). The
    /// caller's description is complete only while [`before_image`](Self::before_image) is
    /// `None` and the page was not [created](Self::is_created): once a before-image exists, the
    /// diff from it covers this change too, and the description must be dropped. Changes
    /// described before the first `DerefMut` followed by that diff reproduce the page.
    pub fn described_change_mut(&mut self) -> &mut [u8] {
        self.keep_described_from();
        let t = &mut self.tracker;
        t.will_change();
        t.unrecorded_change = true;
        t.inner.frames.frame(t.frame).desc.mark_zip_stale();
        &mut self.latch
    }

    /// Keeps the page as it is now as the start of its described changes, when the pool keeps
    /// those and no before-image or earlier description start exists.
    fn keep_described_from(&mut self) {
        let t = &mut self.tracker;
        if t.inner.keep_described_from
            && t.inner.capture_before_images
            && !t.created
            && t.before.is_none()
            && t.described_from.is_none()
        {
            t.described_from = Some(before_images::copy_of(&self.latch));
        }
    }

    /// The page as it was before the first [described change](Self::described_change_mut)
    /// since the last [`mark_dirty`](Self::mark_dirty), when the pool keeps it
    /// ([`PoolConfig::keep_described_from`](crate::PoolConfig::keep_described_from)) and no
    /// before-image had been captured then: what replaying the description (then the diff
    /// from the before-image, if any) must turn into the page.
    pub fn described_from(&self) -> Option<&[u8]> {
        self.tracker.described_from.as_deref()
    }

    /// The page held.
    pub fn page_id(&self) -> PageId {
        self.tracker.id
    }

    /// The frame the page is in (a hint for finding it again without the page hash).
    pub fn frame(&self) -> crate::FrameNo {
        crate::FrameNo::from_raw(self.tracker.frame)
    }

    /// Says that the holder has finished with the page for a while (the left page of a split
    /// that appended): if its tablespace asks for write-behind
    /// ([`PageStore::write_behind`](crate::PageStore::write_behind)), it is queued for the
    /// next [`BufferPool::write_behind`](crate::BufferPool::write_behind) batch, which writes it
    /// once this guard and the commit unit that changed it are done with it. A hint only: the
    /// page stays in the pool, and changing it again is allowed.
    pub fn hint_write_behind(&self) {
        self.tracker
            .inner
            .hint_write_behind(self.tracker.frame, self.tracker.id);
    }

    /// Attaches `value` to the frame (as [`SharedGuard::attach`]) after this guard's changes:
    /// `value` must be derived from the bytes as they will be when the latch is released, so
    /// call it after the last change made through this guard. The frame's version moved at
    /// the guard's first change and does not move again before the release (a later guard's
    /// first change moves it, and the value stops being handed out), so readers get the value
    /// for exactly the bytes it describes — once they can latch the page, or its children.
    pub fn attach_final(&self, value: Box<dyn Any + Send + Sync>) {
        let desc = &self.tracker.inner.frames.frame(self.tracker.frame).desc;
        desc.attachment.set(self.tracker.id, desc.version(), value);
    }

    /// Writes `lsn` into the page header's LSN field (what a mini-transaction does at commit,
    /// before [`mark_dirty_since`](Self::mark_dirty_since)). The stamp is the log's own
    /// position, not a change the log records, so unlike [`DerefMut`] it captures no
    /// before-image; it counts as a change until the change is recorded.
    pub fn stamp_page_lsn(&mut self, lsn: Lsn) {
        self.tracker.will_change();
        self.tracker.unrecorded_change = true;
        barracuda_page::set_page_lsn(&mut self.latch, lsn);
        if let Some((_, block)) = self.zip_parts_mut() {
            // The block's header has the page's FIL header layout: its LSN is the page's.
            barracuda_page::set_page_lsn(block, lsn);
        }
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
        self.tracker.created = false;
        self.tracker.clear_before();
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
        let (id, frame) = (tracker.id, tracker.frame);
        drop(tracker);
        SharedGuard::new(RwLockWriteGuard::downgrade(latch), pin, id, frame)
    }
}

/// Whether a page has a compressed block, and whether the block holds the frame's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipState {
    /// No block: the page is plain in the pool (and written plain).
    None,
    /// The block holds the page as the frame has it: a flush writes the block.
    Synced,
    /// The frame changed alone since: a flush writes the frame, until the block is brought in
    /// step again ([`ExclusiveGuard::sync_zip`]).
    Stale,
}

impl ExclusiveGuard<'_> {
    fn desc(&self) -> &Descriptor {
        &self.tracker.inner.frames.frame(self.tracker.frame).desc
    }

    /// The frame and the block, both writable, with no change tracking of their own.
    #[expect(
        unsafe_code,
        reason = "the block is reached through its owner's latch (zip.rs)"
    )]
    fn zip_parts_mut(&mut self) -> Option<(&mut [u8], &mut [u8])> {
        let link = self.desc().zip_link()?;
        self.tracker.will_change();
        // SAFETY: this guard holds the X latch of the page owning the block, and the returned
        // borrow of `self` keeps any other access through this guard out while it lives.
        let block = unsafe { self.tracker.inner.zip_bytes_mut(link.slot) };
        Some((&mut self.latch, block))
    }

    /// Whether the page has a compressed block (row compression) and whether it is in step.
    pub fn zip_state(&self) -> ZipState {
        match self.desc().zip_link() {
            None => ZipState::None,
            Some(link) if link.stale => ZipState::Stale,
            Some(_) => ZipState::Synced,
        }
    }

    /// The page's compressed block, if it has one (synced or not: see [`zip_state`](Self::zip_state)).
    #[expect(
        unsafe_code,
        reason = "the block is reached through its owner's latch (zip.rs)"
    )]
    pub fn zip_block(&self) -> Option<&[u8]> {
        let link = self.desc().zip_link()?;
        // SAFETY: this guard holds the X latch of the page owning the block; the borrow of
        // `self` keeps mutable access through this guard out while the slice lives.
        Some(unsafe { self.tracker.inner.zip_bytes(link.slot) })
    }

    /// Offers the frame and its block to `change`, for one change the caller makes to both (a
    /// B-tree change logged on the block's modification log) and describes to the log as a
    /// [described change](Self::described_change_mut) — no before-image is taken either.
    /// `change` returns whether it changed anything (an attempt that found no room changes
    /// neither, and then the guard records no change) and its result. The block keeps its
    /// state: the caller keeps the two in step, or leaves the block stale with
    /// [`mark_zip_stale`](Self::mark_zip_stale). `None` when the page has no block.
    pub fn change_with_zip<R>(
        &mut self,
        change: impl FnOnce(&mut [u8], &mut [u8]) -> (bool, R),
    ) -> Option<R> {
        self.desc().zip_link()?;
        self.keep_described_from();
        let (frame, block) = self.zip_parts_mut()?;
        let (changed, result) = change(frame, block);
        if changed {
            self.tracker.unrecorded_change = true;
        }
        Some(result)
    }

    /// Marks the block stale: the frame changed without it.
    pub fn mark_zip_stale(&mut self) {
        self.desc().mark_zip_stale();
    }

    /// Brings the block in step with the frame: `sync` gets the frame and the block and returns
    /// whether the block now holds the frame's page (it recompressed it). When it did not (the
    /// page does not fit), the block is dropped and the page stays plain. Returns whether the
    /// page has a synced block afterwards; `false` at once when it has no block.
    pub fn sync_zip(&mut self, sync: impl FnOnce(&[u8], &mut [u8]) -> bool) -> bool {
        let Some(link) = self.desc().zip_link() else {
            return false;
        };
        let synced = match self.zip_parts_mut() {
            Some((frame, block)) => sync(frame, block),
            None => false,
        };
        if synced {
            self.desc().set_zip_link(Some(crate::zip::ZipLink {
                stale: false,
                ..link
            }));
        } else {
            self.detach_zip();
        }
        synced
    }

    /// Gives the page a block of `bytes` bytes (a power of two from 1 KiB to the page size),
    /// stale until [`sync_zip`](Self::sync_zip) fills it; a block it had is freed first. The
    /// block comes from the pool's own frames, taken as the free-page policy says when none
    /// has room. Errors: the size is not a block size, or no frame could be had.
    pub fn attach_zip(&mut self, bytes: usize) -> Result<(), crate::PoolError> {
        let inner = self.tracker.inner;
        let shift = crate::zip::block_shift(bytes, inner.page_size).ok_or_else(|| {
            crate::PoolError::InvalidConfig(format!(
                "{bytes} bytes is not a compressed block size for {} pages",
                inner.page_size
            ))
        })?;
        self.detach_zip();
        let slot = inner.zip_alloc(shift)?;
        self.desc()
            .set_zip_link(Some(crate::zip::ZipLink { slot, stale: true }));
        Ok(())
    }

    /// Frees the page's block, if it has one: the page is plain from now on.
    pub fn detach_zip(&mut self) {
        let inner = self.tracker.inner;
        if let Some(f) = inner.take_zip(self.tracker.frame) {
            inner.return_free(f);
        }
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
        let t = &mut self.tracker;
        t.will_change();
        if t.inner.capture_before_images && !t.created && t.before.is_none() {
            t.before = Some(before_images::copy_of(&self.latch));
        }
        t.unrecorded_change = true;
        t.inner.frames.frame(t.frame).desc.mark_zip_stale();
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
