//! [`Doublewrite`]: the open doublewrite file and the write side of the protocol —
//! [`protect`](Doublewrite::protect) a batch before it goes in place,
//! [`Protected::written_in_place`] after, [`sync_pending`](Doublewrite::sync_pending) at
//! checkpoints.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use barracuda_io::{AlignedBuf, FileSystem, OpenOptions, PageFile, DIRECT_IO_ALIGN};
use barracuda_page::{Lsn, PageId, PageSize};
use parking_lot::{Condvar, Mutex};

use crate::areas::{AreaTable, DataFile, Take, Taken};
use crate::error::{DoublewriteError, Result};
use crate::format::{
    decode_descriptor, decode_header, encode_descriptor, encode_header, image_identity, AreaKind,
    CopyContent, Descriptor, DescriptorRead, Entry, Geometry, FILE_NAME, MIN_IMAGE_LEN,
};

/// How the doublewrite file is laid out and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DoublewriteConfig {
    /// Areas and their sizes; a file with another geometry is recreated at
    /// [`open`](Doublewrite::open).
    pub geometry: Geometry,
    /// Whether copies hold page images (`On`) or descriptors only (`DetectOnly`). May change
    /// from one open to the next: each descriptor records its own.
    pub content: CopyContent,
    /// Open the file O_DIRECT. Every write is then one aligned buffer of whole pages.
    pub direct_io: bool,
}

/// One page of a batch to protect: exactly the bytes that will be written in place (sealed,
/// page-compressed or not).
#[derive(Debug, Clone, Copy)]
pub struct PageImage<'a> {
    /// The page.
    pub id: PageId,
    /// Its page LSN; the image's own file header must carry the same id and LSN.
    pub lsn: Lsn,
    /// The image: at most one page, at least the 38-byte file header.
    pub image: &'a [u8],
}

/// Counters of a [`Doublewrite`] since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DoublewriteStats {
    /// Pages whose copy was written (an image and its entry, or the entry alone in
    /// descriptors-only mode).
    pub pages_written: u64,
    /// Bytes written to the doublewrite file by `protect` (descriptor pages included).
    pub bytes_written: u64,
    /// Batches written to batch areas.
    pub batches: u64,
    /// Pages written to single-page slots.
    pub single_page_writes: u64,
    /// Syncs of the doublewrite file (one per batch or single page).
    pub file_syncs: u64,
    /// Data-file syncs done before reusing an area (its previous batch's in-place writes).
    pub data_syncs_before_reuse: u64,
    /// Data-file syncs done by [`Doublewrite::sync_pending`].
    pub pending_syncs: u64,
    /// `protect` calls that found every area of their kind busy and waited.
    pub area_waits: u64,
}

#[derive(Debug, Default)]
struct Counters {
    pages_written: AtomicU64,
    bytes_written: AtomicU64,
    batches: AtomicU64,
    single_page_writes: AtomicU64,
    file_syncs: AtomicU64,
    data_syncs_before_reuse: AtomicU64,
    pending_syncs: AtomicU64,
    area_waits: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Relaxed);
}

/// The doublewrite file of a database, open for writing copies. Thread-safe: several batches
/// may be in flight at once, each on its own area.
#[derive(Debug)]
pub struct Doublewrite {
    file: Arc<dyn PageFile>,
    path: PathBuf,
    page_size: PageSize,
    config: DoublewriteConfig,
    table: Mutex<AreaTable>,
    /// Signalled whenever an area leaves the in-use state.
    freed: Condvar,
    /// Write buffers not in use, by kind (batch, single page): a buffer is needed only while
    /// a copy is written, so there are as many as copies written at once, not one per area.
    spare_buffers: [Mutex<Vec<AlignedBuf>>; 2],
    counters: Counters,
}

impl Doublewrite {
    /// Creates `<dir>/doublewrite.dblwr` for pages of `page_size`, replacing any file there:
    /// written whole with zeros (so that syncs after copy writes never have to update the file
    /// size, nor commit the allocation of the blocks a copy lands in), the header written, the
    /// file and `dir` synced. Every area starts unused.
    pub fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        page_size: PageSize,
        config: DoublewriteConfig,
    ) -> Result<Self> {
        let path = dir.join(FILE_NAME);
        check_config(&path, config)?;
        let file = fs.open(
            &path,
            &OpenOptions::new()
                .create(true)
                .truncate(true)
                .direct(config.direct_io),
        )?;
        let p = page_size.bytes();
        let len = config.geometry.total_pages() * p as u64;
        file.set_len(len)?;
        let zeros = AlignedBuf::with_alignment(PREALLOCATION_CHUNK.max(p), alignment(&*file));
        let mut offset = p as u64;
        while offset < len {
            let n = zeros.len().min((len - offset) as usize);
            file.write_at(&zeros[..n], offset)?;
            offset += n as u64;
        }
        let mut header = AlignedBuf::with_alignment(p, alignment(&*file));
        encode_header(&mut header, page_size, config.geometry);
        file.write_at(&header, 0)?;
        file.sync_all()?;
        fs.sync_dir(dir)?;
        tracing::info!(
            file = %path.display(),
            page_size = p,
            batch_areas = config.geometry.batch_areas,
            pages_per_area = config.geometry.pages_per_area,
            single_page_slots = config.geometry.single_page_slots,
            "created the doublewrite file"
        );
        Ok(Self::with_file(file, path, page_size, config, 1))
    }

    /// Opens `<dir>/doublewrite.dblwr` for writing, **discarding its copies**: every
    /// descriptor page is zeroed and synced. The file is recreated (as by
    /// [`create`](Self::create)) when it is missing, shorter than its geometry, its header is
    /// damaged, or its page size or geometry differ from `page_size` and `config`.
    ///
    /// Contract: call it only after recovery has used the old contents — after
    /// [`read_copies`](crate::read_copies) and [`restore_torn_pages`](crate::restore_torn_pages)
    /// (which syncs what it repaired) — and before any page is written in place. The
    /// copies are needed only while some in-place write they protect may not be durable; after
    /// the repair none is pending, so discarding them loses nothing and keeps a later recovery
    /// from seeing copies of a previous run.
    pub fn open(
        fs: &dyn FileSystem,
        dir: &Path,
        page_size: PageSize,
        config: DoublewriteConfig,
    ) -> Result<Self> {
        let path = dir.join(FILE_NAME);
        check_config(&path, config)?;
        if !fs.exists(&path)? {
            return Self::create(fs, dir, page_size, config);
        }
        let file = fs.open(&path, &OpenOptions::new().direct(config.direct_io))?;
        let p = page_size.bytes();
        let mut page = AlignedBuf::with_alignment(p, alignment(&*file));
        let len = file.len()?;
        let needed = config.geometry.total_pages() * p as u64;
        let problem = match file.read_at(&mut page, 0) {
            Ok(()) => match decode_header(&page) {
                Ok((size, geometry)) if size != page_size || geometry != config.geometry => {
                    Some(format!(
                        "it was made for {size} pages and {geometry:?}, the database uses \
                         {page_size} pages and {:?}",
                        config.geometry
                    ))
                }
                Ok(_) if len < needed => Some(format!(
                    "it is {len} bytes long, its geometry needs {needed}"
                )),
                Ok(_) => None,
                Err(why) => Some(why),
            },
            Err(e) if e.is_past_eof() => Some("it is shorter than its header page".to_owned()),
            Err(e) => return Err(e.into()),
        };
        if let Some(why) = problem {
            tracing::warn!(file = %path.display(), "recreating the doublewrite file: {why}");
            drop(file);
            return Self::create(fs, dir, page_size, config);
        }
        let last_seq = discard_copies(&*file, page_size, config.geometry)?;
        Ok(Self::with_file(
            file,
            path,
            page_size,
            config,
            last_seq.saturating_add(1),
        ))
    }

    fn with_file(
        file: Arc<dyn PageFile>,
        path: PathBuf,
        page_size: PageSize,
        config: DoublewriteConfig,
        first_seq: u64,
    ) -> Self {
        Doublewrite {
            file,
            path,
            page_size,
            table: Mutex::new(AreaTable::new(config.geometry, first_seq)),
            freed: Condvar::new(),
            spare_buffers: [Mutex::new(Vec::new()), Mutex::new(Vec::new())],
            config,
            counters: Counters::default(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The page size of the database.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The configuration the file was opened with.
    pub fn config(&self) -> DoublewriteConfig {
        self.config
    }

    /// The most pages one [`protect`](Self::protect) call of [`AreaKind::Batch`] takes (the
    /// caller cuts larger batches into chunks of this size).
    pub fn max_batch_pages(&self) -> usize {
        self.config.geometry.pages_per_area as usize
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> DoublewriteStats {
        let c = &self.counters;
        DoublewriteStats {
            pages_written: c.pages_written.load(Relaxed),
            bytes_written: c.bytes_written.load(Relaxed),
            batches: c.batches.load(Relaxed),
            single_page_writes: c.single_page_writes.load(Relaxed),
            file_syncs: c.file_syncs.load(Relaxed),
            data_syncs_before_reuse: c.data_syncs_before_reuse.load(Relaxed),
            pending_syncs: c.pending_syncs.load(Relaxed),
            area_waits: c.area_waits.load(Relaxed),
        }
    }

    /// Makes `pages` durable in the doublewrite file before the caller writes them in place.
    ///
    /// Takes a free area of `kind` (waiting while all are busy); if its previous batch's data
    /// files are not known to be synced, syncs them first — until then that batch's copies are
    /// the only protection of its in-place writes. Then writes the descriptor and the images
    /// (descriptor only, in [`CopyContent::DescriptorsOnly`]) in one write and syncs the
    /// file. When this returns `Ok`, the caller writes the pages in place and calls
    /// [`Protected::written_in_place`].
    ///
    /// `pages` holds 1 ..= [`max_batch_pages`](Self::max_batch_pages) pages (exactly 1 for
    /// [`AreaKind::SinglePage`]); each image must be a page's final bytes, its file header
    /// naming `id` and `lsn`. A failure leaves nothing to write in place: the area goes back
    /// to the free ones.
    pub fn protect(&self, pages: &[PageImage<'_>], kind: AreaKind) -> Result<Protected<'_>> {
        self.check_batch(pages, kind)?;
        let taken = self.take_area(kind)?;
        let (index, seq) = (taken.index, taken.seq);
        if !taken.pending.is_empty() {
            if let Err(e) = self.sync_before_reuse(&taken.pending) {
                self.table.lock().give_back(taken);
                self.freed.notify_all();
                return Err(e);
            }
            self.table.lock().synced(taken.stamp, &taken.pending);
        }
        if let Err(e) = self.write_copy(index, seq, pages, kind) {
            self.table.lock().free_clean(index);
            self.freed.notify_all();
            return Err(e);
        }
        Ok(Protected {
            dw: self,
            area: index,
            seq,
            released: false,
        })
    }

    /// Syncs every data file a free area waits on (those its batch wrote in place), so that no
    /// later `protect` has to. The engine calls it at checkpoints and at close.
    pub fn sync_pending(&self) -> Result<()> {
        let (files, stamp) = self.table.lock().pending_files();
        let mut synced = Vec::with_capacity(files.len());
        let mut failure = None;
        for f in files {
            match f.sync_data() {
                Ok(()) => {
                    bump(&self.counters.pending_syncs, 1);
                    synced.push(f);
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        self.table.lock().synced(stamp, &synced);
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    fn check_batch(&self, pages: &[PageImage<'_>], kind: AreaKind) -> Result<()> {
        let capacity = match kind {
            AreaKind::Batch => self.max_batch_pages(),
            AreaKind::SinglePage => 1,
        };
        let bad = |what: String| DoublewriteError::BadBatch {
            file: self.path.clone(),
            what,
        };
        if pages.is_empty() || pages.len() > capacity {
            return Err(bad(format!(
                "a {kind} copy takes 1..={capacity} pages, not {}",
                pages.len()
            )));
        }
        let p = self.page_size.bytes();
        for pg in pages {
            let len = pg.image.len();
            if !(MIN_IMAGE_LEN..=p).contains(&len) {
                return Err(bad(format!(
                    "the image of {} is {len} bytes, not {MIN_IMAGE_LEN}..={p}",
                    pg.id
                )));
            }
            if image_identity(pg.image) != Some((pg.id, pg.lsn)) {
                return Err(bad(format!(
                    "the image given for {} at LSN {} has a header naming {:?}",
                    pg.id,
                    pg.lsn,
                    image_identity(pg.image)
                )));
            }
        }
        Ok(())
    }

    fn take_area(&self, kind: AreaKind) -> Result<Taken> {
        let mut table = self.table.lock();
        let mut waited = false;
        loop {
            match table.take(kind) {
                Take::Got(taken) => return Ok(taken),
                Take::Busy => {
                    if !waited {
                        waited = true;
                        bump(&self.counters.area_waits, 1);
                    }
                    self.freed.wait(&mut table);
                }
                Take::Exhausted { areas } => {
                    return Err(DoublewriteError::NoFreeArea {
                        file: self.path.clone(),
                        kind,
                        areas,
                    })
                }
            }
        }
    }

    fn sync_before_reuse(&self, files: &[DataFile]) -> Result<()> {
        for f in files {
            f.sync_data()?;
            bump(&self.counters.data_syncs_before_reuse, 1);
        }
        Ok(())
    }

    /// Writes descriptor and images of `pages` into area `index` in one write, then syncs.
    fn write_copy(
        &self,
        index: u32,
        seq: u64,
        pages: &[PageImage<'_>],
        kind: AreaKind,
    ) -> Result<()> {
        let p = self.page_size.bytes();
        let spares = &self.spare_buffers[usize::from(kind == AreaKind::SinglePage)];
        let taken = spares.lock().pop();
        let mut buf = taken.unwrap_or_else(|| {
            let pages = 1 + self.config.geometry.capacity(index) as usize;
            AlignedBuf::with_alignment(pages * p, alignment(&*self.file))
        });
        let written = self.write_copy_with(&mut buf, index, seq, pages, kind);
        spares.lock().push(buf);
        written
    }

    /// [`write_copy`](Self::write_copy) with the area's write buffer `buf`.
    fn write_copy_with(
        &self,
        buf: &mut AlignedBuf,
        index: u32,
        seq: u64,
        pages: &[PageImage<'_>],
        kind: AreaKind,
    ) -> Result<()> {
        let p = self.page_size.bytes();
        let geometry = self.config.geometry;
        let content = self.config.content;
        let images = content == CopyContent::Images;
        let written_pages = if images { 1 + pages.len() } else { 1 };
        let bytes = &mut buf[..written_pages * p];
        let (descriptor, slots) = bytes.split_at_mut(p);
        let entries = pages
            .iter()
            .map(|pg| Entry {
                id: pg.id,
                lsn: pg.lsn,
                image_len: if images { pg.image.len() as u32 } else { 0 },
                image_crc: if images {
                    barracuda_page::crc32c(pg.image)
                } else {
                    0
                },
            })
            .collect();
        encode_descriptor(
            descriptor,
            &Descriptor {
                seq,
                area: index,
                content,
                entries,
            },
        );
        if images {
            for (pg, slot) in pages.iter().zip(slots.chunks_exact_mut(p)) {
                let (image, rest) = slot.split_at_mut(pg.image.len());
                image.copy_from_slice(pg.image);
                rest.fill(0);
            }
        }
        let offset = geometry.descriptor_page(index) * p as u64;
        let lens: Vec<usize> = if images {
            pages.iter().map(|pg| pg.image.len()).collect()
        } else {
            Vec::new()
        };
        let runs = written_runs(p, &lens, alignment(&*self.file));
        let writes: Vec<(u64, &[u8])> = runs
            .iter()
            .filter_map(|r| Some((offset + r.start as u64, bytes.get(r.clone())?)))
            .collect();
        self.file.write_vectored_at(&writes)?;
        self.file.sync_data()?;
        let c = &self.counters;
        bump(&c.pages_written, pages.len() as u64);
        let written: usize = runs.iter().map(ExactSizeIterator::len).sum();
        bump(&c.bytes_written, written as u64);
        bump(&c.file_syncs, 1);
        match kind {
            AreaKind::Batch => bump(&c.batches, 1),
            AreaKind::SinglePage => bump(&c.single_page_writes, 1),
        }
        Ok(())
    }
}

/// The byte ranges of an area's buffer (descriptor page, then one slot of `page` bytes per image)
/// that one copy writes: the descriptor, and each image rounded up to `align` — not the rest of
/// its slot, which the reader never looks at (a page-compressed image is much shorter than its
/// slot). Adjacent ranges are merged, so a batch of whole pages is one write as before.
fn written_runs(page: usize, image_lens: &[usize], align: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::with_capacity(1 + image_lens.len());
    runs.push(0..page);
    for (k, &len) in image_lens.iter().enumerate() {
        let start = (k + 1) * page;
        let end = start
            + len
                .div_ceil(align.max(1))
                .saturating_mul(align.max(1))
                .min(page);
        match runs.last_mut() {
            Some(last) if last.end == start => last.end = end,
            _ => runs.push(start..end),
        }
    }
    runs
}

/// A batch whose copy is durable: write its pages in place, then call
/// [`written_in_place`](Self::written_in_place). Dropping it without that call (the in-place
/// write failed) keeps its area reserved until the file is reopened, so its copies stay for
/// recovery.
#[must_use = "call written_in_place after the in-place writes, or the area stays reserved"]
#[derive(Debug)]
pub struct Protected<'a> {
    dw: &'a Doublewrite,
    area: u32,
    seq: u64,
    released: bool,
}

impl Protected<'_> {
    /// The area holding the copy.
    pub fn area(&self) -> u32 {
        self.area
    }

    /// The batch sequence number recorded in the copy's descriptor.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Releases the area after every page of the batch was written in place to `files` (the
    /// data files written, in any order, repeats allowed). The area is reused only after each
    /// of them is synced, by the `protect` that reuses it or by
    /// [`sync_pending`](Doublewrite::sync_pending).
    pub fn written_in_place(mut self, files: Vec<Arc<dyn PageFile>>) {
        self.released = true;
        self.dw.table.lock().release(self.area, files);
        self.dw.freed.notify_all();
    }
}

impl Drop for Protected<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        tracing::warn!(
            file = %self.dw.path.display(),
            area = self.area,
            seq = self.seq,
            "a protected batch was not written in place; its area stays reserved for recovery"
        );
        self.dw.table.lock().reserve(self.area);
        // A waiter may now find every area of its kind reserved and must not sleep forever.
        self.dw.freed.notify_all();
    }
}

fn check_config(path: &Path, config: DoublewriteConfig) -> Result<()> {
    config
        .geometry
        .validate()
        .map_err(|what| DoublewriteError::Config {
            file: path.to_owned(),
            what,
        })
}

/// Bytes of zeros written per call when a new file is preallocated (a multiple of every page
/// size, so chunks stay aligned for O_DIRECT).
const PREALLOCATION_CHUNK: usize = 1 << 20;

/// Buffer alignment for `file`: at least what O_DIRECT needs on common devices.
fn alignment(file: &dyn PageFile) -> usize {
    file.alignment().max(DIRECT_IO_ALIGN)
}

/// Zeroes every descriptor page of an existing file and syncs it; returns the highest batch
/// sequence number found, so that numbering continues over the file's life.
fn discard_copies(file: &dyn PageFile, page_size: PageSize, geometry: Geometry) -> Result<u64> {
    let p = page_size.bytes();
    let mut page = AlignedBuf::with_alignment(p, alignment(file));
    let mut last_seq = 0;
    let mut offsets = Vec::with_capacity(geometry.areas() as usize);
    for index in 0..geometry.areas() {
        let offset = geometry.descriptor_page(index) * p as u64;
        file.read_at(&mut page, offset)?;
        if let DescriptorRead::Valid(d) =
            decode_descriptor(&page, geometry.capacity(index), Some(index))
        {
            last_seq = last_seq.max(d.seq);
        }
        offsets.push(offset);
    }
    let zero = AlignedBuf::with_alignment(p, alignment(file));
    let writes: Vec<(u64, &[u8])> = offsets.iter().map(|&o| (o, &zero[..])).collect();
    file.write_vectored_at(&writes)?;
    file.sync_data()?;
    Ok(last_seq)
}

#[cfg(test)]
mod tests {
    use super::written_runs;

    #[test]
    fn whole_pages_are_one_write_and_short_images_only_their_blocks() {
        let p = 16384;
        let one = |r: std::ops::Range<usize>| vec![r];
        assert_eq!(written_runs(p, &[p, p, p], 4096), one(0..4 * p));
        assert_eq!(written_runs(p, &[], 4096), one(0..p));
        // A 5,000-byte image takes two blocks of its slot; the next slot starts a new write.
        assert_eq!(
            written_runs(p, &[5000, p, 4096], 4096),
            [0..p + 8192, 2 * p..3 * p + 4096]
        );
        // Unaligned files round to nothing.
        assert_eq!(written_runs(p, &[100], 1), one(0..p + 100));
    }
}
