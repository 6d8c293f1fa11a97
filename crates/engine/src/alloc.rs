//! Page allocation inside tablespaces: the allocation bitmaps of page 0 (and of the further
//! bitmap pages every `4 * page_size` pages), changed through the buffer pool in mini-transactions.

use std::sync::Arc;

use barracuda_btree::{BTreeError, IndexChange, Mtr, PageAllocator};
use barracuda_buffer_pool::{BufferPool, ExclusiveGuard, PoolError, StoreError};
use barracuda_page::{
    bit_index, bitmap_byte_offset, bitmap_page_for, pages_per_bitmap,
    space::{format_bitmap_page, SPACE_COUNTERS},
    AllocationBitmap, PageId, PageNo, PageSize, SpaceHeader, SpaceId,
};

use crate::redo_sink::RedoSink;
use crate::store::SpaceRegistry;

/// Allocates pages from the bitmaps of each tablespace, growing files by whole extents.
pub(crate) struct SpaceAllocator {
    pool: Arc<BufferPool>,
    spaces: Arc<SpaceRegistry>,
    log: Arc<RedoSink>,
}

fn alloc_err(space: SpaceId, what: impl std::fmt::Display) -> BTreeError {
    BTreeError::Allocation {
        space,
        what: what.to_string(),
    }
}

impl SpaceAllocator {
    pub(crate) fn new(
        pool: Arc<BufferPool>,
        spaces: Arc<SpaceRegistry>,
        log: Arc<RedoSink>,
    ) -> Self {
        Self { pool, spaces, log }
    }
}

impl PageAllocator for SpaceAllocator {
    fn allocate(&self, space: SpaceId, near: Option<PageNo>) -> Result<PageNo, BTreeError> {
        let tablespace = self
            .spaces
            .get(space)
            .ok_or_else(|| alloc_err(space, "tablespace is not open"))?;
        let page_size = self.pool.page_size();
        let per_bitmap = pages_per_bitmap(page_size);
        let mut mtr = Mtr::new(self.log.as_ref());
        // Page 0 is latched first and for the whole allocation: it serialises allocations of
        // the space, and no tree latch is ever requested while it is held.
        let (mut header_guard, mut header) = self.latch_space_header(space)?;

        // Candidates: right after `near` (sequential pages for sequential keys and chains), then
        // from the free hint upwards.
        let mut found = None;
        if let Some(near) = near.and_then(|n| n.checked_add(1)) {
            if near < header.size_in_pages && bitmap_page_for(near, page_size) == 0 {
                let bitmap =
                    AllocationBitmap::open(&header_guard[..], page_size).map_err(|source| {
                        BTreeError::Page {
                            page: PageId::new(space, 0),
                            source,
                        }
                    })?;
                if !bitmap.is_used(bit_index(near, page_size)) {
                    found = Some(near);
                }
            }
        }
        let mut other_bitmaps = Vec::new();
        if found.is_none() {
            let mut region_start =
                bitmap_page_for(header.free_hint.min(header.size_in_pages), page_size);
            while found.is_none() && region_start < header.size_in_pages {
                let from = header
                    .free_hint
                    .saturating_sub(region_start)
                    .min(per_bitmap);
                let limit = (header.size_in_pages - region_start).min(per_bitmap);
                let candidate = if region_start == 0 {
                    let bitmap =
                        AllocationBitmap::open(&header_guard[..], page_size).map_err(|source| {
                            BTreeError::Page {
                                page: PageId::new(space, 0),
                                source,
                            }
                        })?;
                    bitmap.find_free(from)
                } else {
                    let id = PageId::new(space, region_start);
                    let guard = self.pool.get_exclusive(id)?;
                    let bit = AllocationBitmap::open(&guard[..], page_size)
                        .map_err(|source| BTreeError::Page { page: id, source })?
                        .find_free(from);
                    other_bitmaps.push(guard);
                    bit
                };
                found = candidate
                    .filter(|&bit| bit < limit)
                    .map(|bit| region_start + bit);
                // A space header claiming nearly 2^32 pages must end the scan, not wrap it.
                let Some(next) = region_start.checked_add(per_bitmap) else {
                    break;
                };
                region_start = next;
            }
        }
        let page_no = if let Some(page_no) = found {
            page_no
        } else {
            {
                // Grow (see `growth_pages`); bitmap pages that the new range starts are
                // formatted now.
                let old_size = header.size_in_pages;
                let new_size = old_size
                    .checked_add(growth_pages(old_size, page_size))
                    .or_else(|| old_size.checked_add(page_size.pages_per_extent()))
                    .ok_or_else(|| alloc_err(space, "tablespace is at its maximum size"))?;
                let mut first_free = old_size;
                let mut region = Some(bitmap_page_for(old_size, page_size));
                if region.is_some_and(|r| r < old_size) {
                    region = region.and_then(|r| r.checked_add(per_bitmap));
                }
                // Everything that can fail — frames for the new bitmap pages, the latch of the
                // bitmap that will take the new page's bit, the file growth — comes before the
                // first change: an mtr abandoned after a change poisons the pool.
                let mut new_bitmaps = Vec::new();
                while let Some(region_no) = region.filter(|&r| r < new_size) {
                    new_bitmaps.push((region_no, self.pool.create(PageId::new(space, region_no))?));
                    if first_free == region_no {
                        first_free += 1;
                    }
                    region = region_no.checked_add(per_bitmap);
                }
                let first_free_bitmap = bitmap_page_for(first_free, page_size);
                if first_free_bitmap != 0
                    && first_free_bitmap < old_size
                    && !other_bitmaps
                        .iter()
                        .any(|g| g.page_id().page_no == first_free_bitmap)
                {
                    other_bitmaps.push(
                        self.pool
                            .get_exclusive(PageId::new(space, first_free_bitmap))?,
                    );
                }
                // A failed growth is the page store failing (ENOSPC, EIO): it travels as one, so
                // the caller sees the I/O error's kind and file, not a string.
                tablespace.grow_to(new_size).map_err(|e| {
                    BTreeError::Pool(PoolError::Store(StoreError::new(
                        PageId::new(space, old_size),
                        e,
                    )))
                })?;
                for (region_no, mut guard) in new_bitmaps {
                    format_bitmap_page(&mut guard, page_size, space, region_no).map_err(
                        |source| BTreeError::Page {
                            page: guard.page_id(),
                            source,
                        },
                    )?;
                    // Kept latched beside the others: `set_bit` below may need it.
                    other_bitmaps.push(guard);
                }
                header.size_in_pages = new_size;
                first_free
            }
        };
        self.set_bit(
            &mut mtr,
            &mut header_guard,
            &mut other_bitmaps,
            space,
            page_no,
            true,
        )?;
        header.free_hint = page_no.saturating_add(1);
        write_counters(&mut mtr, &mut header_guard, &header)?;
        self.log.page_allocated(PageId::new(space, page_no));
        mtr.changed(header_guard);
        for guard in other_bitmaps {
            mtr.changed(guard);
        }
        mtr.commit()?;
        Ok(page_no)
    }

    fn free(&self, page: PageId) -> Result<(), BTreeError> {
        let space = page.space_id;
        let page_size = self.pool.page_size();
        let mut mtr = Mtr::new(self.log.as_ref());
        let (mut header_guard, mut header) = self.latch_space_header(space)?;
        if page.page_no == 0
            || page.page_no >= header.size_in_pages
            || bit_index(page.page_no, page_size) == 0
        {
            return Err(alloc_err(
                space,
                format!("page {} cannot be freed", page.page_no),
            ));
        }
        let mut others = Vec::new();
        self.set_bit(
            &mut mtr,
            &mut header_guard,
            &mut others,
            space,
            page.page_no,
            false,
        )?;
        header.free_hint = header.free_hint.min(page.page_no);
        write_counters(&mut mtr, &mut header_guard, &header)?;
        self.log.page_freed(page);
        mtr.changed(header_guard);
        for guard in others {
            mtr.changed(guard);
        }
        mtr.commit()?;
        Ok(())
    }

    fn free_pages(&self, pages: &[PageId]) -> Result<(), BTreeError> {
        let page_size = self.pool.page_size();
        let mut rest = pages;
        while let Some(first) = rest.first() {
            // A run of pages of one space whose bits lie on at most BITMAPS_PER_FREE_MTR
            // bitmap pages: one mtr, a bounded number of latched frames.
            let mut bitmaps: Vec<PageNo> = Vec::new();
            let run_len = rest
                .iter()
                .take_while(|page| {
                    if page.space_id != first.space_id {
                        return false;
                    }
                    let region = bitmap_page_for(page.page_no, page_size);
                    if bitmaps.contains(&region) {
                        return true;
                    }
                    if bitmaps.len() == BITMAPS_PER_FREE_MTR {
                        return false;
                    }
                    bitmaps.push(region);
                    true
                })
                .count();
            let (run, after) = rest.split_at(run_len);
            self.free_run(first.space_id, run)?;
            rest = after;
        }
        Ok(())
    }
}

/// Bitmap pages one mtr of [`SpaceAllocator::free_pages`] latches at most (besides page 0).
const BITMAPS_PER_FREE_MTR: usize = 4;

impl SpaceAllocator {
    /// Frees `pages` of `space` in one mtr, every one checked (in range, not a bitmap page,
    /// listed once, in use) before the first bit changes: a refused run leaves every page
    /// untouched.
    fn free_run(&self, space: SpaceId, pages: &[PageId]) -> Result<(), BTreeError> {
        let page_size = self.pool.page_size();
        let mut mtr = Mtr::new(self.log.as_ref());
        let (mut header_guard, mut header) = self.latch_space_header(space)?;
        let mut others: Vec<ExclusiveGuard<'_>> = Vec::new();
        let mut seen = std::collections::HashSet::with_capacity(pages.len());
        for page in pages {
            let page_no = page.page_no;
            if page_no == 0
                || page_no >= header.size_in_pages
                || bit_index(page_no, page_size) == 0
                || !seen.insert(page_no)
            {
                return Err(alloc_err(space, format!("page {page_no} cannot be freed")));
            }
            let region = bitmap_page_for(page_no, page_size);
            if region != 0 && !others.iter().any(|g| g.page_id().page_no == region) {
                others.push(self.pool.get_exclusive(PageId::new(space, region))?);
            }
            let bitmap_page = if region == 0 {
                &header_guard
            } else {
                others
                    .iter()
                    .find(|g| g.page_id().page_no == region)
                    .ok_or_else(|| alloc_err(space, "bitmap page latched but not found"))?
            };
            let in_use = AllocationBitmap::open(&bitmap_page[..], page_size)
                .map_err(|source| BTreeError::Page {
                    page: PageId::new(space, region),
                    source,
                })?
                .is_used(bit_index(page_no, page_size));
            if !in_use {
                return Err(alloc_err(space, format!("page {page_no} is already free")));
            }
        }
        for page in pages {
            self.set_bit(
                &mut mtr,
                &mut header_guard,
                &mut others,
                space,
                page.page_no,
                false,
            )?;
            header.free_hint = header.free_hint.min(page.page_no);
            self.log.page_freed(*page);
        }
        write_counters(&mut mtr, &mut header_guard, &header)?;
        mtr.changed(header_guard);
        for guard in others {
            mtr.changed(guard);
        }
        mtr.commit()?;
        Ok(())
    }

    /// The pages of `space` its bitmaps mark in use, besides page 0, the bitmap pages and
    /// `keep`: for a tree that is its root alone (an empty table), pages nothing reaches.
    pub(crate) fn used_pages_besides(
        &self,
        space: SpaceId,
        keep: PageNo,
    ) -> Result<Vec<PageId>, BTreeError> {
        let page_size = self.pool.page_size();
        let per_bitmap = pages_per_bitmap(page_size);
        let size = {
            let id = PageId::new(space, 0);
            let guard = self.pool.get_shared(id)?;
            SpaceHeader::read(&guard, page_size)
                .map_err(|source| BTreeError::Page { page: id, source })?
                .size_in_pages
        };
        let mut used = Vec::new();
        let mut region: PageNo = 0;
        while region < size {
            let id = PageId::new(space, region);
            let guard = self.pool.get_shared(id)?;
            let bitmap = AllocationBitmap::open(&guard[..], page_size)
                .map_err(|source| BTreeError::Page { page: id, source })?;
            for page_no in region..region.saturating_add(per_bitmap).min(size) {
                if page_no != region
                    && page_no != keep
                    && bitmap.is_used(bit_index(page_no, page_size))
                {
                    used.push(PageId::new(space, page_no));
                }
            }
            let Some(next) = region.checked_add(per_bitmap) else {
                break;
            };
            region = next;
        }
        Ok(used)
    }

    /// Latches page 0 of `space` exclusively and decodes its space header.
    fn latch_space_header(
        &self,
        space: SpaceId,
    ) -> Result<(ExclusiveGuard<'_>, SpaceHeader), BTreeError> {
        let id = PageId::new(space, 0);
        let guard = self.pool.get_exclusive(id)?;
        let header = SpaceHeader::read(&guard, self.pool.page_size())
            .map_err(|source| BTreeError::Page { page: id, source })?;
        Ok((guard, header))
    }

    /// Sets the bit of `page_no` in the bitmap that covers it (page 0's or a further one,
    /// latched into `others` if not already), described to `mtr` as a one-byte write: a
    /// diff would copy and compare the whole page for it, on every page a split allocates.
    fn set_bit<'a>(
        &'a self,
        mtr: &mut Mtr<'_>,
        header_guard: &mut ExclusiveGuard<'a>,
        others: &mut Vec<ExclusiveGuard<'a>>,
        space: SpaceId,
        page_no: PageNo,
        used: bool,
    ) -> Result<(), BTreeError> {
        let page_size = self.pool.page_size();
        let region = bitmap_page_for(page_no, page_size);
        let bit = bit_index(page_no, page_size);
        let bitmap_id = PageId::new(space, region);
        let bitmap_err = |source| BTreeError::Page {
            page: bitmap_id,
            source,
        };
        if region != 0 && !others.iter().any(|g| g.page_id() == bitmap_id) {
            others.push(self.pool.get_exclusive(bitmap_id)?);
        }
        let guard = if region == 0 {
            header_guard
        } else {
            others
                .iter_mut()
                .find(|g| g.page_id() == bitmap_id)
                .ok_or_else(|| alloc_err(space, "bitmap page latched but not found"))?
        };
        // Checked on a shared view: a refusal must leave the page untouched (see
        // `ExclusiveGuard` on why an untouched page matters).
        let is_used = AllocationBitmap::open(&guard[..], page_size)
            .map_err(bitmap_err)?
            .is_used(bit);
        if is_used == used {
            return Err(alloc_err(
                space,
                format!(
                    "page {page_no} is already {}",
                    if used { "in use" } else { "free" }
                ),
            ));
        }
        AllocationBitmap::open(guard.described_change_mut(), page_size)
            .and_then(|mut bitmap| bitmap.set_used(bit, used))
            .map_err(bitmap_err)?;
        let offset = bitmap_byte_offset(bit);
        let bytes = guard.get(offset..offset + 1).unwrap_or_default();
        mtr.describe(guard, IndexChange::Written { offset, bytes })
    }
}

/// Writes `header`'s size and free-page hint into page 0, described to `mtr` as the write
/// of those few bytes (the rest of the header never changes after the space is created).
fn write_counters(
    mtr: &mut Mtr<'_>,
    guard: &mut ExclusiveGuard<'_>,
    header: &SpaceHeader,
) -> Result<(), BTreeError> {
    header.write_counters(guard.described_change_mut());
    let bytes = guard.get(SPACE_COUNTERS).unwrap_or_default();
    mtr.describe(
        guard,
        IndexChange::Written {
            offset: SPACE_COUNTERS.start,
            bytes,
        },
    )
}

/// Pages to add when a tablespace of `size` pages is full: an eighth of its size in whole
/// extents, at least one extent and at most 64 MiB: each growth is a `set_len`, and the page 0
/// write that follows it waits for the file's sync (`Tablespace::before_header_write`). InnoDB:
/// `fsp_try_extend_data_file` grows by whole extents and, past 32 MiB, by
/// `innodb_autoextend_increment` (64 MiB).
fn growth_pages(size: u32, page_size: PageSize) -> u32 {
    let extent = page_size.pages_per_extent();
    let most = u32::try_from((64usize << 20) / page_size.bytes()).unwrap_or(u32::MAX);
    (size / 8 / extent * extent).clamp(extent, most)
}

#[cfg(test)]
mod tests {
    use super::{growth_pages, SpaceAllocator};
    use barracuda_btree::PageAllocator;
    use barracuda_page::{PageId, PageSize};

    /// A run of frees is checked whole before a bit changes: a page listed twice, a free page
    /// or a bitmap page refuses the run and every page listed stays in use.
    #[test]
    fn a_refused_free_run_changes_no_bit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = crate::Engine::open(
            tmp.path(),
            crate::EngineOptions::default()
                .page_size(PageSize::K4)
                .background_purge(false),
        )
        .expect("open");
        let table = db
            .create_table("t", crate::TableOptions::default())
            .expect("create");
        let inner = &db.inner;
        let space = inner.tables.read().get("t").expect("table t").tree.space();
        let alloc =
            SpaceAllocator::new(inner.pool.clone(), inner.spaces.clone(), inner.log.clone());
        let a = alloc.allocate(space, None).expect("allocate");
        let b = alloc.allocate(space, Some(a)).expect("allocate");
        let (a, b) = (PageId::new(space, a), PageId::new(space, b));
        assert!(alloc.free_pages(&[a, b, a]).is_err(), "a listed twice");
        assert!(
            alloc.free_pages(&[a, PageId::new(space, 0)]).is_err(),
            "page 0"
        );
        alloc.free_pages(&[b, a]).expect("both were still in use");
        assert!(alloc.free_pages(&[a]).is_err(), "already free");
        drop(table);
    }

    #[test]
    fn a_tablespace_grows_by_an_eighth_in_whole_extents_between_one_extent_and_64_mib() {
        let p = PageSize::K16;
        assert_eq!(growth_pages(0, p), 64, "one extent at least");
        assert_eq!(growth_pages(1000, p), 64);
        assert_eq!(growth_pages(64 * 8 * 3, p), 64 * 3, "an eighth, in extents");
        assert_eq!(growth_pages(64 * 8 * 3 + 500, p), 64 * 3);
        assert_eq!(
            growth_pages(u32::MAX, p),
            4096,
            "64 MiB of 16 KiB pages at most"
        );
        assert_eq!(growth_pages(100, PageSize::K4), 256);
        assert_eq!(growth_pages(u32::MAX, PageSize::K64), 1024);
    }
}
