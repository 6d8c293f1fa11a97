//! Splits: a node that cannot take a record is split in two and the new right half is posted to
//! the parent, splitting upwards as far as needed; a root that splits is first raised.
//!
//! Two phases. [`BTree::acquire_for_split`] latches, allocates and reserves everything the split
//! chain may need — for every node that may split, a new page, a frame and its right neighbour
//! (whose back link changes), plus a page for raising the root — without changing a byte. Then
//! [`BTree::split_and_insert`] changes pages, taking only from what was acquired. InnoDB
//! reserves free extents before a pessimistic insert for the same reason
//! (`fsp_reserve_free_extents` in `btr_cur_pessimistic_insert`).

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::bytes::put_u32;
use barracuda_page::header::{OFF_NEXT, OFF_PREV};
use barracuda_page::{PageNo, SysFields};

use crate::error::{BTreeError, Result};
use crate::held::Held;
use crate::insert::shortest_separator;
use crate::mtr::{IndexChange, Mtr};
use crate::node::{self, NodeMut, NodeRef, Value};
use crate::routing::Routing;
use crate::tree::{max_key, BTree};
use crate::zip::{NodeChange, Placed};

impl BTree {
    /// Acquires what splitting `leaf` to place a key of `key_len` bytes may need, with `path`
    /// its latched ancestors (top first, as [`descend_pessimistic`](Self::descend_pessimistic)
    /// leaves them).
    ///
    /// A separator posted upwards is a prefix of a key of the node that split (or of the key
    /// being placed), so its length is bounded by the longest key met so far on the way up; an
    /// ancestor may split only if it might not take a separator of that bound, and the chain
    /// stops at the first that surely can. A bound, not the exact need (the real separator may
    /// be shorter): what goes unused is released afterwards.
    pub(crate) fn acquire_for_split<'a>(
        &'a self,
        leaf: &ExclusiveGuard<'a>,
        path: &[(ExclusiveGuard<'a>, usize)],
        key_len: usize,
    ) -> Result<Held<'a>> {
        let page_size = self.ctx.pool.page_size();
        // The leaf's keys are measured only for a parent that might not take a separator of
        // the longest key allowed: nearly always it can, and measuring reads every record.
        let any_separator = node::record_size(page_size, max_key(self), Value::Child(0));
        let mut separator_len = None;
        let mut may_split = vec![leaf];
        for (ancestor, _) in path.iter().rev() {
            let node = NodeRef::open(ancestor, ancestor.page_id(), self)?;
            let free = node.free_space();
            if free >= any_separator {
                break;
            }
            let bound = match separator_len {
                Some(len) => len,
                None => key_len.max(longest_key(&NodeRef::open(leaf, leaf.page_id(), self)?)?),
            };
            if free >= node::record_size(page_size, bound, Value::Child(0)) {
                break;
            }
            separator_len = Some(bound.max(longest_key(&node)?));
            may_split.push(ancestor);
        }
        let raises_root = may_split
            .last()
            .is_some_and(|top| top.page_id().page_no == self.root);
        let mut held = Held::new(self);
        for node in &may_split {
            if let Some(next) = NodeRef::open(node, node.page_id(), self)?.next() {
                held.latch(next)?;
            }
        }
        held.allocate(
            may_split.len() + usize::from(raises_root),
            leaf.page_id().page_no,
        )?;
        Ok(held)
    }

    /// Inserts a record that does not fit into `guard`'s node at `pos` by splitting the node,
    /// then posting the separator to the parent, splitting upwards as far as needed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn split_and_insert<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        held: &mut Held<'a>,
        guard: ExclusiveGuard<'a>,
        mut path: Vec<(ExclusiveGuard<'a>, usize)>,
        pos: usize,
        key: &[u8],
        value: Value<'_>,
        sys: SysFields,
    ) -> Result<()> {
        let (mut parent, mut pending) =
            self.split_up(mtr, held, guard, &mut path, pos, (key, value, sys))?;
        loop {
            let (pos, separator, right) = pending;
            let child = Value::Child(right);
            let id = parent.page_id();
            let fits = NodeRef::open(&parent, id, self)?.free_space()
                >= node::record_size(self.ctx.pool.page_size(), separator.len(), child);
            if fits {
                // The parent's routing copy, if current, is kept current through this insert
                // (below): otherwise every split would leave it stale, and the next descent
                // through it would decode the whole parent again.
                let copy = self
                    .ctx
                    .pool
                    .attached(parent.frame(), id)
                    .and_then(|a| a.value::<Routing>()?.with_inserted(pos, &separator, right));
                let change = NodeChange::Insert {
                    pos,
                    key: &separator,
                    value: child,
                    sys: SysFields::NONE,
                };
                // Through the parent's block when it can take it; otherwise the frame alone
                // (whether the parent splits was decided by the frame's room: a parent whose
                // block refuses is recompressed at commit, or kept plain).
                // A parent without a block in step takes it in its frame at once: a trial
                // compression here would be repeated by the commit's.
                let synced = parent.zip_state() == barracuda_buffer_pool::ZipState::Synced;
                if !synced || self.make_change(mtr, &mut parent, change)? == Placed::DoesNotFit {
                    if !NodeMut::open(parent.described_change_mut(), id, self)?.insert(
                        pos,
                        &separator,
                        child,
                        SysFields::NONE,
                    )? {
                        return Err(BTreeError::corrupt(
                            id,
                            "separator did not fit after a room check",
                        ));
                    }
                    let record = child.record(&separator, SysFields::NONE);
                    mtr.describe(&parent, IndexChange::Insert { pos, record })?;
                }
                if let Some(copy) = copy {
                    debug_assert!(
                        copy.routes_as(&Routing::of(&NodeRef::open(&parent, id, self)?)?),
                        "a routing copy kept through a split differs from the parent's"
                    );
                    parent.attach_final(Box::new(copy));
                }
                mtr.changed(parent);
                return Ok(());
            }
            (parent, pending) = self.split_up(
                mtr,
                held,
                parent,
                &mut path,
                pos,
                (&separator, child, SysFields::NONE),
            )?;
        }
    }

    /// Splits `guard`'s node placing `key → value` at `pos`, and returns the node's parent
    /// (latched) with what to post there: `(position, separator, new right page)`.
    #[allow(clippy::type_complexity)]
    fn split_up<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        held: &mut Held<'a>,
        guard: ExclusiveGuard<'a>,
        path: &mut Vec<(ExclusiveGuard<'a>, usize)>,
        pos: usize,
        record: (&[u8], Value<'_>, SysFields),
    ) -> Result<(ExclusiveGuard<'a>, (usize, Vec<u8>, PageNo))> {
        let (mut node, (parent, idx)) = self.prepare_split(held, guard, path)?;
        let (separator, right) = self.split_node(mtr, held, &mut node, pos, record)?;
        mtr.changed(node);
        Ok((parent, (idx + 1, separator, right)))
    }

    /// Gives the node to split and its parent (with the node's index in it). A root is first
    /// "raised": its records move to a new child, the root becomes that child's parent.
    #[allow(clippy::type_complexity)]
    fn prepare_split<'a>(
        &'a self,
        held: &mut Held<'a>,
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
        let mut child = held.take_new_page(id)?;
        let child_id = child.page_id();
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
        let placed = NodeMut::open(&mut guard, id, self)?.insert(
            0,
            &[],
            Value::Child(child_id.page_no),
            SysFields::NONE,
        )?;
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
        held: &mut Held<'a>,
        guard: &mut ExclusiveGuard<'a>,
        pos: usize,
        (key, value, sys): (&[u8], Value<'_>, SysFields),
    ) -> Result<(Vec<u8>, PageNo)> {
        let id = guard.page_id();
        let (level, old_next, split, n_before) = {
            let node = NodeRef::open(guard, id, self)?;
            (
                node.level(),
                node.next(),
                node.split_point(pos, key, value),
                node.len(),
            )
        };
        let mut right = held.take_new_page(id)?;
        let right_id = right.page_id();
        let right_no = right_id.page_no;
        let next = old_next.map(|n| held.take_latched(n)).transpose()?;
        {
            let mut right_node = NodeMut::init_created(
                &mut right,
                right_id,
                level,
                self.index_id,
                Some(id.page_no),
                old_next,
                self.ctx.pool.page_size(),
            )?;
            // The page split keeps is described (a split's changes to it, diffed, cost a
            // page copy and a search for shifted runs across most of a page); the new page
            // is created, so its image is logged whatever is described. An append that
            // splits (a load in key order) moves nothing: the left page keeps its records as
            // they are and only gains its link — on a compressed tree through its block's
            // log, so the page is not recompressed.
            let moves_nothing = split.at == n_before && !split.insert_left;
            if moves_nothing {
                // Appends go on in the new page: this one is done with, and where writing it
                // costs CPU (a page-compressed table) it can be written while the load goes on.
                guard.hint_write_behind();
            } else {
                NodeMut::open(guard.described_change_mut(), id, self)?
                    .move_tail_to(split.at, &mut right_node)?;
                mtr.describe(guard, IndexChange::Truncate { at: split.at })?;
            }
            let mut link = [0u8; 4];
            put_u32(&mut link, 0, right_no);
            self.write_header(mtr, guard, OFF_NEXT, &link)?;
            let placed = if split.insert_left {
                let placed = NodeMut::open(guard.described_change_mut(), id, self)?
                    .insert(pos, key, value, sys)?;
                if placed {
                    let record = value.record(key, sys);
                    mtr.describe(guard, IndexChange::Insert { pos, record })?;
                }
                placed
            } else {
                right_node.insert(pos - split.at, key, value, sys)?
            };
            if !placed {
                return Err(BTreeError::corrupt(
                    id,
                    "record does not fit in either half of a split",
                ));
            }
        }
        if let Some(mut next) = next {
            let next_id = next.page_id();
            NodeMut::open(next.described_change_mut(), next_id, self)?.set_prev(Some(right_no));
            mtr.describe(&next, link_change(&next, OFF_PREV))?;
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
        // The new page was the pool's zeroed frame, formatted by `init_created` and filled by
        // inserts alone: nothing has written between its heap and its directory.
        let gap = NodeRef::open(&right, right_id, self)?.free_gap();
        mtr.note_zero_gap(right_id, gap);
        mtr.changed(right);
        Ok((separator, right_no))
    }
}

/// The sibling link at `offset` (`OFF_PREV` or `OFF_NEXT`) of `page`, as a described write.
fn link_change<'g>(page: &'g ExclusiveGuard<'_>, offset: usize) -> IndexChange<'g> {
    IndexChange::Written {
        offset,
        bytes: page.get(offset..offset + 4).unwrap_or_default(),
    }
}

/// The length of the longest key in `node`.
fn longest_key(node: &NodeRef<'_>) -> Result<usize> {
    (0..node.len()).try_fold(0, |longest, i| Ok(longest.max(node.key(i)?.len())))
}
