//! The doublewrite file of Barracuda: protection of in-place page writes against tearing, and
//! repair of torn pages at recovery (InnoDB's doublewrite buffer, as redesigned in MySQL
//! 8.0.20: a file of its own, `<dir>/doublewrite.dblwr`, byte format in `docs/FORMATS.md`
//! §11).
//!
//! A page write cut by a power loss leaves a page half old, half new. Redo cannot repair it:
//! redo records change a page that was whole. So before a batch of pages is written in place,
//! the same bytes go to the doublewrite file and are made durable; a page found torn at
//! recovery is rewritten from its copy, and only then is redo applied.
//!
//! # The protocol
//! 1. [`Doublewrite::protect`] takes a free *area* (a descriptor page and its image slots). If
//!    the area's previous batch was written in place to files not synced since, it syncs those
//!    files first. It then writes the descriptor (page ids, page LSNs, image lengths and
//!    CRC-32Cs, the batch's sequence number) and the images in **one** sequential write, and
//!    syncs the doublewrite file.
//! 2. The caller writes the pages in place and calls [`Protected::written_in_place`] with the
//!    files it wrote; the area is free again but keeps its copies until those files are synced
//!    (by the `protect` that reuses the area, or by [`Doublewrite::sync_pending`] at a
//!    checkpoint).
//! 3. At recovery, [`read_copies`] keeps the newest valid copy of each page and
//!    [`restore_torn_pages`] writes it over any in-place page that fails verification, syncs,
//!    and names every page it cannot repair. Then [`Doublewrite::open`] discards the copies
//!    and redo is applied.
//!
//! The engine calls `protect` from its page store's `write_pages`, after the WAL flush up to the
//! batch's newest page LSN, with the final sealed (and, later, page-compressed) bytes: the copy
//! must be exactly what goes in place. Batch areas serve the page cleaner and LRU batches;
//! single-page slots serve a thread writing one page to free a frame, so it never waits behind
//! a whole batch.
//!
//! # Why it is correct at every crash point
//! - **During the copy write or before its sync**: no page of the batch has been written in
//!   place. Each in-place page holds its previous version, which is durable or still
//!   protected by the copy of an earlier batch — that copy's area is reused only after the
//!   earlier batch's files were synced. The torn copy fails its descriptor or image CRC and is
//!   ignored: the new descriptor's per-image CRCs also reject an old image left in a slot.
//! - **After the copy's sync, during or after the in-place writes, before the data files'
//!   sync**: every page of the batch has a durable valid copy. A torn page fails verification
//!   and is rewritten from the newest valid copy of its id; an intact one is left alone.
//! - **After the data files' sync**: nothing of the batch can tear any more; only now may the
//!   area be overwritten.
//!
//! The newest copy (by page LSN, then batch sequence) is the right one: a page with copies in
//! two areas had its newer copy synced before its newer in-place write began, and its LSN is
//! covered by the durable redo log (WAL), so redo continues from it.
//!
//! In [`CopyContent::DescriptorsOnly`] mode (`DetectOnly`) only the descriptor is written: a
//! torn page is found and named ([`DoublewriteError::TornPage`]) but not repaired.
//!
//! # Cost
//! Per batch of `n` pages: one sequential write of `n + 1` pages (the descriptor page) and one
//! `fdatasync` of the doublewrite file, so bytes written per page flushed are
//! `2 + 1/n` (2.008 at `n = 128`) — "data written twice but not twice the I/O". The data-file
//! syncs before reuse are the syncs a checkpoint would do anyway, brought forward by up to
//! as many batches as there are areas. A single-page flush writes two pages and syncs once.
//!
//! # Geometry
//! Batch areas of 128 pages and 8 single-page slots. 128 pages is the largest batch the buffer
//! pool hands the page store in one call (a flush-list round), so a round costs one copy write
//! and one sync, and it is MySQL 8.4's `innodb_doublewrite_pages` (8.0.20–8.0.x's default of 4
//! made loads several times slower, INNODB-FACTS §5.2); InnoDB ≤ 8.0.19 used 2 × 64 with up to
//! 120 pages per batch. Eight single-page slots as in MySQL 5.7: those flushes are rare, and
//! each takes a slot for one write and one sync.
//!
//! How many batch areas: [`Geometry::default`] has two (4.3 MiB at 16 KiB pages), the fewest
//! that let one batch go in place while the next one's copy is written. The engine uses
//! [`Geometry::for_pool_pages`]: areas for about an eighth of the pool, up to 32 (64.8 MiB).
//! More areas defer the data-file syncs an area's reuse needs, and that measured as the
//! larger cost: with two, every other batch of a sharp checkpoint synced the data files
//! between two copy syncs, and `DetectOnly` — which writes no images — flushed no faster than
//! `On`. A buffer is held only while a copy is written, so the areas cost file space, not
//! memory.
//!
//! # Modes
//! [`DoublewriteMode`] is the engine's option; [`decide`] turns it and the device evidence
//! ([`AtomicWriteEvidence`]) into the mode in effect with a reason: `Auto` uses untorn
//! (`RWF_ATOMIC`) writes and no doublewrite file only when every data file supports them and a
//! trial write succeeded.

mod areas;
mod error;
pub mod format;
mod mode;
mod recovery;
mod writer;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

pub use error::{DoublewriteError, Result};
pub use format::{AreaKind, CopyContent, Geometry, FILE_NAME};
pub use mode::{decide, AtomicWriteEvidence, DoublewriteMode, EffectiveMode, ProbeOutcome};
pub use recovery::{
    read_copies, restore_torn_pages, restore_torn_pages_since, Copies, PageCopy, RestoreReport,
    ScanSummary,
};
pub use writer::{Doublewrite, DoublewriteConfig, DoublewriteStats, PageImage, Protected};
