//! The page hash: `PageId` → frame index, sharded so lookups of different pages rarely contend
//! (InnoDB: `buf_pool->page_hash` with its array of rw-locks).
//!
//! Lookups pin the frame while holding the shard's read lock; eviction removes a page while
//! holding the shard's write lock and re-checks the pin count there, so a page cannot be pinned
//! and evicted at once.

use std::collections::HashMap;

use barracuda_page::{PageId, PageIdBuildHasher};
use parking_lot::{RwLock, RwLockWriteGuard};

use crate::frame::Frames;

type Map = HashMap<PageId, u32, PageIdBuildHasher>;

/// Pages the hash is presized for (see [`PageHash::new`]).
const PRESIZED_PAGES: usize = 1 << 16;

/// Sharded page hash.
pub(crate) struct PageHash {
    shards: Box<[RwLock<Map>]>,
}

/// Mixes a page id into a shard selector; neighbouring pages land in different shards.
fn mix(id: PageId) -> u64 {
    let v = (u64::from(id.space_id) << 32) | u64::from(id.page_no);
    (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
}

impl PageHash {
    /// A hash of `shards` shards (clamped to 1..=1024) for a pool of `capacity` frames.
    ///
    /// Presized for at most [`PRESIZED_PAGES`] pages: presizing for a whole large pool would
    /// clear megabytes of control bytes at open (4 MiB at 32 GiB). Beyond that a shard grows by
    /// doubling as pages are read in, an amortised cost next to the reads themselves.
    pub(crate) fn new(shards: usize, capacity: usize) -> Self {
        let shards = shards.clamp(1, 1024);
        let per_shard = capacity.min(PRESIZED_PAGES) / shards + 1;
        Self {
            shards: (0..shards)
                .map(|_| {
                    RwLock::new(Map::with_capacity_and_hasher(
                        per_shard,
                        PageIdBuildHasher::default(),
                    ))
                })
                .collect(),
        }
    }

    fn shard(&self, id: PageId) -> &RwLock<Map> {
        // The remainder is below the shard count, and there is at least one shard.
        let i = (mix(id) % self.shards.len() as u64) as usize;
        self.shards
            .get(i)
            .expect("a remainder modulo the shard count indexes a shard")
    }

    /// Looks `id` up and pins its frame under the shard's read lock.
    pub(crate) fn lookup_pin(&self, id: PageId, frames: &Frames) -> Option<u32> {
        let shard = self.shard(id).read();
        let f = *shard.get(&id)?;
        frames.prefetch_page(f);
        frames.frame(f).desc.pin();
        Some(f)
    }

    /// Whether `id` is in the pool (no pin: the answer may be stale at once).
    pub(crate) fn contains(&self, id: PageId) -> bool {
        self.shard(id).read().contains_key(&id)
    }

    /// The frame of `id`, if any, without pinning (for read-ahead heuristics only).
    pub(crate) fn peek(&self, id: PageId) -> Option<u32> {
        self.shard(id).read().get(&id).copied()
    }

    /// Inserts `id → frame` unless `id` is already there.
    pub(crate) fn insert_if_absent(&self, id: PageId, frame: u32) -> bool {
        let mut shard = self.shard(id).write();
        if shard.contains_key(&id) {
            return false;
        }
        shard.insert(id, frame);
        true
    }

    /// Write-locks the shard of `id` (eviction re-checks the pin count under it).
    pub(crate) fn lock_shard(&self, id: PageId) -> RwLockWriteGuard<'_, Map> {
        self.shard(id).write()
    }

    /// Removes `id` if it maps to `frame`.
    pub(crate) fn remove(&self, id: PageId, frame: u32) {
        remove_locked(&mut self.shard(id).write(), id, frame);
    }
}

/// Removes `id` from a locked shard if it maps to `frame`.
pub(crate) fn remove_locked(shard: &mut Map, id: PageId, frame: u32) {
    if shard.get(&id) == Some(&frame) {
        shard.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barracuda_page::PageSize;

    #[test]
    fn insert_lookup_remove() {
        let frames = Frames::new(PageSize::K4, 4).expect("reserve 4 frames");
        let hash = PageHash::new(4, 4);
        let id = PageId::new(1, 7);
        assert!(hash.insert_if_absent(id, 2));
        assert!(!hash.insert_if_absent(id, 3));
        assert_eq!(hash.lookup_pin(id, &frames), Some(2));
        assert_eq!(frames.frame(2).desc.pins(), 1);
        hash.remove(id, 3);
        assert!(hash.contains(id));
        hash.remove(id, 2);
        assert!(!hash.contains(id));
        assert_eq!(hash.lookup_pin(id, &frames), None);
    }
}
