//! Delete: optimistic leaf change, or a pessimistic descent that merges or rebalances
//! under-full pages and lowers the root.

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::PageId;

use crate::error::{BTreeError, Result};
use crate::insert::Previous;
use crate::mtr::Mtr;
use crate::node::{self, NodeMut, NodeRef, Value};
use crate::overflow;
use crate::tree::BTree;

impl BTree {
    /// Removes `key`. Returns whether it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(false);
        }
        let previous = match self.delete_optimistic(key)? {
            Some(previous) => previous,
            None => self.delete_pessimistic(key)?,
        };
        if let Previous::Overflow { first_page } = previous {
            overflow::free_chain(self, first_page)?;
        }
        Ok(previous != Previous::Absent)
    }

    /// Removes the record from its leaf when the leaf stays at least a quarter full (or is the
    /// root). `None` means the removal would leave the leaf under-full.
    fn delete_optimistic(&self, key: &[u8]) -> Result<Option<Previous>> {
        let mut leaf = self.descend_leaf_exclusive(key)?;
        let id = leaf.page_id();
        let previous = {
            let mut node = NodeMut::open(&mut leaf, id, self)?;
            let Ok(pos) = node.search(key) else {
                return Ok(Some(Previous::Absent));
            };
            let previous = Previous::of(node.value(pos)?);
            let after = node.used_space().saturating_sub(node.record_size_at(pos)?);
            if id.page_no != self.root && after < node.underflow_threshold() {
                return Ok(None);
            }
            node.remove(pos)?;
            previous
        };
        let mut mtr = Mtr::new(self.ctx.log.as_ref());
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(Some(previous))
    }

    fn delete_pessimistic(&self, key: &[u8]) -> Result<Previous> {
        let largest = node::max_separator_record(self.ctx.pool.page_size());
        // Safe: losing its largest possible record cannot make the node under-full.
        let (mut guard, path) = self.descend_pessimistic(key, |node| {
            node.len() > 1
                && node.used_space().saturating_sub(largest) >= node.underflow_threshold()
        })?;
        let id = guard.page_id();
        let previous = {
            let mut leaf = NodeMut::open(&mut guard, id, self)?;
            match leaf.search(key) {
                Ok(pos) => {
                    let previous = Previous::of(leaf.value(pos)?);
                    leaf.remove(pos)?;
                    previous
                }
                Err(_) => Previous::Absent,
            }
        };
        let mut mtr = Mtr::new(self.ctx.log.as_ref());
        let mut freed = Vec::new();
        if previous == Previous::Absent {
            drop(guard);
        } else {
            self.rebalance(&mut mtr, guard, path, &mut freed)?;
        }
        mtr.commit()?;
        for page in freed {
            self.ctx.alloc.free(page)?;
        }
        Ok(previous)
    }

    /// Restores the fill invariant bottom-up after a removal: an under-full node is merged into
    /// a sibling when both fit in three quarters of a page, or (leaves) takes records from a
    /// richer sibling; a root left with one child absorbs it.
    fn rebalance<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
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
                if id.page_no == self.root {
                    return self.lower_root(mtr, guard, freed);
                }
                mtr.changed(guard);
                return Ok(());
            };
            if used >= threshold {
                mtr.changed(guard);
                return Ok(());
            }
            let parent_id = parent.page_id();
            let siblings = NodeRef::open(&parent, parent_id, self)?.len();
            if siblings < 2 {
                mtr.changed(guard);
                return Ok(());
            }
            // Latch the sibling. Going left while holding the node is deadlock-free because the
            // parent is held exclusively: no other structure change can reach either page.
            let (left_idx, mut left, mut right) = if idx + 1 < siblings {
                let sibling = self.child_guard(&parent, idx + 1)?;
                (idx, guard, sibling)
            } else {
                let sibling = self.child_guard(&parent, idx - 1)?;
                (idx - 1, sibling, guard)
            };
            let right_idx = left_idx + 1;
            let merged = self.try_merge(mtr, &mut parent, right_idx, &mut left, &mut right)?;
            if merged {
                freed.push(right.page_id());
                mtr.changed(right);
                let parent_id = parent.page_id();
                let single_child = NodeRef::open(&parent, parent_id, self)?.len() == 1;
                if path.is_empty() && parent_id.page_no == self.root && single_child {
                    // The root keeps one child: it absorbs it now, while the child's latch is
                    // still ours (re-latching it through the pool would wait on ourselves).
                    NodeMut::copy_page(&mut parent, &left, parent_id)?;
                    NodeMut::open(&mut parent, parent_id, self)?.set_links(None, None);
                    let left_id = left.page_id();
                    NodeMut::mark_free(&mut left, left_id);
                    freed.push(left_id);
                    mtr.changed(left);
                    return self.lower_root(mtr, parent, freed);
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

    fn child_guard(&self, parent: &ExclusiveGuard<'_>, idx: usize) -> Result<ExclusiveGuard<'_>> {
        let node = NodeRef::open(parent, parent.page_id(), self)?;
        let child = self.page_id(node.child(idx)?);
        Ok(self.ctx.pool.get_exclusive(child)?)
    }

    /// Moves all of `right` into `left` when the result fills at most three quarters of a page;
    /// unlinks and frees `right` and removes its separator from the parent.
    fn try_merge<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
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
                if !l.insert(at, key, r.value(i)?)? {
                    return Err(BTreeError::corrupt(
                        left_id,
                        "merge overflowed a checked page",
                    ));
                }
            }
            l.set_next(right_next);
        }
        if let Some(next_no) = right_next {
            let next_id = self.page_id(next_no);
            let mut next = self.ctx.pool.get_exclusive(next_id)?;
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
        if !p.replace(right_idx, &separator, Value::Child(right_id.page_no))? {
            return Err(BTreeError::corrupt(
                parent_id,
                "separator did not fit after a room check",
            ));
        }
        Ok(())
    }

    /// A root with a single child takes over the child's content; repeated while it applies.
    fn lower_root<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        mut root: ExclusiveGuard<'a>,
        freed: &mut Vec<PageId>,
    ) -> Result<()> {
        let root_id = root.page_id();
        loop {
            let (level, len) = {
                let node = NodeRef::open(&root, root_id, self)?;
                (node.level(), node.len())
            };
            if level == 0 || len != 1 {
                mtr.changed(root);
                return Ok(());
            }
            let mut child = self.child_guard(&root, 0)?;
            let child_id = child.page_id();
            NodeMut::copy_page(&mut root, &child, root_id)?;
            NodeMut::open(&mut root, root_id, self)?.set_links(None, None);
            NodeMut::mark_free(&mut child, child_id);
            freed.push(child_id);
            mtr.changed(child);
        }
    }
}
