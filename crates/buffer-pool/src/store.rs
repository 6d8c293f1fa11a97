//! The seam to the tablespace layer: where pages come from and go to.

use barracuda_page::{Lsn, PageId, SpaceId};

use crate::StoreError;

/// Where pages come from and go to: implemented by the engine's tablespace layer
/// (InnoDB: `fil_io` under `buf_read_page` / `buf_flush_write_block_low`).
///
/// The pool calls it without holding any pool-wide lock; a page being read is X-latched, a page
/// being written is S-latched (readers continue) until the store has copied its image.
pub trait PageStore: Send + Sync + 'static {
    /// Reads page `id` into `buf` (exactly `page_size` bytes), verifying it (checksum etc.). A
    /// page of a row-compressed space stored as a block is read as the page it holds,
    /// decompressed: the pool reads such a page without a block slot when the compressed-only
    /// copy it meant to use was taken by another thread meanwhile.
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError>;

    /// Writes a batch of page images. Every image is a page (`page_size` bytes) or, for a page
    /// of a row-compressed space, its compressed block
    /// ([`zip_block_bytes`](Self::zip_block_bytes) bytes, its header the page's FIL header with
    /// the page LSN, unsealed).
    ///
    /// The images are the frames' own bytes, S-latched, so writers of those pages wait: a
    /// store copies them (it seals or compresses a copy anyway), then calls
    /// [`PageImages::release`], and only then does its I/O — the doublewrite copy and its sync,
    /// the writes in place. A store that never calls it keeps the frames latched to the end.
    fn write_pages(&self, pages: &mut dyn PageImages) -> Result<(), StoreError>;

    /// The size of the compressed blocks in which `space` keeps its index pages (row
    /// compression, `KEY_BLOCK_SIZE`), or `None` for a space of plain pages (the default). The
    /// pool then gives each page it reads from `space` a block of that size
    /// ([`read_page_with_block`](Self::read_page_with_block)).
    fn zip_block_bytes(&self, _space: SpaceId) -> Option<usize> {
        None
    }

    /// Decompresses `block` (as [`read_page_with_block`](Self::read_page_with_block) gave
    /// it, kept in the pool since) into `buf`, the page it holds: a compressed-only page read
    /// back without I/O. Verify as a read would. Default: an error (a store without blocks is
    /// never asked).
    fn decompress_block(
        &self,
        id: PageId,
        _block: &[u8],
        _buf: &mut [u8],
    ) -> Result<(), StoreError> {
        Err(StoreError::new(id, NoBlocks))
    }

    /// Reads page `id` of a space with compressed blocks: the block as stored into `block`
    /// (exactly [`zip_block_bytes`](Self::zip_block_bytes) bytes) and the page it holds,
    /// decompressed and verified, into `buf`. Returns `Ok(false)` when the page is stored
    /// plain — not every page of such a space is an index page, and one that did not fit its
    /// block is written whole — with the page in `buf` and `block` unspecified. Default: a
    /// plain read.
    fn read_page_with_block(
        &self,
        id: PageId,
        buf: &mut [u8],
        _block: &mut [u8],
    ) -> Result<bool, StoreError> {
        self.read_page(id, buf).map(|()| false)
    }

    /// WAL rule hook: make the log durable up to `lsn` before a page whose newest change has that
    /// LSN is written (InnoDB: `log_write_up_to` in `buf_flush_write_block_low`). Default: no-op.
    fn flush_log_up_to(&self, _lsn: Lsn) -> Result<(), StoreError> {
        Ok(())
    }

    /// Pages whose newest modification is at or above this LSN must not be written yet: their
    /// change belongs to a commit unit the log has not closed (a transaction being applied),
    /// and must not reach disk before the whole unit is in the log. The pool skips such pages
    /// when it picks pages to write, and re-checks under the page latch. Default: no barrier.
    fn write_barrier(&self) -> Lsn {
        Lsn::MAX
    }

    /// Whether page `id` may be written although its newest change is behind the
    /// [`write_barrier`](Self::write_barrier): a page the open unit allocated (it was free
    /// before the unit began, so whatever it holds on disk is irrelevant if the unit is lost).
    /// Asked only for pages behind the barrier. Default: none is.
    fn exempt_from_barrier(&self, _id: PageId) -> bool {
        false
    }

    /// Whether pages of `space` that their writer has finished with
    /// ([`ExclusiveGuard::hint_write_behind`](crate::ExclusiveGuard::hint_write_behind)) should
    /// be queued for [`BufferPool::write_behind`](crate::BufferPool::write_behind) rather than
    /// left to the checkpoint: where writing costs CPU the pages can be written beside the
    /// thread that fills them. Default: no.
    fn write_behind(&self, _space: SpaceId) -> bool {
        false
    }

    /// Number of pages allocated in `space` (read-ahead never reads past it). `None` = unknown space.
    fn space_size_pages(&self, space: SpaceId) -> Option<u32>;

    /// Asked after [`write_pages`](Self::write_pages) failed: why no page may be written any
    /// more (a sync of a file failed, so writes made before it may be lost while a retried sync
    /// reports success), or `None` when the batch may simply be retried later. On `Some` the
    /// pool stops its writes for good, as for a poisoned frame. Default: `None`.
    fn writes_must_stop(&self) -> Option<String> {
        None
    }
}

/// The error of a store asked to decompress a block it never gave.
#[derive(Debug, thiserror::Error)]
#[error("this page store keeps no compressed blocks")]
struct NoBlocks;

/// The images of a batch of pages being written, lent to [`PageStore::write_pages`] from
/// their frames, which stay S-latched until [`release`](Self::release).
///
/// Why a release: a batch's I/O takes milliseconds (a doublewrite sync, then the writes in
/// place), and a writer that needs one of its pages — the leaf a load appends to, the space
/// header an allocation changes — waited for all of it, 40 ms at a time in a sequential load
/// (EXPERIMENTS §16). Once the store has its copies the frames may change: the pool marks a
/// page clean afterwards only if it did not.
pub trait PageImages {
    /// Pages in the batch.
    fn len(&self) -> usize;

    /// Whether the batch is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Page `i`'s id and image; `None` past the end, and for every page after
    /// [`release`](Self::release).
    fn get(&self, i: usize) -> Option<(PageId, &[u8])>;

    /// The store holds what it needs of the images: the frames are unlatched and may change.
    /// Idempotent.
    fn release(&mut self);
}

impl dyn PageImages + '_ {
    /// The images in batch order (none after [`release`](PageImages::release)).
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &[u8])> + '_ {
        (0..self.len()).map_while(move |i| self.get(i))
    }
}

/// Images the caller owns, as [`PageImages`]: for stores that write on another's behalf and
/// for tests. [`release`](PageImages::release) only stops lending them.
#[derive(Debug)]
pub struct ImageList<'a> {
    pages: &'a [(PageId, &'a [u8])],
    released: bool,
}

impl<'a> ImageList<'a> {
    /// Lends `pages`.
    pub fn new(pages: &'a [(PageId, &'a [u8])]) -> Self {
        Self {
            pages,
            released: false,
        }
    }
}

impl PageImages for ImageList<'_> {
    fn len(&self) -> usize {
        self.pages.len()
    }

    fn get(&self, i: usize) -> Option<(PageId, &[u8])> {
        if self.released {
            return None;
        }
        self.pages.get(i).copied()
    }

    fn release(&mut self) {
        self.released = true;
    }
}
