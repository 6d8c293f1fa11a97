//! The last-insert position: a change whose key falls in the rightmost leaf latches that leaf
//! directly instead of descending from the root (InnoDB keeps `PAGE_LAST_INSERT` and a cursor
//! hint for sequential inserts to the same end).
//!
//! A tree remembers the rightmost leaf its last descent for a change reached, with the
//! engine-wide structure epoch read before that descent. The hint is used only while the epoch
//! is unchanged, checked again once the leaf is latched: every split and merge bumps the epoch
//! while it still holds the latches of the pages it changes ([`crate::held::Held::new`]), so an
//! unchanged epoch under the leaf's latch means no structure change has touched the leaf since
//! the descent found it — it is still a live leaf of this tree, still the rightmost (a split
//! would have given it a right sibling, a merge freed it). Its keys then route every key at
//! least its first key to it, which is checked under the latch too. Anything else — another
//! epoch, a page that does not read as the rightmost leaf, an error reading it — falls back to
//! the descent, which is always right.

use std::sync::atomic::Ordering::SeqCst;

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::PageNo;
use parking_lot::Mutex;

use crate::node::NodeRef;
use crate::tree::BTree;

/// A tree's last-insert position (shared by the clones of one `BTree`). One mutex, not
/// atomics: a leaf must never be paired with an epoch read by another descent.
#[derive(Debug, Default)]
pub(crate) struct AppendHint(Mutex<Option<Hint>>);

#[derive(Debug)]
struct Hint {
    /// The rightmost leaf's page number.
    leaf: PageNo,
    /// The structure epoch read before the descent that found it.
    epoch: u64,
    /// Its first key then: a key below it is not tried (that would latch the leaf for
    /// nothing on every put of a random load). The leaf's first key may have changed since;
    /// the check under its latch is the one that counts.
    first_key: Vec<u8>,
}

impl BTree {
    /// The structure epoch now (read before a descent whose leaf may become the hint).
    pub(crate) fn structure_epoch(&self) -> u64 {
        self.ctx.structure_epoch.load(SeqCst)
    }

    /// Called by every split and merge while it holds the latches of the pages it will change:
    /// every last-insert position remembered before is void.
    pub(crate) fn note_structure_change(&self) {
        self.ctx.structure_epoch.fetch_add(1, SeqCst);
    }

    /// The rightmost leaf latched exclusively if the hint holds and `key` belongs to it;
    /// `None` means descend.
    pub(crate) fn hinted_leaf(&self, key: &[u8]) -> Option<ExclusiveGuard<'_>> {
        let (leaf, epoch) = {
            let hint = self.append.0.lock();
            let hint = hint.as_ref()?;
            if hint.epoch != self.structure_epoch() || key < hint.first_key.as_slice() {
                return None;
            }
            (hint.leaf, hint.epoch)
        };
        let id = self.page_id(leaf);
        // An error (a page that cannot be read now) is the descent's to report, if it meets it.
        let guard = self.ctx.pool.get_exclusive(id).ok()?;
        // Under the latch: no structure change has touched the leaf since it was found.
        if self.structure_epoch() != epoch {
            return None;
        }
        let node = NodeRef::open(&guard, id, self).ok()?;
        let belongs = node.level() == 0
            && node.next().is_none()
            && !node.is_empty()
            && node.key(0).is_ok_and(|first| key >= first);
        belongs.then_some(guard)
    }

    /// Remembers `leaf`, reached by a descent that read `epoch` before it started, if it is the
    /// rightmost leaf (the root leaf of a one-page tree is not worth a hint: it is the root).
    pub(crate) fn remember_leaf(&self, leaf: &ExclusiveGuard<'_>, epoch: u64) {
        let id = leaf.page_id();
        if id.page_no == self.root {
            return;
        }
        let Ok(node) = NodeRef::open(leaf, id, self) else {
            return;
        };
        if node.next().is_some() {
            return;
        }
        let Ok(first) = node.key(0) else {
            return; // empty: no lower bound to route by
        };
        let mut hint = self.append.0.lock();
        match hint.as_mut() {
            Some(h) if h.leaf == id.page_no && h.first_key == first => h.epoch = epoch,
            _ => {
                *hint = Some(Hint {
                    leaf: id.page_no,
                    epoch,
                    first_key: first.to_vec(),
                });
            }
        }
    }
}
