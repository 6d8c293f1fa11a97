//! Versioned changes made in place in one mini-transaction with the caller's own log record:
//! the fast path of a transaction's row write, whose undo record and row change must reach the
//! redo log together.

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::SysFields;

use crate::error::BTreeError;
use crate::error::Result;
use crate::insert::{LeafFit, LeafRecord};
use crate::mtr::Mtr;
use crate::node::{self, NodeRef, Value};
use crate::tree::BTree;
use crate::versioned::{StoredRecord, StoredValue};
use crate::zip::{NodeChange, Placed};

/// A change [`BTree::change_in_place`] makes to the record of its key.
#[derive(Clone, Copy, Debug)]
pub enum InPlace<'a> {
    /// Store this value (inline: a value that would go off-page takes the other path).
    Put(&'a [u8]),
    /// Delete-mark the record, keeping its value; nothing when there is none or it is marked.
    DeleteMark,
}

/// The caller's part of [`BTree::change_in_place`]: given the mtr and the record as it is,
/// log what must go with the change and return the transaction fields to write (`None`: give
/// up, before changing anything).
pub type PrepareInPlace<'p, 't> =
    dyn FnMut(&mut Mtr<'t>, Option<&StoredRecord>) -> Result<Option<SysFields>> + 'p;

/// The caller's part of [`BTree::put_run_in_place`]: given the mtr and the run's rows as they
/// are now (`None`: absent), log what must go with them and return the transaction fields to
/// write for the longest prefix of the run it could log (empty: give up, having changed
/// nothing).
pub type PrepareRun<'p, 't> =
    dyn FnMut(&mut Mtr<'t>, &[Option<StoredRecord>]) -> Result<Vec<SysFields>> + 'p;

/// At most this many rows go in one mini-transaction of [`BTree::put_run_in_place`], and at
/// most [`MAX_RUN_BYTES`] of keys and values: an mtr's redo must fit the log buffer, and the
/// pages it holds stay latched until it commits.
pub const MAX_RUN_ROWS: usize = 128;

/// See [`MAX_RUN_ROWS`].
pub const MAX_RUN_BYTES: usize = 64 * 1024;

/// At most this many leaves take part in one mini-transaction of [`BTree::put_run_in_place`]:
/// they stay latched until it commits, and each one more is a page more the commit stamps
/// and releases.
pub const MAX_RUN_LEAVES: usize = 16;

/// Described bytes of a run's row beyond its key and value (the record's header and fields,
/// the undo record's header, the undo page's fields): what [`BTree::put_run_in_place`]
/// reserves in its mtr per row.
const RUN_ROW_OVERHEAD: usize = 64;

/// What [`BTree::change_in_place`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlaceOutcome {
    /// The change and whatever the caller logged with it committed in one mini-transaction.
    Done,
    /// Nothing to do (a delete-mark of an absent or already marked record).
    Unchanged,
    /// The change does not fit the leaf in place (it needs a split or an overflow chain), or
    /// the caller declined: nothing was changed; take the general path.
    NotHere,
}

impl BTree {
    /// Makes `change` to `key`'s leaf record in place, when it fits the leaf as it is, inside
    /// one mini-transaction that also carries what `prepare` logs. With the leaf latched
    /// exclusively, `prepare` gets the mtr and the record as it is now (`None` if absent) —
    /// read under that latch, so no other change slips in between — adds its own pages to the
    /// mtr (latched in any order after the leaf's: the caller's own pages, which no one
    /// latches before a leaf), and returns the transaction fields to write, or `None` to give
    /// up, which it may do only before changing anything. On an error from `prepare` after it
    /// changed pages, the mtr is abandoned and those pages poisoned (as any failed mtr).
    pub fn change_in_place<'t>(
        &'t self,
        key: &[u8],
        change: InPlace<'_>,
        prepare: &mut PrepareInPlace<'_, 't>,
    ) -> Result<InPlaceOutcome> {
        self.check_key(key)?;
        if let InPlace::Put(value) = change {
            // On a compressed tree the block may refuse a new value, and by then `prepare`
            // has logged its part: a put takes the general path there.
            if self.zip.is_some() || self.needs_overflow(key.len(), value) {
                return Ok(InPlaceOutcome::NotHere);
            }
        }
        let mut leaf = self.descend_leaf_exclusive(key)?;
        let id = leaf.page_id();
        let (current, fit) = {
            let node = NodeRef::open(&leaf, id, self)?;
            let current = match node.search(key) {
                Ok(pos) => Some(StoredRecord {
                    value: StoredValue::of(id, node.value(pos)?)?,
                    sys: node.sys(pos)?,
                }),
                Err(_) => None,
            };
            let Some(value) = new_value(change, current.as_ref()) else {
                return Ok(InPlaceOutcome::Unchanged);
            };
            // The fields' size does not depend on their values: any will do for the fit.
            let probe = LeafRecord {
                key,
                value,
                sys: SysFields::default(),
            };
            let fit = LeafFit::of(&node, self, probe, false)?;
            (current, fit)
        };
        if !fit.fits {
            return Ok(InPlaceOutcome::NotHere);
        }
        let mut mtr = self.mtr();
        let Some(sys) = prepare(&mut mtr, current.as_ref())? else {
            return Ok(InPlaceOutcome::NotHere);
        };
        // `Some`: the same value the fit was checked for.
        let Some(value) = new_value(change, current.as_ref()) else {
            return Ok(InPlaceOutcome::Unchanged);
        };
        let record = LeafRecord { key, value, sys };
        if fit.apply(&mut mtr, &mut leaf, self, record)? != Placed::Done {
            // A delete-mark does not grow the record, so no block refuses it.
            return Err(BTreeError::corrupt(
                leaf.page_id(),
                "a compressed page refused a change that does not grow it",
            ));
        }
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(InPlaceOutcome::Done)
    }
}

/// A leaf's part of a run of [`BTree::put_run_in_place`]: the leaf, latched exclusively, and
/// where each of its rows goes (the measuring search's answer).
struct Leg<'t> {
    leaf: ExclusiveGuard<'t>,
    found: Vec<std::result::Result<usize, usize>>,
}

/// Why [`BTree::measure_run`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunStop {
    /// At a row past the leaf's last key (another leaf's, or this one's gap: not known here),
    /// or at the end of the rows: the run may go on in the next row's leaf.
    PastLeaf,
    /// For any other reason (room, order, size, limits): the run ends there.
    Other,
}

impl BTree {
    /// Puts a run of rows, keys strictly ascending, in place and in **one** mini-transaction
    /// (with what `prepare` logs for them): the batched form of
    /// [`change_in_place`](Self::change_in_place) for `InPlace::Put`, which spends one call
    /// of `prepare`, one redo append and one commit on all the rows of the run instead of one
    /// each, and one descent and one latch per leaf.
    ///
    /// The first row's leaf is latched exclusively and the run measured in it without
    /// changing anything: it stops before the first row that does not belong to that leaf (a
    /// key past its last key when it has a right sibling: the fence is not known here), would
    /// not fit beside the rows before it, needs an overflow chain, is not above the row before
    /// it, and after [`MAX_RUN_ROWS`] rows or [`MAX_RUN_BYTES`] in all. Where it stopped at a
    /// row past the leaf, the run goes on in that row's leaf, found by a routed descent and
    /// latched only if that needs no wait (this mtr holds leaves already, and others latch in
    /// other orders: a merge right to left), for up to [`MAX_RUN_LEAVES`] leaves — a batch of
    /// random keys puts about one row per leaf, and without this each row paid its own mtr.
    /// `prepare` then gets the mtr and the run's current records and returns the transaction
    /// fields of the prefix it logged. Returns how many rows, from the first, were put (0:
    /// nothing changed; take the general path for the first row). On an error, the mtr is
    /// abandoned and its pages poisoned, as any failed mtr: none of the run is in the tree or
    /// the log.
    pub fn put_run_in_place<'t>(
        &'t self,
        rows: &[(&[u8], &[u8])],
        prepare: &mut PrepareRun<'_, 't>,
    ) -> Result<usize> {
        let Some(&(first, _)) = rows.first() else {
            return Ok(0);
        };
        self.check_key(first)?;
        // A compressed tree's block may refuse a row after `prepare` logged its part.
        if self.zip.is_some() {
            return Ok(0);
        }
        let leaf = self.descend_leaf_exclusive(first)?;
        let (mut currents, found, mut stop) =
            self.measure_run(&leaf, rows, MAX_RUN_ROWS, MAX_RUN_BYTES, true)?;
        if currents.is_empty() {
            return Ok(0);
        }
        let mut legs = vec![Leg { leaf, found }];
        while stop == RunStop::PastLeaf && legs.len() < MAX_RUN_LEAVES {
            let at = currents.len();
            let Some((&(key, _), rest)) = rows.get(at).zip(rows.get(at..)) else {
                break;
            };
            // `None` also where the row's leaf is one this mtr holds (a key in the gap after
            // a held leaf's last key): its latch is not free.
            let Some(leaf) = self.try_descend_routed_exclusive(key) else {
                break;
            };
            let bytes: usize = rows.iter().take(at).map(|(k, v)| k.len() + v.len()).sum();
            let (more, found, why) = self.measure_run(
                &leaf,
                rest,
                MAX_RUN_ROWS - at,
                MAX_RUN_BYTES.saturating_sub(bytes),
                false,
            )?;
            if more.is_empty() {
                break;
            }
            currents.extend(more);
            legs.push(Leg { leaf, found });
            stop = why;
        }
        let mut mtr = self.mtr();
        // Each row: its record, its undo record (the key, or the version it replaces) and
        // the undo page's header fields — three described changes.
        let run_bytes: usize = rows
            .iter()
            .take(currents.len())
            .zip(&currents)
            .map(|(&(key, value), current)| {
                // An update's undo record holds the old value inline, or a reference to it.
                let old = match current.as_ref().map(|c| &c.value) {
                    Some(StoredValue::Inline(bytes)) => bytes.len(),
                    Some(StoredValue::Overflow { .. }) | None => 0,
                };
                2 * key.len() + value.len() + old + RUN_ROW_OVERHEAD
            })
            .sum();
        mtr.reserve(3 * currents.len(), run_bytes);
        let fields = prepare(&mut mtr, &currents)?;
        let mut fields = fields.into_iter();
        let mut rows = rows.iter();
        let mut done = 0;
        for Leg { mut leaf, found } in legs {
            let placed = self.place_run(&mut mtr, &mut leaf, &mut rows, &mut fields, found)?;
            done += placed;
            if placed > 0 {
                mtr.changed(leaf);
            }
        }
        // Also with no row placed: what `prepare` logged must commit with its pages.
        mtr.commit()?;
        Ok(done)
    }

    /// Places a leg's rows, taken from `rows` with their transaction fields from `fields`, in
    /// `leaf` at the positions the measuring search `found`; returns how many (fewer where
    /// `fields` runs out: `prepare` logged a shorter prefix).
    fn place_run<'t>(
        &'t self,
        mtr: &mut Mtr<'t>,
        leaf: &mut ExclusiveGuard<'t>,
        rows: &mut std::slice::Iter<'_, (&[u8], &[u8])>,
        fields: &mut std::vec::IntoIter<SysFields>,
        found: Vec<std::result::Result<usize, usize>>,
    ) -> Result<usize> {
        let id = leaf.page_id();
        let mut placed = 0;
        // Where each row goes, from the measuring search: every row placed before it has a
        // smaller key, so an insert moves it one position up. The room was measured with the
        // same arithmetic `LeafFit::of` uses, under this latch.
        let mut inserted = 0;
        for found in found {
            let (Some(&(key, value)), Some(sys)) = (rows.next(), fields.next()) else {
                break;
            };
            let value = Value::Inline(value);
            let (pos, replaces) = match found {
                Ok(pos) => (pos + inserted, true),
                Err(pos) => (pos + inserted, false),
            };
            debug_assert_eq!(
                NodeRef::open(leaf, id, self)?
                    .search(key)
                    .unwrap_or_else(|at| at),
                pos,
                "the measured position of a run's row"
            );
            let change = if replaces {
                NodeChange::Replace {
                    pos,
                    key,
                    value,
                    sys,
                }
            } else {
                inserted += 1;
                NodeChange::Insert {
                    pos,
                    key,
                    value,
                    sys,
                }
            };
            if self.make_change(mtr, leaf, change)? != Placed::Done {
                return Err(BTreeError::corrupt(
                    id,
                    "an uncompressed leaf refused a record that fits it",
                ));
            }
            placed += 1;
        }
        Ok(placed)
    }

    /// The current records of the longest prefix of `rows` that `leaf` takes in place
    /// together (see [`put_run_in_place`](Self::put_run_in_place)), measured without a
    /// change, with where each goes and why the prefix ended. At most `max_rows` rows and
    /// `max_bytes` of keys and values — beyond which the first row still goes when
    /// `first_goes` (a run's first leaf: its first row has nowhere better to go).
    #[expect(
        clippy::type_complexity,
        reason = "two parallel lists, each used on its own by the caller"
    )]
    fn measure_run(
        &self,
        leaf: &ExclusiveGuard<'_>,
        rows: &[(&[u8], &[u8])],
        max_rows: usize,
        max_bytes: usize,
        first_goes: bool,
    ) -> Result<(
        Vec<Option<StoredRecord>>,
        Vec<std::result::Result<usize, usize>>,
        RunStop,
    )> {
        let id = leaf.page_id();
        let node = NodeRef::open(leaf, id, self)?;
        let page_size = self.ctx.pool.page_size();
        // Not the rightmost leaf: only keys up to its last one surely belong here.
        let bound = match node.next() {
            Some(_) => match node.len().checked_sub(1) {
                Some(last) => Some(node.key(last)?),
                None => return Ok((Vec::new(), Vec::new(), RunStop::Other)),
            },
            None => None,
        };
        let mut free = node.free_space();
        let (mut bytes, mut previous) = (0, None);
        // Sized for the rows the leaf's free space could take (a load in key order fills a
        // fresh leaf; a scattered batch puts a row or two in each of many leaves).
        let expected = rows.first().map_or(0, |&(key, value)| {
            let one = node::record_size(page_size, key.len(), Value::Inline(value)).max(1);
            (node.free_space() / one + 1).min(rows.len()).min(max_rows)
        });
        let mut currents = Vec::with_capacity(expected);
        let mut found = Vec::with_capacity(expected);
        let n = node.len();
        for (i, &(key, value)) in rows.iter().enumerate() {
            bytes += key.len() + value.len();
            let limited = i > 0 || !first_goes;
            if i == max_rows
                || (limited && bytes > max_bytes)
                || previous.is_some_and(|p| p >= key)
                || self.check_key(key).is_err()
                || self.needs_overflow(key.len(), value)
            {
                return Ok((currents, found, RunStop::Other));
            }
            // The first row is this leaf's: the descent that found the leaf routed it here.
            if i > 0 && bound.is_some_and(|last| key > last) {
                return Ok((currents, found, RunStop::PastLeaf));
            }
            let needed = node::record_size(page_size, key.len(), Value::Inline(value));
            // As `LeafFit::of` counts: a replaced record's bytes are freed by its successor.
            // A row after one that goes past the leaf's last record goes there too (its key is
            // above that row's): a load in key order searches the leaf once per run.
            let position = match found.last() {
                Some(&Err(at)) if at == n => Err(n),
                _ => node.search(key),
            };
            let (current, room) = match position {
                Ok(pos) => (
                    Some(StoredRecord {
                        value: StoredValue::of(id, node.value(pos)?)?,
                        sys: node.sys(pos)?,
                    }),
                    free + node.record_size_at(pos)?,
                ),
                Err(_) => (None, free),
            };
            if needed > room {
                return Ok((currents, found, RunStop::Other));
            }
            free = room - needed;
            currents.push(current);
            found.push(position);
            previous = Some(key);
        }
        Ok((currents, found, RunStop::PastLeaf))
    }
}

/// The value `change` stores, borrowed (a put's bytes, or the current record's value for a
/// delete-mark); `None` when a delete-mark has nothing to mark.
fn new_value<'a>(change: InPlace<'a>, current: Option<&'a StoredRecord>) -> Option<Value<'a>> {
    match change {
        InPlace::Put(v) => Some(Value::Inline(v)),
        InPlace::DeleteMark => current
            .filter(|now| !now.sys.deleted)
            .map(|now| now.value.as_value()),
    }
}
