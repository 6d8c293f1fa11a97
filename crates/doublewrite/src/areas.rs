//! The area table: which areas are free, in use or reserved, and which data files each free
//! area waits on before its copies may be overwritten. Pure bookkeeping, kept under one mutex
//! by [`Doublewrite`](crate::Doublewrite); the I/O happens outside it.

use std::sync::Arc;

use barracuda_io::PageFile;

use crate::format::{AreaKind, Geometry};

/// A data file an area's batch wrote in place.
pub(crate) type DataFile = Arc<dyn PageFile>;

/// State of one area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Available. Its copies (if any) are still needed until its `pending` files are synced.
    Free,
    /// A batch holds it between `take` and `release`.
    InUse,
    /// The batch's in-place write failed: its copies stay for recovery, never overwritten.
    Reserved,
}

#[derive(Debug)]
struct Area {
    kind: AreaKind,
    state: State,
    /// Data files the area's last batch wrote in place that were not synced since.
    pending: Vec<DataFile>,
    /// Value of the table's clock when `pending` was registered.
    registered: u64,
    /// Sequence number of the area's last batch (0: never used), to prefer the oldest.
    last_seq: u64,
}

/// An area handed out by [`AreaTable::take`].
#[derive(Debug)]
pub(crate) struct Taken {
    /// The area's index.
    pub(crate) index: u32,
    /// The batch sequence number assigned to it.
    pub(crate) seq: u64,
    /// Files to sync before the area is overwritten.
    pub(crate) pending: Vec<DataFile>,
    /// The clock when `pending` was taken, for [`AreaTable::synced`].
    pub(crate) stamp: u64,
}

/// What [`AreaTable::take`] found.
#[derive(Debug)]
pub(crate) enum Take {
    /// An area, now in use.
    Got(Taken),
    /// Every area of the kind is in use or reserved, at least one in use: wait for a release.
    Busy,
    /// Every area of the kind is reserved: waiting would never end.
    Exhausted {
        /// Areas of the kind.
        areas: u32,
    },
}

/// The state of every area of a doublewrite file.
#[derive(Debug)]
pub(crate) struct AreaTable {
    areas: Vec<Area>,
    /// The next batch sequence number.
    next_seq: u64,
    /// Counts registrations, so that a sync clears only files registered before it began.
    clock: u64,
}

/// Appends the files of `files` not already in `into` (by identity, `Arc::ptr_eq`).
pub(crate) fn add_unique(into: &mut Vec<DataFile>, files: impl IntoIterator<Item = DataFile>) {
    for f in files {
        if !into.iter().any(|g| Arc::ptr_eq(g, &f)) {
            into.push(f);
        }
    }
}

impl AreaTable {
    /// Every area free and clean; batches numbered from `first_seq`.
    pub(crate) fn new(geometry: Geometry, first_seq: u64) -> Self {
        AreaTable {
            areas: (0..geometry.areas())
                .map(|i| Area {
                    kind: geometry.kind_of(i),
                    state: State::Free,
                    pending: Vec::new(),
                    registered: 0,
                    last_seq: 0,
                })
                .collect(),
            next_seq: first_seq,
            clock: 0,
        }
    }

    /// Takes a free area of `kind` for a new batch: one with nothing to sync if there is one,
    /// else the one whose batch is oldest (its in-place writes are the likeliest to have
    /// reached the disk already, so its sync is the cheapest).
    pub(crate) fn take(&mut self, kind: AreaKind) -> Take {
        let best = self
            .areas
            .iter()
            .enumerate()
            .filter(|(_, a)| a.kind == kind && a.state == State::Free)
            .min_by_key(|(_, a)| (!a.pending.is_empty(), a.last_seq))
            .map(|(i, _)| i);
        let Some(i) = best else {
            let mut of_kind = self.areas.iter().filter(|a| a.kind == kind);
            return if of_kind.all(|a| a.state == State::Reserved) {
                Take::Exhausted {
                    areas: self.areas.iter().filter(|a| a.kind == kind).count() as u32,
                }
            } else {
                Take::Busy
            };
        };
        let seq = self.next_seq;
        // Saturates rather than wraps: a copy numbered lower than an older one would lose
        // a tie it should win (numbering starts after the highest found at open).
        self.next_seq = self.next_seq.saturating_add(1);
        let area = &mut self.areas[i];
        area.state = State::InUse;
        area.last_seq = seq;
        Take::Got(Taken {
            index: i as u32,
            seq,
            pending: std::mem::take(&mut area.pending),
            stamp: self.clock,
        })
    }

    /// Gives an area back whose pending files could not be synced: it stays free with them.
    pub(crate) fn give_back(&mut self, taken: Taken) {
        let area = &mut self.areas[taken.index as usize];
        debug_assert_eq!(area.state, State::InUse);
        area.state = State::Free;
        area.pending = taken.pending;
    }

    /// Frees an area whose copy write failed: nothing was written in place from it, and its
    /// previous batch's files were synced before the write began.
    pub(crate) fn free_clean(&mut self, index: u32) {
        let area = &mut self.areas[index as usize];
        debug_assert_eq!(area.state, State::InUse);
        area.state = State::Free;
    }

    /// Frees an area whose batch was written in place to `files`, which must be synced before
    /// the area is reused.
    pub(crate) fn release(&mut self, index: u32, files: Vec<DataFile>) {
        let clock = self.clock;
        self.clock += 1;
        let area = &mut self.areas[index as usize];
        debug_assert_eq!(area.state, State::InUse);
        area.state = State::Free;
        area.pending.clear();
        add_unique(&mut area.pending, files);
        area.registered = clock;
    }

    /// Marks an area whose in-place write failed: never reused.
    pub(crate) fn reserve(&mut self, index: u32) {
        let area = &mut self.areas[index as usize];
        debug_assert_eq!(area.state, State::InUse);
        area.state = State::Reserved;
    }

    /// Every file some free area waits on, each once, and the clock to pass to
    /// [`synced`](Self::synced) once they are synced.
    pub(crate) fn pending_files(&self) -> (Vec<DataFile>, u64) {
        let mut files = Vec::new();
        for a in self.areas.iter().filter(|a| a.state == State::Free) {
            add_unique(&mut files, a.pending.iter().cloned());
        }
        (files, self.clock)
    }

    /// Records that `files` were synced by a sync that began at clock `stamp`: free areas
    /// registered before it no longer wait on them. Areas released since (their in-place
    /// writes may have come after the sync began) keep waiting.
    pub(crate) fn synced(&mut self, stamp: u64, files: &[DataFile]) {
        for a in &mut self.areas {
            if a.state == State::Free && a.registered < stamp {
                a.pending
                    .retain(|p| !files.iter().any(|f| Arc::ptr_eq(f, p)));
            }
        }
    }

    /// Areas of `kind` reserved after a failed in-place write.
    #[cfg(test)]
    fn reserved(&self, kind: AreaKind) -> usize {
        self.areas
            .iter()
            .filter(|a| a.kind == kind && a.state == State::Reserved)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barracuda_io::MemFile;

    fn geometry() -> Geometry {
        Geometry {
            batch_areas: 2,
            pages_per_area: 4,
            single_page_slots: 1,
        }
    }

    fn file(name: &str) -> DataFile {
        Arc::new(MemFile::new(name))
    }

    fn got(t: Take) -> Taken {
        match t {
            Take::Got(t) => t,
            other => panic!("expected an area, got {other:?}"),
        }
    }

    #[test]
    fn reuse_hands_back_the_files_to_sync_and_kinds_do_not_mix() {
        let mut t = AreaTable::new(geometry(), 1);
        let a = got(t.take(AreaKind::Batch));
        let b = got(t.take(AreaKind::Batch));
        assert_eq!((a.seq, b.seq), (1, 2));
        assert!(matches!(t.take(AreaKind::Batch), Take::Busy));
        let single = got(t.take(AreaKind::SinglePage));
        assert_eq!(single.index, 2);
        let f = file("f");
        t.release(a.index, vec![f.clone(), f.clone()]);
        let again = got(t.take(AreaKind::Batch));
        assert_eq!(again.index, a.index);
        assert_eq!(again.pending.len(), 1, "deduplicated by identity");
        assert!(Arc::ptr_eq(&again.pending[0], &f));
    }

    #[test]
    fn clean_areas_are_preferred_then_the_oldest() {
        let mut t = AreaTable::new(geometry(), 1);
        let a = got(t.take(AreaKind::Batch));
        let b = got(t.take(AreaKind::Batch));
        t.release(a.index, vec![file("a")]);
        t.release(b.index, Vec::new());
        assert_eq!(got(t.take(AreaKind::Batch)).index, b.index);
    }

    #[test]
    fn a_sync_clears_only_registrations_older_than_it() {
        let mut t = AreaTable::new(geometry(), 1);
        let f = file("f");
        let a = got(t.take(AreaKind::Batch));
        let b = got(t.take(AreaKind::Batch));
        t.release(a.index, vec![f.clone()]);
        let (files, stamp) = t.pending_files();
        assert_eq!(files.len(), 1);
        // b's in-place write ends after the sync began: it must stay pending.
        t.release(b.index, vec![f.clone()]);
        t.synced(stamp, &files);
        let (left, _) = t.pending_files();
        assert_eq!(left.len(), 1);
        let next = got(t.take(AreaKind::Batch));
        assert_eq!(next.index, a.index, "a is clean now");
        assert!(next.pending.is_empty());
    }

    #[test]
    fn reserved_areas_are_never_handed_out_and_exhaust_their_kind() {
        let mut t = AreaTable::new(geometry(), 1);
        let a = got(t.take(AreaKind::Batch));
        let b = got(t.take(AreaKind::Batch));
        t.reserve(a.index);
        assert!(matches!(t.take(AreaKind::Batch), Take::Busy));
        t.reserve(b.index);
        assert!(matches!(
            t.take(AreaKind::Batch),
            Take::Exhausted { areas: 2 }
        ));
        assert_eq!(t.reserved(AreaKind::Batch), 2);
        assert!(matches!(t.take(AreaKind::SinglePage), Take::Got(_)));
    }

    #[test]
    fn a_failed_pre_reuse_sync_keeps_the_files_pending() {
        let mut t = AreaTable::new(geometry(), 1);
        let a = got(t.take(AreaKind::Batch));
        t.release(a.index, vec![file("f")]);
        let _b = got(t.take(AreaKind::Batch));
        let again = got(t.take(AreaKind::Batch));
        assert_eq!(again.pending.len(), 1);
        t.give_back(again);
        assert_eq!(t.pending_files().0.len(), 1);
    }
}
