//! Page images this process has verified whole already: a page read again with the same
//! checksum skips the structure check that turns a crafted page into an error naming it.
//!
//! A read verifies the page's checksum (CRC-32C over all its bytes but the checksum field),
//! then, for an index, undo or transaction-system page, its whole structure: every record
//! decoded, in bounds, in order, not overlapping another. On a 16 KiB leaf the structure check
//! was a fifth of a pool miss served from the OS page cache (a quarter-pool get, EXPERIMENTS.md
//! §16), and in that workload nearly every miss reads a page read before. So a read whose page
//! id and stored checksum match an image that passed the check in this process skips it: the
//! bytes are those bytes but with the probability of a CRC-32C collision (2^-32 for damage,
//! the same odds the checksum itself gives), and every access to a page in the pool stays
//! bounds-checked whatever its bytes. A page crafted on purpose to collide with the checksum
//! its own earlier image had, by someone writing the file while the engine runs, is the one
//! case the check would have caught and this lets through as a page whose reads give
//! unspecified rows, never a panic or an access outside the page.
//!
//! The memory is fixed: a direct-mapped table of one word per slot, `(tag, checksum)`, the
//! slot and the tag from a hash of the page id. A collision of two pages on a slot costs a
//! check, never a skip: the tag and the checksum must both match.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use barracuda_page::PageId;

/// Fewest and most slots (8 bytes each).
const MIN_SLOTS: usize = 1 << 12;
const MAX_SLOTS: usize = 1 << 22;

/// Slots per buffer-pool frame: the pages a workload reads again are mostly more than the
/// pool holds (else they would not be read again).
const SLOTS_PER_FRAME: usize = 4;

/// The verified page images of this process (see the module documentation).
#[derive(Debug)]
pub(crate) struct VerifiedImages {
    slots: Box<[AtomicU64]>,
    /// Reads whose image was checked whole.
    checked: AtomicU64,
    /// Reads whose image was known checked, and skipped the check.
    skipped: AtomicU64,
}

impl VerifiedImages {
    /// A table sized for a pool of `frames` frames (a power of two of slots between 4 Ki and
    /// 4 Mi: at most 32 MiB).
    pub(crate) fn for_pool(frames: usize) -> Self {
        let slots = frames
            .saturating_mul(SLOTS_PER_FRAME)
            .clamp(MIN_SLOTS, MAX_SLOTS)
            .next_power_of_two();
        Self {
            slots: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            checked: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    /// Whether the image of `page` whose stored checksum is `checksum` passed the structure
    /// check in this process (a false answer only costs a check); a true one is counted as a
    /// check skipped.
    pub(crate) fn contains(&self, page: PageId, checksum: u32) -> bool {
        let (slot, word) = self.slot_and_word(page, checksum);
        let known = slot.is_some_and(|s| s.load(Relaxed) == word);
        if known {
            self.skipped.fetch_add(1, Relaxed);
        }
        known
    }

    /// Records that the image of `page` with stored checksum `checksum` passed the structure
    /// check (counted as a check made). Relaxed: a reader that misses the store checks the
    /// page itself, and one that sees it learns a fact about those bytes, not about any other
    /// memory.
    pub(crate) fn insert(&self, page: PageId, checksum: u32) {
        self.checked.fetch_add(1, Relaxed);
        let (slot, word) = self.slot_and_word(page, checksum);
        if let Some(s) = slot {
            s.store(word, Relaxed);
        }
    }

    /// Reads that checked their page whole, and reads that skipped the check (an image
    /// checked before), since open.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.checked.load(Relaxed), self.skipped.load(Relaxed))
    }

    fn slot_and_word(&self, page: PageId, checksum: u32) -> (Option<&AtomicU64>, u64) {
        let hash = mix((u64::from(page.space_id) << 32) | u64::from(page.page_no));
        // The slot from the low bits, the tag from the high ones; the tag is never zero, so an
        // empty slot (0) matches nothing.
        let slot = self.slots.get(hash as usize & (self.slots.len() - 1));
        let tag = (hash >> 32) | 1;
        (slot, (tag << 32) | u64::from(checksum))
    }
}

/// SplitMix64's finaliser: every bit of the page id moves the slot and the tag.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::VerifiedImages;
    use barracuda_page::PageId;

    #[test]
    fn only_the_recorded_image_of_a_page_is_known() {
        let v = VerifiedImages::for_pool(16);
        let page = PageId::new(3, 17);
        assert!(!v.contains(page, 0xDEAD_BEEF));
        v.insert(page, 0xDEAD_BEEF);
        assert!(v.contains(page, 0xDEAD_BEEF));
        assert!(!v.contains(page, 0xDEAD_BEEE), "another image of the page");
        assert!(
            !v.contains(PageId::new(4, 17), 0xDEAD_BEEF),
            "another space"
        );
        assert!(!v.contains(PageId::new(3, 18), 0xDEAD_BEEF), "another page");
        v.insert(page, 7);
        assert!(
            !v.contains(page, 0xDEAD_BEEF),
            "a newer image replaces the older"
        );
        assert!(v.contains(page, 7));
        assert_eq!(
            v.counts(),
            (2, 2),
            "two checks recorded, two known images found"
        );
    }

    #[test]
    fn the_table_is_bounded() {
        assert_eq!(VerifiedImages::for_pool(0).slots.len(), 1 << 12);
        assert_eq!(VerifiedImages::for_pool(10_000).slots.len(), 1 << 16);
        assert_eq!(VerifiedImages::for_pool(usize::MAX).slots.len(), 1 << 22);
    }
}
