//! The LRU list with midpoint insertion (InnoDB: `buf_pool->LRU`, `LRU_old`, `buf0lru.cc`).
//!
//! An intrusive doubly linked list over frame indices. Once the list is at least
//! [`Lru::min_len`] long, its tail part is the *old* sublist (≈ `old_blocks_pct` of the list,
//! starting at `old_head`, InnoDB's `LRU_old`): pages read from disk enter just after `old_head`,
//! created pages and pages made young enter at the head. The caller holds the pool's LRU mutex.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// "No frame".
pub(crate) const NIL: u32 = u32::MAX;
/// InnoDB `BUF_LRU_OLD_RATIO_DIV`: `old_ratio` is out of this.
pub(crate) const OLD_RATIO_DIV: u32 = 1024;
/// InnoDB `BUF_LRU_NON_OLD_MIN_LEN`: the young part keeps at least this many pages.
const NON_OLD_MIN_LEN: usize = 5;
/// InnoDB `BUF_LRU_OLD_MIN_LEN`: the old sublist exists only in lists at least this long.
const OLD_MIN_LEN_MAX: usize = 512;
/// InnoDB `BUF_LRU_OLD_TOLERANCE` (for a 512-page minimum length).
const OLD_TOLERANCE_MAX: usize = 20;

/// The LRU list.
pub(crate) struct Lru {
    /// Links, stored as frame number + 1 so that 0 is [`NIL`] and the arrays start zeroed: a
    /// zeroed allocation is backed by the kernel only as it is touched, so creating the list
    /// costs nothing whatever the pool size (see [`link`] / [`unlink_value`]).
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    /// Per-frame "in the old sublist" flags, readable without the LRU mutex (hits read them).
    old: Arc<OldFlags>,
    head: u32,
    tail: u32,
    len: usize,
    /// First page of the old sublist (InnoDB `LRU_old`), `NIL` while the list is shorter than
    /// `min_len`.
    old_head: u32,
    old_len: usize,
    old_ratio: u32,
    min_len: usize,
    tolerance: usize,
}

impl Lru {
    /// An empty list for `capacity` frames, `old_ratio` out of 1024.
    ///
    /// The minimum length for an old sublist is InnoDB's 512, lowered to `capacity / 2` for small
    /// pools (so a 64-frame test pool has midpoint insertion once 32 pages are in), and the
    /// tolerance before `old_head` moves (InnoDB 20 at length 512) is scaled the same way.
    pub(crate) fn new(capacity: usize, old_ratio: u32) -> Self {
        let min_len = (capacity / 2).clamp(2 * NON_OLD_MIN_LEN, OLD_MIN_LEN_MAX);
        let tolerance = (min_len * OLD_TOLERANCE_MAX / OLD_MIN_LEN_MAX).clamp(1, OLD_TOLERANCE_MAX);
        Self {
            prev: vec![0; capacity],
            next: vec![0; capacity],
            linked: vec![false; capacity],
            old: Arc::new(OldFlags::new(capacity)),
            head: NIL,
            tail: NIL,
            len: 0,
            old_head: NIL,
            old_len: 0,
            old_ratio,
            min_len,
            tolerance,
        }
    }

    /// The shared old flags (for lock-free reads on hits).
    pub(crate) fn old_flags(&self) -> Arc<OldFlags> {
        Arc::clone(&self.old)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn old_len(&self) -> usize {
        self.old_len
    }

    /// Minimum length for the old sublist to exist (InnoDB `BUF_LRU_OLD_MIN_LEN`, scaled).
    pub(crate) fn min_len(&self) -> usize {
        self.min_len
    }

    pub(crate) fn tail(&self) -> u32 {
        self.tail
    }

    #[cfg(test)]
    pub(crate) fn head(&self) -> u32 {
        self.head
    }

    pub(crate) fn prev(&self, f: u32) -> u32 {
        unlink_value(*slot(&self.prev, f))
    }

    pub(crate) fn next(&self, f: u32) -> u32 {
        unlink_value(*slot(&self.next, f))
    }

    fn set_prev(&mut self, f: u32, prev: u32) {
        *slot_mut(&mut self.prev, f) = link(prev);
    }

    fn set_next(&mut self, f: u32, next: u32) {
        *slot_mut(&mut self.next, f) = link(next);
    }

    pub(crate) fn contains(&self, f: u32) -> bool {
        *slot(&self.linked, f)
    }

    pub(crate) fn is_old(&self, f: u32) -> bool {
        self.old.get(f)
    }

    fn set_old(&self, f: u32, old: bool) {
        self.old.set(f, old);
    }

    fn link_after(&mut self, after: u32, f: u32) {
        let next = if after == NIL {
            self.head
        } else {
            self.next(after)
        };
        self.set_prev(f, after);
        self.set_next(f, next);
        if after == NIL {
            self.head = f;
        } else {
            self.set_next(after, f);
        }
        if next == NIL {
            self.tail = f;
        } else {
            self.set_prev(next, f);
        }
        *slot_mut(&mut self.linked, f) = true;
        self.len += 1;
    }

    fn unlink(&mut self, f: u32) {
        let (prev, next) = (self.prev(f), self.next(f));
        if prev == NIL {
            self.head = next;
        } else {
            self.set_next(prev, next);
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.set_prev(next, prev);
        }
        self.set_prev(f, NIL);
        self.set_next(f, NIL);
        *slot_mut(&mut self.linked, f) = false;
        self.len -= 1;
    }

    /// Adds `f`: at the head if `young` or there is no old sublist yet, else just after
    /// `old_head`. Returns true if it went to the head (the caller then stamps the page's
    /// freed-page clock). InnoDB: `buf_LRU_add_block_low`.
    pub(crate) fn add(&mut self, f: u32, young: bool) -> bool {
        debug_assert!(!self.contains(f));
        let at_head = young || self.old_head == NIL;
        if at_head {
            self.link_after(NIL, f);
        } else {
            self.link_after(self.old_head, f);
            self.old_len += 1;
        }
        match self.len.cmp(&self.min_len) {
            std::cmp::Ordering::Greater => {
                self.set_old(f, !at_head);
                self.adjust_old_len();
            }
            std::cmp::Ordering::Equal => self.init_old(),
            std::cmp::Ordering::Less => self.set_old(f, self.old_head != NIL),
        }
        at_head
    }

    /// Removes `f`. InnoDB: `buf_LRU_remove_block`.
    pub(crate) fn remove(&mut self, f: u32) {
        debug_assert!(self.contains(f));
        if f == self.old_head {
            // Move LRU_old one step toward the head; that page becomes old.
            let prev = self.prev(f);
            self.old_head = prev;
            if prev != NIL {
                self.set_old(prev, true);
                self.old_len += 1;
            }
        }
        self.unlink(f);
        let was_old = self.is_old(f);
        self.set_old(f, false);
        if self.len < self.min_len {
            let mut cur = self.head;
            while cur != NIL {
                self.set_old(cur, false);
                cur = self.next(cur);
            }
            self.old_head = NIL;
            self.old_len = 0;
            return;
        }
        if was_old {
            self.old_len -= 1;
        }
        self.adjust_old_len();
    }

    /// Moves `f` to the head. InnoDB: `buf_LRU_make_block_young`.
    pub(crate) fn make_young(&mut self, f: u32) {
        self.remove(f);
        self.add(f, true);
    }

    /// Changes the old ratio (out of 1024) and moves `old_head` accordingly.
    pub(crate) fn set_old_ratio(&mut self, ratio: u32) {
        self.old_ratio = ratio;
        if self.old_head != NIL {
            self.adjust_old_len();
        }
    }

    /// The target old sublist length. InnoDB: `buf_LRU_old_adjust_len`.
    fn old_target(&self) -> usize {
        (self.len * self.old_ratio as usize / OLD_RATIO_DIV as usize)
            .min(self.len.saturating_sub(self.tolerance + NON_OLD_MIN_LEN))
    }

    /// Marks every page old, puts `old_head` at the head, then adjusts. InnoDB: `buf_LRU_old_init`.
    fn init_old(&mut self) {
        let mut cur = self.head;
        while cur != NIL {
            self.set_old(cur, true);
            cur = self.next(cur);
        }
        self.old_head = self.head;
        self.old_len = self.len;
        self.adjust_old_len();
    }

    /// Moves `old_head` until the old sublist is within the tolerance of its target length.
    fn adjust_old_len(&mut self) {
        let target = self.old_target();
        loop {
            let old = self.old_head;
            if old == NIL {
                return;
            }
            if self.old_len + self.tolerance < target {
                let prev = self.prev(old);
                if prev == NIL {
                    return;
                }
                self.old_head = prev;
                self.old_len += 1;
                self.set_old(prev, true);
            } else if self.old_len > target + self.tolerance {
                let next = self.next(old);
                if next == NIL {
                    return;
                }
                self.old_head = next;
                self.old_len -= 1;
                self.set_old(old, false);
            } else {
                return;
            }
        }
    }

    /// Checks the list's invariants (tests).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut n = 0;
        let mut n_old = 0;
        let mut seen_old = false;
        let mut cur = self.head;
        let mut prev = NIL;
        while cur != NIL {
            assert_eq!(self.prev(cur), prev);
            if cur == self.old_head {
                seen_old = true;
            }
            assert_eq!(
                self.is_old(cur),
                seen_old,
                "old flags form the tail sublist"
            );
            n += 1;
            n_old += usize::from(self.is_old(cur));
            prev = cur;
            cur = self.next(cur);
        }
        assert_eq!(prev, self.tail);
        assert_eq!(n, self.len);
        assert_eq!(n_old, self.old_len);
        if self.len >= self.min_len {
            assert_ne!(self.old_head, NIL);
            let target = self.old_target();
            assert!(
                self.old_len + self.tolerance >= target && self.old_len <= target + self.tolerance
            );
        } else {
            assert_eq!(self.old_head, NIL);
        }
    }
}

/// Per-frame "in the old sublist" flags, one bit per frame (64 times smaller than a flag per
/// frame: 32 KiB at 32 GiB of 16 KiB pages), written under the LRU mutex and read without it.
pub(crate) struct OldFlags {
    words: Box<[AtomicU64]>,
}

impl OldFlags {
    fn new(capacity: usize) -> Self {
        Self {
            words: (0..capacity.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Whether frame `f` is in the old sublist (may be stale at once without the LRU mutex).
    pub(crate) fn get(&self, f: u32) -> bool {
        slot(&self.words, f / 64).load(Relaxed) & (1 << (f % 64)) != 0
    }

    /// Sets frame `f`'s flag. Called under the LRU mutex only, so the read-modify-write of the
    /// word never races with another writer.
    fn set(&self, f: u32, old: bool) {
        let word = slot(&self.words, f / 64);
        if old {
            word.fetch_or(1 << (f % 64), Relaxed);
        } else {
            word.fetch_and(!(1 << (f % 64)), Relaxed);
        }
    }
}

/// A link as stored: frame number + 1, so [`NIL`] (`u32::MAX`) is stored as 0. The pool's
/// capacity is below `NIL`, so no frame number wraps onto it.
fn link(f: u32) -> u32 {
    f.wrapping_add(1)
}

/// The frame number (or [`NIL`]) a stored link stands for.
fn unlink_value(stored: u32) -> u32 {
    stored.wrapping_sub(1)
}

/// Frame `f`'s slot of a per-frame array. The list is only ever given the pool's own frame
/// numbers, all below the capacity it was built for, so a miss is a bug in the pool.
fn slot<T>(per_frame: &[T], f: u32) -> &T {
    per_frame
        .get(f as usize)
        .expect("LRU: frame numbers are below the pool capacity")
}

/// As [`slot`], mutably.
fn slot_mut<T>(per_frame: &mut [T], f: u32) -> &mut T {
    per_frame
        .get_mut(f as usize)
        .expect("LRU: frame numbers are below the pool capacity")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(lru: &Lru) -> Vec<u32> {
        let mut v = Vec::new();
        let mut cur = lru.head();
        while cur != NIL {
            v.push(cur);
            cur = lru.next(cur);
        }
        v
    }

    #[test]
    fn short_list_inserts_everything_at_head() {
        let mut lru = Lru::new(64, 378);
        for f in 0..10 {
            assert!(lru.add(f, false));
            lru.check();
        }
        assert_eq!(order(&lru).first(), Some(&9));
        assert_eq!(lru.old_len(), 0);
    }

    #[test]
    fn old_sublist_is_about_three_eighths() {
        let mut lru = Lru::new(1024, 378);
        assert_eq!(lru.min_len(), 512);
        for f in 0..1024 {
            lru.add(f, f % 3 == 0);
            lru.check();
        }
        let target = 1024 * 378 / 1024;
        assert!(
            lru.old_len().abs_diff(target) <= 20,
            "old_len {}",
            lru.old_len()
        );
        // Midpoint insertion: a page added old lands right after old_head, not at the head.
        lru.remove(5);
        assert!(!lru.add(5, false));
        assert!(lru.is_old(5));
        assert_ne!(lru.head(), 5);
        lru.make_young(5);
        assert_eq!(lru.head(), 5);
        assert!(!lru.is_old(5));
        lru.check();
    }

    #[test]
    fn invariants_hold_under_churn() {
        let mut lru = Lru::new(64, 378);
        let mut x: u64 = 0x1234_5678;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let f = (next() % 64) as u32;
            if lru.contains(f) {
                if next() % 2 == 0 {
                    lru.remove(f);
                } else {
                    lru.make_young(f);
                }
            } else {
                lru.add(f, next() % 4 == 0);
            }
            lru.check();
            if next() % 1000 == 0 {
                lru.set_old_ratio(old_ratio(5 + (next() % 91) as u32));
                lru.check();
            }
        }
    }

    fn old_ratio(pct: u32) -> u32 {
        crate::config::old_ratio_of_pct(pct)
    }
}
