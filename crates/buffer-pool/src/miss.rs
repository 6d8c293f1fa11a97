//! Misses: reading a page that is not in the pool into a free frame — from the store, or, for
//! a compressed-only page, by decompressing the block the pool kept (`zip_only.rs`) — with
//! concurrent misses on one page reading it once.

use barracuda_page::PageId;

use crate::descriptor::State;
use crate::guard::{ExclusiveGuard, Pin};
use crate::inner::Inner;
use crate::stats::inc;
use crate::PoolError;

impl Inner {
    /// Reads a missing page into a free frame. `Ok(None)`: another thread inserted the page
    /// first; look it up again (it reads the page once, we wait on its latch).
    pub(crate) fn read_in(&self, id: PageId) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        let f = self.get_free_frame()?;
        // A compressed-only page brings its own block.
        let zip = match self.zip_shift_of(id).filter(|_| !self.is_zip_only(id)) {
            Some(shift) => match self.zip_alloc(shift) {
                Ok(slot) => Some(slot),
                Err(e) => {
                    self.return_free(f);
                    return Err(e);
                }
            },
            None => None,
        };
        let Some((pin, latch, from_store)) = self.read_into_frame(f, id, zip)? else {
            return Ok(None);
        };
        let frame = &self.frames.frame(f);
        frame.desc.transition(State::ReadPending, State::Valid);
        // A compressed-only page decompressed in memory is no read (InnoDB counts
        // `Innodb_buffer_pool_reads` for the disk only).
        if from_store {
            inc(&self.counters.pages_read);
        }
        self.on_access(f);
        self.random_read_ahead(id);
        self.linear_read_ahead(id);
        Ok(Some(ExclusiveGuard::new(self, f, latch, pin, id)))
    }

    /// Reads page `id` into the free frame `f`, latched and pinned, at the old-sublist head;
    /// the page stays `ReadPending` for the caller to publish; the flag says whether the store
    /// read it (not a compressed-only page decompressed in memory). `Ok(None)`: another thread
    /// inserted the page first and `f` went back to the free list. On a failed read the frame
    /// leaves the hash ([`abort_read`](Self::abort_read)).
    #[expect(
        unsafe_code,
        reason = "the block is reached through its owner's latch (zip.rs)"
    )]
    pub(crate) fn read_into_frame(
        &self,
        f: u32,
        id: PageId,
        zip: Option<crate::buddy::ZipSlot>,
    ) -> Result<
        Option<(
            Pin<'_>,
            parking_lot::RwLockWriteGuard<'_, crate::frame::FrameBuf>,
            bool,
        )>,
        crate::StoreError,
    > {
        let frame = &self.frames.frame(f);
        frame.desc.init_for(id, State::ReadPending);
        frame
            .desc
            .set_zip_link(zip.map(|slot| crate::zip::ZipLink { slot, stale: false }));
        let pin = Pin::new(&frame.desc);
        // The frame is ours alone (free, unpinned before), so the latch is free.
        let mut latch = frame.latch.write();
        if !self.hash.insert_if_absent(id, f) {
            drop(latch);
            drop(pin);
            self.return_free(f);
            return Ok(None);
        }
        self.lru_add(f, false);
        let zip_only = self.take_zip_only(id);
        let from_store = zip_only.is_none();
        let read = if let Some(slot) = zip_only {
            // Compressed-only: the block is here, decompress it (no I/O).
            if let Some(spare) = zip {
                if let Some(g) = self.zip_release(spare) {
                    self.return_free(g);
                }
            }
            frame
                .desc
                .set_zip_link(Some(crate::zip::ZipLink { slot, stale: false }));
            inc(&self.counters.zip_only_hits);
            self.unzip_rates.note_unzip();
            // SAFETY: the block belongs to this page again and its X latch is held.
            let block = unsafe { self.zip_bytes(slot) };
            self.store
                .decompress_block(id, block, &mut latch)
                .map(|()| true)
        } else {
            self.unzip_rates.note_io();
            match zip {
                Some(slot) => {
                    // SAFETY: the block was allocated for this page just now and the page's X
                    // latch is held.
                    let block = unsafe { self.zip_bytes_mut(slot) };
                    let read = self.store.read_page_with_block(id, &mut latch, block);
                    if matches!(read, Ok(true)) {
                        self.unzip_rates.note_unzip();
                    }
                    read
                }
                None => self.store.read_page(id, &mut latch).map(|()| false),
            }
        };
        match read {
            Ok(true) => {}
            Ok(false) => {
                // Stored plain: no block.
                if let Some(g) = self.take_zip(f) {
                    self.return_free(g);
                }
            }
            Err(e) => {
                // The block stays with the frame until the frame is reclaimed.
                self.abort_read(f, id);
                return Err(e);
            }
        }
        Ok(Some((pin, latch, from_store)))
    }

    /// The shift of the blocks page `id`'s space keeps its pages in, if it is row-compressed.
    pub(crate) fn zip_shift_of(&self, id: PageId) -> Option<u8> {
        self.store
            .zip_block_bytes(id.space_id)
            .and_then(|bytes| crate::zip::block_shift(bytes, self.page_size))
    }

    /// A failed read: the frame leaves the page hash and becomes `Stale` (reclaimed by the next
    /// LRU scan once its waiters have unpinned it).
    pub(crate) fn abort_read(&self, f: u32, id: PageId) {
        self.hash.remove(id, f);
        self.frames.frame(f).desc.set_state(State::Stale);
    }
}
