//! Compressed pages' blocks in the pool's own memory (row compression; InnoDB: `buf_page_t::zip`
//! and `buf0buddy.cc`).
//!
//! A page of a row-compressed table is held as its uncompressed frame plus a block of
//! `KEY_BLOCK_SIZE` bytes: the page as it goes to disk. Blocks are carved out of frames lent to
//! the [`BuddyAllocator`], so the pool's size stays one number: every block costs frames the
//! LRU no longer has. A frame lent to the allocator is `State::Memory`: in no list and no hash,
//! and its latch is never taken. Each block is reached only through the page that owns it,
//! under that page's latch (shared: read; exclusive: write), exactly as the frame's own bytes
//! are; that is what makes the raw accesses below sound.
//!
//! The block is *synced* when it holds the frame's page (its modification log brought up to
//! date by whoever changed the frame: the B-tree logs every change it makes through
//! [`ExclusiveGuard::change_with_zip`](crate::ExclusiveGuard::change_with_zip)) and
//! *stale* after a change of the frame alone. A flush writes a synced block in place of the
//! frame, and the frame (a plain page) otherwise, so a stale block is never written.
//!
//! Lock order: `lists` → `zip` (the allocator's mutex); the allocator never waits for a frame
//! while holding its mutex.
#![expect(
    unsafe_code,
    reason = "blocks live inside frames lent to the buddy allocator and are reached through \
              their owning page's latch, not through a latch of their own"
)]

use std::sync::atomic::Ordering::SeqCst;

use barracuda_page::PageSize;

use crate::buddy::{BuddyAllocator, BuddyClassStats, ZipSlot, MIN_BLOCK_SHIFT};
use crate::descriptor::{Descriptor, State};
use crate::inner::Inner;
use crate::PoolError;

/// A page's link to its block, packed into one `u64` of its descriptor: bit 63 says there is
/// one, bit 62 that it is stale; the block's frame, its offset in KiB and its size's log2 fill
/// the low bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZipLink {
    pub(crate) slot: ZipSlot,
    pub(crate) stale: bool,
}

const PRESENT: u64 = 1 << 63;
const STALE: u64 = 1 << 62;

impl ZipLink {
    fn pack(self) -> u64 {
        PRESENT
            | if self.stale { STALE } else { 0 }
            | u64::from(self.slot.frame)
            | (u64::from(self.slot.offset >> MIN_BLOCK_SHIFT) << 32)
            | (u64::from(self.slot.shift) << 48)
    }

    fn unpack(v: u64) -> Option<Self> {
        (v & PRESENT != 0).then_some(Self {
            slot: ZipSlot {
                frame: v as u32,
                offset: (((v >> 32) & 0xFFFF) as u32) << MIN_BLOCK_SHIFT,
                shift: ((v >> 48) & 0xFF) as u8,
            },
            stale: v & STALE != 0,
        })
    }
}

impl Descriptor {
    /// The page's block, if it has one.
    pub(crate) fn zip_link(&self) -> Option<ZipLink> {
        ZipLink::unpack(self.zip.load(SeqCst))
    }

    /// Sets or clears the page's block link (page X-latched, or the frame owned).
    pub(crate) fn set_zip_link(&self, link: Option<ZipLink>) {
        self.zip.store(link.map_or(0, ZipLink::pack), SeqCst);
    }

    /// Marks the block stale (the frame changed alone); nothing without a block.
    pub(crate) fn mark_zip_stale(&self) {
        if let Some(link) = self.zip_link() {
            if !link.stale {
                self.set_zip_link(Some(ZipLink {
                    stale: true,
                    ..link
                }));
            }
        }
    }
}

/// The shift of a block of `bytes`, if it is a size the pool keeps: a power of two from 1 KiB to
/// the page size.
pub(crate) fn block_shift(bytes: usize, page_size: PageSize) -> Option<u8> {
    (bytes.is_power_of_two() && (1 << MIN_BLOCK_SHIFT) <= bytes && bytes <= page_size.bytes())
        .then(|| bytes.trailing_zeros() as u8)
}

impl Inner {
    /// A block of `1 << shift` bytes from the pool's memory. A block of a whole page is a frame
    /// of its own; smaller ones come from the buddy allocator, which is lent a free frame (taken
    /// as the free-page policy says, so it may wait or flush) when it has no room.
    pub(crate) fn zip_alloc(&self, shift: u8) -> Result<ZipSlot, PoolError> {
        if shift == self.page_size.shift() {
            let f = self.get_free_frame()?;
            self.lend_frame(f);
            self.zip_whole_frames.fetch_add(1, SeqCst);
            self.zip_blocks_live.fetch_add(1, SeqCst);
            return Ok(ZipSlot {
                frame: f,
                offset: 0,
                shift,
            });
        }
        loop {
            if let Some(slot) = self.zip.lock().alloc(shift) {
                self.zip_blocks_live.fetch_add(1, SeqCst);
                return Ok(slot);
            }
            let f = self.get_free_frame()?;
            self.lend_frame(f);
            self.zip.lock().add_frame(f);
        }
    }

    /// As [`zip_alloc`](Self::zip_alloc), but only from the allocator's free blocks or the
    /// free list: `None` rather than a wait (read-ahead).
    pub(crate) fn zip_alloc_at_hand(&self, shift: u8) -> Option<ZipSlot> {
        if shift != self.page_size.shift() {
            if let Some(slot) = self.zip.lock().alloc(shift) {
                self.zip_blocks_live.fetch_add(1, SeqCst);
                return Some(slot);
            }
        }
        let f = self.pop_free()?;
        self.note_frame_taken();
        self.lend_frame(f);
        if shift == self.page_size.shift() {
            self.zip_whole_frames.fetch_add(1, SeqCst);
            self.zip_blocks_live.fetch_add(1, SeqCst);
            return Some(ZipSlot {
                frame: f,
                offset: 0,
                shift,
            });
        }
        let mut zip = self.zip.lock();
        zip.add_frame(f);
        let slot = zip.alloc(shift)?;
        self.zip_blocks_live.fetch_add(1, SeqCst);
        Some(slot)
    }

    /// Marks free frame `f` as lent to the block allocator.
    fn lend_frame(&self, f: u32) {
        let d = &self.frames.frame(f).desc;
        d.set_zip_link(None);
        d.set_state(State::Memory);
    }

    /// Frees `slot`; returns the frame that holds no block any more, for the caller to put on
    /// the free list (with `lists` held or not: the allocator's mutex is released first).
    pub(crate) fn zip_release(&self, slot: ZipSlot) -> Option<u32> {
        self.zip_blocks_live.fetch_sub(1, SeqCst);
        let emptied = if slot.shift == self.page_size.shift() {
            self.zip_whole_frames.fetch_sub(1, SeqCst);
            Some(slot.frame)
        } else {
            match self.zip.lock().free(slot) {
                Ok(emptied) => emptied,
                Err(e) => {
                    // A pool bug, not a data fault: the block stays counted as used.
                    tracing::error!(error = %e, "freeing a compressed block");
                    None
                }
            }
        };
        if let Some(f) = emptied {
            self.frames.frame(f).desc.reset();
        }
        emptied
    }

    /// Takes frame `f`'s block away (the frame is owned or X-latched); returns the frame the
    /// allocator gave back, if any.
    pub(crate) fn take_zip(&self, f: u32) -> Option<u32> {
        let d = &self.frames.frame(f).desc;
        let link = d.zip_link()?;
        d.set_zip_link(None);
        self.zip_release(link.slot)
    }

    /// The bytes of the block `slot`, read-only.
    ///
    /// # Safety
    /// The caller holds the latch (shared or exclusive) of the page that owns `slot`, and the
    /// slot stays that page's for as long as the slice lives.
    pub(crate) unsafe fn zip_bytes(&self, slot: ZipSlot) -> &[u8] {
        let ptr = self.frames.block_ptr(slot);
        // SAFETY: `block_ptr` points at `slot.bytes()` bytes inside a frame lent to the
        // allocator, which no `FrameBuf` access reaches (its latch is never taken while it is
        // `Memory`), and the allocator hands each range to one page only. Writers of the
        // block hold that page's X latch, which the caller's latch excludes.
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), slot.bytes()) }
    }

    /// The bytes of the block `slot`, writable.
    ///
    /// # Safety
    /// The caller holds the exclusive latch of the page that owns `slot` (or owns its frame
    /// outright), no other slice of the block lives, and the slot stays that page's for as
    /// long as the slice lives.
    #[expect(
        clippy::mut_from_ref,
        reason = "the owner's X latch is the exclusivity"
    )]
    pub(crate) unsafe fn zip_bytes_mut(&self, slot: ZipSlot) -> &mut [u8] {
        let ptr = self.frames.block_ptr(slot);
        // SAFETY: as in `zip_bytes`; the caller's exclusive latch on the owning page makes
        // this the only access to the range.
        unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), slot.bytes()) }
    }

    /// What a flush writes for frame `f`, whose latch the caller holds (`page` is its bytes,
    /// borrowed from that latch): its block when the block is in step, else the page.
    pub(crate) fn flush_image<'g>(&'g self, f: u32, page: &'g [u8]) -> &'g [u8] {
        match self.frames.frame(f).desc.zip_link() {
            // SAFETY: the caller holds frame `f`'s latch for `'g` (it lent us `page` for that
            // long), and the block belongs to `f`'s page.
            Some(link) if !link.stale => unsafe { self.zip_bytes(link.slot) },
            _ => page,
        }
    }

    /// Frames lent to blocks, pages with a block, and the allocator's per-size counts.
    pub(crate) fn zip_stats(&self) -> (usize, usize, Vec<BuddyClassStats>) {
        let zip = self.zip.lock();
        let whole = self.zip_whole_frames.load(SeqCst);
        let classes = zip.stats();
        let blocks: u64 = classes.iter().map(|c| c.used).sum();
        (
            zip.frames() + whole,
            usize::try_from(blocks).unwrap_or(usize::MAX) + whole,
            classes,
        )
    }
}

/// The allocator of a pool of `page_size` frames.
pub(crate) fn new_allocator(page_size: PageSize) -> parking_lot::Mutex<BuddyAllocator> {
    parking_lot::Mutex::new(BuddyAllocator::new(page_size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_round_trip() {
        for (frame, offset, shift, stale) in [
            (0u32, 0u32, 10u8, false),
            (u32::MAX - 1, 63 << 10, 10, true),
            (7, 32 << 10, 15, false),
            (9, 0, 16, true),
        ] {
            let link = ZipLink {
                slot: ZipSlot {
                    frame,
                    offset,
                    shift,
                },
                stale,
            };
            assert_eq!(ZipLink::unpack(link.pack()), Some(link));
        }
        assert_eq!(ZipLink::unpack(0), None);
    }

    #[test]
    fn block_sizes_are_powers_of_two_up_to_the_page() {
        let ps = PageSize::K16;
        assert_eq!(block_shift(1024, ps), Some(10));
        assert_eq!(block_shift(16384, ps), Some(14));
        assert_eq!(block_shift(32768, ps), None);
        assert_eq!(block_shift(512, ps), None);
        assert_eq!(block_shift(3000, ps), None);
    }
}
