//! The buddy allocator that will hold compressed pages' blocks (row compression, issue 12) in
//! the pool's own frames, so that the pool's size stays one number (InnoDB: `buf0buddy.cc`).
//!
//! Blocks are powers of two from 1 KiB up to half a frame (a block of a whole frame is a frame).
//! A frame handed to the allocator is one free block of its full size; an allocation splits the
//! smallest free block that is large enough, halving it until it has the size asked for, and
//! keeps each unused half on its size's free list; a freed block merges with its *buddy* (the
//! other half of the block it was split from, at `offset ^ size`) while that buddy is free, and
//! a frame whose every byte is free again is handed back for the pool's free list. Free lists
//! hand out the lowest address first, so allocations pack into few frames and the others empty
//! out.
//!
//! The allocator keeps no bytes, only positions: the pool maps a [`ZipSlot`] to its memory.
//! InnoDB also relocates blocks to empty a frame it wants back (`buf_buddy_relocate`); that needs
//! the owners of the blocks, which the pool will have, and is not here.

use std::collections::{BTreeSet, HashMap};

use barracuda_page::PageSize;

/// log2 of the smallest block: 1 KiB (InnoDB: `UNIV_ZIP_SIZE_MIN`).
pub const MIN_BLOCK_SHIFT: u8 = 10;

/// Where a block lives: a frame, the offset in it, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZipSlot {
    /// The frame.
    pub frame: u32,
    /// Byte offset of the block in the frame (a multiple of its size).
    pub offset: u32,
    /// log2 of the block's size.
    pub shift: u8,
}

impl ZipSlot {
    /// The block's size in bytes.
    pub const fn bytes(&self) -> usize {
        1 << self.shift
    }
}

/// One size class's counters (INFORMATION_SCHEMA.INNODB_CMPMEM's columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuddyClassStats {
    /// The block size.
    pub block_bytes: usize,
    /// Blocks handed out and not freed (`pages_used`).
    pub used: u64,
    /// Blocks on the free list (`pages_free`).
    pub free: u64,
}

/// Why a block could not be freed: it was not handed out by this allocator, or already freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("block {slot:?} was not allocated here or was already freed")]
pub struct NotAllocated {
    /// The block.
    pub slot: ZipSlot,
}

/// The allocator of one pool (not thread-safe: the pool will keep it under a mutex, as InnoDB
/// keeps `buf_pool->zip_free` under its pool mutex).
#[derive(Debug)]
pub struct BuddyAllocator {
    frame_shift: u8,
    /// Free blocks per class, class `k` of `1 << (MIN_BLOCK_SHIFT + k)` bytes; the last class is
    /// a whole frame (a frame given and not yet split, or emptied and not yet returned).
    free: Vec<BTreeSet<(u32, u32)>>,
    /// Bytes handed out per frame the allocator holds.
    in_use: HashMap<u32, usize>,
    /// Blocks handed out, per class.
    used: Vec<u64>,
    /// Every block handed out and not freed (what `free` checks against).
    live: BTreeSet<ZipSlot>,
}

impl BuddyAllocator {
    /// An allocator of blocks inside frames of `page_size`, holding no frame yet.
    pub fn new(page_size: PageSize) -> Self {
        let frame_shift = page_size.shift();
        let classes = usize::from(frame_shift - MIN_BLOCK_SHIFT) + 1;
        Self {
            frame_shift,
            free: vec![BTreeSet::new(); classes],
            in_use: HashMap::new(),
            used: vec![0; classes],
            live: BTreeSet::new(),
        }
    }

    fn class(&self, shift: u8) -> Option<usize> {
        (MIN_BLOCK_SHIFT..self.frame_shift)
            .contains(&shift)
            .then(|| usize::from(shift - MIN_BLOCK_SHIFT))
    }

    /// Frames the allocator holds (some blocks of each handed out, or the frame kept free).
    pub fn frames(&self) -> usize {
        self.in_use.len()
    }

    /// Takes `frame` (a free frame of the pool) as one free block of its whole size.
    pub fn add_frame(&mut self, frame: u32) {
        let top = usize::from(self.frame_shift - MIN_BLOCK_SHIFT);
        if self.in_use.insert(frame, 0).is_none() {
            if let Some(list) = self.free.get_mut(top) {
                list.insert((frame, 0));
            }
        }
    }

    /// A block of `1 << shift` bytes (`10 ≤ shift <` the frame's shift), or `None` when no free
    /// block is large enough: give the allocator a frame ([`add_frame`](Self::add_frame)) and
    /// ask again. Sizes outside the range are refused with `None` too (a block of a whole
    /// frame is a frame).
    pub fn alloc(&mut self, shift: u8) -> Option<ZipSlot> {
        let want = self.class(shift)?;
        let from =
            (want..self.free.len()).find(|&k| self.free.get(k).is_some_and(|l| !l.is_empty()))?;
        let (frame, offset) = self.free.get_mut(from)?.pop_first()?;
        // Halve down to the size asked for; the upper half of each split stays free.
        for k in (want..from).rev() {
            let half = 1u32 << (MIN_BLOCK_SHIFT as usize + k);
            self.free.get_mut(k)?.insert((frame, offset + half));
        }
        let slot = ZipSlot {
            frame,
            offset,
            shift,
        };
        *self.in_use.entry(frame).or_insert(0) += slot.bytes();
        if let Some(n) = self.used.get_mut(want) {
            *n += 1;
        }
        self.live.insert(slot);
        Some(slot)
    }

    /// Frees `slot`, merging it with its free buddies. Returns the frame when it is wholly free
    /// again: the allocator no longer holds it, and it goes back to the pool's free list.
    pub fn free(&mut self, slot: ZipSlot) -> Result<Option<u32>, NotAllocated> {
        if !self.live.remove(&slot) {
            return Err(NotAllocated { slot });
        }
        let class = self.class(slot.shift).ok_or(NotAllocated { slot })?;
        if let Some(n) = self.used.get_mut(class) {
            *n -= 1;
        }
        let frame = slot.frame;
        let remaining = self.in_use.get_mut(&frame).map_or(0, |b| {
            *b -= slot.bytes();
            *b
        });
        let top = self.free.len() - 1;
        let mut offset = slot.offset;
        let mut k = class;
        while k < top {
            let size = 1u32 << (MIN_BLOCK_SHIFT as usize + k);
            let buddy = offset ^ size;
            let Some(list) = self.free.get_mut(k) else {
                break;
            };
            if !list.remove(&(frame, buddy)) {
                break;
            }
            offset = offset.min(buddy);
            k += 1;
        }
        if k == top && remaining == 0 {
            self.in_use.remove(&frame);
            return Ok(Some(frame));
        }
        if let Some(list) = self.free.get_mut(k) {
            list.insert((frame, offset));
        }
        Ok(None)
    }

    /// Per size class, 1 KiB first: blocks handed out and blocks free.
    pub fn stats(&self) -> Vec<BuddyClassStats> {
        self.free
            .iter()
            .zip(&self.used)
            .enumerate()
            .map(|(k, (free, &used))| BuddyClassStats {
                block_bytes: 1 << (usize::from(MIN_BLOCK_SHIFT) + k),
                used,
                free: free.len() as u64,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_frame_splits_into_buddies_and_merges_back_when_they_are_freed() {
        let mut b = BuddyAllocator::new(PageSize::K16);
        assert_eq!(b.alloc(12), None, "no frame yet");
        b.add_frame(7);
        let x = b.alloc(12).unwrap();
        let y = b.alloc(12).unwrap();
        let z = b.alloc(13).unwrap();
        assert_eq!((x.offset, y.offset, z.offset), (0, 4096, 8192));
        assert_eq!(b.alloc(10), None, "the frame is full");
        assert_eq!(b.free(y), Ok(None));
        assert_eq!(b.free(y), Err(NotAllocated { slot: y }), "freed twice");
        assert_eq!(b.free(z), Ok(None));
        assert_eq!(b.free(x), Ok(Some(7)), "the whole frame is free again");
        assert_eq!(b.frames(), 0);
        assert!(b.stats().iter().all(|s| s.used == 0 && s.free == 0));
    }

    #[test]
    fn sizes_outside_one_kib_to_half_a_frame_are_refused() {
        let mut b = BuddyAllocator::new(PageSize::K4);
        b.add_frame(0);
        assert_eq!(b.alloc(9), None);
        assert_eq!(b.alloc(12), None, "a whole frame is a frame, not a block");
        assert!(b.alloc(11).is_some());
    }

    proptest! {
        /// Any sequence of allocations and frees: live blocks never overlap and stay inside
        /// frames the allocator was given; frames come back only when wholly free; freeing
        /// everything gives every frame back.
        #[test]
        fn blocks_never_overlap_and_every_frame_comes_back(
            ops in prop::collection::vec((any::<bool>(), 10u8..14, any::<usize>()), 1..400)
        ) {
            let mut b = BuddyAllocator::new(PageSize::K16);
            let mut live: Vec<ZipSlot> = Vec::new();
            let mut given = 0u32;
            let mut returned = Vec::new();
            for (alloc, shift, pick) in ops {
                if alloc || live.is_empty() {
                    let slot = if let Some(s) = b.alloc(shift) {
                        s
                    } else {
                        b.add_frame(given);
                        given += 1;
                        b.alloc(shift).unwrap()
                    };
                    prop_assert!(slot.frame < given && slot.offset as usize + slot.bytes() <= 16384);
                    prop_assert_eq!(slot.offset as usize % slot.bytes(), 0);
                    for other in &live {
                        let disjoint = other.frame != slot.frame
                            || other.offset as usize + other.bytes() <= slot.offset as usize
                            || slot.offset as usize + slot.bytes() <= other.offset as usize;
                        prop_assert!(disjoint, "{:?} overlaps {:?}", slot, other);
                    }
                    live.push(slot);
                } else {
                    let slot = live.swap_remove(pick % live.len());
                    if let Some(frame) = b.free(slot).unwrap() {
                        prop_assert!(live.iter().all(|s| s.frame != frame), "frame {} returned with blocks in it", frame);
                        returned.push(frame);
                    }
                }
            }
            for slot in live.drain(..) {
                if let Some(frame) = b.free(slot).unwrap() {
                    returned.push(frame);
                }
            }
            returned.sort_unstable();
            returned.dedup();
            prop_assert_eq!(b.frames(), 0);
            prop_assert!(b.stats().iter().all(|s| s.used == 0 && s.free == 0));
            // A frame may be returned, given again and returned again; every one comes back.
            prop_assert_eq!(returned, (0..given).collect::<Vec<_>>());
        }
    }
}
