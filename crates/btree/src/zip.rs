//! Row compression in the tree (InnoDB's `ROW_FORMAT=COMPRESSED`): every index page of a
//! compressed tree is kept in the pool as its frame plus a block of `KEY_BLOCK_SIZE` bytes,
//! and the block is what goes to disk.
//!
//! The frame stays the truth the redo log describes; the block follows it:
//! - A record inserted, replaced or removed in a leaf ([`BTree::make_change`]) is made to the
//!   frame and the block together ([`Compressor::apply`]): logged on the block's modification
//!   log, or, when the log is full, the page recompressed. An insert or a growing replace that
//!   the block cannot take even recompressed is refused before anything changes
//!   ([`Placed::DoesNotFit`]) and the caller splits the leaf, as InnoDB does when
//!   `page_zip_compress` fails.
//! - Structure changes (splits, merges, a root raise, sibling links) change the frame alone and
//!   leave the block stale; the mini-transaction recompresses every such page before it
//!   commits ([`sync_pages`]), and gives new pages their block.
//! - A page that does not fit its block after all (a split half of incompressible records) is
//!   kept and written plain — never refused, never lost — and counted as a failed compression;
//!   the next insert into it is refused until a split makes it fit.
//!
//! Recovery replays the frame's redo and the page is recompressed when next changed; the block
//! is a function of the frame, so no compressed image is logged.

use std::cell::RefCell;
use std::sync::Arc;

use barracuda_buffer_pool::{ExclusiveGuard, ZipState};
use barracuda_page::{FileHeader, PageSize, PageType, SpaceId};
use barracuda_row_compression::{
    AdaptivePadding, Applied, BlockSize, Change, Codec, CompressedPage, CompressionStats,
    Compressor, PaddingSettings, Recompression, RowCompressionError,
};

use crate::error::{BTreeError, Result};
use crate::mtr::{IndexChange, Mtr};
use crate::node::{NodeRef, Value};
use crate::tree::BTree;

/// How one tree's pages are compressed: its space, block size and codec, the index's adaptive
/// padding and the counters its compressions update.
#[derive(Debug)]
pub struct ZipIndex {
    space: SpaceId,
    block: BlockSize,
    codec: Codec,
    page_size: PageSize,
    padding: AdaptivePadding,
    stats: Arc<CompressionStats>,
}

impl ZipIndex {
    /// Compression of the index pages of `space` into blocks of `block` with `codec`, counted
    /// in `stats` (shared by every table, per block size: INNODB_CMP).
    pub fn new(
        space: SpaceId,
        block: BlockSize,
        codec: Codec,
        page_size: PageSize,
        stats: Arc<CompressionStats>,
    ) -> Self {
        Self {
            space,
            block,
            codec,
            page_size,
            padding: AdaptivePadding::new(page_size.bytes(), PaddingSettings::default()),
            stats,
        }
    }

    /// The block size.
    pub fn block(&self) -> BlockSize {
        self.block
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The index's adaptive padding (INNODB_CMP_PER_INDEX's padding).
    pub fn padding(&self) -> &AdaptivePadding {
        &self.padding
    }

    /// The longest record an inline value may make: one that fits a block alone even if it
    /// does not compress at all, so that a split always ends with pages that fit.
    pub(crate) fn max_record(&self) -> usize {
        self.block.bytes().saturating_sub(BLOCK_RESERVE)
    }

    /// How a change recompresses; `padded`: its outcome feeds the adaptive padding.
    fn how(&self, padded: bool) -> Recompression<'_> {
        Recompression {
            codec: self.codec,
            padding: padded.then_some(&self.padding),
            stats: Some(&self.stats),
        }
    }

    /// Compresses `frame` (an index page) into `block`; `false` when it does not fit.
    fn compress(&self, frame: &[u8], block: &mut [u8]) -> bool {
        with_compressor(|c, scratch| {
            // Compression zeroes unused space on its input: a copy keeps the frame as it is.
            scratch.clear();
            scratch.extend_from_slice(frame);
            let fitted = c
                .compress_into(
                    scratch,
                    self.page_size,
                    self.codec,
                    block,
                    Some(&self.stats),
                )
                .is_ok();
            self.padding.record(fitted);
            fitted
        })
    }
}

/// What a block needs beside a record that does not compress at all: the page and index
/// headers, one record's trailer entry, the stream's framing and the modification log's end.
const BLOCK_RESERVE: usize = 256;

thread_local! {
    /// One compressor per thread (codec state and buffers are reused), and a page-sized
    /// scratch buffer.
    static COMPRESSOR: RefCell<(Compressor, Vec<u8>)> = RefCell::new((Compressor::new(), Vec::new()));
}

fn with_compressor<R>(f: impl FnOnce(&mut Compressor, &mut Vec<u8>) -> R) -> R {
    COMPRESSOR.with(|cell| {
        let (compressor, scratch) = &mut *cell.borrow_mut();
        f(compressor, scratch)
    })
}

/// How a leaf change went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placed {
    /// Made (to the frame, and to the block when the page has one) and described to the mtr.
    Done,
    /// The page with the change does not fit its block: nothing changed; split.
    DoesNotFit,
}

/// A change [`BTree::make_change`] makes to a leaf or internal node.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NodeChange<'a> {
    /// Insert `key → value` as record `pos`.
    Insert {
        pos: usize,
        key: &'a [u8],
        value: Value<'a>,
        sys: barracuda_page::SysFields,
    },
    /// Replace record `pos` by `key → value`.
    Replace {
        pos: usize,
        key: &'a [u8],
        value: Value<'a>,
        sys: barracuda_page::SysFields,
    },
    /// Remove record `pos`.
    Remove { pos: usize },
}

impl BTree {
    /// Makes `change` to `guard`'s node and describes it to `mtr`. On a compressed tree the
    /// block takes the change too; an insert or a replace the block cannot take is refused with
    /// [`Placed::DoesNotFit`], changing nothing. The frame's own room is the caller's to check
    /// (a change the frame refuses is an error).
    pub(crate) fn make_change(
        &self,
        mtr: &mut Mtr<'_>,
        guard: &mut ExclusiveGuard<'_>,
        change: NodeChange<'_>,
    ) -> Result<Placed> {
        let id = guard.page_id();
        let grows = self.zip.is_some() && self.grows(guard, &change)?;
        // An append (a record after every record of the page: a load in key order) that does
        // not fit just means the page is full, and the split that follows moves nothing: such
        // failures say nothing about the index's compressibility, so appends neither obey nor
        // feed the adaptive padding (InnoDB counts them, and pads pages a sequential load
        // fills: 1.72x instead of 2.01x on the GCIDE load at KEY_BLOCK_SIZE 4).
        let appends = match change {
            NodeChange::Insert { pos, .. } if self.zip.is_some() => {
                pos == NodeRef::open(guard, id, self)?.len()
            }
            _ => false,
        };
        if grows && !appends && self.beyond_padding(guard, &change)? {
            // Adaptive padding: a page filled past `page size − pad` is split rather than
            // recompressed, since at this index's failure rate it would likely not fit.
            return Ok(Placed::DoesNotFit);
        }
        let mut trial: Option<Vec<u8>> = None;
        let (described, record_change) = match change {
            NodeChange::Insert {
                pos,
                key,
                value,
                sys,
            } => {
                let record = value.record(key, sys);
                (
                    IndexChange::Insert { pos, record },
                    Change::Insert { pos, record },
                )
            }
            NodeChange::Replace {
                pos,
                key,
                value,
                sys,
            } => {
                let record = value.record(key, sys);
                (
                    IndexChange::Replace { pos, record },
                    Change::Replace { pos, record },
                )
            }
            NodeChange::Remove { pos } => (IndexChange::Remove { pos }, Change::Remove { pos }),
        };
        if let Some(zip) = self.zip.as_deref() {
            if guard.zip_state() == ZipState::Synced {
                let applied = guard.change_with_zip(|frame, block| {
                    let outcome =
                        CompressedPage::open(block, id, zip.page_size).and_then(|mut page| {
                            with_compressor(|c, _| {
                                c.apply(frame, &mut page, &record_change, zip.how(!appends))
                            })
                        });
                    (outcome.is_ok(), outcome)
                });
                match applied {
                    Some(Ok(Applied::Logged | Applied::Recompressed)) => {
                        mtr.describe(guard, described)?;
                        return Ok(Placed::Done);
                    }
                    Some(Err(RowCompressionError::DoesNotFit { .. })) if grows => {
                        return Ok(Placed::DoesNotFit);
                    }
                    // A shrinking change that does not fit recompressed (rare: a different
                    // byte order compressing worse) is made to the frame alone below; the
                    // commit leaves the page plain if it still does not fit.
                    Some(Err(RowCompressionError::DoesNotFit { .. })) | None => {}
                    Some(Err(e)) => {
                        return Err(BTreeError::corrupt(id, format!("compressed page: {e}")))
                    }
                }
            } else if grows {
                match Self::trial_block(guard, zip, &record_change)? {
                    Some(block) => trial = Some(block),
                    None => return Ok(Placed::DoesNotFit),
                }
            }
        }
        // The frame alone: the same page operation the block's log records.
        make_on_page(
            guard.described_change_mut(),
            self.ctx.pool.page_size(),
            &record_change,
        )
        .map_err(|e| match e {
            barracuda_page::PageError::PageFull { .. } => {
                BTreeError::corrupt(id, "record did not fit after a room check")
            }
            source => BTreeError::Page { page: id, source },
        })?;
        mtr.describe(guard, described)?;
        if let Some(block) = trial {
            // The trial compressed exactly the page the frame now holds: that is its block.
            // No frame to be had for it is no error (the page stays plain).
            if guard.attach_zip(block.len()).is_ok() {
                guard.sync_zip(|_, b| {
                    b.copy_from_slice(&block);
                    true
                });
            }
        }
        Ok(Placed::Done)
    }

    /// Writes `bytes` at `offset` of `guard`'s page (a header field: a sibling link) and
    /// describes it to `mtr`; on a compressed tree with a block in step, through the block's
    /// modification log, so the page need not be recompressed at commit.
    pub(crate) fn write_header(
        &self,
        mtr: &mut Mtr<'_>,
        guard: &mut ExclusiveGuard<'_>,
        offset: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let id = guard.page_id();
        let end = offset + bytes.len();
        if let Some(zip) = self.zip.as_deref() {
            if guard.zip_state() == ZipState::Synced {
                let change = Change::Write { offset, bytes };
                let applied = guard.change_with_zip(|frame, block| {
                    let outcome =
                        CompressedPage::open(block, id, zip.page_size).and_then(|mut page| {
                            with_compressor(|c, _| {
                                c.apply(frame, &mut page, &change, zip.how(false))
                            })
                        });
                    (outcome.is_ok(), outcome.is_ok())
                });
                if applied == Some(true) {
                    let described = IndexChange::Written {
                        offset,
                        bytes: guard.get(offset..end).unwrap_or_default(),
                    };
                    return mtr.describe(guard, described);
                }
            }
        }
        // The frame alone (the block, if any, goes stale and is recompressed at commit).
        let dst = guard
            .described_change_mut()
            .get_mut(offset..end)
            .ok_or_else(|| BTreeError::corrupt(id, "a header write outside the page"))?;
        dst.copy_from_slice(bytes);
        let described = IndexChange::Written {
            offset,
            bytes: guard.get(offset..end).unwrap_or_default(),
        };
        mtr.describe(guard, described)
    }

    /// Whether `change` makes the page's records larger: an insert, or a replace by a longer
    /// record. Only such a change may be refused for want of room in the block; the others
    /// (removals, delete-marks and transaction fields, which MVCC writes in place) always go
    /// through, and at worst leave the page plain.
    fn grows(&self, guard: &ExclusiveGuard<'_>, change: &NodeChange<'_>) -> Result<bool> {
        Ok(match *change {
            NodeChange::Insert { .. } => true,
            NodeChange::Remove { .. } => false,
            NodeChange::Replace {
                pos, key, value, ..
            } => {
                let node = NodeRef::open(guard, guard.page_id(), self)?;
                crate::node::record_size(self.ctx.pool.page_size(), key.len(), value)
                    > node.record_size_at(pos)?
            }
        })
    }

    /// Whether the page with `change` made would hold more than the index's padding lets a
    /// compressed page hold uncompressed ([`AdaptivePadding::fill_limit`]). Only asked with a
    /// pad: without one the block alone decides.
    fn beyond_padding(&self, guard: &ExclusiveGuard<'_>, change: &NodeChange<'_>) -> Result<bool> {
        let Some(zip) = self.zip.as_deref() else {
            return Ok(false);
        };
        if zip.padding.pad() == 0 {
            return Ok(false);
        }
        let ps = self.ctx.pool.page_size();
        let node = NodeRef::open(guard, guard.page_id(), self)?;
        let after = match *change {
            NodeChange::Insert { key, value, .. } => {
                node.used_space() + crate::node::record_size(ps, key.len(), value)
            }
            NodeChange::Replace {
                pos, key, value, ..
            } => (node.used_space() + crate::node::record_size(ps, key.len(), value))
                .saturating_sub(node.record_size_at(pos)?),
            NodeChange::Remove { .. } => return Ok(false),
        };
        Ok(after > zip.padding.fill_limit())
    }

    /// Whether `value` under a key of `key_len` bytes goes off-page: when it does not fit a
    /// page inline, and on a compressed tree when its record would not fit a block alone —
    /// judged on the value compressed, since the block holds records compressed: dictionary
    /// text of a kilobyte stays in a 1 KiB block's page, random bytes of the same length go
    /// to an overflow chain. (InnoDB judges the record uncompressed, `page_zip_rec_needs_ext`,
    /// and stores what it moves off-page in compressed BLOB pages instead.)
    pub(crate) fn needs_overflow(&self, key_len: usize, value: &[u8]) -> bool {
        let page_limit = barracuda_page::max_inline_value_len(self.ctx.pool.page_size(), key_len);
        if value.len() > page_limit {
            return true;
        }
        let Some(zip) = self.zip.as_deref() else {
            return false;
        };
        // The record's size less the value's own bytes is its fixed overhead.
        let overhead =
            crate::node::record_size(self.ctx.pool.page_size(), key_len, Value::Inline(&[]));
        let room = zip.max_record().saturating_sub(overhead);
        if value.len() <= room {
            return false;
        }
        !with_compressor(|c, _| c.compresses_within(zip.codec, value, room))
    }

    /// The longest value [`needs_overflow`](Self::needs_overflow) keeps inline whatever its
    /// bytes (for error messages about values that must be inline).
    pub(crate) fn max_inline_value(&self, key_len: usize) -> usize {
        barracuda_page::max_inline_value_len(self.ctx.pool.page_size(), key_len)
    }

    /// `guard`'s page (without a synced block) with `change` made, compressed into a block of
    /// the tree's size — or `None` when it does not fit.
    fn trial_block(
        guard: &ExclusiveGuard<'_>,
        zip: &ZipIndex,
        change: &Change<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let id = guard.page_id();
        let mut page = guard.to_vec();
        make_on_page(&mut page, zip.page_size, change)
            .map_err(|e| BTreeError::corrupt(id, format!("trial change: {e}")))?;
        let mut block = vec![0u8; zip.block.bytes()];
        Ok(zip.compress(&page, &mut block).then_some(block))
    }
}

/// Makes `change` to an index page (a frame, or a copy for a trial).
fn make_on_page(
    page: &mut [u8],
    ps: PageSize,
    change: &Change<'_>,
) -> std::result::Result<(), barracuda_page::PageError> {
    let mut index = barracuda_page::IndexPage::open_trusted(page, ps)?;
    match *change {
        Change::Insert { pos, record } => index.insert(pos, &record),
        Change::Replace { pos, record } => index.replace(pos, &record),
        Change::Remove { pos } => index.remove(pos),
        Change::Truncate { .. } | Change::Write { .. } => Ok(()),
    }
}

/// Brings the blocks of the pages an mtr changed in step before it commits: for each page of
/// `zip`'s space that is an index page, a stale block is recompressed and a page the mtr
/// created is given one; a page that does not fit is left plain (its block freed), and a page
/// that is no index page any more (freed, or an overflow page) has none.
pub(crate) fn sync_pages(zip: &ZipIndex, pages: &mut [ExclusiveGuard<'_>]) {
    for guard in pages.iter_mut() {
        if guard.page_id().space_id != zip.space {
            continue;
        }
        let is_index = FileHeader::read(guard).is_ok_and(|h| h.page_type == PageType::Index);
        let state = guard.zip_state();
        if !is_index {
            if state != ZipState::None {
                guard.detach_zip();
            }
            continue;
        }
        match state {
            ZipState::Stale => {
                guard.sync_zip(|frame, block| zip.compress(frame, block));
            }
            // A page created by this mtr gets its block. A page kept plain (it did not fit)
            // is not tried again at every commit: the next change that grows it tries
            // (`make_change`), and gives it the block when it fits.
            ZipState::None if guard.is_created() => {
                // No frame to be had for a block is no error: the page is written plain.
                if guard.attach_zip(zip.block.bytes()).is_ok() {
                    guard.sync_zip(|frame, block| zip.compress(frame, block));
                }
            }
            ZipState::Synced | ZipState::None => {}
        }
    }
}
