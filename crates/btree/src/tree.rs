//! The tree handle, its context and the read path.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use barracuda_buffer_pool::{BufferPool, SharedGuard};
use barracuda_page::{PageId, PageNo, SpaceId};

use crate::alloc::PageAllocator;
use crate::error::{BTreeError, Result};
use crate::mtr::{LogSink, Mtr};
use crate::node::{self, NodeMut, NodeRef, Value};
use crate::overflow;
use crate::routing::LeafPlace;

/// What every tree of an engine shares: the pool, the page allocator and the log.
///
/// Every tree over one pool must be built on clones of one context: they share the structure
/// epoch that keeps their last-insert positions right (`append.rs`).
#[derive(Clone)]
pub struct TreeContext {
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) alloc: Arc<dyn PageAllocator>,
    pub(crate) log: Arc<dyn LogSink>,
    /// Bumped by every split and merge of any of these trees (`append.rs`).
    pub(crate) structure_epoch: Arc<AtomicU64>,
}

impl TreeContext {
    /// Bundles the services a tree needs.
    pub fn new(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
    ) -> Self {
        Self {
            pool,
            alloc,
            log,
            structure_epoch: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
}

impl std::fmt::Debug for TreeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeContext")
            .field("page_size", &self.pool.page_size())
            .finish_non_exhaustive()
    }
}

/// A B+tree rooted at a fixed page of one tablespace. Cheap to clone; `Send + Sync`.
#[derive(Clone, Debug)]
pub struct BTree {
    pub(crate) ctx: TreeContext,
    pub(crate) space: SpaceId,
    pub(crate) root: PageNo,
    pub(crate) index_id: u64,
    /// Row compression of its pages, `None` for a tree of plain pages.
    pub(crate) zip: Option<Arc<crate::zip::ZipIndex>>,
    /// The last-insert position (`append.rs`).
    pub(crate) append: Arc<crate::append::AppendHint>,
    /// The root's frame, where routed descents start (`routing.rs`).
    pub(crate) root_hint: Arc<crate::routing::RootHint>,
}

/// Which leaf a descent looks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'k> {
    /// The leaf that holds `key` if it exists (and the first key `>= key` otherwise).
    AtLeast(&'k [u8]),
    /// The leaf that holds the largest key `< key`.
    Below(&'k [u8]),
    /// The leaf that holds the largest key of the tree.
    Last,
}

/// A shared-latched leaf found by a descent, with the fences of its subtree.
pub(crate) struct LeafAt<'a> {
    pub(crate) guard: SharedGuard<'a>,
    /// Every key in the leaf is `< upper` (the next separator on the way down), if any.
    pub(crate) upper: Option<Vec<u8>>,
    /// Every key in the leaf is `>= lower` (the separator that routed to it), if any.
    pub(crate) lower: Option<Vec<u8>>,
    /// The leaf's place under its parent's routing copy, when a routed descent found it.
    pub(crate) place: Option<LeafPlace>,
}

impl BTree {
    /// Creates an empty tree with a freshly allocated root in `space`.
    pub fn create(ctx: TreeContext, space: SpaceId, index_id: u64) -> Result<Self> {
        let root = ctx.alloc.allocate(space, None)?;
        let tree = Self {
            ctx,
            space,
            root,
            index_id,
            zip: None,
            append: Arc::default(),
            root_hint: Arc::default(),
        };
        let mut mtr = tree.mtr();
        let mut guard = tree.ctx.pool.create(tree.page_id(root))?;
        NodeMut::init(
            &mut guard,
            tree.page_id(root),
            0,
            index_id,
            None,
            None,
            tree.ctx.pool.page_size(),
        )?;
        mtr.changed(guard);
        mtr.commit()?;
        Ok(tree)
    }

    /// Opens the tree whose root is `root` in `space`.
    pub fn open(ctx: TreeContext, space: SpaceId, root: PageNo, index_id: u64) -> Self {
        Self {
            ctx,
            space,
            root,
            index_id,
            zip: None,
            append: Arc::default(),
            root_hint: Arc::default(),
        }
    }

    /// The same tree with its index pages kept compressed as `zip` says (row compression): every
    /// change from now on keeps each page's block in step, and pages that have none get one.
    /// The pool must give the space's pages blocks of `zip`'s size
    /// ([`PageStore::zip_block_bytes`](barracuda_buffer_pool::PageStore::zip_block_bytes)).
    #[must_use]
    pub fn with_compression(mut self, zip: Arc<crate::zip::ZipIndex>) -> Self {
        self.zip = Some(zip);
        self
    }

    /// The tree's row compression, if its pages are compressed.
    pub fn compression(&self) -> Option<&Arc<crate::zip::ZipIndex>> {
        self.zip.as_ref()
    }

    /// A mini-transaction of this tree (with its row compression, if any).
    pub(crate) fn mtr(&self) -> Mtr<'_> {
        Mtr::new(self.ctx.log.as_ref()).with_zip(self.zip.as_deref())
    }

    /// The tablespace of the tree.
    pub fn space(&self) -> SpaceId {
        self.space
    }

    /// Whether the tree has no record at all: its root is a leaf without records (rows deleted
    /// but not yet purged are records).
    pub fn is_empty(&self) -> Result<bool> {
        let id = self.page_id(self.root);
        let guard = self.ctx.pool.get_shared(id)?;
        let root = NodeRef::open(&guard, id, self)?;
        Ok(root.level() == 0 && root.is_empty())
    }

    /// The root page number (fixed for the tree's life).
    pub fn root(&self) -> PageNo {
        self.root
    }

    /// The index id stored in every page of the tree.
    pub fn index_id(&self) -> u64 {
        self.index_id
    }

    /// The context (pool, allocator, log) the tree works with.
    pub fn context(&self) -> &TreeContext {
        &self.ctx
    }

    pub(crate) fn page_id(&self, page_no: PageNo) -> PageId {
        PageId::new(self.space, page_no)
    }

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        let max = max_key(self);
        if key.len() > max {
            return Err(BTreeError::KeyTooLong {
                len: key.len(),
                max,
            });
        }
        Ok(())
    }

    /// The value stored under `key`, if any.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if key.len() > max_key(self) {
            return Ok(None);
        }
        let leaf = self.descend(Target::AtLeast(key), false)?;
        let id = leaf.guard.page_id();
        let node = NodeRef::open(&leaf.guard, id, self)?;
        match node.search(key) {
            Ok(pos) => Ok(Some(self.read_value(id, node.value(pos)?)?)),
            Err(_) => Ok(None),
        }
    }

    /// Whether `key` is present, without reading its value.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        if key.len() > max_key(self) {
            return Ok(false);
        }
        let leaf = self.descend(Target::AtLeast(key), false)?;
        let node = NodeRef::open(&leaf.guard, leaf.guard.page_id(), self)?;
        Ok(node.search(key).is_ok())
    }

    /// Materialises a leaf value, following its overflow chain if it has one.
    pub(crate) fn read_value(&self, leaf: PageId, value: Value<'_>) -> Result<Vec<u8>> {
        match value {
            Value::Inline(bytes) => Ok(bytes.to_vec()),
            Value::Overflow {
                total_len,
                first_page,
            } => overflow::read_chain(self, first_page, total_len),
            Value::Child(_) => Err(BTreeError::corrupt(leaf, "child pointer in a leaf")),
        }
    }

    /// Descends with shared latches (coupled parent → child) to the leaf for `target`, with the
    /// leaf's fences (what iterators need to find the next leaf).
    pub(crate) fn descend_shared(&self, target: Target<'_>) -> Result<LeafAt<'_>> {
        self.descend(target, true)
    }

    /// The descent; point reads skip the fences, which cost an allocation per level. Routed
    /// through the inner nodes' routing copies where they are current (`routing.rs`), else
    /// latched.
    pub(crate) fn descend(&self, target: Target<'_>, with_fences: bool) -> Result<LeafAt<'_>> {
        if let Some(leaf) = self.descend_routed(target, with_fences) {
            return Ok(leaf);
        }
        self.descend_latched(target, with_fences, Copies::Build)
    }

    /// A reader's descent made for a writer about to change the leaf: routed where the copies
    /// are current, but a latched descent builds no copy. The change it precedes often makes
    /// the parent's copy stale at once (a merge or a delete's rebalancing, which do not keep
    /// it; splits do), and a copy of a full inner node is an allocation and a pass over
    /// hundreds of keys: in a sorted load, before splits kept copies, that was a tenth of the
    /// time per row.
    pub(crate) fn descend_to_change(&self, target: Target<'_>) -> Result<LeafAt<'_>> {
        if let Some(leaf) = self.descend_routed(target, false) {
            return Ok(leaf);
        }
        self.descend_latched(target, false, Copies::Skip)
    }

    /// The descent with shared latches coupled parent → child; with [`Copies::Build`] gives
    /// the inner nodes it crosses a current routing copy, and the copies the frames their
    /// children were found in.
    fn descend_latched(
        &self,
        target: Target<'_>,
        with_fences: bool,
        copies: Copies,
    ) -> Result<LeafAt<'_>> {
        let mut guard = self.ctx.pool.get_shared(self.page_id(self.root))?;
        self.root_hint.note(guard.stamp().frame());
        let mut upper: Option<Vec<u8>> = None;
        let mut lower: Option<Vec<u8>> = None;
        let mut expected_level: Option<u16> = None;
        loop {
            let id = guard.page_id();
            let node = NodeRef::open(&guard, id, self)?;
            if let Some(level) = expected_level {
                if node.level() != level {
                    return Err(BTreeError::corrupt(
                        id,
                        format!("expected level {level}, found {}", node.level()),
                    ));
                }
            }
            if node.level() == 0 {
                return Ok(LeafAt {
                    guard,
                    upper,
                    lower,
                    place: None,
                });
            }
            let idx = node.route(target)?;
            if with_fences && idx + 1 < node.len() {
                upper = Some(node.key(idx + 1)?.to_vec());
            }
            if with_fences && idx > 0 {
                lower = Some(node.key(idx)?.to_vec());
            }
            let child = node.child(idx)?;
            expected_level = Some(node.level() - 1);
            let routing = match copies {
                Copies::Build => self.routing_of(&guard, &node),
                Copies::Skip => None,
            };
            // Latch coupling: the child is latched before the parent is released.
            let child_guard = self.ctx.pool.get_shared(self.page_id(child))?;
            if let Some(r) = routing
                .as_ref()
                .and_then(|a| a.value::<crate::routing::Routing>())
            {
                r.note_child(idx, child_guard.stamp().frame());
            }
            guard = child_guard;
        }
    }

    /// Verifies the whole tree (order, levels, sibling links, overflow chains) and returns its
    /// shape. Used by tests and by `barracuda check`.
    pub fn check(&self) -> Result<crate::check::TreeStats> {
        crate::check::check_tree(self)
    }
}

/// Whether a latched descent gives the inner nodes it crosses routing copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Copies {
    /// Build a copy where none is current (readers).
    Build,
    /// Leave the copies as they are (a writer's descent).
    Skip,
}

pub(crate) fn max_key(tree: &BTree) -> usize {
    node::max_key_len(tree.ctx.pool.page_size())
}
