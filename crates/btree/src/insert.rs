//! Insert and replace: optimistic leaf change, or a pessimistic descent that splits.

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::PageNo;

use crate::error::{BTreeError, Result};
use crate::mtr::Mtr;
use crate::node::{self, Node, NodeMut, NodeRef, Value, MAX_VALUE_LEN};
use crate::overflow;
use crate::tree::{BTree, Target};

/// What a put found under its key before it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Previous {
    /// The key was absent.
    Absent,
    /// The key had an inline value.
    Inline,
    /// The key had an off-page value whose chain must be freed once the new record is in.
    Overflow { first_page: PageNo },
}

impl Previous {
    pub(crate) fn of(value: Value<'_>) -> Self {
        match value {
            Value::Overflow { first_page, .. } => Self::Overflow { first_page },
            Value::Inline(_) | Value::Child(_) => Self::Inline,
        }
    }
}

impl BTree {
    /// Stores `value` under `key`, replacing any previous value. Returns whether a value was
    /// replaced.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.check_key(key)?;
        let len = value.len() as u64;
        if len > MAX_VALUE_LEN {
            return Err(BTreeError::ValueTooLong {
                len,
                max: MAX_VALUE_LEN,
            });
        }
        let page_size = self.ctx.pool.page_size();
        let (stored, chain) = if node::needs_overflow(page_size, key.len(), value.len()) {
            let first_page = overflow::write_chain(self, value)?;
            (
                Value::Overflow {
                    total_len: len,
                    first_page,
                },
                Some(first_page),
            )
        } else {
            (Value::Inline(value), None)
        };
        match self.put_value(key, stored) {
            Ok(previous) => {
                if let Previous::Overflow { first_page } = previous {
                    overflow::free_chain(self, first_page)?;
                }
                Ok(previous != Previous::Absent)
            }
            Err(err) => {
                // The record never made it in: give its chain back rather than leak it.
                if let Some(first_page) = chain {
                    if let Err(free_err) = overflow::free_chain(self, first_page) {
                        tracing::warn!(%free_err, "could not free the overflow chain of a failed put");
                    }
                }
                Err(err)
            }
        }
    }

    fn put_value(&self, key: &[u8], value: Value<'_>) -> Result<Previous> {
        if let Some(previous) = self.put_optimistic(key, value)? {
            return Ok(previous);
        }
        self.put_pessimistic(key, value)
    }

    /// Shared latches down to the leaf's parent, an exclusive latch on the leaf; succeeds when the
    /// record fits in the leaf. `None` means a split is needed.
    fn put_optimistic(&self, key: &[u8], value: Value<'_>) -> Result<Option<Previous>> {
        let mut leaf = self.descend_leaf_exclusive(key)?;
        let id = leaf.page_id();
        let previous = {
            let mut node = NodeMut::open(&mut leaf, id, self)?;
            match node.search(key) {
                Ok(pos) => {
                    let previous = Previous::of(node.value(pos)?);
                    if !node.replace(pos, key, value)? {
                        return Ok(None);
                    }
                    previous
                }
                Err(pos) => {
                    if !node.insert(pos, key, value)? {
                        return Ok(None);
                    }
                    Previous::Absent
                }
            }
        };
        let mut mtr = Mtr::new(self.ctx.log.as_ref());
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(Some(previous))
    }

    /// Descends with shared latches, coupled, and latches the leaf exclusively.
    pub(crate) fn descend_leaf_exclusive(&self, key: &[u8]) -> Result<ExclusiveGuard<'_>> {
        let pool = &self.ctx.pool;
        let root_id = self.page_id(self.root);
        loop {
            let mut guard = pool.get_shared(root_id)?;
            if NodeRef::open(&guard, root_id, self)?.level() == 0 {
                // The root is the only leaf: relatch it exclusively. A root raise may have
                // happened in between, so check the level again.
                drop(guard);
                let root = pool.get_exclusive(root_id)?;
                if NodeRef::open(&root, root_id, self)?.level() == 0 {
                    return Ok(root);
                }
                continue;
            }
            loop {
                let id = guard.page_id();
                let node = NodeRef::open(&guard, id, self)?;
                let child = node.child(node.route(Target::AtLeast(key))?)?;
                let child_id = self.page_id(child);
                if node.level() == 1 {
                    let leaf = pool.get_exclusive(child_id)?;
                    if NodeRef::open(&leaf, child_id, self)?.level() != 0 {
                        return Err(BTreeError::corrupt(
                            child_id,
                            "child of a level-1 node is not a leaf",
                        ));
                    }
                    return Ok(leaf);
                }
                let child_guard = pool.get_shared(child_id)?;
                guard = child_guard;
            }
        }
    }

    /// Descends with exclusive latches from the root to the leaf for `key`, keeping the path of
    /// ancestors (with the child index taken in each) that a structure change may need. As soon
    /// as a node is `safe` — the change below cannot propagate through it — every ancestor above
    /// it is released, so the change blocks only the subtree it can reshape.
    #[allow(clippy::type_complexity)]
    pub(crate) fn descend_pessimistic(
        &self,
        key: &[u8],
        safe: impl Fn(&Node<&[u8]>) -> bool,
    ) -> Result<(ExclusiveGuard<'_>, Vec<(ExclusiveGuard<'_>, usize)>)> {
        let pool = &self.ctx.pool;
        let mut path: Vec<(ExclusiveGuard<'_>, usize)> = Vec::new();
        let mut guard = pool.get_exclusive(self.page_id(self.root))?;
        loop {
            let id = guard.page_id();
            let node = NodeRef::open(&guard, id, self)?;
            if node.level() == 0 {
                return Ok((guard, path));
            }
            let idx = node.route(Target::AtLeast(key))?;
            let child_id = self.page_id(node.child(idx)?);
            let child = pool.get_exclusive(child_id)?;
            let child_is_safe = safe(&NodeRef::open(&child, child_id, self)?);
            path.push((guard, idx));
            if child_is_safe {
                path.clear();
            }
            guard = child;
        }
    }

    /// Exclusive latches from the root; ancestors are released as soon as the node below them
    /// can take one more separator without splitting.
    fn put_pessimistic(&self, key: &[u8], value: Value<'_>) -> Result<Previous> {
        let page_size = self.ctx.pool.page_size();
        let leaf_record = node::record_size(page_size, key.len(), value);
        let separator_record = node::max_separator_record(page_size);
        let (mut guard, path) = self.descend_pessimistic(key, |node| {
            let needed = if node.level() == 0 {
                leaf_record
            } else {
                separator_record
            };
            node.free_space() >= needed
        })?;

        let mut mtr = Mtr::new(self.ctx.log.as_ref());
        let id = guard.page_id();
        let (pos, previous) = {
            let mut leaf = NodeMut::open(&mut guard, id, self)?;
            match leaf.search(key) {
                Ok(pos) => {
                    let previous = Previous::of(leaf.value(pos)?);
                    if leaf.replace(pos, key, value)? {
                        mtr.changed(guard);
                        mtr.commit()?;
                        return Ok(previous);
                    }
                    leaf.remove(pos)?;
                    (pos, previous)
                }
                Err(pos) => {
                    if leaf.insert(pos, key, value)? {
                        mtr.changed(guard);
                        mtr.commit()?;
                        return Ok(Previous::Absent);
                    }
                    (pos, Previous::Absent)
                }
            }
        };
        self.split_and_insert(&mut mtr, guard, path, pos, key, value)?;
        mtr.commit()?;
        Ok(previous)
    }

    /// Inserts a record that does not fit into `guard`'s node at `pos` by splitting the node,
    /// then posting the separator to the parent, splitting upwards as far as needed.
    fn split_and_insert<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        guard: ExclusiveGuard<'a>,
        mut path: Vec<(ExclusiveGuard<'a>, usize)>,
        pos: usize,
        key: &[u8],
        value: Value<'_>,
    ) -> Result<()> {
        let (mut parent, mut pending) = self.split_up(mtr, guard, &mut path, pos, key, value)?;
        loop {
            let (pos, separator, right) = pending;
            let child = Value::Child(right);
            let id = parent.page_id();
            if NodeMut::open(&mut parent, id, self)?.insert(pos, &separator, child)? {
                mtr.changed(parent);
                return Ok(());
            }
            (parent, pending) = self.split_up(mtr, parent, &mut path, pos, &separator, child)?;
        }
    }

    /// Splits `guard`'s node placing `key → value` at `pos`, and returns the node's parent
    /// (latched) with what to post there: `(position, separator, new right page)`.
    #[allow(clippy::type_complexity)]
    fn split_up<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        guard: ExclusiveGuard<'a>,
        path: &mut Vec<(ExclusiveGuard<'a>, usize)>,
        pos: usize,
        key: &[u8],
        value: Value<'_>,
    ) -> Result<(ExclusiveGuard<'a>, (usize, Vec<u8>, PageNo))> {
        let (mut node, (parent, idx)) = self.prepare_split(guard, path)?;
        let (separator, right) = self.split_node(mtr, &mut node, pos, key, value)?;
        mtr.changed(node);
        Ok((parent, (idx + 1, separator, right)))
    }

    /// Gives the node to split and its parent (with the node's index in it). A root is first
    /// "raised": its records move to a new child, the root becomes that child's parent.
    #[allow(clippy::type_complexity)]
    fn prepare_split<'a>(
        &'a self,
        mut guard: ExclusiveGuard<'a>,
        path: &mut Vec<(ExclusiveGuard<'a>, usize)>,
    ) -> Result<(ExclusiveGuard<'a>, (ExclusiveGuard<'a>, usize))> {
        if let Some(parent) = path.pop() {
            return Ok((guard, parent));
        }
        let id = guard.page_id();
        if id.page_no != self.root {
            return Err(BTreeError::corrupt(
                id,
                "a node released as safe had to split",
            ));
        }
        let (level, index_id) = {
            let node = NodeRef::open(&guard, id, self)?;
            (node.level(), node.index_id())
        };
        let child_no = self.ctx.alloc.allocate(self.space, Some(self.root))?;
        let child_id = self.page_id(child_no);
        let mut child = self.ctx.pool.create(child_id)?;
        NodeMut::copy_page(&mut child, &guard, child_id)?;
        NodeMut::open(&mut child, child_id, self)?.set_links(None, None);
        NodeMut::init(
            &mut guard,
            id,
            level + 1,
            index_id,
            None,
            None,
            self.ctx.pool.page_size(),
        )?;
        let placed = NodeMut::open(&mut guard, id, self)?.insert(0, &[], Value::Child(child_no))?;
        if !placed {
            return Err(BTreeError::corrupt(
                id,
                "an empty root cannot take one child pointer",
            ));
        }
        Ok((child, (guard, 0)))
    }

    /// Splits `guard`'s node into itself and a new right sibling, placing the new record in the
    /// half it belongs to. Returns the separator for the parent and the new page.
    fn split_node<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        guard: &mut ExclusiveGuard<'a>,
        pos: usize,
        key: &[u8],
        value: Value<'_>,
    ) -> Result<(Vec<u8>, PageNo)> {
        let id = guard.page_id();
        let (level, old_next, split) = {
            let node = NodeRef::open(guard, id, self)?;
            (node.level(), node.next(), node.split_point(pos, key, value))
        };
        let right_no = self.ctx.alloc.allocate(self.space, Some(id.page_no))?;
        let right_id = self.page_id(right_no);
        let mut right = self.ctx.pool.create(right_id)?;
        let page_size = self.ctx.pool.page_size();
        {
            let mut right_node = NodeMut::init(
                &mut right,
                right_id,
                level,
                self.index_id,
                Some(id.page_no),
                old_next,
                page_size,
            )?;
            let mut left = NodeMut::open(guard, id, self)?;
            left.move_tail_to(split.at, &mut right_node)?;
            left.set_next(Some(right_no));
            let placed = if split.insert_left {
                left.insert(pos, key, value)?
            } else {
                right_node.insert(pos - split.at, key, value)?
            };
            if !placed {
                return Err(BTreeError::corrupt(
                    id,
                    "record does not fit in either half of a split",
                ));
            }
        }
        if let Some(next_no) = old_next {
            let next_id = self.page_id(next_no);
            let mut next = self.ctx.pool.get_exclusive(next_id)?;
            NodeMut::open(&mut next, next_id, self)?.set_prev(Some(right_no));
            mtr.changed(next);
        }
        let separator = {
            let left = NodeRef::open(guard, id, self)?;
            let right_node = NodeRef::open(&right, right_id, self)?;
            let first = right_node.key(0)?;
            if level == 0 {
                shortest_separator(left.key(left.len().saturating_sub(1))?, first)
            } else {
                first.to_vec()
            }
        };
        mtr.changed(right);
        Ok((separator, right_no))
    }
}

/// The shortest prefix of `right` that is greater than `left` (suffix truncation): parents hold
/// shorter keys, so internal nodes fan out further.
pub(crate) fn shortest_separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    for len in 1..=right.len() {
        if let Some(prefix) = right.get(..len) {
            if prefix > left {
                return prefix.to_vec();
            }
        }
    }
    right.to_vec()
}

#[cfg(test)]
mod tests {
    use super::shortest_separator;

    #[test]
    fn separator_is_shortest_prefix_above_left() {
        assert_eq!(shortest_separator(b"apple", b"banana"), b"b");
        assert_eq!(shortest_separator(b"abc", b"abd"), b"abd");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc");
        assert_eq!(shortest_separator(b"", b"a"), b"a");
        assert_eq!(shortest_separator(b"a1000", b"a2"), b"a2");
    }
}
