//! A [`Batch`]: mtrs read from the log but not applied yet, their payloads back to back in one
//! buffer, and for each apply thread the list of `(page, mtr)` changes of the pages it owns.
//!
//! Why no per-mtr allocation and no hash map of lists: an update mtr is ~190 bytes, and 1 GiB of
//! log is 5.6 million of them. A change is 16 bytes in a flat vector, appended in log order and
//! sorted by page with a stable radix sort at apply (two passes over the page-number bytes that
//! vary, instead of a comparison sort), so each page's mtrs stay in log order.
// InnoDB: recv_sys_t::pages (a map page → list of records); a flat sorted vector instead.

use std::collections::HashMap;
use std::path::PathBuf;

use barracuda_page::index::SLOT_SIZE;
use barracuda_page::{Lsn, PageId, PageSize, SpaceId, FIL_TRAILER_SIZE};
use barracuda_redo::record::{Record, RecordError, RecordReader};
use barracuda_redo::UncheckedMtr;

use crate::error::{Error, Result};

/// One mtr of a batch: its LSN range and where its payload is in [`Batch::log`].
#[derive(Clone, Copy, Debug)]
pub(super) struct BatchMtr {
    pub(super) start_lsn: Lsn,
    pub(super) end_lsn: Lsn,
    at: usize,
    len: usize,
    /// The frame's CRC and CONTINUES flag: the log was read without checking the CRC a second
    /// time, and an apply thread checks it before it uses the mtr ([`BatchMtr::check`]).
    crc: u32,
    continues: bool,
}

impl BatchMtr {
    /// Checks `payload` (this mtr's) against its frame's CRC; an error says the log changed
    /// since the scan at open found the frame valid.
    pub(super) fn check(&self, payload: &[u8]) -> Result<()> {
        if UncheckedMtr::crc_matches(self.start_lsn, payload, self.continues, self.crc) {
            Ok(())
        } else {
            Err(changed_since_scan(self.start_lsn))
        }
    }
}

/// The error for an mtr whose frame the scan at open found valid and a later read did not.
fn changed_since_scan(lsn: Lsn) -> Error {
    Error::Corrupt {
        file: PathBuf::from("redo"),
        what: format!("the frame at LSN {lsn} was valid in the first scan and is not now"),
    }
}

/// A page change: page `key` (see [`page_key`]) is changed by the mtr at index `mtr` of the
/// batch, first near byte `at` of the page (a hint for prefetching, see [`prefetch_hint`]).
/// 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) key: u64,
    pub(super) mtr: u32,
    pub(super) at: u32,
}

impl Change {
    /// Whether `self` and `other` are the same page and mtr.
    fn same(&self, other: &Change) -> bool {
        self.key == other.key && self.mtr == other.mtr
    }

    /// The page changed.
    pub(super) fn page(self) -> PageId {
        PageId::new((self.key >> 32) as SpaceId, self.key as u32)
    }
}

/// Set in [`Change::at`] when it is the offset of an index page's slot (whose value is where
/// the record the change is about lies), not of bytes the change writes.
pub(super) const AT_SLOT: u32 = 1 << 31;

/// Where `record` first touches its page, for [`Change::at`]: the bytes a byte-range record
/// writes; for a record change at slot position `pos` of an index page, the slot (its place
/// is fixed: the directory grows down from the trailer), flagged [`AT_SLOT`]; else 0.
fn prefetch_hint(record: &Record<'_>, page_size: PageSize) -> u32 {
    match *record {
        Record::Write { offset, .. }
        | Record::Memset { offset, .. }
        | Record::Memmove { offset, .. } => offset as u32,
        Record::IndexInsert { pos, .. }
        | Record::IndexReplace { pos, .. }
        | Record::IndexRemove { pos, .. } => {
            let slot = (page_size.bytes() - FIL_TRAILER_SIZE).saturating_sub(SLOT_SIZE * (pos + 1));
            slot as u32 | AT_SLOT
        }
        _ => 0,
    }
}

/// The sort key of `page`: space id, then page number (file order).
fn page_key(page: PageId) -> u64 {
    (u64::from(page.space_id) << 32) | u64::from(page.page_no)
}

/// Which of `parts` apply threads owns `page`. Every change of a page goes to the same thread,
/// so each page's mtrs are applied by one thread in log order. The page number is mixed
/// (Fibonacci hashing) so that a B-tree's consecutive pages do not fall into stripes.
pub(super) fn partition(page: PageId, parts: usize) -> usize {
    let mixed = page_key(page).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (mixed % parts.max(1) as u64) as usize
}

/// The read-only part of a batch the apply threads share: the payloads and the mtrs.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The payloads, back to back.
    log: Vec<u8>,
    mtrs: Vec<BatchMtr>,
}

impl Batch {
    /// Mtr `index` and its payload.
    pub(super) fn mtr(&self, index: u32) -> Option<(BatchMtr, &[u8])> {
        let mtr = *self.mtrs.get(index as usize)?;
        Some((mtr, self.log.get(mtr.at..mtr.at + mtr.len)?))
    }

    /// Where mtr `index`'s payload starts (null past the end), to prefetch it.
    pub(super) fn payload_ptr(&self, index: u32) -> *const u8 {
        self.mtrs
            .get(index as usize)
            .and_then(|mtr| self.log.get(mtr.at))
            .map_or(std::ptr::null(), std::ptr::from_ref)
    }

    /// Whether the batch holds no mtr.
    pub(super) fn is_empty(&self) -> bool {
        self.mtrs.is_empty()
    }

    /// Empties the batch, keeping its buffers for the next.
    fn clear(&mut self) {
        self.log.clear();
        self.mtrs.clear();
    }
}

/// Builds batches: reads mtrs in, decoding each once to learn the pages it changes.
pub(super) struct BatchBuilder<'s> {
    batch: Batch,
    /// One list of changes per apply thread.
    parts: Vec<Vec<Change>>,
    spaces: &'s HashMap<SpaceId, PathBuf>,
    /// The space of the last record and whether `spaces` lists it: consecutive records are
    /// nearly always of one space, so the map is hashed once per space change, not per record.
    last_space: Option<(SpaceId, bool)>,
    page_size: PageSize,
}

impl<'s> BatchBuilder<'s> {
    /// A builder for `parts` apply threads of pages of `page_size`, keeping the records of the
    /// spaces in `spaces` (others belong to dropped tables).
    pub(super) fn new(
        parts: usize,
        page_size: PageSize,
        spaces: &'s HashMap<SpaceId, PathBuf>,
    ) -> Self {
        Self {
            batch: Batch::default(),
            parts: vec![Vec::new(); parts.max(1)],
            spaces,
            last_space: None,
            page_size,
        }
    }

    /// Memory the batch holds, counting each change twice: the apply thread's radix sort needs
    /// a scratch copy of its list.
    pub(super) fn bytes(&self) -> usize {
        let changes: usize = self.parts.iter().map(Vec::len).sum();
        self.batch.log.len()
            + self.batch.mtrs.len() * std::mem::size_of::<BatchMtr>()
            + 2 * changes * std::mem::size_of::<Change>()
    }

    /// Whether no mtr has been added since the last [`take`](Self::take).
    pub(super) fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Adds `mtr`, noting the pages it changes (records of spaces not listed, and OPTION
    /// records, change nothing recovery writes).
    ///
    /// Its frame's CRC is checked here only when some record is left out or the records do
    /// not decode; otherwise each apply thread checks it before using it. Either way no byte
    /// of an mtr takes effect unchecked — not even by being skipped (a damaged byte could make
    /// a change look like an OPTION record or like one for a dropped table).
    pub(super) fn add(&mut self, mtr: &UncheckedMtr<'_>) -> Result<()> {
        let (start_lsn, end_lsn, payload) = (mtr.start_lsn, mtr.end_lsn, mtr.payload);
        let index = u32::try_from(self.batch.mtrs.len()).map_err(|_| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: "more than 2^32 mtrs in one recovery batch".into(),
        })?;
        let check = || {
            if UncheckedMtr::crc_matches(start_lsn, payload, mtr.continues, mtr.crc) {
                Ok(())
            } else {
                Err(changed_since_scan(start_lsn))
            }
        };
        let parts = self.parts.len();
        let mut skipped = false;
        for record in RecordReader::new(payload, self.page_size) {
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    check()?;
                    return Err(bad_mtr(start_lsn, end_lsn, &e));
                }
            };
            if matches!(record, Record::Option { .. }) {
                skipped = true;
                continue;
            }
            let page = record.page();
            let known = match self.last_space {
                Some((space, known)) if space == page.space_id => known,
                _ => {
                    let known = self.spaces.contains_key(&page.space_id);
                    self.last_space = Some((page.space_id, known));
                    known
                }
            };
            if !known {
                skipped = true;
                continue;
            }
            let at = prefetch_hint(&record, self.page_size);
            let change = Change {
                key: page_key(page),
                mtr: index,
                at,
            };
            let Some(list) = self.parts.get_mut(partition(page, parts)) else {
                continue;
            };
            // Runs of records about one page are the common case: one change per run.
            if list.last().is_none_or(|last| !last.same(&change)) {
                list.push(change);
            }
        }
        if skipped {
            check()?;
        }
        self.batch.mtrs.push(BatchMtr {
            start_lsn,
            end_lsn,
            at: self.batch.log.len(),
            len: payload.len(),
            crc: mtr.crc,
            continues: mtr.continues,
        });
        self.batch.log.extend_from_slice(payload);
        Ok(())
    }

    /// Hands over the batch and each apply thread's changes, leaving the builder empty (and
    /// without buffers until [`reuse`](Self::reuse) gives it some back).
    pub(super) fn take(&mut self) -> (Batch, Vec<Vec<Change>>) {
        let batch = std::mem::take(&mut self.batch);
        let parts = self.parts.iter_mut().map(std::mem::take).collect();
        (batch, parts)
    }

    /// Gives the builder the buffers of `done`, a batch no thread uses any more, if nothing
    /// has been added since the last [`take`](Self::take).
    pub(super) fn reuse(&mut self, mut done: Batch) {
        if self.batch.is_empty() {
            done.clear();
            self.batch = done;
        }
    }
}

/// Sorts `changes` by page, keeping log order within a page (a stable LSD radix sort on the
/// key's bytes that are not the same in every change), and removes duplicates. `scratch` is
/// reused between calls.
pub(super) fn sort_changes(changes: &mut Vec<Change>, scratch: &mut Vec<Change>) {
    let (mut or, mut and) = (0u64, u64::MAX);
    for c in changes.iter() {
        or |= c.key;
        and &= c.key;
    }
    let varying = or ^ and;
    let digit = |key: u64, shift: u32| ((key >> shift) & 0xFF) as usize;
    for shift in (0..64).step_by(8) {
        if digit(varying, shift) == 0 {
            continue;
        }
        let mut counts = [0usize; 256];
        for c in changes.iter() {
            if let Some(count) = counts.get_mut(digit(c.key, shift)) {
                *count += 1;
            }
        }
        let mut sum = 0;
        for count in &mut counts {
            let n = *count;
            *count = sum;
            sum += n;
        }
        scratch.clear();
        scratch.resize(changes.len(), Change::default());
        for c in changes.iter() {
            if let Some(at) = counts.get_mut(digit(c.key, shift)) {
                if let Some(slot) = scratch.get_mut(*at) {
                    *slot = *c;
                }
                *at += 1;
            }
        }
        std::mem::swap(changes, scratch);
    }
    changes.dedup_by(|a, b| a.same(b));
}

/// An mtr that the log's CRC accepted but whose records do not decode or apply: the log was
/// written by a broken writer (or crafted), and recovery must stop rather than guess.
pub(super) fn bad_mtr(start_lsn: Lsn, end_lsn: Lsn, e: &RecordError) -> Error {
    Error::Corrupt {
        file: PathBuf::from("redo"),
        what: format!("mtr at LSN {start_lsn}..{end_lsn}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(space: u32, page_no: u32, mtr: u32) -> Change {
        Change {
            key: page_key(PageId::new(space, page_no)),
            mtr,
            at: mtr % 7,
        }
    }

    /// The radix sort orders by page like a stable comparison sort, keeps each page's mtrs in
    /// log order whatever bytes of the key vary, and drops duplicates.
    #[test]
    fn radix_sort_is_a_stable_sort_by_page() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for spread in [1u64, 300, 70_000, 1 << 31] {
            let mut changes: Vec<Change> = (0..5_000u32)
                .map(|mtr| {
                    let space = (next() % 3) as u32;
                    let page_no = (next() % spread) as u32;
                    change(space, page_no, mtr / 2)
                })
                .collect();
            let mut expected = changes.clone();
            expected.sort_by_key(|c| c.key);
            expected.dedup_by(|a, b| a.same(b));
            let mut scratch = Vec::new();
            sort_changes(&mut changes, &mut scratch);
            assert_eq!(changes, expected, "page spread {spread}");
        }
    }

    /// A page always goes to the same thread, and pages spread over every thread.
    #[test]
    fn partition_is_a_function_of_the_page_and_uses_every_part() {
        for parts in 1..=4 {
            let mut used = vec![0usize; parts];
            for page_no in 0..1_000 {
                let page = PageId::new(7, page_no);
                let p = partition(page, parts);
                assert_eq!(p, partition(page, parts));
                if let Some(n) = used.get_mut(p) {
                    *n += 1;
                }
            }
            assert!(
                used.iter().all(|&n| n > 1_000 / parts / 2),
                "{parts} parts: {used:?}"
            );
        }
    }
}
