//! Rollback segments: the pages that name undo logs (FORMATS.md §13.3), and which one a
//! transaction uses.
//!
//! Every transaction takes a rollback segment page exclusively twice — to start its log (a
//! slot, a cached header page) and to commit it (the slot, the history list) — and purge takes
//! it to unlink what it purged. With one such page for everyone, two one-row writers and purge
//! spent about half of their time waiting for its latch (a profile of `lab
//! concurrent-writers`). So the tablespace has several (InnoDB has 128), and each thread keeps
//! to one of them: writers in different threads latch different pages, and purge meets each
//! writer on its page only.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use barracuda_btree::{BTreeError, Result};
use barracuda_page::trx_sys::slot_count;
use barracuda_page::{PageNo, PageSize, SpaceId};

/// Rollback segments of a new undo tablespace: pages 1 to 4. Enough for the writer threads of
/// a machine of a few cores to keep to pages of their own; an existing tablespace keeps the
/// count it was created with (page 1 records it).
pub const ROLLBACK_SEGMENTS: u32 = 4;

/// One rollback segment: its page and what is kept in memory about it. Aligned to a cache
/// line pair so that threads on different segments share no line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Rseg {
    /// Its page in the undo tablespace (segment `i` is page `1 + i`).
    pub(crate) page_no: PageNo,
    /// Its slots that name no log.
    pub(crate) free_slots: Mutex<Vec<usize>>,
    /// Header pages in its cache (changed under its page's latch; the newest cached page
    /// records it as its depth).
    pub(crate) cached: AtomicU32,
}

impl Rseg {
    pub(crate) fn new(page_no: PageNo, free_slots: Vec<usize>) -> Self {
        Self {
            page_no,
            free_slots: Mutex::new(free_slots),
            cached: AtomicU32::new(0),
        }
    }
}

/// Serial numbers of undo tablespaces opened in this process, for [`HOME`].
static SPACES_OPENED: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The calling thread's segment: `(serial of the undo tablespace, segment)`, kept for the
    /// tablespace it last wrote to.
    static HOME: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
}

/// Which segment each thread of one undo tablespace keeps to.
#[derive(Debug)]
pub(crate) struct Homes {
    /// This tablespace's serial number (unique in the process).
    serial: u64,
    /// Threads given a segment so far: the next one gets the next segment.
    threads_seen: AtomicUsize,
}

impl Homes {
    pub(crate) fn new() -> Self {
        Self {
            serial: SPACES_OPENED.fetch_add(1, Ordering::Relaxed),
            threads_seen: AtomicUsize::new(0),
        }
    }

    /// The segment the calling thread keeps to among `count`: threads are numbered as they
    /// first write to this tablespace, so that `count` threads writing at once use `count`
    /// different pages, and a single-threaded run always uses segment 0 (the same files for
    /// the same operations). A thread that moves between tablespaces is numbered anew when it
    /// comes back.
    pub(crate) fn home(&self, count: usize) -> usize {
        HOME.with(|home| {
            let (serial, rseg) = home.get();
            if serial == self.serial {
                return rseg;
            }
            let rseg = self.threads_seen.fetch_add(1, Ordering::Relaxed) % count.max(1);
            home.set((self.serial, rseg));
            rseg
        })
    }
}

/// Takes a free slot, in the calling thread's segment if it has one, else in the next segment
/// that has: `(segment, slot)`.
pub(crate) fn take_slot(
    rsegs: &[Rseg],
    homes: &Homes,
    space: SpaceId,
    page_size: PageSize,
) -> Result<(usize, usize)> {
    let home = homes.home(rsegs.len());
    (0..rsegs.len())
        .map(|i| (home + i) % rsegs.len())
        .find_map(|r| {
            let slot = rsegs.get(r)?.free_slots.lock().pop()?;
            Some((r, slot))
        })
        .ok_or_else(|| BTreeError::Allocation {
            space,
            what: format!(
                "every one of the {} undo slots is taken: that many transactions are writing",
                slot_count(page_size) * rsegs.len()
            ),
        })
}
