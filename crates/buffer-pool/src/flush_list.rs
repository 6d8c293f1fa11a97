//! The flush list: dirty pages ordered by oldest modification LSN (InnoDB: `buf_pool->flush_list`).
//!
//! InnoDB appends at the head because LSNs arrive in order; callers of
//! [`ExclusiveGuard::mark_dirty`](crate::ExclusiveGuard::mark_dirty) may pass LSNs out of order
//! (or 0 when not logging), so we keep an ordered set keyed by `(oldest_lsn, frame)`.
//! The minimum is the checkpoint LSN; flushing takes pages from the minimum.

use std::collections::BTreeSet;

use barracuda_page::Lsn;

/// The flush list. Protected by the pool's flush-list mutex, which also orders every change of a
/// descriptor's `dirty` / `oldest_lsn`.
#[derive(Default)]
pub(crate) struct FlushList {
    set: BTreeSet<(Lsn, u32)>,
}

impl FlushList {
    pub(crate) fn insert(&mut self, oldest: Lsn, frame: u32) {
        self.set.insert((oldest, frame));
    }

    pub(crate) fn remove(&mut self, oldest: Lsn, frame: u32) -> bool {
        self.set.remove(&(oldest, frame))
    }

    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }

    /// The smallest oldest-modification LSN.
    pub(crate) fn min_lsn(&self) -> Option<Lsn> {
        self.set.first().map(|&(lsn, _)| lsn)
    }

    /// Entries from the oldest on.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Lsn, u32)> + '_ {
        self.set.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_oldest_lsn() {
        let mut fl = FlushList::default();
        fl.insert(30, 1);
        fl.insert(10, 2);
        fl.insert(20, 3);
        fl.insert(10, 0);
        assert_eq!(fl.min_lsn(), Some(10));
        assert_eq!(
            fl.iter().map(|(_, f)| f).collect::<Vec<_>>(),
            vec![0, 2, 3, 1]
        );
        assert!(fl.remove(10, 0));
        assert!(!fl.remove(10, 0));
        assert_eq!(fl.len(), 3);
    }
}
