//! Test doubles for code that builds trees without a tablespace (tests, doc examples, benches).

use std::collections::HashMap;

use parking_lot::Mutex;

use barracuda_page::{PageId, PageNo, SpaceId};

use crate::alloc::PageAllocator;
use crate::error::{BTreeError, Result};

/// A page allocator that hands out page numbers from 1 upwards per space and reuses freed ones.
/// It keeps no on-disk state: for tests over an in-memory page store.
#[derive(Debug, Default)]
pub struct MemAllocator {
    spaces: Mutex<HashMap<SpaceId, SpaceState>>,
}

#[derive(Debug, Default)]
struct SpaceState {
    next: PageNo,
    free: Vec<PageNo>,
    allocated: u64,
}

impl MemAllocator {
    /// An allocator with no pages handed out.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pages of `space` currently allocated (handed out and not freed).
    pub fn allocated_pages(&self, space: SpaceId) -> u64 {
        self.spaces.lock().get(&space).map_or(0, |s| s.allocated)
    }
}

impl PageAllocator for MemAllocator {
    fn allocate(&self, space: SpaceId, _near: Option<PageNo>) -> Result<PageNo> {
        let mut spaces = self.spaces.lock();
        let state = spaces.entry(space).or_default();
        state.allocated += 1;
        if let Some(page) = state.free.pop() {
            return Ok(page);
        }
        state.next += 1;
        Ok(state.next)
    }

    fn free(&self, page: PageId) -> Result<()> {
        let mut spaces = self.spaces.lock();
        let state = spaces.entry(page.space_id).or_default();
        if page.page_no == 0 || page.page_no > state.next || state.free.contains(&page.page_no) {
            return Err(BTreeError::Allocation {
                space: page.space_id,
                what: format!("free of page {} that is not allocated", page.page_no),
            });
        }
        state.allocated -= 1;
        state.free.push(page.page_no);
        Ok(())
    }
}

/// An in-memory page store for trees with row compression: pages of the spaces given blocks
/// ([`ZipMemStore::new`]) are stored as the pool writes them — a compressed block (sealed
/// here, as a tablespace seals it) or a whole page — and a block is read back verified and
/// decompressed, as a tablespace reads one. Other pages go to an inner
/// [`MemStore`](barracuda_buffer_pool::testing::MemStore).
pub struct ZipMemStore {
    inner: barracuda_buffer_pool::testing::MemStore,
    page_size: barracuda_page::PageSize,
    zip_spaces: HashMap<SpaceId, usize>,
    blocks: Mutex<HashMap<PageId, Box<[u8]>>>,
    stats: std::sync::Arc<barracuda_row_compression::CompressionStats>,
}

impl std::fmt::Debug for ZipMemStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZipMemStore")
            .field("zip_spaces", &self.zip_spaces)
            .finish_non_exhaustive()
    }
}

impl ZipMemStore {
    /// A store of `page_size` pages whose spaces `zip_spaces` (space, block bytes) keep blocks;
    /// every space it knows has `u32::MAX` pages. Decompressions count in `stats`.
    pub fn new(
        page_size: barracuda_page::PageSize,
        spaces: &[SpaceId],
        zip_spaces: &[(SpaceId, usize)],
        stats: std::sync::Arc<barracuda_row_compression::CompressionStats>,
    ) -> Self {
        let inner = barracuda_buffer_pool::testing::MemStore::new(page_size);
        for &space in spaces.iter().chain(zip_spaces.iter().map(|(s, _)| s)) {
            inner.create_space(space, u32::MAX);
        }
        Self {
            inner,
            page_size,
            zip_spaces: zip_spaces.iter().copied().collect(),
            blocks: Mutex::new(HashMap::new()),
            stats,
        }
    }

    /// Pages stored as blocks now.
    pub fn blocks_stored(&self) -> usize {
        self.blocks.lock().len()
    }
}

impl barracuda_buffer_pool::PageStore for ZipMemStore {
    fn read_page(
        &self,
        id: PageId,
        buf: &mut [u8],
    ) -> std::result::Result<(), barracuda_buffer_pool::StoreError> {
        // A page stored as a block is read as the page it holds, as a tablespace reads it: the
        // pool reads without a block slot when it expected a compressed-only copy that another
        // thread took meanwhile.
        let mut block = vec![0; self.zip_spaces.get(&id.space_id).copied().unwrap_or(0)];
        if block.is_empty() {
            return self.inner.read_page(id, buf);
        }
        self.read_page_with_block(id, buf, &mut block).map(|_| ())
    }

    fn write_pages(
        &self,
        pages: &mut dyn barracuda_buffer_pool::PageImages,
    ) -> std::result::Result<(), barracuda_buffer_pool::StoreError> {
        let mut plain = Vec::new();
        for (id, image) in pages.iter() {
            if self.zip_spaces.contains_key(&id.space_id)
                && barracuda_row_compression::is_compressed_block(image)
            {
                let mut block = image.to_vec();
                barracuda_row_compression::seal_block(&mut block);
                self.blocks.lock().insert(id, block.into());
            } else {
                self.blocks.lock().remove(&id);
                plain.push((id, image));
            }
        }
        let written = self
            .inner
            .write_pages(&mut barracuda_buffer_pool::ImageList::new(&plain));
        drop(plain);
        pages.release();
        written
    }

    fn flush_log_up_to(
        &self,
        lsn: barracuda_page::Lsn,
    ) -> std::result::Result<(), barracuda_buffer_pool::StoreError> {
        self.inner.flush_log_up_to(lsn)
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.inner.space_size_pages(space)
    }

    fn zip_block_bytes(&self, space: SpaceId) -> Option<usize> {
        self.zip_spaces.get(&space).copied()
    }

    fn decompress_block(
        &self,
        id: PageId,
        block: &[u8],
        buf: &mut [u8],
    ) -> std::result::Result<(), barracuda_buffer_pool::StoreError> {
        let err = |e: barracuda_row_compression::RowCompressionError| {
            barracuda_buffer_pool::StoreError::new(id, e)
        };
        let zip = barracuda_row_compression::CompressedPage::open(block, id, self.page_size)
            .map_err(err)?;
        barracuda_row_compression::Compressor::new()
            .decompress(&zip, buf, Some(&self.stats))
            .map_err(err)
    }

    fn read_page_with_block(
        &self,
        id: PageId,
        buf: &mut [u8],
        block: &mut [u8],
    ) -> std::result::Result<bool, barracuda_buffer_pool::StoreError> {
        let stored = self.blocks.lock().get(&id).cloned();
        let Some(stored) = stored else {
            self.inner.read_page(id, buf)?;
            return Ok(false);
        };
        let err = |e: barracuda_row_compression::RowCompressionError| {
            barracuda_buffer_pool::StoreError::new(id, e)
        };
        let zip =
            barracuda_row_compression::CompressedPage::from_block(&stored, id, self.page_size)
                .map_err(err)?;
        barracuda_row_compression::Compressor::new()
            .decompress(&zip, buf, Some(&self.stats))
            .map_err(err)?;
        block.copy_from_slice(&stored);
        Ok(true)
    }
}
