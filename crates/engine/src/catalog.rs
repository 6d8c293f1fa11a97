//! The catalog: which tables exist, their tablespace, root page and options. Kept in
//! `system.ibs` (space 0), written whole on every DDL as one of two alternating copies.
//!
//! Layout of `system.ibs`: page 0 is the space header (it records the database's page size);
//! catalog copy A is a chain of catalog pages at pages 1, 3, 5, …, copy B at pages 2, 4, 6, ….
//! Every page of a copy carries the copy's *generation* in its page-LSN field. A DDL writes the
//! copy not holding the newest generation, with generation + 1, and syncs; at open the valid
//! copy with the highest generation wins. A crash in the middle of a catalog write therefore
//! leaves the previous catalog in force: DDL is atomic without the redo log.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use barracuda_io::{FileSystem, OpenOptions, PageFile};
use barracuda_page::{
    catalog, page_lsn, seal_page, set_page_lsn, verify_page, CatalogEntry, CatalogPage, FileHeader,
    Lsn, PageError, PageId, PageNo, PageSize, PageType, SpaceHeader, SpaceId, FIL_NULL,
};

use crate::error::{Error, Result};
use crate::layout::{is_valid_table_name, TABLE_NAME_RULE};
use crate::tablespace::page_error;

/// The system tablespace's id.
pub(crate) const SYSTEM_SPACE: SpaceId = 0;

/// The in-memory catalog and the file it is saved to.
pub(crate) struct Catalog {
    file: Arc<dyn PageFile>,
    path: PathBuf,
    page_size: PageSize,
    generation: u64,
    /// LSN up to which every change was on disk at the last checkpoint (InnoDB:
    /// `FIL_PAGE_FILE_FLUSH_LSN`); kept in the type-specific field of every catalog page.
    flushed_lsn: Lsn,
    /// Whether pages may have been written since the last checkpoint
    /// ([`FLAG_PAGES_AFTER_CHECKPOINT`]).
    pages_after_checkpoint: bool,
    pub(crate) next_space_id: SpaceId,
    pub(crate) next_index_id: u64,
    pub(crate) entries: BTreeMap<String, CatalogEntry>,
}

/// Catalog flag: tablespace pages may have been written after the checkpoint the catalog
/// records. Set (durably) before the first page write after a checkpoint, cleared by the next
/// checkpoint. Until the redo log exists, pages written between two checkpoints can be a mix of
/// old and new that nothing can reconcile, so an open that finds the flag refuses
/// ([`Error::UncleanShutdown`]) rather than serve a tree that may be torn.
pub(crate) const FLAG_PAGES_AFTER_CHECKPOINT: u16 = 1;

impl Catalog {
    /// Creates `system.ibs` at `path` with an empty catalog and makes it durable, directory
    /// entry included.
    pub(crate) fn create(fs: &dyn FileSystem, path: &Path, page_size: PageSize) -> Result<Self> {
        // Built whole under a temporary name, then renamed: a process killed while creating
        // the database leaves no `system.ibs` (the next open creates it again), never an
        // empty or half-written one that no open could read.
        let building = path.with_extension("ibs.new");
        drop(Self::build(fs, &building, page_size)?);
        fs.rename(&building, path)?;
        // Without this a power loss can lose the file's name while keeping the tables created
        // after it.
        if let Some(dir) = path.parent() {
            fs.sync_dir(dir)?;
        }
        Self::open(fs, path)
    }

    /// Writes a new catalog file at `path`: page 0 and both (empty) copies, synced.
    fn build(fs: &dyn FileSystem, path: &Path, page_size: PageSize) -> Result<Self> {
        let file = fs.open(path, &OpenOptions::new().create(true).truncate(true))?;
        let header = SpaceHeader {
            space_id: SYSTEM_SPACE,
            page_size,
            flags: 0,
            size_in_pages: 1,
            free_hint: 1,
        };
        let mut page0 = vec![0u8; page_size.bytes()];
        header
            .format(&mut page0)
            .map_err(|e| page_error(path, PageId::new(0, 0), e))?;
        seal_page(&mut page0);
        file.write_at(&page0, 0)?;
        let mut catalog = Self {
            file,
            path: path.to_owned(),
            page_size,
            generation: 0,
            flushed_lsn: 0,
            pages_after_checkpoint: false,
            next_space_id: 1,
            next_index_id: 1,
            entries: BTreeMap::new(),
        };
        // Both copies exist from the start, so an open never meets a missing one.
        catalog.save()?;
        catalog.save()?;
        Ok(catalog)
    }

    /// Opens `system.ibs`, learning the page size from its page 0.
    pub(crate) fn open(fs: &dyn FileSystem, path: &Path) -> Result<Self> {
        let file = fs.open(path, &OpenOptions::new())?;
        let mut prefix = [0u8; 64];
        file.read_at(&mut prefix, 0)?;
        let page0_id = PageId::new(SYSTEM_SPACE, 0);
        let page_size =
            SpaceHeader::peek_page_size(&prefix).map_err(|e| page_error(path, page0_id, e))?;
        let mut page0 = vec![0u8; page_size.bytes()];
        file.read_at(&mut page0, 0)?;
        verify_page(&page0, page0_id, page_size).map_err(|e| page_error(path, page0_id, e))?;
        SpaceHeader::read(&page0, page_size).map_err(|e| page_error(path, page0_id, e))?;

        let copies = [
            read_file_copy(&*file, path, page_size, 0),
            read_file_copy(&*file, path, page_size, 1),
        ];
        let newest = copies.into_iter().filter_map(|copy| match copy {
            Ok(copy) => Some(copy),
            Err(err) => {
                tracing::warn!(%err, "a catalog copy is unreadable; using the other one");
                None
            }
        });
        let Some(best) = newest.max_by_key(|c| c.generation) else {
            return Err(Error::Corrupt {
                file: path.to_owned(),
                what: "no valid catalog copy".into(),
            });
        };
        check_copy(path, &best)?;
        let entries = best
            .entries
            .into_iter()
            .map(|entry| (entry.name.clone(), entry))
            .collect();
        Ok(Self {
            file,
            path: path.to_owned(),
            page_size,
            generation: best.generation,
            flushed_lsn: best.flushed_lsn,
            pages_after_checkpoint: best.flags & FLAG_PAGES_AFTER_CHECKPOINT != 0,
            next_space_id: best.next_space_id,
            next_index_id: best.next_index_id,
            entries,
        })
    }

    pub(crate) fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The LSN recorded by the last checkpoint: a new session's LSNs start above it.
    pub(crate) fn flushed_lsn(&self) -> Lsn {
        self.flushed_lsn
    }

    /// Whether the catalog says pages may have been written after its checkpoint (an unclean
    /// shutdown: see [`FLAG_PAGES_AFTER_CHECKPOINT`]).
    pub(crate) fn pages_after_checkpoint(&self) -> bool {
        self.pages_after_checkpoint
    }

    /// Records, durably, that pages are about to be written after the last checkpoint. A no-op
    /// when already recorded.
    pub(crate) fn record_pages_after_checkpoint(&mut self) -> Result<()> {
        if self.pages_after_checkpoint {
            return Ok(());
        }
        self.pages_after_checkpoint = true;
        self.save()
            .inspect_err(|_| self.pages_after_checkpoint = false)
    }

    /// Records that everything up to `lsn` is on disk (a completed checkpoint: no page was
    /// written after it), as a new catalog generation (the alternating copies make this
    /// crash-safe where rewriting page 0 in place would not be).
    pub(crate) fn record_flushed_lsn(&mut self, lsn: Lsn) -> Result<()> {
        if lsn == self.flushed_lsn && !self.pages_after_checkpoint {
            return Ok(());
        }
        let previous = (self.flushed_lsn, self.pages_after_checkpoint);
        self.flushed_lsn = lsn;
        self.pages_after_checkpoint = false;
        self.save().inspect_err(|_| {
            (self.flushed_lsn, self.pages_after_checkpoint) = previous;
        })
    }

    /// Writes the whole catalog as the next generation into the older copy and syncs.
    pub(crate) fn save(&mut self) -> Result<()> {
        let generation = self.generation + 1;
        let copy = (generation % 2) as u32;
        let per_page = catalog::capacity(self.page_size);
        let entries: Vec<CatalogEntry> = self.entries.values().cloned().collect();
        let chunks: Vec<&[CatalogEntry]> = if entries.is_empty() {
            vec![&[]]
        } else {
            entries.chunks(per_page).collect()
        };
        let mut pages = Vec::with_capacity(chunks.len());
        for (k, chunk) in chunks.iter().enumerate() {
            let page_no = copy_page_no(copy, k as u32);
            let next = if k + 1 < chunks.len() {
                copy_page_no(copy, k as u32 + 1)
            } else {
                FIL_NULL
            };
            let id = PageId::new(SYSTEM_SPACE, page_no);
            let mut buf = vec![0u8; self.page_size.bytes()];
            let mut header = FileHeader::new(id, PageType::Catalog);
            header.type_specific = self.flushed_lsn;
            header.write(&mut buf);
            let page = CatalogPage {
                next_catalog_page: next,
                next_space_id: self.next_space_id,
                next_index_id: self.next_index_id,
                flags: if self.pages_after_checkpoint {
                    FLAG_PAGES_AFTER_CHECKPOINT
                } else {
                    0
                },
                entries: chunk.to_vec(),
            };
            page.write(&mut buf, self.page_size)
                .map_err(|e| page_error(&self.path, id, e))?;
            set_page_lsn(&mut buf, generation);
            seal_page(&mut buf);
            pages.push((u64::from(page_no) * self.page_size.bytes() as u64, buf));
        }
        let slices: Vec<(u64, &[u8])> = pages.iter().map(|(o, p)| (*o, p.as_slice())).collect();
        self.file.write_vectored_at(&slices)?;
        self.file.sync_all()?;
        self.generation = generation;
        Ok(())
    }
}

/// Refuses a catalog whose bytes pass their checksums but could make the engine leave the
/// database directory or hand out an id twice: every name must be a valid table name
/// (`layout::is_valid_table_name`, the rule of `create_table`), names, space ids and index ids
/// unique, ids non-zero (0 is the system space and "no index"), root pages past page 0, and the
/// next ids above every id in use.
fn check_copy(path: &Path, copy: &CatalogCopy) -> Result<()> {
    let corrupt = |what: String| {
        Err(Error::Corrupt {
            file: path.to_owned(),
            what,
        })
    };
    let mut names = HashSet::new();
    let mut spaces = HashSet::new();
    let mut indexes = HashSet::new();
    for e in &copy.entries {
        if !is_valid_table_name(&e.name) {
            return corrupt(format!(
                "catalog names a table {:?}; a table name is {TABLE_NAME_RULE}",
                e.name
            ));
        }
        if !names.insert(e.name.as_str()) {
            return corrupt(format!("catalog names table {:?} twice", e.name));
        }
        if e.space_id == SYSTEM_SPACE || !spaces.insert(e.space_id) {
            return corrupt(format!(
                "table {:?} has space id {}, which is the system space's or another table's",
                e.name, e.space_id
            ));
        }
        if e.index_id == 0 || !indexes.insert(e.index_id) {
            return corrupt(format!(
                "table {:?} has index id {}, which is 0 or another table's",
                e.name, e.index_id
            ));
        }
        if e.root_page_no == 0 || e.root_page_no == FIL_NULL {
            return corrupt(format!(
                "table {:?} has root page {}, not an index page",
                e.name, e.root_page_no
            ));
        }
    }
    if let Some(max) = spaces.iter().max().filter(|&&m| m >= copy.next_space_id) {
        return corrupt(format!(
            "next space id {} is not above space id {max} in use",
            copy.next_space_id
        ));
    }
    if let Some(max) = indexes.iter().max().filter(|&&m| m >= copy.next_index_id) {
        return corrupt(format!(
            "next index id {} is not above index id {max} in use",
            copy.next_index_id
        ));
    }
    Ok(())
}

/// Page number of the `k`-th page of catalog copy `copy` (0 = A on odd pages, 1 = B on even).
fn copy_page_no(copy: u32, k: u32) -> PageNo {
    1 + copy + 2 * k
}

/// One catalog copy as read from `system.ibs`.
pub(crate) struct CatalogCopy {
    /// The generation every page of the copy carries in its page-LSN field.
    pub(crate) generation: u64,
    /// The flushed LSN in the first page's type-specific field.
    pub(crate) flushed_lsn: Lsn,
    pub(crate) next_space_id: SpaceId,
    pub(crate) next_index_id: u64,
    /// The first page's flags ([`FLAG_PAGES_AFTER_CHECKPOINT`]).
    pub(crate) flags: u16,
    /// The entries of all pages of the chain, in chain order.
    pub(crate) entries: Vec<CatalogEntry>,
}

/// Why a catalog copy could not be read; `E` is the caller's page-read error.
pub(crate) enum CopyFault<E> {
    /// Reading the page failed.
    Read(E),
    /// The page fails verification or does not decode as a catalog page.
    Page(PageError),
    /// The page carries another generation than the first page of its copy.
    MixedGenerations {
        /// The page's generation.
        generation: u64,
        /// The copy's generation (its first page's).
        expected: u64,
    },
    /// The page links to another page than the next one of its copy.
    BadLink {
        /// The link found.
        next: PageNo,
        /// The copy's next page.
        expected: PageNo,
    },
}

/// Reads catalog copy `copy` (0 = A, 1 = B) page by page through `read_page` (page number,
/// page-sized buffer), verifying every page, the chain's links and its generation. Shared by
/// [`Catalog::open`] and the offline checker (`inspect`). On failure, returns the page concerned
/// and why.
pub(crate) fn read_copy<E>(
    page_size: PageSize,
    copy: u32,
    mut read_page: impl FnMut(PageNo, &mut [u8]) -> std::result::Result<(), E>,
) -> std::result::Result<CatalogCopy, (PageNo, CopyFault<E>)> {
    let mut buf = vec![0u8; page_size.bytes()];
    let mut read = |page_no: PageNo| {
        read_page(page_no, &mut buf).map_err(|e| (page_no, CopyFault::Read(e)))?;
        let page = verify_page(&buf, PageId::new(SYSTEM_SPACE, page_no), page_size)
            .and_then(|()| CatalogPage::read(&buf, page_size))
            .map_err(|e| (page_no, CopyFault::Page(e)))?;
        let flushed_lsn = FileHeader::read(&buf).map_or(0, |h| h.type_specific);
        Ok((page, page_lsn(&buf).unwrap_or(0), flushed_lsn))
    };
    let mut page_no = copy_page_no(copy, 0);
    let (first, generation, flushed_lsn) = read(page_no)?;
    let mut next = first.next_catalog_page;
    let mut result = CatalogCopy {
        generation,
        flushed_lsn,
        next_space_id: first.next_space_id,
        next_index_id: first.next_index_id,
        flags: first.flags,
        entries: first.entries,
    };
    let mut k = 0;
    while next != FIL_NULL {
        k += 1;
        let expected = copy_page_no(copy, k);
        if next != expected {
            return Err((page_no, CopyFault::BadLink { next, expected }));
        }
        page_no = next;
        let (page, page_generation, _) = read(page_no)?;
        if page_generation != generation {
            return Err((
                page_no,
                CopyFault::MixedGenerations {
                    generation: page_generation,
                    expected: generation,
                },
            ));
        }
        result.entries.extend(page.entries);
        next = page.next_catalog_page;
    }
    Ok(result)
}

/// Reads catalog copy `copy` of the open `system.ibs` for [`Catalog::open`].
fn read_file_copy(
    file: &dyn PageFile,
    path: &Path,
    page_size: PageSize,
    copy: u32,
) -> Result<CatalogCopy> {
    read_copy(page_size, copy, |page_no, buf| {
        file.read_at(buf, u64::from(page_no) * page_size.bytes() as u64)
    })
    .map_err(|(page_no, fault)| match fault {
        CopyFault::Read(e) => Error::from(e),
        CopyFault::Page(e) => page_error(path, PageId::new(SYSTEM_SPACE, page_no), e),
        CopyFault::MixedGenerations { .. } => Error::Corrupt {
            file: path.to_owned(),
            what: format!("catalog copy {copy} mixes generations at page {page_no}"),
        },
        CopyFault::BadLink { next, .. } => Error::Corrupt {
            file: path.to_owned(),
            what: format!("catalog copy {copy} links page {page_no} to {next}"),
        },
    })
}
