//! The recovery side: [`read_copies`] finds the valid copies in the doublewrite file, and
//! [`restore_torn_pages`] writes them over in-place pages that fail verification.
// InnoDB: buf_dblwr_t::recover / recv_dblwr_t::find_page, and DETECT_ONLY's reduced_recover.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use barracuda_io::{AlignedBuf, FileSystem, OpenOptions, PageFile, DIRECT_IO_ALIGN};
use barracuda_page::{Lsn, PageId, PageSize, SpaceId};

use crate::areas::{add_unique, DataFile};
use crate::error::{DoublewriteError, Result};
use crate::format::{
    check_image, decode_descriptor, decode_header, max_entries, CopyContent, Descriptor,
    DescriptorRead, Geometry, FILE_NAME, MAX_AREAS_PER_KIND, MAX_PAGES_PER_AREA,
};

/// A valid copy of a page: its descriptor's CRC, its image's CRC and the image's own file
/// header (page id and LSN) all agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCopy {
    /// The page.
    pub id: PageId,
    /// Its page LSN.
    pub lsn: Lsn,
    /// The batch sequence number of the copy's descriptor.
    pub seq: u64,
    /// The image, exactly as it was to be written in place (at most one page).
    pub image: Vec<u8>,
}

/// Everything the file says about one page.
#[derive(Debug, Clone)]
struct Listing {
    /// The newest (LSN, then batch sequence) entry naming the page, valid or not.
    newest: (Lsn, u64),
    /// The newest valid copy.
    copy: Option<PageCopy>,
    /// Why the newest entry that has no valid copy has none, with its (LSN, sequence).
    without_copy: Option<((Lsn, u64), String)>,
}

/// What [`read_copies`] read and skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// The header was unreadable (or made for another page size): every page was tried as a
    /// descriptor instead of following the geometry.
    pub header_damaged: bool,
    /// Valid descriptors read.
    pub descriptors: u64,
    /// Areas never used since the file was created or opened.
    pub unused_areas: u64,
    /// Areas whose descriptor is damaged or missing (a torn copy write, or bit rot); skipped.
    pub damaged_areas: u64,
    /// Entries of valid descriptors.
    pub entries: u64,
    /// Entries whose image failed its checks (skipped; descriptors-only entries not counted).
    pub invalid_images: u64,
}

/// The copies found in a doublewrite file, per page: the newest valid copy and what the file
/// lists without a usable copy (input of [`restore_torn_pages`]).
#[derive(Debug, Clone)]
pub struct Copies {
    path: PathBuf,
    page_size: PageSize,
    pages: BTreeMap<PageId, Listing>,
    summary: ScanSummary,
}

impl Copies {
    /// The doublewrite file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The page size the file was read with.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// What was read and skipped.
    pub fn summary(&self) -> ScanSummary {
        self.summary
    }

    /// Number of distinct pages some valid descriptor lists (with or without a valid copy).
    pub fn listed_pages(&self) -> usize {
        self.pages.len()
    }

    /// The pages listed, each with the newest LSN listed for it, in page-id order.
    pub fn listed(&self) -> impl Iterator<Item = (PageId, Lsn)> + '_ {
        self.pages.iter().map(|(id, l)| (*id, l.newest.0))
    }

    /// The newest valid copy of `id` (highest LSN; equal LSNs: highest batch sequence).
    pub fn copy(&self, id: PageId) -> Option<&PageCopy> {
        self.pages.get(&id).and_then(|l| l.copy.as_ref())
    }

    /// Every page's newest valid copy, in page-id order.
    pub fn copies(&self) -> impl Iterator<Item = &PageCopy> + '_ {
        self.pages.values().filter_map(|l| l.copy.as_ref())
    }

    fn note(&mut self, id: PageId, lsn: Lsn, seq: u64, copy: std::result::Result<&[u8], String>) {
        let key = (lsn, seq);
        let listing = self.pages.entry(id).or_insert_with(|| Listing {
            newest: key,
            copy: None,
            without_copy: None,
        });
        listing.newest = listing.newest.max(key);
        match copy {
            Ok(image) => {
                if listing.copy.as_ref().is_none_or(|c| (c.lsn, c.seq) < key) {
                    listing.copy = Some(PageCopy {
                        id,
                        lsn,
                        seq,
                        image: image.to_vec(),
                    });
                }
            }
            Err(why) => {
                if listing.without_copy.as_ref().is_none_or(|(k, _)| *k < key) {
                    listing.without_copy = Some((key, why));
                }
            }
        }
    }
}

/// Reads `<dir>/doublewrite.dblwr` (`None` when there is none) and keeps, per page, the newest
/// valid copy.
///
/// The file is untrusted: a damaged header makes every page a candidate descriptor, damaged
/// descriptors and images are skipped and counted ([`Copies::summary`], with a warning naming
/// the file), counts and lengths are bounded by the geometry and the file's length. Only a
/// failing read is an error.
pub fn read_copies(fs: &dyn FileSystem, dir: &Path, page_size: PageSize) -> Result<Option<Copies>> {
    let path = dir.join(FILE_NAME);
    if !fs.exists(&path)? {
        return Ok(None);
    }
    let file = fs.open(&path, &OpenOptions::new().read_only(true))?;
    let p = page_size.bytes() as u64;
    let file_pages = file.len()? / p;
    let mut copies = Copies {
        path: path.clone(),
        page_size,
        pages: BTreeMap::new(),
        summary: ScanSummary::default(),
    };
    let mut page = vec![0u8; p as usize];
    let header = if file_pages == 0 {
        Err("the file is shorter than one page".to_owned())
    } else {
        file.read_at(&mut page, 0)?;
        match decode_header(&page) {
            Ok((size, _)) if size != page_size => Err(format!(
                "the header is for {size} pages, the database's are {page_size}"
            )),
            other => other.map(|(_, g)| g),
        }
    };
    // (descriptor page, capacity, expected area index)
    let plan: Vec<(u64, u32, Option<u32>)> = match header {
        Ok(g) => (0..g.areas())
            .map(|i| (g.descriptor_page(i), g.capacity(i), Some(i)))
            .collect(),
        Err(why) => {
            tracing::warn!(
                file = %path.display(),
                "doublewrite header unreadable ({why}): trying every page as a descriptor"
            );
            copies.summary.header_damaged = true;
            let largest = Geometry {
                batch_areas: MAX_AREAS_PER_KIND,
                pages_per_area: MAX_PAGES_PER_AREA,
                single_page_slots: MAX_AREAS_PER_KIND,
            };
            (1..file_pages.min(largest.total_pages()))
                .map(|n| (n, max_entries(page_size), None))
                .collect()
        }
    };
    let scanning = copies.summary.header_damaged;
    for (desc_page, capacity, area) in plan {
        if desc_page >= file_pages {
            copies.summary.damaged_areas += 1;
            tracing::warn!(
                file = %path.display(),
                area = area.unwrap_or(u32::MAX),
                "doublewrite area lies beyond the end of the file; skipped"
            );
            continue;
        }
        file.read_at(&mut page, desc_page * p)?;
        let desc = match decode_descriptor(&page, capacity, area) {
            DescriptorRead::Valid(d) => d,
            DescriptorRead::Unused => {
                copies.summary.unused_areas += u64::from(!scanning);
                continue;
            }
            // When scanning, most pages are images: only a page with the descriptor magic
            // that fails its checks is a damaged descriptor.
            DescriptorRead::NotDescriptor(_) if scanning => continue,
            DescriptorRead::NotDescriptor(why) | DescriptorRead::Damaged(why) => {
                copies.summary.damaged_areas += 1;
                tracing::warn!(
                    file = %path.display(),
                    page = desc_page,
                    "damaged doublewrite descriptor skipped: {why}"
                );
                continue;
            }
        };
        copies.summary.descriptors += 1;
        copies.summary.entries += desc.entries.len() as u64;
        read_area(&*file, &mut copies, desc_page, file_pages, &desc)?;
    }
    if copies.summary.damaged_areas > 0 || copies.summary.invalid_images > 0 {
        tracing::warn!(
            file = %path.display(),
            damaged_areas = copies.summary.damaged_areas,
            invalid_images = copies.summary.invalid_images,
            "doublewrite file partly unusable (a copy write torn by the crash is expected)"
        );
    }
    Ok(Some(copies))
}

/// Reads the image slots of `desc` (at most up to the end of the file) and notes each entry.
fn read_area(
    file: &dyn PageFile,
    copies: &mut Copies,
    desc_page: u64,
    file_pages: u64,
    desc: &Descriptor,
) -> Result<()> {
    let page_size = copies.page_size;
    let p = page_size.bytes();
    if desc.content == CopyContent::DescriptorsOnly {
        for e in &desc.entries {
            let why =
                "the doublewrite file holds descriptors only (DetectOnly): no image".to_owned();
            copies.note(e.id, e.lsn, desc.seq, Err(why));
        }
        return Ok(());
    }
    let in_file = (file_pages - desc_page - 1).min(desc.entries.len() as u64) as usize;
    let mut slots = vec![0u8; in_file * p];
    if in_file > 0 {
        file.read_at(&mut slots, (desc_page + 1) * p as u64)?;
    }
    for (i, e) in desc.entries.iter().enumerate() {
        let slot = slots.get(i * p..(i + 1) * p).unwrap_or(&[]);
        let checked = check_image(e, slot, page_size);
        if checked.is_err() {
            copies.summary.invalid_images += 1;
        }
        copies.note(
            e.id,
            e.lsn,
            desc.seq,
            checked.map_err(|why| format!("its copy is invalid: {why}")),
        );
    }
    Ok(())
}

/// What [`restore_torn_pages`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Listed pages whose in-place bytes were read and verified.
    pub checked: u64,
    /// Of those, pages that passed verification and were left alone.
    pub intact: u64,
    /// Pages that failed verification and were overwritten with their copy, in page-id order.
    pub repaired: Vec<PageId>,
    /// Listed pages of tablespaces `resolve` does not know (dropped tables): skipped.
    pub skipped_unknown_space: u64,
    /// Listed pages at or beyond the end of their file: skipped.
    pub skipped_beyond_eof: u64,
    /// Listed pages whose newest entry is not newer than the checkpoint given to
    /// [`restore_torn_pages_since`]: skipped (their last write was synced by it).
    pub skipped_before_checkpoint: u64,
    /// Data files synced after the repairs.
    pub files_synced: u64,
}

/// Repairs torn pages: for each page the doublewrite file lists, reads its in-place bytes from
/// the file `resolve` gives for its tablespace; if `verify(page, bytes)` rejects them (torn,
/// all-zero, checksum — the engine's verdict, which knows page types and compression), writes
/// the newest valid copy over them (the image, zero-padded to a page), then syncs every file
/// it wrote. Run it before redo is applied.
///
/// A page that fails verification without a usable copy — descriptors-only mode, no valid
/// copy, or a copy `verify` rejects too — is [`DoublewriteError::TornPage`] naming the file
/// and the page (the first such page; the others are logged), after every repairable page was
/// repaired and synced. Pages of unknown tablespaces and pages beyond their file's end are
/// skipped and counted.
pub fn restore_torn_pages(
    copies: &Copies,
    resolve: impl Fn(SpaceId) -> Option<Arc<dyn PageFile>>,
    verify: impl Fn(PageId, &[u8]) -> bool,
) -> Result<RestoreReport> {
    restore_torn_pages_since(copies, None, resolve, verify)
}

/// [`restore_torn_pages`] for a database whose redo log starts at `checkpoint_lsn`: pages
/// listed only at or below it are left alone (counted in
/// [`RestoreReport::skipped_before_checkpoint`]), and no copy at or below it is ever written
/// back. `None`: every copy may be used.
///
/// A page LSN is the end of its newest change, and no change straddles a checkpoint, so a
/// page whose LSN is at or below the checkpoint held only changes the checkpoint had made
/// durable: it cannot be torn. If it fails verification it was damaged otherwise, and an old
/// copy would bring back a state whose later changes may no longer be in the log (the copy of
/// its last write can be gone: an area is reused once its in-place writes are synced). A copy
/// above the checkpoint is safe: redo replays everything after the checkpoint onto it.
pub fn restore_torn_pages_since(
    copies: &Copies,
    checkpoint_lsn: Option<Lsn>,
    resolve: impl Fn(SpaceId) -> Option<Arc<dyn PageFile>>,
    verify: impl Fn(PageId, &[u8]) -> bool,
) -> Result<RestoreReport> {
    let p = copies.page_size.bytes();
    let durable_by_checkpoint = |lsn: Lsn| checkpoint_lsn.is_some_and(|c| lsn <= c);
    let mut report = RestoreReport::default();
    let mut files: BTreeMap<SpaceId, Option<DataFile>> = BTreeMap::new();
    let mut touched: Vec<DataFile> = Vec::new();
    let mut unrepairable: Vec<DoublewriteError> = Vec::new();
    for (&id, listing) in &copies.pages {
        if durable_by_checkpoint(listing.newest.0) {
            report.skipped_before_checkpoint += 1;
            continue;
        }
        let Some(file) = files
            .entry(id.space_id)
            .or_insert_with(|| resolve(id.space_id))
            .clone()
        else {
            report.skipped_unknown_space += 1;
            continue;
        };
        let align = file.alignment().max(DIRECT_IO_ALIGN);
        let mut buf = AlignedBuf::with_alignment(p, align);
        let offset = u64::from(id.page_no) * p as u64;
        match file.read_at(&mut buf, offset) {
            Ok(()) => {}
            Err(e) if e.is_past_eof() => {
                report.skipped_beyond_eof += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        report.checked += 1;
        if verify(id, &buf) {
            report.intact += 1;
            continue;
        }
        let why = match &listing.copy {
            Some(copy) if durable_by_checkpoint(copy.lsn) => format!(
                "its newest valid doublewrite copy (LSN {}) is not newer than the checkpoint",
                copy.lsn
            ),
            Some(copy) => {
                buf.fill(0);
                buf[..copy.image.len()].copy_from_slice(&copy.image);
                if verify(id, &buf) {
                    file.write_at(&buf, offset)?;
                    add_unique(&mut touched, [file.clone()]);
                    tracing::warn!(
                        file = %file.path().display(),
                        page = %id,
                        lsn = copy.lsn,
                        "torn page restored from the doublewrite copy"
                    );
                    report.repaired.push(id);
                    continue;
                }
                format!(
                    "its doublewrite copy (LSN {}, batch {}) fails verification too",
                    copy.lsn, copy.seq
                )
            }
            None => listing
                .without_copy
                .as_ref()
                .map_or_else(|| "no copy".to_owned(), |(_, why)| why.clone()),
        };
        tracing::error!(
            file = %file.path().display(),
            page = %id,
            "torn page cannot be repaired: {why}"
        );
        unrepairable.push(DoublewriteError::TornPage {
            file: file.path().to_owned(),
            page: id,
            lsn: listing.newest.0,
            why,
        });
    }
    for f in &touched {
        f.sync_data()?;
        report.files_synced += 1;
    }
    match unrepairable.into_iter().next() {
        Some(first) => Err(first),
        None => Ok(report),
    }
}
