//! The tablespace files recovery reads and writes, shared by its apply threads.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use barracuda_io::{FileSystem, OpenOptions, PageFile};
use barracuda_page::{PageId, PageSize, SpaceId};
use parking_lot::Mutex;

use crate::compression::{PageEncoder, SpaceCompression};
use crate::error::{Error, Result};
use crate::options::PageCompression;
use crate::tablespace::{cover_recorded_size, recorded_size};
use crate::torn_writes::PageWrites;

/// The tablespace files recovery writes, each opened once on first use (one handle per file,
/// whichever thread asks: a sync then covers every write made through it).
pub(super) struct Files<'a> {
    fs: &'a dyn FileSystem,
    paths: &'a HashMap<SpaceId, PathBuf>,
    open: Mutex<HashMap<SpaceId, Arc<dyn PageFile>>>,
    touched: Mutex<Vec<SpaceId>>,
    /// Recovery's page writes are protected against tearing like the pool's: a power cut
    /// during recovery must not leave a page the next recovery cannot read.
    page_writes: &'a PageWrites,
    /// Seals and compresses the pages recovery writes, like the pool's flushes.
    encoder: &'a PageEncoder,
    compression: &'a HashMap<SpaceId, PageCompression>,
}

impl<'a> Files<'a> {
    /// Files of the spaces in `paths`, opened through `fs` when first asked for.
    pub(super) fn new(
        fs: &'a dyn FileSystem,
        paths: &'a HashMap<SpaceId, PathBuf>,
        page_writes: &'a PageWrites,
        encoder: &'a PageEncoder,
        compression: &'a HashMap<SpaceId, PageCompression>,
    ) -> Self {
        Self {
            fs,
            paths,
            open: Mutex::new(HashMap::new()),
            touched: Mutex::new(Vec::new()),
            page_writes,
            encoder,
            compression,
        }
    }

    /// The encoder (its counters count recovery's decompressions too).
    pub(super) fn encoder(&self) -> &PageEncoder {
        self.encoder
    }

    /// Writes pages in place — sealed, compressed for a page-compressed table — through the
    /// torn-write protection, noting their files for [`finish`](Self::finish).
    pub(super) fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<()> {
        let mut spaces: HashMap<SpaceId, Option<SpaceCompression>> = HashMap::new();
        for (id, _) in pages {
            if let std::collections::hash_map::Entry::Vacant(entry) = spaces.entry(id.space_id) {
                let of = match self.compression.get(&id.space_id) {
                    Some(c) => Some(SpaceCompression {
                        algorithm: c.algorithm(),
                        block_size: self.get(id.space_id)?.block_size(),
                    }),
                    None => None,
                };
                entry.insert(of);
            }
        }
        // As the pool's writes do: the file holds the pages a page 0 records before it is
        // written (a power cut may have taken back a growth the log recorded).
        for (id, page) in pages.iter().filter(|(id, _)| id.page_no == 0) {
            let file = self.get(id.space_id)?;
            let page_size = PageSize::from_bytes(page.len()).ok_or_else(|| Error::Corrupt {
                file: file.path().to_owned(),
                what: format!("page 0 image of {} bytes", page.len()),
            })?;
            let recorded =
                recorded_size(page, page_size).map_err(|e| Error::page(file.path(), *id, e))?;
            cover_recorded_size(&*file, page_size, recorded)?;
        }
        let batch = self
            .encoder
            .encode(pages, &|space| spaces.get(&space).copied().flatten());
        let images: Vec<(PageId, &[u8])> = batch.images().collect();
        let resolve = |space: SpaceId| self.get(space).map(Some);
        self.page_writes.write(&images, &resolve)?;
        for (id, _) in pages {
            self.touched(id.space_id);
        }
        Ok(())
    }

    /// The file of `space`; an error names a space no table uses.
    pub(super) fn get(&self, space: SpaceId) -> Result<Arc<dyn PageFile>> {
        let mut open = self.open.lock();
        if let Some(file) = open.get(&space) {
            return Ok(file.clone());
        }
        let path = self.paths.get(&space).ok_or_else(|| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: format!("record for space {space}, which no table uses"),
        })?;
        let file = self.fs.open(path, &OpenOptions::new())?;
        open.insert(space, file.clone());
        Ok(file)
    }

    /// Notes that a page of `space` was written: [`finish`](Self::finish) syncs it.
    pub(super) fn touched(&self, space: SpaceId) {
        let mut touched = self.touched.lock();
        if !touched.contains(&space) {
            touched.push(space);
        }
    }

    /// Syncs the files recovery wrote. (A growth a power cut took back is made good when page 0
    /// is written, above: see `Tablespace::grow_to`.)
    pub(super) fn finish(&self) -> Result<()> {
        let touched = self.touched.lock().clone();
        for space in touched {
            self.get(space)?.sync_data()?;
        }
        for file in self.open.lock().values() {
            self.page_writes.forget_file(file);
        }
        Ok(())
    }
}
