//! The pool's view of the tablespaces: implements [`PageStore`] over the open files.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use barracuda_buffer_pool::{PageImages, PageStore, StoreError};
use barracuda_page::{Lsn, PageId, SpaceId};

use crate::catalog::Catalog;
use crate::compression::{PageEncoder, SpaceCompression};
use crate::error::{Error, Result};
use crate::redo_sink::RedoSink;
use crate::tablespace::{recorded_size, Tablespace};
use crate::torn_writes::PageWrites;
use crate::verified::VerifiedImages;

/// Registry of open tablespaces by space id.
pub(crate) struct SpaceRegistry {
    spaces: RwLock<HashMap<SpaceId, Arc<Tablespace>>>,
    /// The WAL rule and the commit-unit barrier for page writes.
    log: Arc<RedoSink>,
    catalog: Arc<Mutex<Catalog>>,
    /// Torn-write protection: every page write goes through it.
    page_writes: Arc<PageWrites>,
    /// Makes the images written (sealed; compressed for page-compressed tables).
    encoder: Arc<PageEncoder>,
    /// Whether the catalog already records that pages were written after the last checkpoint
    /// (see [`FLAG_PAGES_AFTER_CHECKPOINT`](crate::catalog::FLAG_PAGES_AFTER_CHECKPOINT)). Page
    /// writes hold it shared for their whole duration, so a checkpoint that clears it (holding
    /// it exclusively) cannot pass a write in flight.
    written_after_checkpoint: RwLock<bool>,
    /// The page images reads checked whole already (their structure check is skipped when
    /// read again unchanged).
    verified: VerifiedImages,
}

impl SpaceRegistry {
    pub(crate) fn new(
        log: Arc<RedoSink>,
        catalog: Arc<Mutex<Catalog>>,
        page_writes: Arc<PageWrites>,
        encoder: Arc<PageEncoder>,
        pool_frames: usize,
    ) -> Self {
        let recorded = catalog.lock().pages_after_checkpoint();
        Self {
            spaces: RwLock::new(HashMap::new()),
            log,
            catalog,
            page_writes,
            encoder,
            written_after_checkpoint: RwLock::new(recorded),
            verified: VerifiedImages::for_pool(pool_frames),
        }
    }

    /// Makes sure the catalog records, durably, that pages are being written after the last
    /// checkpoint, and returns a guard to hold while writing.
    fn before_page_write(&self) -> Result<RwLockReadGuard<'_, bool>> {
        loop {
            let recorded = self.written_after_checkpoint.read();
            if *recorded {
                return Ok(recorded);
            }
            drop(recorded);
            let mut recorded = self.written_after_checkpoint.write();
            if !*recorded {
                self.catalog.lock().record_pages_after_checkpoint()?;
                *recorded = true;
            }
        }
    }

    /// Records a clean shutdown at `lsn` in the catalog: every change up to it is on disk and
    /// no page was written since, so a database whose redo log went missing afterwards is still
    /// consistent (a new log starts above `lsn`). The caller has flushed and synced every page.
    pub(crate) fn record_checkpoint(&self, lsn: Lsn) -> Result<()> {
        let mut recorded = self.written_after_checkpoint.write();
        self.catalog.lock().record_flushed_lsn(lsn)?;
        *recorded = false;
        Ok(())
    }

    /// Reads that checked their page whole and reads that skipped the check (see
    /// `VerifiedImages`).
    pub(crate) fn page_check_counts(&self) -> (u64, u64) {
        self.verified.counts()
    }

    /// The torn-write protection every page write goes through.
    pub(crate) fn page_writes(&self) -> &PageWrites {
        &self.page_writes
    }

    /// What makes the images written, and counts compression.
    pub(crate) fn encoder(&self) -> &PageEncoder {
        &self.encoder
    }

    pub(crate) fn insert(&self, space: Arc<Tablespace>) {
        self.spaces.write().insert(space.space_id(), space);
    }

    pub(crate) fn remove(&self, space_id: SpaceId) -> Option<Arc<Tablespace>> {
        self.spaces.write().remove(&space_id)
    }

    pub(crate) fn get(&self, space_id: SpaceId) -> Option<Arc<Tablespace>> {
        self.spaces.read().get(&space_id).cloned()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Tablespace>> {
        self.spaces.read().values().cloned().collect()
    }

    fn space(&self, id: PageId) -> std::result::Result<Arc<Tablespace>, StoreError> {
        self.get(id.space_id).ok_or_else(|| {
            StoreError::new(
                id,
                format!("tablespace {} is not open (dropped table?)", id.space_id),
            )
        })
    }
}

impl PageStore for SpaceRegistry {
    /// Page-compressed tablespaces: their pages are compressed as they are written, which costs
    /// more CPU than loading them, so a load's finished pages are written beside it.
    fn write_behind(&self, space: SpaceId) -> bool {
        self.get(space)
            .is_some_and(|s| s.compression().is_some() && s.zip_block_bytes().is_none())
    }

    fn read_page(&self, id: PageId, buf: &mut [u8]) -> std::result::Result<(), StoreError> {
        let space = self.space(id)?;
        space
            .read_page(
                id.page_no,
                buf,
                Some(self.encoder.counters()),
                Some(&self.verified),
            )
            .map_err(|e| StoreError::new(id, e))
    }

    fn zip_block_bytes(&self, space: SpaceId) -> Option<usize> {
        self.get(space)?.zip_block_bytes()
    }

    fn decompress_block(
        &self,
        id: PageId,
        block: &[u8],
        buf: &mut [u8],
    ) -> std::result::Result<(), StoreError> {
        let space = self.space(id)?;
        let stats = space
            .row_stats()
            .map_or(&*self.encoder.counters().row, |s| &**s);
        crate::row_compression::decompress_block(block, id, space.page_size(), buf, Some(stats))
            .map_err(|e| StoreError::new(id, crate::error::Error::page(space.path(), id, e)))
    }

    fn read_page_with_block(
        &self,
        id: PageId,
        buf: &mut [u8],
        block: &mut [u8],
    ) -> std::result::Result<bool, StoreError> {
        let space = self.space(id)?;
        space
            .read_page_with_block(
                id.page_no,
                buf,
                block,
                Some(self.encoder.counters()),
                Some(&self.verified),
            )
            .map_err(|e| StoreError::new(id, e))
    }

    fn flush_log_up_to(&self, lsn: Lsn) -> std::result::Result<(), StoreError> {
        self.log
            .log()
            .wait_durable(self.log.durable_lsn_for_page(lsn))
            .map_err(|e| StoreError::new(PageId::new(0, 0), crate::error::Error::from(e)))
    }

    fn write_barrier(&self) -> Lsn {
        self.log.write_barrier()
    }

    fn exempt_from_barrier(&self, id: PageId) -> bool {
        self.log.exempt_from_barrier(id)
    }

    fn write_pages(&self, pages: &mut dyn PageImages) -> std::result::Result<(), StoreError> {
        let first = pages.get(0).map_or(PageId::new(0, 0), |(id, _)| id);
        let _recorded = self
            .before_page_write()
            .map_err(|e| StoreError::new(first, e))?;
        let mut headers = Vec::new();
        let batch = {
            let images: Vec<(PageId, &[u8])> = pages.iter().collect();
            // Each tablespace of the batch looked up once, not once per page.
            let mut compression: HashMap<SpaceId, Option<SpaceCompression>> = HashMap::new();
            for (id, _) in &images {
                compression
                    .entry(id.space_id)
                    .or_insert_with(|| self.get(id.space_id).and_then(|s| s.compression()));
            }
            // The size each page 0 records, read from the image being copied.
            for (id, page) in images.iter().filter(|(id, _)| id.page_no == 0) {
                let space = self.space(*id)?;
                let recorded = recorded_size(page, space.page_size())
                    .map_err(|e| StoreError::new(*id, Error::page(space.path(), *id, e)))?;
                headers.push((space, recorded));
            }
            self.encoder
                .encode(&images, &|space| compression.get(&space).copied().flatten())
        };
        // The batch holds sealed copies: the frames may change while they are written.
        pages.release();
        // A page 0 goes to disk (and to the doublewrite file) only once the file holds the
        // pages it records: growth is not synced when it happens (`Tablespace::grow_to`).
        for (space, recorded) in headers {
            space
                .before_header_write(recorded)
                .map_err(|e| StoreError::new(PageId::new(space.space_id(), 0), e))?;
        }
        let images: Vec<(PageId, &[u8])> = batch.images().collect();
        let resolve = |space: SpaceId| Ok(self.get(space).map(|s| s.file().clone()));
        self.page_writes
            .write(&images, &resolve)
            .map_err(|e| StoreError::new(first, e))
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.get(space).map(|s| s.size_pages())
    }

    fn writes_must_stop(&self) -> Option<String> {
        self.all().iter().find(|s| s.sync_has_failed()).map(|s| {
            format!(
                "a sync of {} failed: pages written before it may be lost",
                s.path().display()
            )
        })
    }
}
