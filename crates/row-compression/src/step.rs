//! One change made to a compressed page the way InnoDB makes it (`btr_cur_optimistic_insert`,
//! `btr_cur_update_alloc_zip`): logged on the block beside the same change to the frame; when
//! the log has no room, the frame with the change recompressed; when that does not fit either,
//! nothing changed and the caller splits the page. The frame and the block never disagree: both
//! change, or neither does.

use barracuda_page::{IndexPage, PageError, PageSize, Record};

use crate::error::{Result, RowCompressionError};
use crate::padding::AdaptivePadding;
use crate::page::CompressedPage;
use crate::stats::CompressionStats;
use crate::{Codec, Compressor};

/// A change to an index page, as the B-tree makes it (the [`IndexPage`] operation of the same
/// name).
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// `record` inserted as record `pos`.
    Insert {
        /// Its position.
        pos: usize,
        /// The record.
        record: Record<'a>,
    },
    /// Record `pos` replaced by `record`.
    Replace {
        /// Its position.
        pos: usize,
        /// The new record.
        record: Record<'a>,
    },
    /// Record `pos` removed.
    Remove {
        /// Its position.
        pos: usize,
    },
    /// Records `at..` removed and the page compacted (what a split leaves of the left page).
    Truncate {
        /// The first record removed.
        at: usize,
    },
    /// `bytes` written at `offset` (a header field: the sibling links).
    Write {
        /// Where.
        offset: usize,
        /// What.
        bytes: &'a [u8],
    },
}

/// How a change reached the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Appended to the modification log (or, for the transaction fields, the trailer).
    Logged,
    /// The log was full: the page with the change was recompressed (an empty log).
    Recompressed,
}

/// What the change and the recompression need.
#[derive(Clone, Copy, Debug)]
pub struct Recompression<'a> {
    /// The table's codec.
    pub codec: Codec,
    /// The index's padding, told whether each recompression fitted.
    pub padding: Option<&'a AdaptivePadding>,
    /// The counters of compressions.
    pub stats: Option<&'a CompressionStats>,
}

impl Compressor {
    /// Makes `change` to `frame` (one index page of `zip`'s page size) and to `zip`, the block
    /// that holds the same page: logged when the log has room, else by recompressing the frame
    /// with the change. Fails, changing neither, with [`RowCompressionError::DoesNotFit`] when
    /// the page with the change does not fit the block (split it), and with
    /// [`RowCompressionError::Page`] when the page refuses the change (no room in the frame, a
    /// position out of range); other errors are the block's or the change's faults.
    pub fn apply<B: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        frame: &mut [u8],
        zip: &mut CompressedPage<B>,
        change: &Change<'_>,
        how: Recompression<'_>,
    ) -> Result<Applied> {
        let ps = zip.page_size();
        let id = zip.page_id();
        let page_err = |source: PageError| RowCompressionError::Page { page: id, source };
        let old = match *change {
            Change::Replace { pos, .. } => {
                let page = IndexPage::open_trusted(&*frame, ps).map_err(page_err)?;
                let mut bytes = Vec::new();
                let record = page.record(pos).map_err(page_err)?;
                record
                    .encode_to(&mut bytes)
                    .map_err(|what| RowCompressionError::bad_change(id, what))?;
                Some(bytes)
            }
            _ => None,
        };
        // The frame first, on a copy: a change the page refuses leaves both as they were.
        let mut changed = frame.to_vec();
        make(&mut changed, ps, change).map_err(page_err)?;
        let logged = match *change {
            Change::Insert { pos, record } => zip.log_insert(pos, &record),
            Change::Replace { pos, record } => {
                let bytes = old.unwrap_or_default();
                let old = Record::decode_exact(&bytes)
                    .map_err(|what| RowCompressionError::bad_change(id, what))?;
                zip.log_replace(pos, &old, &record)
            }
            Change::Remove { pos } => zip.log_remove(pos),
            Change::Truncate { at } => zip.log_truncate(at),
            Change::Write { offset, bytes } => zip.log_write(offset, bytes),
        };
        match logged {
            Ok(()) => {
                frame.copy_from_slice(&changed);
                Ok(Applied::Logged)
            }
            Err(RowCompressionError::LogFull { .. }) => {
                let block = zip.block_size();
                // Compression zeroes the page's unused space; on a copy, so that the frame is
                // exactly the change replayed (what a redo log of the change reproduces).
                let mut canonical = changed.clone();
                let fitted = self.compress_timed(&mut canonical, ps, block, how.codec, how.stats);
                if let Some(padding) = how.padding {
                    padding.record(fitted.is_ok());
                }
                let header = fitted?;
                zip.replace_block(self.last_block(), header);
                frame.copy_from_slice(&changed);
                Ok(Applied::Recompressed)
            }
            Err(e) => Err(e),
        }
    }
}

/// Makes `change` to `page` through [`IndexPage`].
fn make(page: &mut [u8], ps: PageSize, change: &Change<'_>) -> std::result::Result<(), PageError> {
    if let Change::Write { offset, bytes } = *change {
        let end = offset.saturating_add(bytes.len());
        let dst = page.get_mut(offset..end).ok_or(PageError::OutOfRange {
            index: end,
            len: ps.bytes(),
        })?;
        dst.copy_from_slice(bytes);
        return Ok(());
    }
    let mut index = IndexPage::open_trusted(page, ps)?;
    match *change {
        Change::Insert { pos, record } => index.insert(pos, &record),
        Change::Replace { pos, record } => index.replace(pos, &record),
        Change::Remove { pos } => index.remove(pos),
        Change::Truncate { at } => {
            let n = index.len();
            if at > n {
                return Err(PageError::OutOfRange { index: at, len: n });
            }
            index.remove_range(at..n).map(|()| index.compact())
        }
        Change::Write { .. } => Ok(()),
    }
}
