//! Delete: optimistic leaf change, or a pessimistic descent that merges or rebalances
//! under-full pages and lowers the root.

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::{PageId, SysFields};

use crate::error::{BTreeError, Result};
use crate::held::Held;
use crate::insert::{free_unreachable_chain, Previous};
use crate::mtr::Mtr;
use crate::node::{self, NodeMut, NodeRef, Value};
use crate::tree::BTree;
use crate::zip::NodeChange;

impl BTree {
    /// Removes `key`. Returns whether it was present. All or nothing, like [`put`](Self::put).
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(false);
        }
        let previous = self.remove_key(key, false, &|_| true)?;
        if let Previous::Overflow { first_page } = previous {
            free_unreachable_chain(self, first_page);
        }
        Ok(previous != Previous::Absent)
    }

    /// Removes `key`'s record if `wanted` says so of its transaction fields (checked under the
    /// latch that removes it); returns what it was, copied whole when `capture`, or
    /// [`Previous::Absent`] when there was none or it was not wanted.
    pub(crate) fn remove_key(
        &self,
        key: &[u8],
        capture: bool,
        wanted: &dyn Fn(SysFields) -> bool,
    ) -> Result<Previous> {
        match self.delete_optimistic(key, capture, wanted)? {
            Some(previous) => Ok(previous),
            None => self.delete_pessimistic(key, capture, wanted),
        }
    }

    /// Removes the record from its leaf when the leaf stays at least a quarter full (or is the
    /// root). `None` means the removal would leave the leaf under-full (the leaf was not changed).
    fn delete_optimistic(
        &self,
        key: &[u8],
        capture: bool,
        wanted: &dyn Fn(SysFields) -> bool,
    ) -> Result<Option<Previous>> {
        let mut leaf = self.descend_leaf_exclusive(key)?;
        let id = leaf.page_id();
        let (pos, previous) = {
            let node = NodeRef::open(&leaf, id, self)?;
            let Ok(pos) = node.search(key) else {
                return Ok(Some(Previous::Absent));
            };
            if !wanted(node.sys(pos)?) {
                return Ok(Some(Previous::Absent));
            }
            let after = node.used_space().saturating_sub(node.record_size_at(pos)?);
            if id.page_no != self.root && after < node.underflow_threshold() {
                return Ok(None);
            }
            (pos, Previous::at(&node, pos, capture)?)
        };
        let mut mtr = self.mtr();
        // A removal is never refused (it does not grow the page).
        self.make_change(&mut mtr, &mut leaf, NodeChange::Remove { pos })?;
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(Some(previous))
    }

    fn delete_pessimistic(
        &self,
        key: &[u8],
        capture: bool,
        wanted: &dyn Fn(SysFields) -> bool,
    ) -> Result<Previous> {
        let largest = node::max_separator_record(self.ctx.pool.page_size());
        // Safe: losing its largest possible record cannot make the node under-full.
        let (mut guard, path) = self.descend_pessimistic(key, |node| {
            node.len() > 1
                && node.used_space().saturating_sub(largest) >= node.underflow_threshold()
        })?;
        let id = guard.page_id();
        let (pos, previous) = {
            let leaf = NodeRef::open(&guard, id, self)?;
            match leaf.search(key) {
                Ok(pos) if wanted(leaf.sys(pos)?) => (pos, Previous::at(&leaf, pos, capture)?),
                _ => return Ok(Previous::Absent),
            }
        };
        // Everything that can fail comes before the first change.
        let mut held = self.acquire_for_rebalance(&guard, &path)?;
        let mut mtr = self.mtr();
        self.make_change(&mut mtr, &mut guard, NodeChange::Remove { pos })?;
        let mut freed = Vec::new();
        self.rebalance(&mut mtr, &mut held, guard, path, &mut freed)?;
        mtr.commit()?;
        drop(held);
        for page in freed {
            // Unlinked by the committed change: a failure leaks the page, it does not undo it.
            if let Err(err) = self.ctx.alloc.free(page) {
                tracing::warn!(%err, %page, "could not free a page emptied by a merge; it leaks");
            }
        }
        Ok(previous)
    }

    /// Latches what the rebalance after removing a record from `leaf` may need, with `path` its
    /// latched ancestors (top first): for every node that may become under-full, the sibling
    /// [`rebalance`](Self::rebalance) will pair it with and the right neighbour of the pair
    /// (its back link changes when the pair merges). The top of the path is safe (or the root),
    /// so it needs nothing.
    fn acquire_for_rebalance<'a>(
        &'a self,
        leaf: &ExclusiveGuard<'a>,
        path: &[(ExclusiveGuard<'a>, usize)],
    ) -> Result<Held<'a>> {
        let mut held = Held::new(self);
        let mut node = leaf;
        for (parent, idx) in path.iter().rev() {
            let parent_node = NodeRef::open(parent, parent.page_id(), self)?;
            if let Some(sibling_idx) = sibling_index(*idx, parent_node.len()) {
                let sibling = parent_node.child(sibling_idx)?;
                held.latch(sibling)?;
                let right_next = if sibling_idx > *idx {
                    let right = held.get(sibling).ok_or_else(|| {
                        BTreeError::corrupt(parent.page_id(), "sibling vanished from the plan")
                    })?;
                    NodeRef::open(right, right.page_id(), self)?.next()
                } else {
                    NodeRef::open(node, node.page_id(), self)?.next()
                };
                if let Some(next) = right_next {
                    held.latch(next)?;
                }
            }
            node = parent;
        }
        Ok(held)
    }

    /// Restores the fill invariant bottom-up after a removal: an under-full node is merged into
    /// a sibling when both fit in three quarters of a page, or (leaves) takes records from a
    /// richer sibling; a root left with one child absorbs it. Takes pages only from `held`.
    fn rebalance<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        held: &mut Held<'a>,
        mut guard: ExclusiveGuard<'a>,
        mut path: Vec<(ExclusiveGuard<'a>, usize)>,
        freed: &mut Vec<PageId>,
    ) -> Result<()> {
        loop {
            let id = guard.page_id();
            let (used, threshold) = {
                let node = NodeRef::open(&guard, id, self)?;
                (node.used_space(), node.underflow_threshold())
            };
            let Some((mut parent, idx)) = path.pop() else {
                mtr.changed(guard);
                return Ok(());
            };
            if used >= threshold {
                mtr.changed(guard);
                return Ok(());
            }
            let parent_id = parent.page_id();
            let siblings = NodeRef::open(&parent, parent_id, self)?.len();
            let Some(sibling_idx) = sibling_index(idx, siblings) else {
                mtr.changed(guard);
                return Ok(());
            };
            // The sibling was latched by `acquire_for_rebalance`. Going left while holding the
            // node is deadlock-free because the parent is held exclusively: no other structure
            // change can reach either page.
            let sibling_no = NodeRef::open(&parent, parent_id, self)?.child(sibling_idx)?;
            let sibling = held.take_latched(sibling_no)?;
            let (left_idx, mut left, mut right) = if sibling_idx > idx {
                (idx, guard, sibling)
            } else {
                (sibling_idx, sibling, guard)
            };
            let right_idx = left_idx + 1;
            let merged =
                self.try_merge(mtr, held, &mut parent, right_idx, &mut left, &mut right)?;
            if merged {
                freed.push(right.page_id());
                mtr.changed(right);
                let parent_id = parent.page_id();
                let single_child = NodeRef::open(&parent, parent_id, self)?.len() == 1;
                if path.is_empty() && parent_id.page_no == self.root && single_child {
                    // The root keeps one child: it absorbs it now, while the child's latch is
                    // still ours (re-latching it through the pool would wait on ourselves). The
                    // child is the merge of two nodes, so it is a leaf or has two children or
                    // more: one absorption is all it takes.
                    NodeMut::copy_page(&mut parent, &left, parent_id)?;
                    NodeMut::open(&mut parent, parent_id, self)?.set_links(None, None);
                    let left_id = left.page_id();
                    NodeMut::mark_free(&mut left, left_id);
                    freed.push(left_id);
                    mtr.changed(left);
                    mtr.changed(parent);
                    return Ok(());
                }
                mtr.changed(left);
                guard = parent;
                continue;
            }
            self.try_rebalance_leaves(&mut parent, right_idx, &mut left, &mut right)?;
            mtr.changed(left);
            mtr.changed(right);
            mtr.changed(parent);
            return Ok(());
        }
    }

    /// Moves all of `right` into `left` when the result fills at most three quarters of a page;
    /// unlinks and frees `right` and removes its separator from the parent.
    fn try_merge<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        held: &mut Held<'a>,
        parent: &mut ExclusiveGuard<'a>,
        right_idx: usize,
        left: &mut ExclusiveGuard<'a>,
        right: &mut ExclusiveGuard<'a>,
    ) -> Result<bool> {
        let page_size = self.ctx.pool.page_size();
        let (left_id, right_id, parent_id) = (left.page_id(), right.page_id(), parent.page_id());
        let separator = NodeRef::open(parent, parent_id, self)?
            .key(right_idx)?
            .to_vec();
        let (fits, level, right_next) = {
            let l = NodeRef::open(left, left_id, self)?;
            let r = NodeRef::open(right, right_id, self)?;
            let mut total = l.used_space() + r.used_space();
            if r.level() > 0 && !r.is_empty() {
                // The right node's first routing key becomes the parent's separator.
                total = total + node::record_size(page_size, separator.len(), Value::Child(0))
                    - r.record_size_at(0)?;
            }
            (total <= l.merge_limit(), r.level(), r.next())
        };
        if !fits {
            return Ok(false);
        }
        let next = right_next.map(|n| held.take_latched(n)).transpose()?;
        {
            let r = NodeRef::open(right, right_id, self)?;
            let mut l = NodeMut::open(left, left_id, self)?;
            for i in 0..r.len() {
                let key = if level > 0 && i == 0 {
                    separator.as_slice()
                } else {
                    r.key(i)?
                };
                let at = l.len();
                // Moved with its transaction fields: a merge changes no record's history.
                if !l.insert(at, key, r.value(i)?, r.sys(i)?)? {
                    return Err(BTreeError::corrupt(
                        left_id,
                        "merge overflowed a checked page",
                    ));
                }
            }
            l.set_next(right_next);
        }
        if let Some(mut next) = next {
            let next_id = next.page_id();
            NodeMut::open(&mut next, next_id, self)?.set_prev(Some(left_id.page_no));
            mtr.changed(next);
        }
        NodeMut::open(parent, parent_id, self)?.remove(right_idx)?;
        NodeMut::mark_free(right, right_id);
        Ok(true)
    }

    /// Evens out two leaves when one is under-full and they cannot merge, and updates the
    /// separator. Skipped (the node stays under-full) when the parent cannot take the new
    /// separator, and for internal nodes, whose first keys are routing bounds.
    fn try_rebalance_leaves(
        &self,
        parent: &mut ExclusiveGuard<'_>,
        right_idx: usize,
        left: &mut ExclusiveGuard<'_>,
        right: &mut ExclusiveGuard<'_>,
    ) -> Result<()> {
        let (left_id, right_id, parent_id) = (left.page_id(), right.page_id(), parent.page_id());
        if NodeRef::open(left, left_id, self)?.level() != 0 {
            return Ok(());
        }
        let page_size = self.ctx.pool.page_size();
        let mut l = NodeMut::open(left, left_id, self)?;
        let mut r = NodeMut::open(right, right_id, self)?;
        let Some((from_left, k)) = node::even_out_plan(&l, &r)? else {
            return Ok(());
        };
        // The new separator is at most as long as the right node's new first key.
        let new_first_len = if from_left {
            l.key(l.len() - k)?.len()
        } else {
            r.key(k)?.len()
        };
        let mut p = NodeMut::open(parent, parent_id, self)?;
        let room = p.free_space() + p.record_size_at(right_idx)?;
        if node::record_size(page_size, new_first_len, Value::Child(0)) > room {
            return Ok(());
        }
        if from_left {
            r.take_last_from(&mut l, k)?;
        } else {
            l.take_first_from(&mut r, k)?;
        }
        let separator = crate::insert::shortest_separator(l.key(l.len() - 1)?, r.key(0)?);
        if !p.replace(
            right_idx,
            &separator,
            Value::Child(right_id.page_no),
            SysFields::NONE,
        )? {
            return Err(BTreeError::corrupt(
                parent_id,
                "separator did not fit after a room check",
            ));
        }
        Ok(())
    }
}

/// The sibling an under-full child at `idx` pairs with: the right one, or the left one for the
/// last child; `None` for an only child.
fn sibling_index(idx: usize, children: usize) -> Option<usize> {
    if idx + 1 < children {
        Some(idx + 1)
    } else if children >= 2 {
        idx.checked_sub(1)
    } else {
        None
    }
}
