//! Whole-tree verification: the invariants every other module relies on.

use barracuda_page::{PageNo, FIL_NULL};

use crate::error::{BTreeError, Result};
use crate::node::{Node, NodeRef, Value};
use crate::overflow;
use crate::tree::BTree;

/// The shape of a tree, as found by [`BTree::check`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeStats {
    /// Number of levels (1 = the root is a leaf).
    pub height: u32,
    /// Records in leaves (delete-marked ones included).
    pub records: u64,
    /// Leaf records carrying a delete mark: deleted rows purge has not removed yet (it removes
    /// them once no read view can need them).
    pub delete_marked: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Internal (non-leaf) pages.
    pub internal_pages: u64,
    /// Overflow pages of off-page values.
    pub overflow_pages: u64,
    /// Bytes used by records in leaf pages (including their directory slots).
    pub leaf_used_bytes: u64,
    /// Average fill of leaf pages, 0.0–1.0.
    pub leaf_fill: f64,
}

struct Walk {
    stats: TreeStats,
    previous_leaf: Option<PageNo>,
    last_key: Option<Vec<u8>>,
    leaf_capacity: u64,
}

/// Walks the tree depth-first, one shared latch at a time. Meant for a quiescent tree: under
/// concurrent structure changes it may report a spurious inconsistency.
pub(crate) fn check_tree(tree: &BTree) -> Result<TreeStats> {
    let mut walk = Walk {
        stats: TreeStats::default(),
        previous_leaf: None,
        last_key: None,
        leaf_capacity: 0,
    };
    let root_level = {
        let id = tree.page_id(tree.root);
        let guard = tree.ctx.pool.get_shared(id)?;
        NodeRef::open(&guard, id, tree)?.level()
    };
    walk.stats.height = u32::from(root_level) + 1;
    visit(tree, tree.root, root_level, None, None, &mut walk)?;
    if let Some(last) = walk.previous_leaf {
        let id = tree.page_id(last);
        let guard = tree.ctx.pool.get_shared(id)?;
        if NodeRef::open(&guard, id, tree)?.next().is_some() {
            return Err(BTreeError::corrupt(id, "last leaf has a next page"));
        }
    }
    if walk.stats.leaf_pages > 0 && walk.leaf_capacity > 0 {
        walk.stats.leaf_fill = walk.stats.leaf_used_bytes as f64 / walk.leaf_capacity as f64;
    }
    Ok(walk.stats)
}

fn visit(
    tree: &BTree,
    page_no: PageNo,
    level: u16,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    walk: &mut Walk,
) -> Result<()> {
    let id = tree.page_id(page_no);
    let guard = tree.ctx.pool.get_shared(id)?;
    let node = NodeRef::open_checked(&guard, id, tree)?;
    if node.level() != level {
        return Err(BTreeError::corrupt(
            id,
            format!("expected level {level}, found {}", node.level()),
        ));
    }
    for i in 0..node.len() {
        let key = node.key(i)?;
        // An internal node's first key is a routing bound, not a record: it may be lower.
        let routing = level > 0 && i == 0;
        if !routing && lower.is_some_and(|l| key < l) {
            return Err(BTreeError::corrupt(
                id,
                format!("key {i} is below its subtree's fence"),
            ));
        }
        if upper.is_some_and(|u| key >= u) {
            return Err(BTreeError::corrupt(
                id,
                format!("key {i} is at or above its subtree's fence"),
            ));
        }
    }
    if level == 0 {
        check_leaf(tree, &node, walk)?;
        return Ok(());
    }
    if node.is_empty() {
        return Err(BTreeError::corrupt(id, "internal node without children"));
    }
    walk.stats.internal_pages += 1;
    let mut children = Vec::with_capacity(node.len());
    for i in 0..node.len() {
        let child_lower = if i == 0 {
            lower.map(<[u8]>::to_vec)
        } else {
            Some(node.key(i)?.to_vec())
        };
        let child_upper = if i + 1 < node.len() {
            Some(node.key(i + 1)?.to_vec())
        } else {
            upper.map(<[u8]>::to_vec)
        };
        children.push((node.child(i)?, child_lower, child_upper));
    }
    drop(guard);
    for (child, child_lower, child_upper) in children {
        visit(
            tree,
            child,
            level - 1,
            child_lower.as_deref(),
            child_upper.as_deref(),
            walk,
        )?;
    }
    Ok(())
}

fn check_leaf(tree: &BTree, node: &Node<&[u8]>, walk: &mut Walk) -> Result<()> {
    let id = node.id();
    let expected_prev = walk.previous_leaf;
    if node.prev() != expected_prev {
        return Err(BTreeError::corrupt(
            id,
            format!("prev link {:?}, expected {:?}", node.prev(), expected_prev),
        ));
    }
    if let Some(prev) = walk.previous_leaf {
        let prev_id = tree.page_id(prev);
        let guard = tree.ctx.pool.get_shared(prev_id)?;
        let next = NodeRef::open(&guard, prev_id, tree)?.next();
        if next != Some(id.page_no) {
            return Err(BTreeError::corrupt(
                prev_id,
                format!("next link {next:?}, expected {}", id.page_no),
            ));
        }
    }
    if id.page_no != tree.root && node.is_empty() {
        return Err(BTreeError::corrupt(id, "empty leaf that is not the root"));
    }
    for i in 0..node.len() {
        let key = node.key(i)?;
        if walk.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(BTreeError::corrupt(
                id,
                format!("key {i} is not above the previous leaf's last key"),
            ));
        }
        walk.last_key = Some(key.to_vec());
        match node.value(i)? {
            Value::Inline(_) => {}
            Value::Overflow {
                total_len,
                first_page,
            } => {
                walk.stats.overflow_pages += overflow::chain_pages(tree, first_page, total_len)?;
            }
            Value::Child(_) => return Err(BTreeError::corrupt(id, "child pointer in a leaf")),
        }
        walk.stats.delete_marked += u64::from(node.sys(i)?.deleted);
    }
    walk.stats.records += node.len() as u64;
    walk.stats.leaf_pages += 1;
    walk.stats.leaf_used_bytes += node.used_space() as u64;
    walk.leaf_capacity += node.capacity() as u64;
    walk.previous_leaf = Some(id.page_no);
    let _ = FIL_NULL;
    Ok(())
}
