//! Values attached to frames: something computed from a page's bytes (a B-tree's decoded inner
//! node) that readers use without latching or pinning the page.
//!
//! Every get through a B-tree latches and pins the root and each inner page on its way down:
//! atomic read-modify-writes on cache lines every reader shares, which two readers on two cores
//! pass back and forth. LeanStore and Umbra read inner pages optimistically instead (read, then
//! check a version, retry on change). Reading bytes a writer may be changing is a data race
//! in Rust's memory model, so we read an immutable copy instead: a value derived from the bytes
//! under the shared latch, stamped with the frame's version, and valid exactly while that
//! version is current.
//!
//! **The version** (`Descriptor::version`) changes at every state change of the frame (read
//! in, evicted, discarded, reused) and, under the exclusive latch, before the first change an
//! exclusive guard makes to the bytes. A value attached under the shared latch therefore
//! describes the bytes for as long as [`BufferPool::is_current`] says its stamp is current.
//!
//! **What the version promises a reader that stepped from a parent's value to a child**: if,
//! after latching the child, the parent's stamp is still current, then no change of the parent
//! had begun when the child was latched. A B-tree structure change latches the parent before it
//! changes a child, and changes the parent before it releases the child, so a child reached
//! through a current parent is the one the parent points to (the B-tree states its side of
//! this in `btree/src/routing.rs`).
//!
//! Readers load a value through `arc_swap`: the load is protected by a debt slot of the
//! reading thread, not by a reference count all readers share.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use barracuda_page::PageId;

use crate::descriptor::State;
use crate::inner::{Due, FirstAccess};

/// A frame of the pool, by number: what a reader keeps as a hint to find a page again without
/// the page hash. A hint may be stale; [`BufferPool::attached`](crate::BufferPool::attached)
/// checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameNo(u32);

impl FrameNo {
    /// The number as a `u32`, for keeping in an atomic.
    pub fn to_raw(self) -> u32 {
        self.0
    }

    /// A frame number kept by [`to_raw`](Self::to_raw). Any value is accepted: one that names no
    /// frame of the pool finds nothing.
    pub fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    pub(crate) fn index(self) -> u32 {
        self.0
    }
}

/// A frame and the version of its bytes when the stamp was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameStamp {
    frame: u32,
    version: u64,
}

impl FrameStamp {
    pub(crate) fn new(frame: u32, version: u64) -> Self {
        Self { frame, version }
    }

    /// The frame stamped.
    pub fn frame(&self) -> FrameNo {
        FrameNo(self.frame)
    }
}

/// A value with the page and version it was derived from.
pub(crate) struct Attachment {
    page: PageId,
    version: u64,
    value: Box<dyn Any + Send + Sync>,
}

/// A frame's attachment slot (in its descriptor).
#[derive(Default)]
pub(crate) struct Slot {
    value: ArcSwapOption<Attachment>,
    /// Whether `value` may be `Some`: lets a frame's reuse skip the swap (and its scan of the
    /// readers' debt slots) when nothing was ever attached, the common case for leaves.
    occupied: AtomicBool,
}

impl Slot {
    /// Attaches `value`, derived from the bytes of `page` at `version`.
    pub(crate) fn set(&self, page: PageId, version: u64, value: Box<dyn Any + Send + Sync>) {
        self.occupied.store(true, SeqCst);
        self.value.store(Some(Arc::new(Attachment {
            page,
            version,
            value,
        })));
    }

    /// Drops the attachment, if any.
    pub(crate) fn clear(&self) {
        if self.occupied.swap(false, SeqCst) {
            self.value.store(None);
        }
    }
}

/// A value attached to a frame, current when it was handed out. Holding it keeps the value
/// alive (not the page: check [`BufferPool::is_current`](crate::BufferPool::is_current) with
/// its [`stamp`](Self::stamp) after acting on it).
pub struct Attached {
    guard: arc_swap::Guard<Option<Arc<Attachment>>>,
    stamp: FrameStamp,
}

impl Attached {
    /// The frame and the version the value was derived from.
    pub fn stamp(&self) -> FrameStamp {
        self.stamp
    }

    /// The value, if it is a `T`.
    pub fn value<T: Any>(&self) -> Option<&T> {
        self.guard.as_ref()?.value.downcast_ref()
    }
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("stamp", &self.stamp)
            .finish_non_exhaustive()
    }
}

impl crate::inner::Inner {
    /// The value attached to `frame` if the frame holds `id`, valid, at the version the value
    /// was derived from.
    pub(crate) fn attached(&self, frame: FrameNo, id: PageId) -> Option<Attached> {
        if frame.index() as usize >= self.capacity {
            return None;
        }
        let desc = &self.frames.frame(frame.index()).desc;
        let guard = desc.attachment.value.load();
        let (page, version) = guard.as_ref().map(|a| (a.page, a.version))?;
        // The version is read after the value: equal means the value was current then, and
        // the page id and state are those of that version.
        if page != id || version != desc.version() || desc.state() != State::Valid {
            return None;
        }
        Some(Attached {
            guard,
            stamp: FrameStamp::new(frame.index(), version),
        })
    }

    /// Counts a use of the stamped page for the LRU: reads only, unless the page is due to be
    /// made young.
    ///
    /// Unlike a hit, it does not keep an old page old for `old_blocks_time`: that window is
    /// there so that a scan touching a page a few times does not make it young, and a page with
    /// an attached value is no such page — a B-tree's root and inner nodes. Kept old, they
    /// were evicted within milliseconds by a pool a quarter of the data (its old sublist turns
    /// over that fast), read again, and their copies rebuilt: p99.9 of such gets 37 → 58 µs.
    pub(crate) fn touch(&self, stamp: FrameStamp) {
        if !self.is_current(stamp) {
            return;
        }
        // An eviction and reuse may come between the check and the access: the worst it does
        // is make another page young once (`make_young_locked` checks that the frame is still
        // in the LRU).
        let f = stamp.frame;
        if self.due_young(f, FirstAccess::Proven) == Due::Young {
            self.make_young(f, FirstAccess::Proven);
        }
    }

    /// Whether the frame's bytes are still at the stamped version.
    pub(crate) fn is_current(&self, stamp: FrameStamp) -> bool {
        (stamp.frame as usize) < self.capacity
            && self.frames.frame(stamp.frame).desc.version() == stamp.version
    }
}
