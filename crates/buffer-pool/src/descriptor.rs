//! Frame descriptors: what a frame holds and who uses it (InnoDB: `buf_page_t`).
//!
//! Fields are atomics so that hits read them without a pool-wide lock. Which lock orders which
//! write is stated per field.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

use barracuda_page::{Lsn, PageId};

/// Life cycle of a frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum State {
    /// On the free list or owned by the thread that just took it.
    Free = 0,
    /// In the page hash and the LRU; its reader holds the X latch until the bytes are in.
    /// InnoDB: io-fixed `BUF_IO_READ`.
    ReadPending = 1,
    /// Holds a valid page, in the page hash and the LRU.
    Valid = 2,
    /// In the LRU but no longer in the page hash (read failed, or its space was discarded): the
    /// next LRU scan returns it to the free list once unpinned.
    Stale = 3,
    /// Lent to the buddy allocator to hold compressed pages' blocks (InnoDB:
    /// `BUF_BLOCK_MEMORY`): in no list and no hash, its latch never taken; its bytes are
    /// reached only through the blocks' owners ([`crate::zip`]).
    Memory = 4,
}

/// Per-frame metadata.
pub(crate) struct Descriptor {
    /// Packed [`PageId`]; written only by the thread owning a `Free` frame.
    page_id: AtomicU64,
    state: AtomicU8,
    /// Pin (buffer-fix) count. Taken under the page-hash shard lock (lookups), the LRU mutex
    /// (LRU flushes) or the flush-list mutex (flush-list flushes); a pinned frame is never
    /// evicted. A hinted lookup (`Inner::fetch_shared_at`) pins without any of them and checks
    /// the frame afterwards, so a free frame may carry such a pin for a moment.
    pin: AtomicU32,
    /// Dirty flag, written under the flush-list mutex.
    pub(crate) dirty: AtomicBool,
    /// LSN of the first change since the page was last written (InnoDB: `oldest_modification`).
    pub(crate) oldest_lsn: AtomicU64,
    /// LSN of the newest change (InnoDB: `newest_modification`).
    pub(crate) newest_lsn: AtomicU64,
    /// Pool-wide dirty epoch at the page's last clean → dirty transition.
    pub(crate) dirty_epoch: AtomicU64,
    /// Bumped at every `mark_dirty`, so a flusher can tell whether the page changed meanwhile.
    pub(crate) modify_count: AtomicU64,
    /// A write of this frame is in progress (InnoDB: io-fixed `BUF_IO_WRITE`).
    pub(crate) flushing: AtomicBool,
    /// Milliseconds since the pool's epoch (+1) of the first access; 0 = never accessed.
    /// InnoDB: `buf_page_t::access_time`.
    pub(crate) first_access_ms: AtomicU64,
    /// Pool-wide freed-page clock when the page was last put at the LRU head.
    pub(crate) freed_page_clock: AtomicU64,
    /// Brought in by read-ahead and not accessed since.
    pub(crate) read_ahead: AtomicBool,
    /// Left half-changed by a mini-transaction that did not complete: never written, evicted
    /// or handed out again (`poison.rs`).
    pub(crate) poisoned: AtomicBool,
    /// The page's compressed block, packed by [`crate::zip::ZipLink`] (0: none). Written only
    /// under the page's X latch or by the thread owning the frame (reading it in, freeing it).
    pub(crate) zip: AtomicU64,
    /// Version of the frame's bytes and identity: bumped at every state change and, under the
    /// X latch, before the first change a guard makes to the bytes. Never reset, so a version
    /// names one content of one page for the frame's whole life (`attach.rs`).
    version: AtomicU64,
    /// A value derived from the bytes at some version (`attach.rs`).
    pub(crate) attachment: crate::attach::Slot,
}

impl Descriptor {
    pub(crate) fn new() -> Self {
        Self {
            page_id: AtomicU64::new(0),
            state: AtomicU8::new(State::Free as u8),
            pin: AtomicU32::new(0),
            dirty: AtomicBool::new(false),
            oldest_lsn: AtomicU64::new(0),
            newest_lsn: AtomicU64::new(0),
            dirty_epoch: AtomicU64::new(0),
            modify_count: AtomicU64::new(0),
            flushing: AtomicBool::new(false),
            first_access_ms: AtomicU64::new(0),
            freed_page_clock: AtomicU64::new(0),
            read_ahead: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            zip: AtomicU64::new(0),
            version: AtomicU64::new(0),
            attachment: crate::attach::Slot::default(),
        }
    }

    /// The version of the frame's bytes (see the field).
    pub(crate) fn version(&self) -> u64 {
        self.version.load(SeqCst)
    }

    /// Whether the frame has never held anything: no state change since its descriptor was
    /// built. Its bytes are then still the reservation's zero-filled memory, since they are
    /// reached only through a latch on a frame that some state change handed out.
    pub(crate) fn never_used(&self) -> bool {
        self.version() == 0
    }

    /// A new version: the bytes or the page they belong to are about to change.
    pub(crate) fn bump_version(&self) {
        self.version.fetch_add(1, SeqCst);
    }

    pub(crate) fn page_id(&self) -> PageId {
        let v = self.page_id.load(SeqCst);
        PageId::new((v >> 32) as u32, v as u32)
    }

    pub(crate) fn state(&self) -> State {
        match self.state.load(SeqCst) {
            1 => State::ReadPending,
            2 => State::Valid,
            3 => State::Stale,
            4 => State::Memory,
            _ => State::Free,
        }
    }

    pub(crate) fn set_state(&self, state: State) {
        self.bump_version();
        self.state.store(state as u8, SeqCst);
    }

    /// Moves `from` → `to`; false if the state was not `from`.
    pub(crate) fn transition(&self, from: State, to: State) -> bool {
        self.bump_version();
        self.state
            .compare_exchange(from as u8, to as u8, SeqCst, SeqCst)
            .is_ok()
    }

    pub(crate) fn pins(&self) -> u32 {
        self.pin.load(SeqCst)
    }

    pub(crate) fn pin(&self) {
        self.pin.fetch_add(1, SeqCst);
    }

    pub(crate) fn unpin(&self) {
        self.pin.fetch_sub(1, SeqCst);
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty.load(SeqCst)
    }

    /// Prepares a frame taken from the free list to hold `id`, pinned once by the caller.
    pub(crate) fn init_for(&self, id: PageId, state: State) {
        self.page_id.store(
            (u64::from(id.space_id) << 32) | u64::from(id.page_no),
            SeqCst,
        );
        self.dirty.store(false, SeqCst);
        self.oldest_lsn.store(0, SeqCst);
        self.newest_lsn.store(0, SeqCst);
        self.flushing.store(false, SeqCst);
        self.first_access_ms.store(0, SeqCst);
        self.freed_page_clock.store(0, SeqCst);
        self.read_ahead.store(false, SeqCst);
        self.poisoned.store(false, SeqCst);
        // Added, not stored: a reader may have pinned the frame through a stale hint
        // (`Inner::fetch_shared_at`) and will take its pin back.
        self.pin.fetch_add(1, SeqCst);
        // What was derived from the frame's last page is stale by version already; dropping it
        // here (not at eviction, under the LRU mutex) bounds the memory it holds.
        self.attachment.clear();
        self.set_state(state);
    }

    /// Returns the frame to the `Free` state (caller holds the LRU mutex or owns the frame).
    pub(crate) fn reset(&self) {
        self.set_state(State::Free);
        self.dirty.store(false, SeqCst);
        self.read_ahead.store(false, SeqCst);
        self.first_access_ms.store(0, SeqCst);
    }

    /// The newest modification LSN.
    pub(crate) fn newest(&self) -> Lsn {
        self.newest_lsn.load(SeqCst)
    }
}
