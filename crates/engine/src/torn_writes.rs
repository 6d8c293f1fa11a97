//! Torn-write protection of page writes (issue 9): every page image that goes in place — from
//! the buffer pool's flushes and from recovery — passes through [`PageWrites::write`], which
//! protects it the way the mode in effect says:
//!
//! - `On`: the batch goes to the doublewrite file first (one write, one sync), then in place;
//!   a crash that tears an in-place write leaves the copy, which the next open restores before
//!   redo is applied ([`PageWrites::open`]).
//! - `DetectOnly`: only the page ids and LSNs go to the doublewrite file; the next open names a
//!   torn page and refuses to open.
//! - `AtomicWrites`: each page is one untorn write (`RWF_ATOMIC`, O_DIRECT) and no copy is
//!   made. A file whose device refuses one (EINVAL / EOPNOTSUPP) falls back to the doublewrite
//!   path for good, logged once.
//! - `Off`: written in place; a torn page is found by its checksum when read (recovery names
//!   it).
//!
//! The mode is decided at every open from the request and from evidence about the device (the
//! doublewrite crate's [`decide`]): atomic writes are used only when every data file reports
//! an atomic-write unit covering a page *and* a trial untorn write succeeded — never assumed.
// InnoDB: buf_dblwr_t (buf0dblwr.cc); MariaDB: fil_node_t::atomic_write.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use barracuda_doublewrite::{
    decide, read_copies, restore_torn_pages_since, AreaKind, AtomicWriteEvidence, Doublewrite,
    DoublewriteConfig, DoublewriteMode, DoublewriteStats, EffectiveMode, Geometry, PageImage,
    ProbeOutcome, FILE_NAME,
};
use barracuda_io::{
    probe_atomic_writes, AlignedBuf, AtomicWriteProbe, FileSystem, OpenOptions, PageFile,
    DIRECT_IO_ALIGN,
};
use barracuda_page::{
    page_lsn, verify_page, FileHeader, IndexPage, Lsn, PageId, PageSize, PageType, SpaceId,
};
use parking_lot::Mutex;

use crate::compression::HolePuncher;
use crate::error::{Error, Result};

/// Where a page goes: the data file of its tablespace, or `None` for a tablespace that no
/// longer exists (a dropped table: its pages are discarded).
pub(crate) type ResolveFile<'a> = dyn Fn(SpaceId) -> Result<Option<Arc<dyn PageFile>>> + 'a;

/// A page to write: its file, its id, its sealed image.
type Placed<'p> = (Arc<dyn PageFile>, PageId, &'p [u8]);

/// Torn-write protection as decided at open, and the doublewrite file when the mode uses one.
pub(crate) struct PageWrites {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    page_size: PageSize,
    requested: DoublewriteMode,
    mode: EffectiveMode,
    reason: String,
    /// The doublewrite file's layout, scaled to the buffer pool.
    geometry: Geometry,
    /// The doublewrite file: always in `On` and `DetectOnly`; in `AtomicWrites` created at the
    /// first file that refuses an untorn write.
    doublewrite: Mutex<Option<Arc<Doublewrite>>>,
    /// `AtomicWrites`: each data file's O_DIRECT handle for untorn writes, or `None` once the
    /// file refused one (its pages then go through the doublewrite file). Keyed by the address
    /// of the file's own handle, which the entry keeps alive (so the address is not reused):
    /// not by path, since a table dropped and created again under its name is another file.
    direct: Mutex<HashMap<usize, DirectHandle>>,
    /// Whether [`start`](Self::start) ran: before it, the previous session's copies may still
    /// be needed and nothing may be written.
    started: AtomicBool,
    /// What the open's repair did.
    repaired_at_open: Mutex<Vec<(PathBuf, PageId)>>,
    atomic_writes: AtomicU64,
    pages_in_place: AtomicU64,
    bytes_in_place: AtomicU64,
    /// Frees the rest of the slot behind a compressed image.
    holes: HolePuncher,
}

/// The doublewrite file's layout for a buffer pool of `pool_pages` pages: `batch_areas` areas
/// when given (checked), else [`Geometry::for_pool_pages`].
pub(crate) fn doublewrite_geometry(pool_pages: u64, batch_areas: Option<u32>) -> Result<Geometry> {
    let geometry = match batch_areas {
        None => Geometry::for_pool_pages(pool_pages),
        Some(batch_areas) => Geometry {
            batch_areas,
            ..Geometry::default()
        },
    };
    geometry
        .validate()
        .map_err(|why| Error::InvalidOption(format!("doublewrite_batch_areas: {why}")))?;
    Ok(geometry)
}

/// A data file's handle for untorn writes.
struct DirectHandle {
    /// The file's own handle (the map's key is its address).
    file: Arc<dyn PageFile>,
    /// Its O_DIRECT twin, or `None` once the file refused an untorn write.
    direct: Option<Arc<dyn PageFile>>,
}

fn file_key(file: &Arc<dyn PageFile>) -> usize {
    Arc::as_ptr(file).cast::<()>() as usize
}

/// The torn-write protection in effect, as `Engine::status()` reports it. Later versions add
/// fields.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DoublewriteStatus {
    /// The mode asked for (`EngineOptions::doublewrite`).
    pub requested: DoublewriteMode,
    /// The mode in effect.
    pub mode: EffectiveMode,
    /// Why that mode (e.g. the device's lack of atomic-write support).
    pub reason: String,
    /// The doublewrite file's counters (pages and bytes copied, batches, syncs), if it is open.
    pub doublewrite: Option<DoublewriteStats>,
    /// Pages written with one untorn write each (`AtomicWrites`).
    pub atomic_writes: u64,
    /// Data files that refused an untorn write and fell back to the doublewrite file.
    pub atomic_fallback_files: Vec<PathBuf>,
    /// Pages written in place (all modes), and their bytes.
    pub pages_written_in_place: u64,
    /// Bytes written in place.
    pub bytes_written_in_place: u64,
    /// Torn pages the last open restored from their doublewrite copy, with their files.
    pub torn_pages_repaired: Vec<(PathBuf, PageId)>,
}

impl std::fmt::Display for DoublewriteStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "-----------\nDOUBLEWRITE\n-----------")?;
        writeln!(
            f,
            "Mode {} (requested {:?}): {}",
            self.mode, self.requested, self.reason
        )?;
        writeln!(
            f,
            "Pages written in place {}, {} bytes; untorn writes {}",
            self.pages_written_in_place, self.bytes_written_in_place, self.atomic_writes
        )?;
        if let Some(d) = &self.doublewrite {
            writeln!(
                f,
                "Doublewrite: {} pages, {} bytes, {} batches, {} single pages, {} syncs, {} data \
                 syncs before reuse, {} waits for an area",
                d.pages_written,
                d.bytes_written,
                d.batches,
                d.single_page_writes,
                d.file_syncs,
                d.data_syncs_before_reuse,
                d.area_waits
            )?;
        }
        for path in &self.atomic_fallback_files {
            writeln!(
                f,
                "Untorn writes refused, doublewrite used: {}",
                path.display()
            )?;
        }
        writeln!(
            f,
            "Torn pages repaired at open: {}",
            self.torn_pages_repaired.len()
        )?;
        for (path, id) in &self.torn_pages_repaired {
            writeln!(f, "  {} page {id}", path.display())?;
        }
        Ok(())
    }
}

impl PageWrites {
    /// Decides the mode for the database in `dir`, whose tablespaces are `spaces`, with a
    /// doublewrite file of `geometry` ([`doublewrite_geometry`]). Nothing is written until
    /// [`start`](Self::start) has repaired what a previous session tore.
    pub(crate) fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        page_size: PageSize,
        requested: DoublewriteMode,
        spaces: &HashMap<SpaceId, PathBuf>,
        geometry: Geometry,
    ) -> Result<Self> {
        let evidence = gather_evidence(&*fs, dir, page_size, requested, spaces)?;
        let (mode, reason) = decide(requested, &evidence);
        if mode == EffectiveMode::On && matches!(requested, DoublewriteMode::AtomicWrites) {
            tracing::warn!(%reason, "atomic writes were requested but cannot be used");
        }
        tracing::info!(%mode, %reason, "torn-write protection");
        Ok(Self {
            fs,
            dir: dir.to_owned(),
            page_size,
            requested,
            mode,
            reason,
            geometry,
            doublewrite: Mutex::new(None),
            started: AtomicBool::new(false),
            direct: Mutex::new(HashMap::new()),
            repaired_at_open: Mutex::new(Vec::new()),
            atomic_writes: AtomicU64::new(0),
            pages_in_place: AtomicU64::new(0),
            bytes_in_place: AtomicU64::new(0),
            holes: HolePuncher::default(),
        })
    }

    /// Repairs, before any redo is applied, every page the previous session's doublewrite
    /// file lists whose bytes in place fail verification, from its newest valid copy above
    /// `checkpoint_lsn` (the one recovery starts from); then opens a fresh doublewrite
    /// file if the mode uses one, or removes the old one. Page writes are refused before this.
    ///
    /// Copies below the checkpoint are never used: a page written before the checkpoint was
    /// synced by it, so it cannot be torn, and an older copy of a page damaged otherwise would
    /// bring back a state whose later changes are no longer in the log. A torn page that
    /// cannot be repaired (no valid copy, or `DetectOnly`) is an [`Error::Page`] naming its
    /// file and page.
    pub(crate) fn start(
        &self,
        spaces: &HashMap<SpaceId, PathBuf>,
        checkpoint_lsn: Lsn,
    ) -> Result<()> {
        let repaired =
            repair_torn_pages(&*self.fs, &self.dir, self.page_size, spaces, checkpoint_lsn)?;
        *self.repaired_at_open.lock() = repaired;
        let doublewrite = if let Some(content) = self.mode.copy_content() {
            let config = DoublewriteConfig {
                content,
                geometry: self.geometry,
                ..DoublewriteConfig::default()
            };
            Some(Arc::new(Doublewrite::open(
                &*self.fs,
                &self.dir,
                self.page_size,
                config,
            )?))
        } else {
            let path = self.dir.join(FILE_NAME);
            if self.fs.exists(&path)? {
                // Its copies were used above; the mode in effect writes none.
                self.fs.remove(&path)?;
                self.fs.sync_dir(&self.dir)?;
            }
            None
        };
        *self.doublewrite.lock() = doublewrite;
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// Writes sealed page images in place, protected per the mode in effect. `pages` are the
    /// final bytes (one page each), possibly of several tablespaces; `resolve` gives each
    /// page's file. Returns once every page is written (not synced: the caller's checkpoint
    /// or the doublewrite file's reuse of the area syncs the data files).
    pub(crate) fn write(&self, pages: &[(PageId, &[u8])], resolve: &ResolveFile<'_>) -> Result<()> {
        if !self.started.load(Ordering::Acquire) {
            return Err(Error::Doublewrite {
                source: "a page write before the doublewrite file's copies were checked".into(),
            });
        }
        let mut files: HashMap<SpaceId, Option<Arc<dyn PageFile>>> = HashMap::new();
        let mut placed: Vec<Placed<'_>> = Vec::with_capacity(pages.len());
        for &(id, image) in pages {
            let file = if let Some(file) = files.get(&id.space_id) {
                file.clone()
            } else {
                let file = resolve(id.space_id)?;
                files.insert(id.space_id, file.clone());
                file
            };
            if let Some(file) = file {
                placed.push((file, id, image));
            } else {
                tracing::debug!(%id, "skipping write of a page of a dropped tablespace");
            }
        }
        match self.mode {
            EffectiveMode::Off => self.write_in_place(&placed),
            EffectiveMode::On | EffectiveMode::DetectOnly => self.write_protected(&placed),
            EffectiveMode::AtomicWrites => {
                let refused = self.write_atomically(placed)?;
                self.write_protected(&refused)
            }
        }
    }

    /// Writes each page with one untorn write; returns the pages of files that refuse them.
    fn write_atomically<'p>(&self, placed: Vec<Placed<'p>>) -> Result<Vec<Placed<'p>>> {
        let mut refused = Vec::new();
        for (file, id, image) in placed {
            let Some(direct) = self.direct_handle(&file)? else {
                refused.push((file, id, image));
                continue;
            };
            // Untorn writes take one aligned buffer (O_DIRECT) of a power-of-two length
            // (RWF_ATOMIC): a compressed image of another length is padded with zeros to the
            // whole page, written untorn, and the padding punched out afterwards.
            let aligned;
            let bytes = if !image.len().is_power_of_two() {
                let mut padded = AlignedBuf::zeroed(self.page_size.bytes());
                if let Some(start) = padded.get_mut(..image.len()) {
                    start.copy_from_slice(image);
                }
                aligned = padded;
                &aligned[..]
            } else if (image.as_ptr() as usize).is_multiple_of(DIRECT_IO_ALIGN) {
                image
            } else {
                aligned = AlignedBuf::from_slice(image);
                &aligned[..]
            };
            match direct.write_atomic_at(bytes, self.offset(id)) {
                Ok(()) => {
                    self.atomic_writes.fetch_add(1, Ordering::Relaxed);
                    self.count_in_place(image.len());
                    self.holes.after_write(
                        &*file,
                        self.offset(id),
                        image.len(),
                        self.page_size.bytes(),
                    );
                }
                Err(e) if e.is_unsupported() => {
                    tracing::warn!(
                        file = %file.path().display(),
                        error = %e,
                        "the file refused an untorn write: its pages go through the doublewrite \
                         file from now on"
                    );
                    if let Some(handle) = self.direct.lock().get_mut(&file_key(&file)) {
                        handle.direct = None;
                    }
                    refused.push((file, id, image));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(refused)
    }

    /// The O_DIRECT handle of `file` for untorn writes, opened at first use; `None` once the
    /// file refused one.
    fn direct_handle(&self, file: &Arc<dyn PageFile>) -> Result<Option<Arc<dyn PageFile>>> {
        let mut handles = self.direct.lock();
        if let Some(handle) = handles.get(&file_key(file)) {
            return Ok(handle.direct.clone());
        }
        let direct = match self.fs.open(file.path(), &OpenOptions::new().direct(true)) {
            Ok(handle) => Some(handle),
            Err(e) if e.is_unsupported() => {
                tracing::warn!(
                    file = %file.path().display(),
                    error = %e,
                    "O_DIRECT refused: the file's pages go through the doublewrite file"
                );
                None
            }
            Err(e) => return Err(e.into()),
        };
        handles.insert(
            file_key(file),
            DirectHandle {
                file: file.clone(),
                direct: direct.clone(),
            },
        );
        Ok(direct)
    }

    /// Closes the untorn-write handle of a data file that is going away (a dropped table, the
    /// end of recovery).
    pub(crate) fn forget_file(&self, file: &Arc<dyn PageFile>) {
        self.direct.lock().remove(&file_key(file));
    }

    /// The doublewrite path: each chunk copied and synced, then written in place. A single
    /// page uses a single-page slot, so it never waits behind a batch.
    fn write_protected(&self, placed: &[Placed<'_>]) -> Result<()> {
        if placed.is_empty() {
            return Ok(());
        }
        let doublewrite = self.doublewrite()?;
        for chunk in placed.chunks(doublewrite.max_batch_pages().max(1)) {
            let images: Vec<PageImage<'_>> = chunk
                .iter()
                .map(|(_, id, image)| PageImage {
                    id: *id,
                    lsn: page_lsn(image).unwrap_or(0),
                    image,
                })
                .collect();
            let kind = if images.len() == 1 {
                AreaKind::SinglePage
            } else {
                AreaKind::Batch
            };
            let protected = doublewrite.protect(&images, kind)?;
            let mut written: Vec<Arc<dyn PageFile>> = Vec::new();
            for (file, ..) in chunk {
                if !written.iter().any(|w| Arc::ptr_eq(w, file)) {
                    written.push(file.clone());
                }
            }
            if let Err(e) = self.write_in_place(chunk) {
                // The pages stay dirty in the pool and the engine writable, so the area must
                // not stay reserved for ever (two failures would leave no area). It is
                // released only if every page of the chunk reads back whole — old or new —
                // so that the data sync before its reuse cannot make a torn page durable
                // while its copy is overwritten; otherwise it keeps its copies for recovery.
                if self.reads_back_whole(chunk) {
                    protected.written_in_place(written);
                }
                return Err(e);
            }
            protected.written_in_place(written);
        }
        Ok(())
    }

    /// Whether every page of `chunk` reads back from its file intact (or never written).
    fn reads_back_whole(&self, chunk: &[Placed<'_>]) -> bool {
        let mut buf = AlignedBuf::zeroed(self.page_size.bytes());
        chunk.iter().all(|(file, id, _)| {
            file.read_at(&mut buf, self.offset(*id)).is_ok()
                && (buf.iter().all(|&b| b == 0) || page_is_intact(&buf, *id, self.page_size))
        })
    }

    /// The doublewrite file, created at first use in `AtomicWrites` (a file refused).
    fn doublewrite(&self) -> Result<Arc<Doublewrite>> {
        let mut doublewrite = self.doublewrite.lock();
        if let Some(dw) = &*doublewrite {
            return Ok(dw.clone());
        }
        let dw = Arc::new(Doublewrite::create(
            &*self.fs,
            &self.dir,
            self.page_size,
            DoublewriteConfig {
                geometry: self.geometry,
                ..DoublewriteConfig::default()
            },
        )?);
        *doublewrite = Some(dw.clone());
        Ok(dw)
    }

    /// Plain writes in place, one vectored call per file (pages of one file are usually
    /// adjacent in a batch: the store and recovery order them by page id).
    fn write_in_place(&self, placed: &[Placed<'_>]) -> Result<()> {
        let mut rest = placed;
        while let Some((file, ..)) = rest.first() {
            let run = rest
                .iter()
                .take_while(|(f, ..)| Arc::ptr_eq(f, file))
                .count();
            let (same, next) = rest.split_at(run);
            let writes: Vec<(u64, &[u8])> = same
                .iter()
                .map(|(_, id, image)| (self.offset(*id), *image))
                .collect();
            file.write_vectored_at(&writes)?;
            for &(offset, image) in &writes {
                self.count_in_place(image.len());
                self.holes
                    .after_write(&**file, offset, image.len(), self.page_size.bytes());
            }
            rest = next;
        }
        Ok(())
    }

    /// Holes punched behind compressed images, and punches refused or failed.
    pub(crate) fn hole_counts(&self) -> (u64, u64) {
        self.holes.counts()
    }

    fn count_in_place(&self, bytes: usize) {
        self.pages_in_place.fetch_add(1, Ordering::Relaxed);
        self.bytes_in_place
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn offset(&self, id: PageId) -> u64 {
        u64::from(id.page_no) * self.page_size.bytes() as u64
    }

    /// Syncs the data files the doublewrite file's areas still wait on (after a checkpoint's
    /// own syncs this finds none; at close it leaves nothing pending).
    pub(crate) fn sync_pending(&self) -> Result<()> {
        let doublewrite = self.doublewrite.lock().clone();
        if let Some(dw) = doublewrite {
            dw.sync_pending()?;
        }
        Ok(())
    }

    /// The status section.
    pub(crate) fn status(&self) -> DoublewriteStatus {
        let doublewrite = self.doublewrite.lock().as_ref().map(|dw| dw.stats());
        let mut atomic_fallback_files: Vec<PathBuf> = self
            .direct
            .lock()
            .values()
            .filter(|handle| handle.direct.is_none())
            .map(|handle| handle.file.path().to_owned())
            .collect();
        atomic_fallback_files.dedup();
        atomic_fallback_files.sort();
        DoublewriteStatus {
            requested: self.requested,
            mode: self.mode,
            reason: self.reason.clone(),
            doublewrite,
            atomic_writes: self.atomic_writes.load(Ordering::Relaxed),
            atomic_fallback_files,
            pages_written_in_place: self.pages_in_place.load(Ordering::Relaxed),
            bytes_written_in_place: self.bytes_in_place.load(Ordering::Relaxed),
            torn_pages_repaired: self.repaired_at_open.lock().clone(),
        }
    }
}

/// What decides between atomic writes and the doublewrite file: each data file's atomic-write
/// unit and, when those allow it, a trial untorn write in the tables' directory. Asked only
/// when atomic writes could be chosen.
fn gather_evidence(
    fs: &dyn FileSystem,
    dir: &Path,
    page_size: PageSize,
    requested: DoublewriteMode,
    spaces: &HashMap<SpaceId, PathBuf>,
) -> Result<AtomicWriteEvidence> {
    let mut evidence = AtomicWriteEvidence {
        page_size: page_size.bytes() as u32,
        files: Vec::new(),
        probe: ProbeOutcome::NotTried,
    };
    if !matches!(
        requested,
        DoublewriteMode::Auto | DoublewriteMode::AtomicWrites
    ) {
        return Ok(evidence);
    }
    let mut paths: Vec<&PathBuf> = spaces.values().collect();
    paths.sort();
    for path in paths {
        let file = fs.open(path, &OpenOptions::new())?;
        evidence
            .files
            .push((path.clone(), file.atomic_write_unit()));
    }
    let page_bytes = evidence.page_size;
    if evidence
        .files
        .iter()
        .any(|(_, unit)| unit.is_none_or(|unit| unit < page_bytes))
    {
        // A file without untorn page writes rules them out: no trial write needed.
        return Ok(evidence);
    }
    let tables = dir.join(crate::layout::TABLES_DIR);
    evidence.probe = match probe_atomic_writes(fs, &tables, page_size.bytes()) {
        AtomicWriteProbe::Supported { unit } => {
            if evidence.files.is_empty() {
                // No table yet: the trial file in the tables' directory stands for them.
                evidence
                    .files
                    .push((tables.join("<new tables>"), Some(unit)));
            }
            ProbeOutcome::Succeeded
        }
        AtomicWriteProbe::Unsupported(why) => ProbeOutcome::Failed(why.to_string()),
    };
    Ok(evidence)
}

/// Restores, from the doublewrite file a previous session left, every listed page whose bytes
/// in place fail verification. Runs before any redo is applied.
fn repair_torn_pages(
    fs: &dyn FileSystem,
    dir: &Path,
    page_size: PageSize,
    spaces: &HashMap<SpaceId, PathBuf>,
    checkpoint_lsn: Lsn,
) -> Result<Vec<(PathBuf, PageId)>> {
    let Some(copies) = read_copies(fs, dir, page_size)? else {
        return Ok(Vec::new());
    };
    let resolve = |space: SpaceId| -> Option<Arc<dyn PageFile>> {
        let path = spaces.get(&space)?;
        match fs.open(path, &OpenOptions::new()) {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot open a data file to check its pages");
                None
            }
        }
    };
    // A page still all zeros was never written in place (a torn write keeps some old or
    // new bytes): nothing to repair. Its first change is in the redo after the checkpoint —
    // a page allocated before the checkpoint was written and synced by it — so recovery
    // rebuilds it; treating it as torn would refuse a database whose copy write was the one
    // cut (the copy is then invalid, the page never touched).
    let verify = |id: PageId, bytes: &[u8]| {
        bytes.iter().all(|&b| b == 0) || page_is_intact(bytes, id, page_size)
    };
    let report = restore_torn_pages_since(&copies, Some(checkpoint_lsn), resolve, verify)?;
    let repaired: Vec<(PathBuf, PageId)> = report
        .repaired
        .iter()
        .map(|id| {
            let path = spaces.get(&id.space_id).cloned().unwrap_or_default();
            (path, *id)
        })
        .collect();
    for (path, id) in &repaired {
        tracing::warn!(file = %path.display(), page = %id, "restored a torn page from the doublewrite file");
    }
    Ok(repaired)
}

/// The tablespace's own read check (`Tablespace::read_page`): a compressed image's envelope
/// and the page inside it, or the page's checksum, LSN, identity, and
/// for index pages the record structure.
pub(crate) fn page_is_intact(bytes: &[u8], id: PageId, page_size: PageSize) -> bool {
    // A row-compressed block: its checksum covers the block, and it must decompress.
    if barracuda_row_compression::is_compressed_block(bytes) {
        let mut page = vec![0u8; page_size.bytes()];
        return matches!(crate::row_compression::find_block(bytes, id), Ok(Some(block))
            if crate::row_compression::decompress_block(block, id, page_size, &mut page, None).is_ok());
    }
    // A compressed image's checksum covers every stored byte, so a torn one fails here.
    if barracuda_page_compression::is_page_compressed(bytes) {
        let mut page = bytes.to_vec();
        return crate::compression::decode_stored_page(&mut page, id, page_size, None).is_ok()
            && page_is_intact(&page, id, page_size);
    }
    if verify_page(bytes, id, page_size).is_err() {
        return false;
    }
    match FileHeader::read(bytes) {
        Ok(header) if header.page_type == PageType::Index => {
            IndexPage::open(bytes, page_size).is_ok()
        }
        Ok(_) => true,
        Err(_) => false,
    }
}
