//! The pool's view of the tablespaces: implements [`PageStore`] over the open files.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use barracuda_btree::PlaceholderLog;
use barracuda_buffer_pool::{PageStore, StoreError};
use barracuda_page::{page_lsn, PageId, SpaceId};

use crate::tablespace::Tablespace;

/// Registry of open tablespaces by space id.
pub(crate) struct SpaceRegistry {
    spaces: RwLock<HashMap<SpaceId, Arc<Tablespace>>>,
    /// Told the LSN of every page read, so new changes get higher LSNs than what is on disk.
    log: Arc<PlaceholderLog>,
}

impl SpaceRegistry {
    pub(crate) fn new(log: Arc<PlaceholderLog>) -> Self {
        Self {
            spaces: RwLock::new(HashMap::new()),
            log,
        }
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

    fn space(&self, id: PageId) -> Result<Arc<Tablespace>, StoreError> {
        self.get(id.space_id).ok_or_else(|| {
            StoreError::new(
                id,
                format!("tablespace {} is not open (dropped table?)", id.space_id),
            )
        })
    }
}

impl PageStore for SpaceRegistry {
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError> {
        let space = self.space(id)?;
        space
            .read_page(id.page_no, buf)
            .map_err(|e| StoreError::new(id, e))?;
        if let Some(lsn) = page_lsn(buf) {
            self.log.observe(lsn);
        }
        Ok(())
    }

    fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<(), StoreError> {
        // Group by tablespace so each file gets one vectored write.
        let mut by_space: HashMap<SpaceId, Vec<(u32, &[u8])>> = HashMap::new();
        for (id, image) in pages {
            by_space
                .entry(id.space_id)
                .or_default()
                .push((id.page_no, image));
        }
        for (space_id, batch) in by_space {
            let first = batch
                .first()
                .map_or(PageId::new(space_id, 0), |(p, _)| PageId::new(space_id, *p));
            if let Some(space) = self.get(space_id) {
                space
                    .write_pages(&batch)
                    .map_err(|e| StoreError::new(first, e))?;
            } else {
                // A dropped table's pages are discarded, not written: its file is gone.
                tracing::debug!(space_id, "skipping write of pages of a dropped tablespace");
            }
        }
        Ok(())
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.get(space).map(|s| s.size_pages())
    }
}
