//! Recovery's apply machinery: a [`Batch`] of mtrs sorted by page, applied onto pages held in a
//! [`PageCache`] that outlives the batch, written back to the [`Files`] when it is full or
//! recovery ends.
//!
//! Why a cache across batches: the log is read in memory-bounded batches, and a random-update
//! workload touches every page in every batch. Reading and writing each page once per batch
//! made recovery cost `batches × table size` of page I/O (18 × the table for 1 GiB of log with
//! a 229 MiB pool); with the pages kept, each is read once and written once while they fit.
//!
//! Why no per-mtr allocation: an update mtr is ~190 bytes, and 1 GiB of log is 5.6 million of
//! them. The batch keeps every payload in one buffer, a `(page, mtr)` pair per page change in
//! one vector sorted at apply (no hash map of vectors), and records are decoded while they are
//! applied ([`apply_mtr`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use barracuda_io::{FileSystem, OpenOptions, PageFile};
use barracuda_page::{
    page_lsn, seal_page, set_page_lsn, verify_page, Lsn, PageId, PageIdBuildHasher, PageSize,
    SpaceId,
};
use barracuda_redo::record::{apply_mtr, Record, RecordError, RecordReader};

use super::RecoveryReport;
use crate::error::{Error, Result};

/// One mtr of a batch: its LSN range and where its payload is in [`Batch::log`].
struct BatchMtr {
    start_lsn: Lsn,
    end_lsn: Lsn,
    at: usize,
    len: usize,
}

/// Mtrs read but not applied yet, and the pages they change.
#[derive(Default)]
pub(super) struct Batch {
    /// The payloads, back to back.
    log: Vec<u8>,
    mtrs: Vec<BatchMtr>,
    /// `(page, index into mtrs)` for every page an mtr changes (records of dropped spaces and
    /// OPTION records left out); sorted and deduplicated at apply.
    changes: Vec<(PageId, u32)>,
}

impl Batch {
    /// Memory the batch holds: the bound recovery keeps it under.
    pub(super) fn bytes(&self) -> usize {
        self.log.len()
            + self.mtrs.len() * std::mem::size_of::<BatchMtr>()
            + self.changes.len() * std::mem::size_of::<(PageId, u32)>()
    }

    /// Adds the mtr `payload` logged at `start_lsn..end_lsn`, noting the pages it changes
    /// in `spaces` (records for other spaces belong to dropped tables and are skipped).
    pub(super) fn add(
        &mut self,
        (start_lsn, end_lsn): (Lsn, Lsn),
        payload: &[u8],
        page_size: PageSize,
        spaces: &HashMap<SpaceId, PathBuf>,
    ) -> Result<()> {
        let index = u32::try_from(self.mtrs.len()).map_err(|_| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: "more than 2^32 mtrs in one recovery batch".into(),
        })?;
        for record in RecordReader::new(payload, page_size) {
            let record = record.map_err(|e| bad_mtr(start_lsn, end_lsn, &e))?;
            let page = record.page();
            if matches!(record, Record::Option { .. }) || !spaces.contains_key(&page.space_id) {
                continue;
            }
            if self.changes.last() != Some(&(page, index)) {
                self.changes.push((page, index));
            }
        }
        self.mtrs.push(BatchMtr {
            start_lsn,
            end_lsn,
            at: self.log.len(),
            len: payload.len(),
        });
        self.log.extend_from_slice(payload);
        Ok(())
    }

    /// Applies the batch page by page, in page order, each page's mtrs in log order (the
    /// ones the page's LSN shows it already has are skipped), onto pages from `cache`; empties
    /// the batch.
    pub(super) fn apply(
        &mut self,
        cache: &mut PageCache,
        files: &mut Files<'_>,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        if self.mtrs.is_empty() {
            return Ok(());
        }
        report.batches += 1;
        // Stable order within a page is the mtr index, which the sort key includes.
        self.changes.sort_unstable();
        self.changes.dedup();
        let mut i = 0;
        while let Some(&(id, _)) = self.changes.get(i) {
            let run = self
                .changes
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take_while(|(p, _)| *p == id)
                .count();
            let group = self.changes.get(i..i + run).unwrap_or_default();
            i += run;
            let first = group.first().and_then(|&(_, m)| self.mtrs.get(m as usize));
            let initialised_first =
                first.is_some_and(|m| self.first_record_inits(m, id, cache.page_size));
            let page = cache.page(id, initialised_first, files, report)?;
            let lsn = page.lsn;
            let mut changed = false;
            for &(_, m) in group {
                let Some(mtr) = self.mtrs.get(m as usize) else {
                    continue;
                };
                // Log order: once one mtr is newer than the page, every later one is too.
                if mtr.end_lsn <= lsn {
                    continue;
                }
                let payload = self.log.get(mtr.at..mtr.at + mtr.len).unwrap_or_default();
                apply_mtr(id, &mut page.buf, payload)
                    .map_err(|e| bad_mtr(mtr.start_lsn, mtr.end_lsn, &e))?;
                page.lsn = mtr.end_lsn;
                changed = true;
            }
            if changed {
                set_page_lsn(&mut page.buf, page.lsn);
                page.dirty = true;
            }
        }
        self.log.clear();
        self.mtrs.clear();
        self.changes.clear();
        Ok(())
    }

    /// Whether `mtr`'s first record about `id` is INIT_PAGE (so a damaged copy on disk is
    /// rebuilt from nothing rather than refused).
    fn first_record_inits(&self, mtr: &BatchMtr, id: PageId, page_size: PageSize) -> bool {
        let payload = self.log.get(mtr.at..mtr.at + mtr.len).unwrap_or_default();
        RecordReader::new(payload, page_size)
            .filter_map(std::result::Result::ok)
            .find(|r| r.page() == id)
            .is_some_and(|r| matches!(r, Record::InitPage { .. }))
    }
}

/// A page recovery has read (and maybe changed) and not written back yet.
struct CachedPage {
    buf: Box<[u8]>,
    /// The page's LSN, kept beside it: the check before each mtr then reads no page byte.
    lsn: Lsn,
    dirty: bool,
}

/// Pages recovery works on, kept across batches up to `capacity`; when a page must be read
/// and the cache is full, every changed page is written back (in file order) and the cache
/// emptied.
pub(super) struct PageCache {
    pages: HashMap<PageId, CachedPage, PageIdBuildHasher>,
    capacity: usize,
    page_size: PageSize,
}

impl PageCache {
    /// A cache of at most `capacity` pages (at least one) of `page_size`.
    pub(super) fn new(capacity: usize, page_size: PageSize) -> Self {
        Self {
            pages: HashMap::default(),
            capacity: capacity.max(1),
            page_size,
        }
    }

    /// Page `id`, read from its file (and verified) unless cached; see [`read_page`] for
    /// `initialised_first`.
    fn page(
        &mut self,
        id: PageId,
        initialised_first: bool,
        files: &mut Files<'_>,
        report: &mut RecoveryReport,
    ) -> Result<&mut CachedPage> {
        if !self.pages.contains_key(&id) {
            if self.pages.len() >= self.capacity {
                self.write_back(files, report)?;
            }
            let mut buf = vec![0u8; self.page_size.bytes()].into_boxed_slice();
            let file = files.get(id.space_id)?;
            read_page(&*file, id, self.page_size, initialised_first, &mut buf)?;
            report.pages_read += 1;
            let lsn = page_lsn(&buf).unwrap_or(0);
            self.pages.insert(
                id,
                CachedPage {
                    buf,
                    lsn,
                    dirty: false,
                },
            );
        }
        self.pages.get_mut(&id).ok_or_else(|| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: format!("recovery lost {id} from its page cache"),
        })
    }

    /// Seals and writes every changed page, in file order, and empties the cache.
    pub(super) fn write_back(
        &mut self,
        files: &mut Files<'_>,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let mut dirty: Vec<(PageId, CachedPage)> =
            self.pages.drain().filter(|(_, p)| p.dirty).collect();
        dirty.sort_unstable_by_key(|(id, _)| *id);
        for (id, mut page) in dirty {
            let file = files.get(id.space_id)?;
            seal_page(&mut page.buf);
            file.write_at(
                &page.buf,
                u64::from(id.page_no) * self.page_size.bytes() as u64,
            )?;
            report.pages_written += 1;
            files.touched(id.space_id);
        }
        Ok(())
    }
}

/// Reads page `id` into `buf`: zeros for a page past the end of the file or never written, and
/// for a damaged page whose first record here rebuilds it from nothing (`INIT_PAGE`). Any
/// other damaged page is an error naming it: redo records are byte changes to a page that must
/// be intact (a torn page needs the doublewrite copy).
fn read_page(
    file: &dyn PageFile,
    id: PageId,
    page_size: PageSize,
    initialised_first: bool,
    buf: &mut [u8],
) -> Result<()> {
    let offset = u64::from(id.page_no) * page_size.bytes() as u64;
    if offset + page_size.bytes() as u64 > file.len()? {
        buf.fill(0);
        return Ok(());
    }
    file.read_at(buf, offset)?;
    if buf.iter().all(|&b| b == 0) {
        return Ok(());
    }
    match verify_page(buf, id, page_size) {
        Ok(()) => Ok(()),
        Err(_) if initialised_first => {
            buf.fill(0);
            Ok(())
        }
        Err(e) => Err(Error::page(file.path(), id, e)),
    }
}

/// An mtr that the log's CRC accepted but whose records do not decode or apply: the log was
/// written by a broken writer (or crafted), and recovery must stop rather than guess.
fn bad_mtr(start_lsn: Lsn, end_lsn: Lsn, e: &RecordError) -> Error {
    Error::Corrupt {
        file: PathBuf::from("redo"),
        what: format!("mtr at LSN {start_lsn}..{end_lsn}: {e}"),
    }
}

/// The tablespace files recovery writes, opened on first use.
pub(super) struct Files<'a> {
    fs: &'a dyn FileSystem,
    paths: &'a HashMap<SpaceId, PathBuf>,
    open: HashMap<SpaceId, Arc<dyn PageFile>>,
    touched: Vec<SpaceId>,
}

impl<'a> Files<'a> {
    pub(super) fn new(fs: &'a dyn FileSystem, paths: &'a HashMap<SpaceId, PathBuf>) -> Self {
        Self {
            fs,
            paths,
            open: HashMap::new(),
            touched: Vec::new(),
        }
    }

    fn get(&mut self, space: SpaceId) -> Result<Arc<dyn PageFile>> {
        if let Some(file) = self.open.get(&space) {
            return Ok(file.clone());
        }
        let path = self.paths.get(&space).ok_or_else(|| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: format!("record for space {space}, which no table uses"),
        })?;
        let file = self.fs.open(path, &OpenOptions::new())?;
        self.open.insert(space, file.clone());
        Ok(file)
    }

    fn touched(&mut self, space: SpaceId) {
        if !self.touched.contains(&space) {
            self.touched.push(space);
        }
    }

    /// Syncs the files recovery wrote. (File growth needs no repair: it is made durable before
    /// any mtr records the new size, see `Tablespace::grow_to`.)
    pub(super) fn finish(&mut self) -> Result<()> {
        for space in &self.touched {
            if let Some(file) = self.open.get(space) {
                file.sync_data()?;
            }
        }
        Ok(())
    }
}
