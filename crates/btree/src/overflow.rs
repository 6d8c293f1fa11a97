//! Off-page values: chains of overflow pages (InnoDB: externally stored BLOB columns).

use barracuda_page::{payload_capacity, FileHeader, OverflowPage, PageNo, PageType, FIL_NULL};

use crate::error::{BTreeError, Result};
use crate::tree::BTree;

/// Pages' worth of payload [`read_chain`] allocates before it has read any of the chain.
const READ_BATCH_PAGES: u64 = 64;

/// Pages [`free_chain`] frees together: one call to the allocator, a few mini-transactions.
const FREE_BATCH_PAGES: usize = 256;

/// Writes `value` to a new chain and returns its first page. Each page is written in its own
/// mtr: the chain is unreachable until the leaf record that points to it commits, so a partly
/// written chain is only ever leaked, never seen.
pub(crate) fn write_chain(tree: &BTree, value: &[u8]) -> Result<PageNo> {
    let page_size = tree.ctx.pool.page_size();
    let capacity = payload_capacity(page_size);
    let chunks: Vec<&[u8]> = value.chunks(capacity).collect();
    let mut pages = Vec::with_capacity(chunks.len());
    let mut near = None;
    for _ in &chunks {
        let page = tree.ctx.alloc.allocate(tree.space, near)?;
        near = Some(page);
        pages.push(page);
    }
    for (i, chunk) in chunks.iter().enumerate() {
        let (Some(&page_no), next) = (pages.get(i), pages.get(i + 1).copied()) else {
            continue;
        };
        let id = tree.page_id(page_no);
        let mut guard = tree.ctx.pool.create(id)?;
        guard.fill(0);
        let mut header = FileHeader::new(id, PageType::Overflow);
        // The back link makes a chain walkable from either end (FORMATS.md §6).
        header.prev = i
            .checked_sub(1)
            .and_then(|p| pages.get(p))
            .copied()
            .unwrap_or(FIL_NULL);
        header.write(&mut guard);
        OverflowPage::write(&mut guard, page_size, chunk, next.unwrap_or(FIL_NULL))
            .map_err(|source| BTreeError::Page { page: id, source })?;
        let mut mtr = tree.mtr();
        mtr.changed(guard);
        mtr.commit()?;
    }
    pages
        .first()
        .copied()
        .ok_or_else(|| BTreeError::Allocation {
            space: tree.space,
            what: "an overflow chain needs at least one page".into(),
        })
}

/// Reads a chain of `total_len` bytes starting at `first`, checking every link.
pub(crate) fn read_chain(tree: &BTree, first: PageNo, total_len: u64) -> Result<Vec<u8>> {
    let page_size = tree.ctx.pool.page_size();
    let capacity = payload_capacity(page_size) as u64;
    let max_pages = total_len.div_ceil(capacity).max(1);
    // total_len comes from disk: grow with what the chain really holds rather than trusting it
    // for one allocation (decoding already capped it at MAX_VALUE_LEN).
    let first_batch = total_len.min(capacity * READ_BATCH_PAGES);
    let mut out = Vec::with_capacity(usize::try_from(first_batch).unwrap_or(0));
    let mut page_no = first;
    let mut pages = 0u64;
    while page_no != FIL_NULL {
        pages += 1;
        let id = tree.page_id(page_no);
        if pages > max_pages {
            return Err(BTreeError::corrupt(
                id,
                "overflow chain longer than its value",
            ));
        }
        let guard = tree.ctx.pool.get_shared(id)?;
        let page = OverflowPage::read(&guard, page_size)
            .map_err(|source| BTreeError::Page { page: id, source })?;
        if out.len() as u64 + page.payload.len() as u64 > total_len {
            return Err(BTreeError::corrupt(
                id,
                format!("overflow chain holds more than the {total_len} bytes of its record"),
            ));
        }
        out.extend_from_slice(page.payload);
        page_no = page.next;
    }
    if out.len() as u64 != total_len {
        return Err(BTreeError::corrupt(
            tree.page_id(first),
            format!(
                "overflow chain holds {} bytes, the record says {total_len}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Frees every page of the chain starting at `first`, [`FREE_BATCH_PAGES`] at a time.
///
/// Only the allocation bitmaps change (InnoDB frees BLOB pages the same way): the chain's pages
/// are read, never written, so freeing a value larger than the buffer pool inside one redo
/// commit unit (purge, rollback) holds no frame per page — a page changed inside an open unit
/// cannot be evicted, and a 64 MiB chain in a pool of 64 frames once failed purge with
/// `TransactionTooLarge`. A freed page keeps its stale content until it is allocated again,
/// which formats it afresh.
pub(crate) fn free_chain(tree: &BTree, first: PageNo) -> Result<()> {
    let page_size = tree.ctx.pool.page_size();
    let mut page_no = first;
    let mut walked = 0u64;
    let mut batch = Vec::with_capacity(FREE_BATCH_PAGES);
    while page_no != FIL_NULL {
        let id = tree.page_id(page_no);
        walked += 1;
        // A chain that loops is caught when a page comes round a second time (freeing it
        // again fails); this bounds a walk the bitmaps cannot see, within one batch.
        if walked > u64::from(u32::MAX) {
            return Err(BTreeError::corrupt(id, "overflow chain does not end"));
        }
        let next = {
            let guard = tree.ctx.pool.get_shared(id)?;
            OverflowPage::read(&guard, page_size)
                .map_err(|source| BTreeError::Page { page: id, source })?
                .next
        };
        batch.push(id);
        if batch.len() == FREE_BATCH_PAGES {
            tree.ctx.alloc.free_pages(&batch)?;
            batch.clear();
        }
        page_no = next;
    }
    if !batch.is_empty() {
        tree.ctx.alloc.free_pages(&batch)?;
    }
    Ok(())
}

/// Number of pages in the chain starting at `first` (for `check`).
pub(crate) fn chain_pages(tree: &BTree, first: PageNo, total_len: u64) -> Result<u64> {
    let value = read_chain(tree, first, total_len)?;
    let capacity = payload_capacity(tree.ctx.pool.page_size()) as u64;
    Ok((value.len() as u64).div_ceil(capacity).max(1))
}
