//! One tablespace file: its pages' reads (decompressed and verified on the way in) and its
//! growth. Writes go through the store's encoder and the torn-write protection.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use barracuda_io::{FileSystem, OpenOptions, PageFile, SyncLatch};
use barracuda_page::bytes::u32_at;
use barracuda_page::header::OFF_CHECKSUM;
use barracuda_page::{
    seal_page, verify_page, FileHeader, IndexPage, PageError, PageId, PageNo, PageSize, PageType,
    SpaceHeader, SpaceId, TrxSysPage, UndoPage,
};
use parking_lot::Mutex;

use crate::compression::{decode_stored_page, CompressionCounters, SpaceCompression};
use crate::error::{Error, Result};
use crate::options::PageCompression;
use crate::verified::VerifiedImages;
use barracuda_row_compression::{BlockSize, CompressionStats};

/// What page 1 of a new tablespace is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FirstPage {
    /// The empty root leaf of B-tree index `id` (a table).
    IndexRoot(u64),
    /// The transaction system page (the undo tablespace), handing out ids from `max_trx_id`.
    TrxSys {
        /// The first transaction id to hand out.
        max_trx_id: u64,
    },
}

/// A tablespace file of fixed-size pages. Page `n` lives at byte `n * page_size`.
pub(crate) struct Tablespace {
    space_id: SpaceId,
    path: PathBuf,
    file: Arc<dyn PageFile>,
    page_size: PageSize,
    /// The high-water mark of page 0, cached for read-ahead and `status`.
    size_pages: AtomicU32,
    /// Pages the file is known to hold durably (its length synced since this handle opened
    /// it; 0 at open): a page 0 recording more is not written before the length is synced
    /// ([`before_header_write`](Self::before_header_write)).
    durable_pages: AtomicU32,
    /// Held while the file's length changes, so that a length checked is still the length
    /// when it is extended (a growth and a header write must not shrink each other's).
    length: Mutex<()>,
    /// `file` itself, seen as what it is: a sync that failed once fails for good, whoever
    /// syncs it (this tablespace, the doublewrite's batches), and the checkpoint's then turns
    /// the engine read-only (PostgreSQL's "fsyncgate", see [`SyncLatch`]).
    latch: Arc<SyncLatch>,
    /// How its pages are compressed when written, `None` for a table without page compression.
    compression: Option<SpaceCompression>,
    /// The block size its index pages are kept in (row compression), with the table's
    /// compression counters (INNODB_CMP_PER_INDEX); `None` for plain pages.
    zip: Option<(BlockSize, Arc<CompressionStats>)>,
}

impl std::fmt::Debug for Tablespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tablespace")
            .field("space_id", &self.space_id)
            .field("path", &self.path)
            .field("page_size", &self.page_size)
            .field("size_pages", &self.size_pages)
            .field("compression", &self.compression)
            .field("zip", &self.zip)
            .finish_non_exhaustive()
    }
}

impl Tablespace {
    /// Creates the file with page 0 (space header, first extent reserved) and page 1 (an empty
    /// B-tree root, or the transaction system page), then syncs it and its directory:
    /// a table exists on disk complete or not at all, before the catalog names it. On failure
    /// the file is removed again (nothing names it yet).
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: &Path,
        space_id: SpaceId,
        page_size: PageSize,
        first: FirstPage,
        compression: Option<PageCompression>,
    ) -> Result<Self> {
        // Built under a temporary name and renamed once formatted and synced, as the catalog
        // is: a process killed while creating a tablespace leaves no file under its name (the
        // next open or `create_table` makes it again), never an empty or half-formatted one
        // that every later open would refuse — a kill 6 ms into a new database's creation left
        // an empty `undo.ibu` that way.
        let mut building = path.as_os_str().to_owned();
        building.push(".new");
        let building = PathBuf::from(building);
        let file = fs.open(&building, &OpenOptions::new().create(true).truncate(true))?;
        let result = Self::format(path, &file, space_id, page_size, first)
            .and_then(|()| Ok(fs.rename(&building, path)?));
        if result.is_err() {
            if let Err(err) = fs.remove(&building) {
                tracing::warn!(%err, "removing a tablespace whose creation failed");
            }
        }
        result?;
        // Without this a power loss can lose the new name while keeping what was written after.
        if let Some(dir) = path.parent() {
            fs.sync_dir(dir)?;
        }
        // Opened again under its name: a file handle keeps the path it was opened with (for its
        // errors, and to open the file again, e.g. for direct I/O).
        drop(file);
        let latch = Arc::new(SyncLatch::new(fs.open(path, &OpenOptions::new())?));
        let file: Arc<dyn PageFile> = latch.clone();
        Ok(Self {
            space_id,
            path: path.to_owned(),
            compression: compression.map(|c| space_compression(c, &*file)),
            file,
            page_size,
            size_pages: AtomicU32::new(page_size.pages_per_extent()),
            durable_pages: AtomicU32::new(0),
            length: Mutex::new(()),
            latch,
            zip: None,
        })
    }

    /// Writes and syncs the first pages of a new tablespace (errors name `path`, the name it
    /// will have).
    fn format(
        path: &Path,
        file: &Arc<dyn PageFile>,
        space_id: SpaceId,
        page_size: PageSize,
        first: FirstPage,
    ) -> Result<()> {
        let extent = page_size.pages_per_extent();
        let header = SpaceHeader {
            space_id,
            page_size,
            flags: 0,
            size_in_pages: extent,
            free_hint: 1,
        };
        let mut page0 = vec![0u8; page_size.bytes()];
        header
            .format(&mut page0)
            .map_err(|e| page_error(path, PageId::new(space_id, 0), e))?;
        let mut writes = Vec::with_capacity(2);
        let first_id = PageId::new(space_id, 1);
        let mut set_used = |page_no: PageNo| {
            barracuda_page::AllocationBitmap::open(&mut page0[..], page_size)
                .and_then(|mut bitmap| bitmap.set_used(page_no, true))
                .map_err(|e| page_error(path, PageId::new(space_id, page_no), e))
        };
        set_used(1)?;
        let mut page1 = vec![0u8; page_size.bytes()];
        match first {
            FirstPage::IndexRoot(index_id) => {
                IndexPage::init(&mut page1[..], page_size, first_id, 0, index_id)
                    .map_err(|e| page_error(path, first_id, e))?;
            }
            FirstPage::TrxSys { max_trx_id } => {
                // Page 1 is the first rollback segment and counts them; the others follow it.
                let count = barracuda_undo::ROLLBACK_SEGMENTS;
                TrxSysPage::init(&mut page1[..], page_size, first_id, max_trx_id)
                    .map_err(|e| page_error(path, first_id, e))?
                    .set_rseg_count(count);
                for page_no in 2..=count {
                    set_used(page_no)?;
                    let id = PageId::new(space_id, page_no);
                    let mut page = vec![0u8; page_size.bytes()];
                    TrxSysPage::init(&mut page[..], page_size, id, 0)
                        .map_err(|e| page_error(path, id, e))?;
                    writes.push((u64::from(page_no) * page_size.bytes() as u64, page));
                }
            }
        }
        writes.push((page_size.bytes() as u64, page1));
        writes.push((0u64, page0));
        for (_, page) in &mut writes {
            seal_page(page);
        }
        let slices: Vec<(u64, &[u8])> =
            writes.iter().map(|(off, p)| (*off, p.as_slice())).collect();
        file.set_len(u64::from(extent) * page_size.bytes() as u64)?;
        file.write_vectored_at(&slices)?;
        file.sync_all()?;
        Ok(())
    }

    /// Opens an existing tablespace, checking its page 0 against the expected id and page size.
    pub(crate) fn open(
        fs: &dyn FileSystem,
        path: &Path,
        space_id: SpaceId,
        page_size: PageSize,
        compression: Option<PageCompression>,
    ) -> Result<Self> {
        let latch = Arc::new(SyncLatch::new(fs.open(path, &OpenOptions::new())?));
        let file: Arc<dyn PageFile> = latch.clone();
        let mut page0 = vec![0u8; page_size.bytes()];
        let id = PageId::new(space_id, 0);
        file.read_at(&mut page0, 0)?;
        decode_stored_page(&mut page0, id, page_size, None)
            .map_err(|e| Error::page(path, id, e))?;
        verify_page(&page0, id, page_size).map_err(|e| page_error(path, id, e))?;
        let header = SpaceHeader::read(&page0, page_size).map_err(|e| page_error(path, id, e))?;
        // The allocator trusts size_in_pages: pages below it must be readable. A file longer
        // than the header says is an extension not yet recorded, and harmless.
        let file_pages = file.len()? / page_size.bytes() as u64;
        if header.size_in_pages == 0 || u64::from(header.size_in_pages) > file_pages {
            return Err(Error::Corrupt {
                file: path.to_owned(),
                what: format!(
                    "space header says {} pages but the file holds {file_pages} whole pages",
                    header.size_in_pages
                ),
            });
        }
        Ok(Self {
            space_id,
            path: path.to_owned(),
            compression: compression.map(|c| space_compression(c, &*file)),
            file,
            page_size,
            size_pages: AtomicU32::new(header.size_in_pages),
            durable_pages: AtomicU32::new(0),
            length: Mutex::new(()),
            latch,
            zip: None,
        })
    }

    /// The same tablespace keeping its index pages in blocks of `block` (row compression).
    #[must_use]
    pub(crate) fn with_row_compression(mut self, block: Option<BlockSize>) -> Self {
        self.zip = block.map(|b| (b, Arc::new(CompressionStats::new())));
        self
    }

    /// The size of the blocks its index pages are kept in, `None` for plain pages.
    pub(crate) fn zip_block_bytes(&self) -> Option<usize> {
        self.zip.as_ref().map(|(b, _)| b.bytes())
    }

    /// The table's row-compression counters, if its rows are compressed.
    pub(crate) fn row_stats(&self) -> Option<&Arc<CompressionStats>> {
        self.zip.as_ref().map(|(_, stats)| stats)
    }

    pub(crate) fn page_size(&self) -> PageSize {
        self.page_size
    }

    pub(crate) fn space_id(&self) -> SpaceId {
        self.space_id
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file(&self) -> &Arc<dyn PageFile> {
        &self.file
    }

    /// How its pages are compressed when written (`None`: they are written plain).
    pub(crate) fn compression(&self) -> Option<SpaceCompression> {
        self.compression
    }

    /// The bytes its pages take as pages (its size in pages × the page size): what the file
    /// would hold without compression.
    pub(crate) fn logical_bytes(&self) -> u64 {
        u64::from(self.size_pages()) * self.page_size.bytes() as u64
    }

    pub(crate) fn size_pages(&self) -> u32 {
        self.size_pages.load(Ordering::Acquire)
    }

    /// Extends the file to `pages` pages (file growth happens an extent at a time), without
    /// syncing: the new length becomes durable with the next sync of the file, and at the
    /// latest before a page 0 that records it is written
    /// ([`before_header_write`](Self::before_header_write)). So the page 0 on disk never
    /// claims more pages than the file durably holds, and the open path's check that it does
    /// not stays strict. Until then a power cut may take the growth back; recovery reads a
    /// page past the end as never written, and every page there that is in use was created
    /// after the last checkpoint (a checkpoint syncs the file), so the log rebuilds it from
    /// its INIT_PAGE. Syncing here instead cost a load one `fsync` of the whole file's dirty
    /// data per growth, waited for by the thread that allocated.
    pub(crate) fn grow_to(&self, pages: u32) -> Result<()> {
        let _length = self.length.lock();
        let bytes = u64::from(pages) * self.page_size.bytes() as u64;
        if self.file.len()? < bytes {
            self.file.set_len(bytes)?;
        }
        self.size_pages.fetch_max(pages, Ordering::AcqRel);
        Ok(())
    }

    /// Called before page 0, recording `recorded_pages` pages, is written (its doublewrite
    /// copy included): makes the file hold that many pages durably first, extending it if it
    /// is shorter (after a power cut took back a growth that the log recorded). A sync only
    /// when the size recorded is above what this handle last made durable.
    pub(crate) fn before_header_write(&self, recorded_pages: u32) -> Result<()> {
        if self.durable_pages.load(Ordering::Acquire) >= recorded_pages {
            return Ok(());
        }
        let _length = self.length.lock();
        cover_recorded_size(&*self.file, self.page_size, recorded_pages)?;
        self.durable_pages
            .fetch_max(recorded_pages, Ordering::AcqRel);
        Ok(())
    }

    /// Whether a sync of the file failed (every later one fails too).
    pub(crate) fn sync_has_failed(&self) -> bool {
        self.latch.has_failed()
    }

    /// Reads page `page_no`, decompresses it if it was stored compressed (after checking the
    /// stored bytes' checksum), and verifies it: checksum, LSN, identity, and for index pages
    /// the whole record structure, so that pages in the pool can be trusted.
    ///
    /// With `verified`, an image this process checked whole before (same page, same stored
    /// checksum) skips the structure check, and one checked now is recorded there.
    pub(crate) fn read_page(
        &self,
        page_no: PageNo,
        buf: &mut [u8],
        counters: Option<&CompressionCounters>,
        verified: Option<&VerifiedImages>,
    ) -> Result<()> {
        let id = PageId::new(self.space_id, page_no);
        self.file.read_at(buf, self.offset(page_no))?;
        let row = counters.map(|c| &*c.row);
        if crate::row_compression::decode_slot(buf, id, self.page_size, row)
            .map_err(|e| Error::page(&self.path, id, e))?
        {
            return Ok(());
        }
        self.verify_read(id, buf, counters, verified)
    }

    /// Reads page `page_no` of a row-compressed space: its first `block.len()` bytes, and when
    /// they are a block (an index page kept compressed) the block goes to `block` and the page
    /// it holds, decompressed, to `buf` (`Ok(true)`); otherwise the rest of the slot is read and
    /// `buf` verified as [`read_page`](Self::read_page) does (`Ok(false)`, `block`
    /// unspecified). Only the block's bytes are read for a compressed page.
    pub(crate) fn read_page_with_block(
        &self,
        page_no: PageNo,
        buf: &mut [u8],
        block: &mut [u8],
        counters: Option<&CompressionCounters>,
        verified: Option<&VerifiedImages>,
    ) -> Result<bool> {
        let id = PageId::new(self.space_id, page_no);
        let offset = self.offset(page_no);
        let (head, tail) = buf.split_at_mut(block.len().min(buf.len()));
        self.file.read_at(head, offset)?;
        let row = self.row_stats().map(|s| &**s).or(counters.map(|c| &*c.row));
        let err = |e| Error::page(&self.path, id, e);
        match crate::row_compression::find_block(head, id).map_err(err)? {
            Some(found) if found.len() == block.len() => {
                block.copy_from_slice(found);
                crate::row_compression::decompress_block(block, id, self.page_size, buf, row)
                    .map_err(err)?;
                Ok(true)
            }
            Some(found) => Err(Error::Corrupt {
                file: self.path.clone(),
                what: format!(
                    "page {id} holds a block of {} bytes where the table's blocks have {}",
                    found.len(),
                    block.len()
                ),
            }),
            None => {
                if !tail.is_empty() {
                    self.file.read_at(tail, offset + head.len() as u64)?;
                }
                self.verify_read(id, buf, counters, verified)?;
                Ok(false)
            }
        }
    }

    /// Decodes a page-compressed image and verifies the page read into `buf` (see
    /// [`read_page`](Self::read_page) for `verified`).
    fn verify_read(
        &self,
        id: PageId,
        buf: &mut [u8],
        counters: Option<&CompressionCounters>,
        verified: Option<&VerifiedImages>,
    ) -> Result<()> {
        decode_stored_page(buf, id, self.page_size, counters)
            .map_err(|e| Error::page(&self.path, id, e))?;
        verify_page(buf, id, self.page_size).map_err(|e| page_error(&self.path, id, e))?;
        // The checksum `verify_page` just matched against the bytes.
        let checksum = u32_at(buf, OFF_CHECKSUM).unwrap_or(0);
        if verified.is_some_and(|v| v.contains(id, checksum)) {
            return Ok(());
        }
        let header = FileHeader::read(buf).map_err(|e| page_error(&self.path, id, e))?;
        let checked = match header.page_type {
            PageType::Index => IndexPage::open(&*buf, self.page_size).map(drop),
            PageType::Undo => UndoPage::open(&*buf, self.page_size).map(drop),
            PageType::TrxSys => TrxSysPage::open(&*buf, self.page_size).map(drop),
            _ => Ok(()),
        };
        checked.map_err(|e| page_error(&self.path, id, e))?;
        if let Some(v) = verified {
            v.insert(id, checksum);
        }
        Ok(())
    }

    /// Makes everything written so far durable. Fails, now and from then on, once a sync of
    /// the file failed.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync_data()?;
        Ok(())
    }

    fn offset(&self, page_no: PageNo) -> u64 {
        u64::from(page_no) * self.page_size.bytes() as u64
    }
}

/// Makes `file` hold `pages` pages durably: extends it if it is shorter, then syncs its data
/// and length. What must happen before a page 0 recording `pages` is written (see
/// [`Tablespace::grow_to`]); recovery calls it directly on the files it writes.
pub(crate) fn cover_recorded_size(
    file: &dyn PageFile,
    page_size: PageSize,
    pages: u32,
) -> Result<()> {
    let bytes = u64::from(pages) * page_size.bytes() as u64;
    if file.len()? < bytes {
        file.set_len(bytes)?;
    }
    file.sync_data()?;
    Ok(())
}

/// The size in pages that `page0`, an image of a space's page 0 about to be written, records.
pub(crate) fn recorded_size(
    page0: &[u8],
    page_size: PageSize,
) -> std::result::Result<u32, PageError> {
    SpaceHeader::read(page0, page_size).map(|header| header.size_in_pages)
}

/// A table's compression on `file`: its images are rounded up to the file system's block.
fn space_compression(compression: PageCompression, file: &dyn PageFile) -> SpaceCompression {
    SpaceCompression {
        algorithm: compression.algorithm(),
        block_size: file.block_size(),
    }
}

pub(crate) fn page_error(path: &Path, page: PageId, source: PageError) -> Error {
    Error::page(path, page, source)
}
