//! Changes to the trailer made in place: an entry inserted, rewritten or removed, the trailer
//! cut, each moving only the bytes below the change (as InnoDB moves its dense directory with
//! `memmove`). A change costs a few hundred bytes moved at most, where decoding and rewriting
//! the whole trailer cost microseconds on a page of a hundred records — and a delete mark, the
//! change MVCC makes to every row it touches, costs one entry written.
//!
//! Layout (FORMATS §14.4), from low addresses to high: overflow references (the last one
//! lowest), entries (the last record's lowest), the FIL trailer at `end`.

use barracuda_page::{SysFields, FIL_TRAILER_SIZE};

use crate::layout::{OverflowRef, CHILD_ENTRY, KIND_MASK, KIND_OVERFLOW, LEAF_ENTRY, OVERFLOW_REF};
use barracuda_page::bytes::{put, put_u32, put_u64, put_uint, u8_at, zero};

/// The per-record fields an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fields {
    /// A leaf record's first byte (kind, delete mark) and transaction fields.
    Leaf { info: u8, sys: SysFields },
    /// An internal record's child page.
    Child(u32),
}

impl Fields {
    fn write(self, bytes: &mut [u8], at: usize) {
        match self {
            Self::Leaf { info, sys } => {
                put(bytes, at, &[info]);
                put_uint::<6>(bytes, at + 1, sys.trx_id);
                put_uint::<7>(bytes, at + 7, sys.roll_ptr);
            }
            Self::Child(child) => put_u32(bytes, at, child),
        }
    }
}

/// The trailer's shape now: where its entries and references are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    end: usize,
    n: usize,
    entry: usize,
    n_ovf: usize,
}

impl Shape {
    /// The shape of the trailer of `n` records of a leaf (`leaf`) or internal page in `bytes`
    /// (a block whose trailer was checked when it was opened).
    pub(crate) fn read(bytes: &[u8], leaf: bool, n: usize) -> Self {
        let end = bytes.len() - FIL_TRAILER_SIZE;
        let entry = if leaf { LEAF_ENTRY } else { CHILD_ENTRY };
        let mut shape = Self {
            end,
            n,
            entry,
            n_ovf: 0,
        };
        if leaf {
            shape.n_ovf = shape.rank(bytes, n);
        }
        shape
    }

    /// Bytes the trailer takes.
    pub(crate) fn bytes(&self) -> usize {
        self.entry * self.n + OVERFLOW_REF * self.n_ovf
    }

    fn dense_start(&self) -> usize {
        self.end - self.entry * self.n
    }

    fn start(&self) -> usize {
        self.dense_start() - OVERFLOW_REF * self.n_ovf
    }

    fn entry_at(&self, i: usize) -> usize {
        self.end - self.entry * (i + 1)
    }

    fn is_overflow(&self, bytes: &[u8], i: usize) -> bool {
        self.entry == LEAF_ENTRY
            && u8_at(bytes, self.entry_at(i)).is_some_and(|b| b & KIND_MASK == KIND_OVERFLOW)
    }

    /// Overflow records among records `0..pos`: the rank of record `pos`'s reference.
    fn rank(&self, bytes: &[u8], pos: usize) -> usize {
        (0..pos.min(self.n))
            .filter(|&i| self.is_overflow(bytes, i))
            .count()
    }
}

/// One change to the trailer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Edit {
    /// A record inserted at `pos`, with its reference if it is an overflow record.
    Insert {
        pos: usize,
        fields: Fields,
        reference: Option<OverflowRef>,
    },
    /// Record `pos`'s fields rewritten, with its reference if it is (now) an overflow record.
    Set {
        pos: usize,
        fields: Fields,
        reference: Option<OverflowRef>,
    },
    /// Record `pos` removed.
    Remove { pos: usize },
    /// Records `at..` removed.
    Truncate { at: usize },
    /// No change.
    Nothing,
}

impl Edit {
    /// Records on the page after the edit, from `n` before it.
    pub(crate) fn records_after(&self, n: usize) -> usize {
        match *self {
            Self::Insert { .. } => n + 1,
            Self::Remove { .. } => n - 1,
            Self::Truncate { at } => at,
            Self::Set { .. } | Self::Nothing => n,
        }
    }

    /// The trailer's size in bytes after the edit.
    pub(crate) fn bytes_after(&self, bytes: &[u8], shape: &Shape) -> usize {
        let refs = |r: &Option<OverflowRef>| usize::from(r.is_some()) * OVERFLOW_REF;
        match self {
            Self::Insert { reference, .. } => shape.bytes() + shape.entry + refs(reference),
            Self::Set { pos, reference, .. } => {
                let had = usize::from(shape.is_overflow(bytes, *pos)) * OVERFLOW_REF;
                shape.bytes() + refs(reference) - had
            }
            Self::Remove { pos } => {
                let had = usize::from(shape.is_overflow(bytes, *pos)) * OVERFLOW_REF;
                shape.bytes() - shape.entry - had
            }
            Self::Truncate { at } => shape.entry * at + OVERFLOW_REF * shape.rank(bytes, *at),
            Self::Nothing => shape.bytes(),
        }
    }

    /// Makes the edit in `bytes` (the caller checked that the trailer's new size fits above the
    /// log), zeroing what the trailer no longer covers.
    pub(crate) fn apply(&self, bytes: &mut [u8], shape: &Shape) {
        match *self {
            Self::Insert {
                pos,
                fields,
                reference,
            } => {
                let rank = shape.rank(bytes, pos);
                let start = shape.start();
                let e = shape.entry;
                // Entries pos.. and every reference move down one entry.
                move_down(bytes, start, shape.end - e * pos, e);
                fields.write(bytes, shape.entry_at(pos));
                if let Some(r) = reference {
                    let dense = shape.dense_start() - e;
                    let start = start - e;
                    // References rank.. move down one reference.
                    move_down(bytes, start, dense - OVERFLOW_REF * rank, OVERFLOW_REF);
                    write_ref(bytes, dense - OVERFLOW_REF * (rank + 1), r);
                }
            }
            Self::Set {
                pos,
                fields,
                reference,
            } => {
                let rank = shape.rank(bytes, pos);
                let had = shape.is_overflow(bytes, pos);
                let dense = shape.dense_start();
                let at = dense - OVERFLOW_REF * (rank + 1);
                match (had, reference) {
                    (true, Some(r)) => write_ref(bytes, at, r),
                    (false, Some(r)) => {
                        move_down(
                            bytes,
                            shape.start(),
                            dense - OVERFLOW_REF * rank,
                            OVERFLOW_REF,
                        );
                        write_ref(bytes, at, r);
                    }
                    (true, None) => move_up(bytes, shape.start(), at, OVERFLOW_REF),
                    (false, None) => {}
                }
                fields.write(bytes, shape.entry_at(pos));
            }
            Self::Remove { pos } => {
                let mut start = shape.start();
                if shape.is_overflow(bytes, pos) {
                    let rank = shape.rank(bytes, pos);
                    let at = shape.dense_start() - OVERFLOW_REF * (rank + 1);
                    move_up(bytes, start, at, OVERFLOW_REF);
                    start += OVERFLOW_REF;
                }
                move_up(bytes, start, shape.entry_at(pos), shape.entry);
            }
            Self::Truncate { at } => {
                let rank = shape.rank(bytes, at);
                let dense = shape.dense_start();
                let kept_dense = shape.end - shape.entry * at;
                let refs = OVERFLOW_REF * rank;
                bytes.copy_within(dense - refs..dense, kept_dense - refs);
                zero(bytes, shape.start(), kept_dense - refs);
            }
            Self::Nothing => {}
        }
    }
}

fn write_ref(bytes: &mut [u8], at: usize, r: OverflowRef) {
    put_u32(bytes, at, r.first_page);
    put_u64(bytes, at + 4, r.total_len);
}

/// Moves `bytes[from..to]` down by `by` bytes (the bytes below `from` are free).
fn move_down(bytes: &mut [u8], from: usize, to: usize, by: usize) {
    if from < to {
        bytes.copy_within(from..to, from - by);
    }
}

/// Moves `bytes[from..to]` up by `by` bytes over what was at `to..to + by`, and zeroes the `by`
/// bytes left at `from`.
fn move_up(bytes: &mut [u8], from: usize, to: usize, by: usize) {
    if from < to {
        bytes.copy_within(from..to, from + by);
    }
    zero(bytes, from, from + by);
}
