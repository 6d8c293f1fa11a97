//! One apply thread's work: the changes of the pages it owns, batch after batch, applied onto
//! its own [`PageCache`], which outlives the batches and is written back when it is full and
//! when recovery ends.
//!
//! Why a cache across batches: the log is read in memory-bounded batches, and a random-update
//! workload touches every page in every batch. Reading and writing each page once per batch
//! made recovery cost `batches × table size` of page I/O (18 × the table for 1 GiB of log with
//! a 229 MiB pool); with the pages kept, each is read once and written once while they fit.
// InnoDB: recv_apply_hashed_log_recs, recv_recover_page.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use barracuda_io::PageFile;
use barracuda_page::index::OFF_N_RECS;
use barracuda_page::{
    page_lsn, seal_page, set_page_lsn, verify_page, Lsn, PageId, PageIdBuildHasher, PageSize,
};
use barracuda_redo::record::{apply_mtr, Record, RecordReader};

use super::batch::{bad_mtr, sort_changes, Batch, Change, AT_SLOT};
use super::files::Files;
use crate::compression::{decode_stored_page, CompressionCounters};
use crate::error::{Error, Result};

/// How many changes ahead of the one being applied the log-order loop asks the CPU for the
/// bytes it will change. Each change lands on a page that is, with random updates, not in any
/// CPU cache; a few requests in flight overlap the misses instead of waiting for each in turn.
const PREFETCH_AHEAD: usize = 8;

/// Page I/O counts every apply thread adds to, read for progress and the report.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) pages_read: AtomicU64,
    pub(super) pages_written: AtomicU64,
}

/// One apply thread's state: its pages and its scratch vectors.
pub(super) struct Applier<'f> {
    cache: PageCache,
    files: &'f Files<'f>,
    counters: &'f Counters,
    /// Sort scratch.
    scratch: Vec<Change>,
    /// The cache slot of each change, in the log-order path.
    slots: Vec<u32>,
}

impl<'f> Applier<'f> {
    /// An applier keeping at most `capacity` pages of `page_size`.
    pub(super) fn new(
        capacity: usize,
        page_size: PageSize,
        files: &'f Files<'f>,
        counters: &'f Counters,
    ) -> Self {
        Self {
            cache: PageCache::new(capacity, page_size),
            files,
            counters,
            scratch: Vec::new(),
            slots: Vec::new(),
        }
    }

    /// Applies `changes` (this thread's pages' changes in `batch`, in log order), each page's
    /// mtrs in log order; the mtrs the page's LSN shows it already has are skipped.
    ///
    /// When every page the batch needs fits in the cache beside the pages already there, the
    /// missing ones are read first, in file order, and the changes are applied in log order:
    /// the payloads are then read front to back (the CPU's prefetcher follows them), the
    /// page-cache lookups are done beforehand in one tight pass, and the bytes each change
    /// writes are prefetched a few changes ahead. Otherwise the changes are sorted by page and
    /// each page is read once for the batch (InnoDB's order).
    pub(super) fn apply(&mut self, batch: &Batch, mut changes: Vec<Change>) -> Result<()> {
        if self.resolve(batch, &changes)? {
            let slots = std::mem::take(&mut self.slots);
            let result = self.apply_in_log_order(batch, &changes, &slots);
            self.slots = slots;
            return result;
        }
        sort_changes(&mut changes, &mut self.scratch);
        let page_size = self.cache.page_size;
        let mut i = 0;
        while let Some(&first) = changes.get(i) {
            let run = changes
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take_while(|c| c.key == first.key)
                .count();
            let id = first.page();
            let slot = self.cache.page(
                id,
                || first_record_inits(batch, first.mtr, id, page_size),
                self.files,
                self.counters,
            )?;
            let page = self.cache.slot(slot)?;
            for change in changes.get(i..i + run).unwrap_or_default() {
                apply_change(batch, *change, page)?;
            }
            i += run;
        }
        Ok(())
    }

    /// The log-order loop over `changes`, whose pages are cached in `slots`.
    fn apply_in_log_order(
        &mut self,
        batch: &Batch,
        changes: &[Change],
        slots: &[u32],
    ) -> Result<()> {
        // The mtr's payload, where each change writes (or the slot saying where its record
        // is), its page's header and its page's cache entry, found in one pass whose loads do not wait for
        // each other (in the loop below each would stall it). The cache does not change until
        // the loop ends, so the addresses stay valid; they are only ever prefetched.
        let targets: Vec<[*const u8; 4]> = changes
            .iter()
            .zip(slots)
            .map(|(change, &slot)| {
                let payload = batch.payload_ptr(change.mtr);
                self.cache.slots.get(slot as usize).map_or(
                    [
                        payload,
                        std::ptr::null(),
                        std::ptr::null(),
                        std::ptr::null(),
                    ],
                    |page| {
                        let start = page.buf.as_ptr();
                        [
                            payload,
                            start.wrapping_add((change.at & !AT_SLOT) as usize),
                            start.wrapping_add(OFF_N_RECS),
                            std::ptr::from_ref(page).cast::<u8>(),
                        ]
                    },
                )
            })
            .collect();
        for (i, (change, &slot)) in changes.iter().zip(slots).enumerate() {
            if let Some(ahead) = targets.get(i + PREFETCH_AHEAD) {
                for &line in ahead {
                    prefetch_for_write(line);
                }
            }
            // An index record change: its slot was asked for above; now the record it points
            // to, which the replay reads after the slot.
            let (Some(near), Some(&near_slot)) = (
                changes.get(i + PREFETCH_AHEAD / 2),
                slots.get(i + PREFETCH_AHEAD / 2),
            ) else {
                apply_change(batch, *change, self.cache.slot(slot)?)?;
                continue;
            };
            if near.at & AT_SLOT != 0 {
                if let Some(page) = self.cache.slots.get(near_slot as usize) {
                    let at = (near.at & !AT_SLOT) as usize;
                    if let Some(&[lo, hi]) = page.buf.get(at..at + 2).and_then(|b| b.first_chunk())
                    {
                        let record = page
                            .buf
                            .as_ptr()
                            .wrapping_add(usize::from(u16::from_le_bytes([lo, hi])));
                        prefetch_for_write(record);
                        prefetch_for_write(record.wrapping_add(64));
                    }
                }
            }
            apply_change(batch, *change, self.cache.slot(slot)?)?;
        }
        Ok(())
    }

    /// Finds the cache slot of every change's page into `self.slots`, reading the pages not
    /// cached in file order; `false` (and the cache as it was) if they do not all fit.
    fn resolve(&mut self, batch: &Batch, changes: &[Change]) -> Result<bool> {
        let before = self.cache.slots.len();
        self.slots.clear();
        // (page, slot, first mtr) of each page added: read below, in file order.
        let mut missing: Vec<(PageId, u32, u32)> = Vec::new();
        for change in changes {
            let id = change.page();
            if let Some(&slot) = self.cache.index.get(&id) {
                self.slots.push(slot);
                continue;
            }
            let Some(slot) = self.cache.add_unread(id) else {
                self.cache.forget_from(before);
                return Ok(false);
            };
            missing.push((id, slot, change.mtr));
            self.slots.push(slot);
        }
        missing.sort_unstable_by_key(|&(id, _, _)| id);
        let page_size = self.cache.page_size;
        for (id, slot, first_mtr) in missing {
            self.cache.load(
                slot,
                || first_record_inits(batch, first_mtr, id, page_size),
                self.files,
                self.counters,
            )?;
        }
        Ok(true)
    }

    /// The changed pages this thread holds, for the opening thread to write (all threads'
    /// pages in one file-order pass, and from the thread whose writes a caller watches).
    pub(super) fn finish(self) -> DirtyPages {
        DirtyPages(self.cache.slots.into_iter().filter(|p| p.dirty).collect())
    }
}

/// Asks the CPU to start fetching the cache line at `ptr` for a write. A hint: nothing is
/// read or written, so any address is allowed.
#[inline]
fn prefetch_for_write(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is in the target's
    // baseline), and it does not dereference the pointer: any address is sound.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Applies the mtr of `change` onto `page` unless the page already has it.
fn apply_change(batch: &Batch, change: Change, page: &mut CachedPage) -> Result<()> {
    let Some((mtr, payload)) = batch.mtr(change.mtr) else {
        return Ok(());
    };
    // Before the LSN check: a damaged page id could have sent the change here.
    mtr.check(payload)?;
    // Log order: once one mtr is newer than the page, every later one is too.
    if mtr.end_lsn <= page.lsn {
        return Ok(());
    }
    apply_mtr(page.id, &mut page.buf, payload)
        .map_err(|e| bad_mtr(mtr.start_lsn, mtr.end_lsn, &e))?;
    page.lsn = mtr.end_lsn;
    page.dirty = true;
    Ok(())
}

/// Whether mtr `index`'s first record about `id` is INIT_PAGE (so a damaged copy on disk is
/// rebuilt from nothing rather than refused).
fn first_record_inits(batch: &Batch, index: u32, id: PageId, page_size: PageSize) -> bool {
    let Some((_, payload)) = batch.mtr(index) else {
        return false;
    };
    RecordReader::new(payload, page_size)
        .filter_map(std::result::Result::ok)
        .find(|r| r.page() == id)
        .is_some_and(|r| matches!(r, Record::InitPage { .. }))
}

/// A page recovery has read (and maybe changed) and not written back yet.
struct CachedPage {
    id: PageId,
    buf: Box<[u8]>,
    /// The page's LSN, kept beside it: the check before each mtr then reads no page byte.
    lsn: Lsn,
    dirty: bool,
}

/// Pages an apply thread works on, kept across batches up to `capacity`, in slots found
/// through an index; when a page must be read and the cache is full, every changed page is
/// written back (in file order) and the cache emptied.
struct PageCache {
    index: HashMap<PageId, u32, PageIdBuildHasher>,
    slots: Vec<CachedPage>,
    capacity: usize,
    page_size: PageSize,
}

impl PageCache {
    /// A cache of at most `capacity` pages (at least one) of `page_size`.
    fn new(capacity: usize, page_size: PageSize) -> Self {
        Self {
            index: HashMap::default(),
            slots: Vec::new(),
            capacity: capacity.max(1),
            page_size,
        }
    }

    /// The slot of page `id`, read from its file (and verified) unless cached; see
    /// [`read_page`] for `initialised_first`.
    fn page(
        &mut self,
        id: PageId,
        initialised_first: impl FnOnce() -> bool,
        files: &Files<'_>,
        counters: &Counters,
    ) -> Result<u32> {
        if let Some(&slot) = self.index.get(&id) {
            return Ok(slot);
        }
        if self.slots.len() >= self.capacity {
            self.write_back(files, counters)?;
        }
        let slot = self.add_unread(id).ok_or_else(|| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: format!("recovery's page cache has no room for {id} after a write-back"),
        })?;
        self.load(slot, initialised_first, files, counters)?;
        Ok(slot)
    }

    /// A new slot for page `id`, not read yet (see [`load`](Self::load)); `None` when full.
    fn add_unread(&mut self, id: PageId) -> Option<u32> {
        if self.slots.len() >= self.capacity {
            return None;
        }
        let slot = u32::try_from(self.slots.len()).ok()?;
        self.slots.push(CachedPage {
            id,
            buf: vec![0u8; self.page_size.bytes()].into_boxed_slice(),
            lsn: 0,
            dirty: false,
        });
        self.index.insert(id, slot);
        Some(slot)
    }

    /// Removes the slots from `first` on (added, not read, and not wanted after all).
    fn forget_from(&mut self, first: usize) {
        for page in self.slots.drain(first..) {
            self.index.remove(&page.id);
        }
    }

    /// Reads the page of `slot` from its file (and verifies it); see [`read_page`].
    fn load(
        &mut self,
        slot: u32,
        initialised_first: impl FnOnce() -> bool,
        files: &Files<'_>,
        counters: &Counters,
    ) -> Result<()> {
        let page_size = self.page_size;
        let page = self.slot(slot)?;
        let file = files.get(page.id.space_id)?;
        read_page(
            &*file,
            page.id,
            page_size,
            initialised_first,
            &mut page.buf,
            files.encoder().counters(),
        )?;
        counters.pages_read.fetch_add(1, Ordering::Relaxed);
        page.lsn = page_lsn(&page.buf).unwrap_or(0);
        Ok(())
    }

    /// The page in `slot`.
    fn slot(&mut self, slot: u32) -> Result<&mut CachedPage> {
        self.slots
            .get_mut(slot as usize)
            .ok_or_else(|| Error::Corrupt {
                file: PathBuf::from("redo"),
                what: format!("recovery's page cache has no slot {slot}"),
            })
    }

    /// Writes every changed page (see [`DirtyPages::write`]) and empties the cache.
    fn write_back(&mut self, files: &Files<'_>, counters: &Counters) -> Result<()> {
        self.index.clear();
        let dirty = DirtyPages(self.slots.drain(..).filter(|p| p.dirty).collect());
        dirty.write(files, counters)
    }
}

/// Changed pages taken out of a cache, to be written.
pub(super) struct DirtyPages(Vec<CachedPage>);

impl DirtyPages {
    /// No pages.
    pub(super) fn new() -> Self {
        Self(Vec::new())
    }

    /// The bytes of page `id` if it is among these (tests look at what was applied).
    #[cfg(test)]
    pub(super) fn bytes(&self, id: PageId) -> Option<Vec<u8>> {
        self.0.iter().find(|p| p.id == id).map(|p| p.buf.to_vec())
    }

    /// Adds `other`'s pages (each page is in one thread's cache only).
    pub(super) fn append(&mut self, mut other: DirtyPages) {
        self.0.append(&mut other.0);
    }

    /// Stamps every page with the LSN of the last mtr applied to it, seals it and writes it,
    /// in file order, through the torn-write protection (in batches, like the pool's flushes).
    pub(super) fn write(mut self, files: &Files<'_>, counters: &Counters) -> Result<()> {
        self.0.sort_unstable_by_key(|p| p.id);
        for page in &mut self.0 {
            set_page_lsn(&mut page.buf, page.lsn);
            seal_page(&mut page.buf);
        }
        for chunk in self.0.chunks(WRITE_BATCH_PAGES) {
            let pages: Vec<(PageId, &[u8])> = chunk.iter().map(|p| (p.id, &p.buf[..])).collect();
            files.write_pages(&pages)?;
            counters
                .pages_written
                .fetch_add(pages.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Pages recovery hands to one write (the pool's batches are of the same order).
const WRITE_BATCH_PAGES: usize = 128;

/// Reads page `id` into `buf`: zeros for a page past the end of the file or never written, and
/// for a damaged page whose first record here rebuilds it from nothing (`initialised_first`
/// says whether it is `INIT_PAGE`; asked only for a damaged page). Any other damaged page is
/// an error naming it: redo records are byte changes to a page that must be intact (a torn
/// page needs the doublewrite copy).
fn read_page(
    file: &dyn PageFile,
    id: PageId,
    page_size: PageSize,
    initialised_first: impl FnOnce() -> bool,
    buf: &mut [u8],
    counters: &CompressionCounters,
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
    // A compressed page is checked (its stored bytes' checksum) and decompressed first: a
    // row-compressed block (its slot's first bytes) or a page-compressed envelope.
    let checked = match crate::row_compression::decode_slot(buf, id, page_size, Some(&counters.row))
    {
        Ok(true) => Ok(()),
        Ok(false) => match decode_stored_page(buf, id, page_size, Some(counters)) {
            Ok(_) => verify_page(buf, id, page_size).map_err(|e| Error::page(file.path(), id, e)),
            Err(e) => Err(Error::page(file.path(), id, e)),
        },
        Err(e) => Err(Error::page(file.path(), id, e)),
    };
    match checked {
        Ok(()) => Ok(()),
        Err(_) if initialised_first() => {
            buf.fill(0);
            Ok(())
        }
        Err(e) => Err(e),
    }
}
