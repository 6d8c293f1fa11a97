//! Routed descents: reads that cross the root and the inner pages without latching, pinning or
//! hashing them, through immutable routing copies attached to their frames.
//!
//! A latched descent takes, per level, a page-hash shard lock, a pin and a shared latch: six
//! atomic read-modify-writes on cache lines that every reader of the tree shares, since every
//! descent crosses the root. With two readers on two cores those lines travel between the cores
//! at every get. A routed descent instead reads, per inner level, the node's [`Routing`] — its
//! separator keys and child page numbers, decoded once under the shared latch and attached to
//! the frame ([`SharedGuard::attach`]) — and the frame's version; it latches only the leaf.
//!
//! **Why a routed descent finds the right leaf.** A routing copy is used only while its frame's
//! version is the one it was built at, and the version changes before the first change to the
//! page's bytes (and at every eviction or reuse of the frame). After latching the leaf, the
//! descent checks that every inner node it crossed is still at its version. If so, no change
//! to any of them had begun when the leaf was latched. Every structure change (split, merge,
//! root raise) latches the parent exclusively before it changes a child and changes the parent
//! (a separator added or removed) before it releases the child: so a leaf that is latched while
//! its parent is unchanged either was not touched by a structure change, or that change is not
//! started and now waits for the leaf's latch. A descent whose check fails falls back to the
//! latched descent, which also builds the routing copies it finds missing or stale.
//!
//! **Copies kept through splits.** A split posts its separator to the parent under the
//! parent's exclusive latch; the parent's current copy, with the separator and the new child
//! inserted ([`Routing::with_inserted`]), is attached again after that change
//! ([`ExclusiveGuard::attach_final`](barracuda_buffer_pool::ExclusiveGuard::attach_final)), at
//! the version the change gave the frame. Without it every split left its parent's copy stale
//! and a random load rebuilt a copy of hundreds of keys every few dozen rows. A reader that
//! takes the new copy before the split's mtr ends routes to a child the split still holds
//! latched, and waits for it as a latched descent would.
//!
//! A copy takes 20 bytes an entry plus the key (28 for an 8-byte key, where the page's record
//! and slot take 17), so about 1.6 times its node's used bytes; only inner pages get one (one
//! page in several hundred: 16 above ~13,000 leaves for a million 188-byte rows at 16 KiB),
//! and a frame's copy is dropped when the frame is reused.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use barracuda_buffer_pool::{Attached, FrameNo, FrameStamp, SharedGuard};
use barracuda_page::{key_head as head, PageNo};

use crate::error::Result;
use crate::node::NodeRef;
use crate::tree::{BTree, LeafAt, Target};

/// Levels a routed descent follows; deeper trees (billions of rows) descend latched.
const MAX_DEPTH: usize = 8;

/// Copies with fewer keys are bisected alone.
const INTERPOLATE_FROM: usize = 16;

/// The gallop from an interpolated guess stops at this distance (then bisects what is left).
const GALLOP_LIMIT: usize = 4;

/// "No hint" in a child's frame hint.
const NO_HINT: u32 = u32::MAX;

/// The frame that held the root at the last latched descent (a hint, checked at every use).
#[derive(Debug)]
pub(crate) struct RootHint(AtomicU32);

impl Default for RootHint {
    fn default() -> Self {
        Self(AtomicU32::new(NO_HINT))
    }
}

impl RootHint {
    fn get(&self) -> FrameNo {
        FrameNo::from_raw(self.0.load(Relaxed))
    }

    /// Remembers the root's frame; stores only a change, so that readers keep the line shared.
    pub(crate) fn note(&self, frame: FrameNo) {
        if self.0.load(Relaxed) != frame.to_raw() {
            self.0.store(frame.to_raw(), Relaxed);
        }
    }
}

/// An inner node's routing: what a descent reads of it, decoded once.
pub(crate) struct Routing {
    level: u16,
    /// Each key's first eight bytes, big-endian, zero-padded: the binary search compares these
    /// and reads a key itself only when they are equal.
    heads: Box<[u64]>,
    /// Key `i` is `keys[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Box<[u32]>,
    keys: Box<[u8]>,
    /// Each child and the frame it was last found in, side by side: a descent reads both, and
    /// the two in one cache line are one miss, not two.
    links: Box<[Link]>,
}

/// A child page and a hint of its frame.
struct Link {
    child: PageNo,
    /// The frame the child was last found in (`NO_HINT`: none yet); checked at every use.
    hint: AtomicU32,
}

impl Routing {
    /// Decodes inner node `node` (a page error names the page).
    pub(crate) fn of(node: &NodeRef<'_>) -> Result<Self> {
        let len = node.len();
        let (mut heads, mut ends, mut links) = (
            Vec::with_capacity(len),
            Vec::with_capacity(len),
            Vec::with_capacity(len),
        );
        let mut keys = Vec::new();
        for i in 0..len {
            let key = node.key(i)?;
            heads.push(head(key));
            keys.extend_from_slice(key);
            // A page's keys total less than a page: the end fits in a u32.
            ends.push(u32::try_from(keys.len()).unwrap_or(u32::MAX));
            links.push(Link {
                child: node.child(i)?,
                hint: AtomicU32::new(NO_HINT),
            });
        }
        Ok(Self {
            level: node.level(),
            heads: heads.into(),
            ends: ends.into(),
            keys: keys.into(),
            links: links.into(),
        })
    }

    /// This copy with `key → child` inserted at position `pos` (what a split posts to the
    /// parent): the copy of the node after that insert, built without decoding the page. The
    /// children's frame hints are kept; the new child has none yet. `None` if `pos` is past
    /// the end.
    pub(crate) fn with_inserted(&self, pos: usize, key: &[u8], child: PageNo) -> Option<Self> {
        if pos > self.len() {
            return None;
        }
        let key_len = u32::try_from(key.len()).ok()?;
        let at = match pos.checked_sub(1) {
            Some(p) => *self.ends.get(p)?,
            None => 0,
        } as usize;
        let mut heads = Vec::with_capacity(self.len() + 1);
        heads.extend_from_slice(self.heads.get(..pos)?);
        heads.push(head(key));
        heads.extend_from_slice(self.heads.get(pos..)?);
        let mut ends = Vec::with_capacity(self.len() + 1);
        ends.extend_from_slice(self.ends.get(..pos)?);
        ends.push(u32::try_from(at).ok()? + key_len);
        ends.extend(self.ends.get(pos..)?.iter().map(|end| end + key_len));
        let mut keys = Vec::with_capacity(self.keys.len() + key.len());
        keys.extend_from_slice(self.keys.get(..at)?);
        keys.extend_from_slice(key);
        keys.extend_from_slice(self.keys.get(at..)?);
        let copy_link = |link: &Link| Link {
            child: link.child,
            hint: AtomicU32::new(link.hint.load(Relaxed)),
        };
        let mut links = Vec::with_capacity(self.len() + 1);
        links.extend(self.links.get(..pos)?.iter().map(copy_link));
        links.push(Link {
            child,
            hint: AtomicU32::new(NO_HINT),
        });
        links.extend(self.links.get(pos..)?.iter().map(copy_link));
        Some(Self {
            level: self.level,
            heads: heads.into(),
            ends: ends.into(),
            keys: keys.into(),
            links: links.into(),
        })
    }

    /// Whether this copy routes as `other` does: same level, keys and children (frame hints
    /// aside).
    pub(crate) fn routes_as(&self, other: &Routing) -> bool {
        self.level == other.level
            && self.heads == other.heads
            && self.ends == other.ends
            && self.keys == other.keys
            && self.links.len() == other.links.len()
            && self
                .links
                .iter()
                .zip(other.links.iter())
                .all(|(a, b)| a.child == b.child)
    }

    fn len(&self) -> usize {
        self.links.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        } as usize;
        let end = self.ends.get(i).copied().unwrap_or(0) as usize;
        self.keys.get(start..end).unwrap_or(&[])
    }

    /// As `IndexPage::search`: `Ok(i)` if key `i` equals `key`, else `Err(i)` with `i` the
    /// number of keys below it. Where the heads are spread evenly, the position is interpolated
    /// between the first and last heads and a gallop brackets it (each probe of a bisection
    /// over a copy of ~800 heads is a cache line of its own); a wrong guess costs the gallop's
    /// few probes before the bisection of what is left.
    fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        let wanted = head(key);
        let n = self.len();
        let (first, last) = match (self.heads.first(), self.heads.last()) {
            (Some(&f), Some(&l)) if n >= INTERPOLATE_FROM && f < l => (f, l),
            _ => return self.bisect(key, wanted, 0, n),
        };
        if wanted < first {
            return Err(0);
        }
        if wanted > last {
            return Err(n);
        }
        let offset = u128::from(wanted - first) * ((n - 1) as u128) / u128::from(last - first);
        let guess = usize::try_from(offset).unwrap_or(n - 1).min(n - 1);
        let (mut lo, mut hi) = (0, n);
        match self.order(guess, key, wanted) {
            Ordering::Equal => return Ok(guess),
            Ordering::Less => {
                lo = guess + 1;
                let mut step = 1;
                while step <= GALLOP_LIMIT {
                    let probe = guess + step;
                    if probe >= n {
                        break;
                    }
                    match self.order(probe, key, wanted) {
                        Ordering::Less => lo = probe + 1,
                        Ordering::Equal => return Ok(probe),
                        Ordering::Greater => {
                            hi = probe;
                            break;
                        }
                    }
                    step *= 2;
                }
            }
            Ordering::Greater => {
                hi = guess;
                let mut step = 1;
                while step <= GALLOP_LIMIT {
                    let Some(probe) = guess.checked_sub(step) else {
                        break;
                    };
                    match self.order(probe, key, wanted) {
                        Ordering::Greater => hi = probe,
                        Ordering::Equal => return Ok(probe),
                        Ordering::Less => {
                            lo = probe + 1;
                            break;
                        }
                    }
                    step *= 2;
                }
            }
        }
        self.bisect(key, wanted, lo, hi)
    }

    /// Key `i` against `key` (whose head is `wanted`): by the heads, by the keys where the
    /// heads are equal.
    fn order(&self, i: usize, key: &[u8], wanted: u64) -> Ordering {
        match self.heads.get(i).map(|h| h.cmp(&wanted)) {
            Some(Ordering::Equal) | None => self.key(i).cmp(key),
            Some(unequal) => unequal,
        }
    }

    /// Binary search of keys `lo..hi`, knowing the keys below `lo` are less than `key` and
    /// those from `hi` on greater.
    fn bisect(
        &self,
        key: &[u8],
        wanted: u64,
        mut lo: usize,
        mut hi: usize,
    ) -> std::result::Result<usize, usize> {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.order(mid, key, wanted) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// As `Node::route` on the node this was decoded from (which has at least one record:
    /// `of` is only called on nodes that routed).
    fn route(&self, target: Target<'_>) -> usize {
        match target {
            Target::AtLeast(key) => match self.search(key) {
                Ok(i) => i,
                Err(i) => i.saturating_sub(1),
            },
            Target::Below(key) => match self.search(key) {
                Ok(i) | Err(i) => i.saturating_sub(1),
            },
            Target::Last => self.len().saturating_sub(1),
        }
    }

    fn hint(&self, i: usize) -> Option<FrameNo> {
        let raw = self.links.get(i)?.hint.load(Relaxed);
        (raw != NO_HINT).then(|| FrameNo::from_raw(raw))
    }

    /// Remembers where child `i` was found (stores only a change: the copy's lines stay shared).
    pub(crate) fn note_child(&self, i: usize, frame: FrameNo) {
        if let Some(link) = self.links.get(i) {
            if link.hint.load(Relaxed) != frame.to_raw() {
                link.hint.store(frame.to_raw(), Relaxed);
            }
        }
    }
}

/// A leaf's place under its parent's routing copy: the copy and the leaf's index in it. A scan
/// keeps it to step to the next leaf through the copy's frame hint instead of the page hash,
/// whose lookup misses the CPU cache in a large pool (12 % of a 100-row scan at 4 KiB pages,
/// EXPERIMENTS §16). The copy may go stale meanwhile; its hints are checked at every use.
pub(crate) struct LeafPlace {
    parent: Attached,
    idx: usize,
}

/// Where a routed descent ended: the leaf's page and the fences of its subtree, and the stamps
/// of the inner nodes crossed, to check once the leaf is latched.
pub(crate) struct Routed {
    pub(crate) leaf: PageNo,
    /// The level-1 node's copy and the leaf's index in it (for the leaf's frame hint).
    parent: Option<LeafPlace>,
    pub(crate) upper: Option<Vec<u8>>,
    pub(crate) lower: Option<Vec<u8>>,
    stamps: [Option<FrameStamp>; MAX_DEPTH],
}

impl BTree {
    /// Routes `target` through the routing copies from the root to a leaf's page number;
    /// `None` where a copy is missing or stale (the caller descends latched).
    pub(crate) fn route_to_leaf(&self, target: Target<'_>, with_fences: bool) -> Option<Routed> {
        let pool = &self.ctx.pool;
        let mut id = self.page_id(self.root);
        let mut frame = self.root_hint.get();
        let mut routed = Routed {
            leaf: 0,
            parent: None,
            upper: None,
            lower: None,
            stamps: [None; MAX_DEPTH],
        };
        let mut expected_level = None;
        for depth in 0..MAX_DEPTH {
            let attached = pool.attached(frame, id)?;
            let node: &Routing = attached.value()?;
            if node.level == 0 || expected_level.is_some_and(|l| l != node.level) {
                return None;
            }
            *routed.stamps.get_mut(depth)? = Some(attached.stamp());
            // The pool sees no hit on a page read through its copy: tell its LRU, or the
            // root and inner pages, the hottest of all, would age out as unused.
            pool.touch(attached.stamp());
            let idx = node.route(target);
            if with_fences && idx + 1 < node.len() {
                routed.upper = Some(node.key(idx + 1).to_vec());
            }
            if with_fences && idx > 0 {
                routed.lower = Some(node.key(idx).to_vec());
            }
            let child = node.links.get(idx)?.child;
            if node.level == 1 {
                routed.leaf = child;
                routed.parent = Some(LeafPlace {
                    parent: attached,
                    idx,
                });
                return Some(routed);
            }
            frame = node.hint(idx)?;
            id = self.page_id(child);
            expected_level = Some(node.level - 1);
        }
        None
    }

    /// Whether every inner node a routed descent crossed is unchanged; called with the leaf
    /// latched (see the module's doc for why that makes the leaf the right one).
    pub(crate) fn route_still_holds(&self, routed: &Routed) -> bool {
        routed
            .stamps
            .iter()
            .flatten()
            .all(|stamp| self.ctx.pool.is_current(*stamp))
    }

    /// The routed descent with a shared latch on the leaf; `None` where it cannot be used.
    pub(crate) fn descend_routed(
        &self,
        target: Target<'_>,
        with_fences: bool,
    ) -> Option<LeafAt<'_>> {
        let pool = &self.ctx.pool;
        let mut routed = self.route_to_leaf(target, with_fences)?;
        let guard = self.latch_routed_leaf(
            &mut routed,
            |id, frame| pool.get_shared_at(id, frame),
            |id| pool.get_shared(id),
            |guard| guard.stamp().frame(),
        )?;
        Some(LeafAt {
            guard,
            upper: routed.upper,
            lower: routed.lower,
            place: routed.parent,
        })
    }

    /// The routed descent with the leaf latched exclusively (a writer's); `None` where it
    /// cannot be used.
    pub(crate) fn descend_routed_exclusive(
        &self,
        key: &[u8],
    ) -> Option<barracuda_buffer_pool::ExclusiveGuard<'_>> {
        let pool = &self.ctx.pool;
        let mut routed = self.route_to_leaf(Target::AtLeast(key), false)?;
        self.latch_routed_leaf(
            &mut routed,
            |id, frame| pool.get_exclusive_at(id, frame),
            |id| pool.get_exclusive(id),
            barracuda_buffer_pool::ExclusiveGuard::frame,
        )
    }

    /// The routed descent with the leaf latched exclusively only if nothing has to be waited
    /// for: `None` where a copy is missing or stale, the leaf is not in the pool, or its latch
    /// is held — by anyone, this thread included. For a writer that holds other leaves of its
    /// mini-transaction: it must not wait for a latch while holding them (a merge latches
    /// right to left), and gives up instead.
    pub(crate) fn try_descend_routed_exclusive(
        &self,
        key: &[u8],
    ) -> Option<barracuda_buffer_pool::ExclusiveGuard<'_>> {
        let pool = &self.ctx.pool;
        let mut routed = self.route_to_leaf(Target::AtLeast(key), false)?;
        self.latch_routed_leaf(
            &mut routed,
            |id, frame| pool.try_get_exclusive_at(id, frame).map_err(drop),
            |id| pool.try_get_exclusive(id).map_err(drop)?.ok_or(()),
            barracuda_buffer_pool::ExclusiveGuard::frame,
        )
    }

    /// Latches the leaf `routed` ends at — through its frame hint (`by_hint`) when the parent's
    /// copy has one, else by a lookup (`by_lookup`), noting the frame in the copy — then checks
    /// that the route still holds and that the page is a leaf. An error is a `None`: it may come
    /// from a stale route (a page freed since), and the latched descent that follows reports
    /// it if it is real.
    fn latch_routed_leaf<G: std::ops::Deref<Target = [u8]>, E>(
        &self,
        routed: &mut Routed,
        by_hint: impl FnOnce(barracuda_page::PageId, FrameNo) -> std::result::Result<Option<G>, E>,
        by_lookup: impl FnOnce(barracuda_page::PageId) -> std::result::Result<G, E>,
        frame_of: impl FnOnce(&G) -> FrameNo,
    ) -> Option<G> {
        let leaf_id = self.page_id(routed.leaf);
        let parent = routed.parent.as_ref();
        let hint = parent.and_then(|p| p.parent.value::<Routing>()?.hint(p.idx));
        let hinted = match hint {
            Some(frame) => by_hint(leaf_id, frame).ok()?,
            None => None,
        };
        let guard = if let Some(guard) = hinted {
            guard
        } else {
            let guard = by_lookup(leaf_id).ok()?;
            if let Some(p) = parent {
                if let Some(r) = p.parent.value::<Routing>() {
                    r.note_child(p.idx, frame_of(&guard));
                }
            }
            guard
        };
        if !self.route_still_holds(routed) {
            return None;
        }
        if NodeRef::open(&guard, leaf_id, self).ok()?.level() != 0 {
            return None;
        }
        Some(guard)
    }

    /// Asks the CPU to start loading the right sibling of the leaf at `place` — its frame's
    /// latch and descriptor, its headers and first records — where the parent's copy has a
    /// frame hint for it: a scan calls this on entering a leaf, so that the loads run while it
    /// reads this leaf's records rather than when it steps.
    pub(crate) fn prefetch_right_sibling(&self, place: Option<&LeafPlace>) {
        if let Some(frame) = place.and_then(|at| at.parent.value::<Routing>()?.hint(at.idx + 1)) {
            self.ctx.pool.prefetch_frame(frame);
        }
    }

    /// Latches leaf `next`, the right sibling of the leaf at `place` (`None`: a place not
    /// known), without waiting, as [`BufferPool::try_get_shared`] does: through the frame hint
    /// of the parent's copy when the copy has `next` as its following child, else through the
    /// page hash. `place` moves to `next`, or is cleared when the copy cannot follow it (`next`
    /// under another parent, or a stale copy).
    ///
    /// [`BufferPool::try_get_shared`]: barracuda_buffer_pool::BufferPool::try_get_shared
    pub(crate) fn try_latch_right_sibling(
        &self,
        place: &mut Option<LeafPlace>,
        next: PageNo,
    ) -> Result<Option<SharedGuard<'_>>> {
        let pool = &self.ctx.pool;
        let id = self.page_id(next);
        let followed = place.as_mut().and_then(|at| {
            let copy = at.parent.value::<Routing>()?;
            let idx = at.idx + 1;
            (copy.links.get(idx)?.child == next).then_some((copy, idx, &mut at.idx))
        });
        let Some((copy, idx, at_idx)) = followed else {
            *place = None;
            return Ok(pool.try_get_shared(id)?);
        };
        *at_idx = idx;
        if let Some(frame) = copy.hint(idx) {
            if let Some(guard) = pool.try_get_shared_at(id, frame)? {
                return Ok(Some(guard));
            }
        }
        let guard = pool.try_get_shared(id)?;
        if let Some(guard) = &guard {
            copy.note_child(idx, guard.stamp().frame());
        }
        Ok(guard)
    }

    /// The routing copy of inner node `node`, latched by `guard`: the attached one if current,
    /// else one decoded now and attached. `None` if a record does not decode: no copy is
    /// made, and the latched descent reports the damage if its route crosses it.
    pub(crate) fn routing_of(
        &self,
        guard: &SharedGuard<'_>,
        node: &NodeRef<'_>,
    ) -> Option<Attached> {
        let (frame, id) = (guard.stamp().frame(), guard.page_id());
        if let Some(attached) = self.ctx.pool.attached(frame, id) {
            return Some(attached);
        }
        guard.attach(Box::new(Routing::of(node).ok()?));
        self.ctx.pool.attached(frame, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(keys: &[&[u8]]) -> Routing {
        Routing {
            level: 1,
            heads: keys.iter().map(|k| head(k)).collect(),
            ends: keys
                .iter()
                .scan(0u32, |end, k| {
                    *end += k.len() as u32;
                    Some(*end)
                })
                .collect(),
            keys: keys.concat().into(),
            links: (0..keys.len() as u32)
                .map(|child| Link {
                    child,
                    hint: AtomicU32::new(NO_HINT),
                })
                .collect(),
        }
    }

    #[test]
    fn search_agrees_with_byte_order_around_the_eight_byte_head() {
        let keys: [&[u8]; 8] = [
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgh\x01",
            b"abcdefghij",
            b"abcdefgi",
            b"b",
        ];
        let r = routing(&keys);
        let probes: [&[u8]; 10] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"abcdefgh",
            b"abcdefgh\0\0",
            b"abcdefghi",
            b"abcdefgi",
            b"abcdefgj",
            b"c",
        ];
        for probe in probes {
            assert_eq!(
                r.search(probe),
                keys.binary_search(&probe),
                "probe {probe:?}"
            );
        }
    }

    proptest::proptest! {
        /// Interpolated or bisected, the copy's search answers as `slice::binary_search` does:
        /// evenly spread integers, skewed ones, and short byte strings (equal heads), probed at
        /// every key, just after it, and at random.
        #[test]
        fn search_agrees_with_binary_search(
            shape in 0u8..3,
            seeds in proptest::collection::vec(proptest::prelude::any::<u64>(), 16..400),
            probes in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..10), 0..40),
        ) {
            #[expect(clippy::big_endian_bytes, reason = "big-endian integers sort in numeric order")]
            let mut keys: Vec<Vec<u8>> = seeds
                .iter()
                .enumerate()
                .map(|(i, s)| match shape {
                    0 => ((i as u64) * 1000 + s % 7).to_be_bytes().to_vec(),
                    1 => (1u64 << (s % 64)).wrapping_add(s % 3).to_be_bytes().to_vec(),
                    _ => s.to_le_bytes().iter().take(*s as usize % 4).copied().collect(),
                })
                .collect();
            keys.sort();
            keys.dedup();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let r = routing(&refs);
            let mut all: Vec<Vec<u8>> = probes;
            for k in &keys {
                all.push(k.clone());
                let mut after = k.clone();
                after.push(0);
                all.push(after);
            }
            for probe in &all {
                proptest::prop_assert_eq!(r.search(probe), refs.binary_search(&probe.as_slice()));
            }
        }
    }

    #[test]
    fn route_picks_the_last_separator_at_or_below_the_key() {
        let r = routing(&[b"", b"m", b"t"]);
        assert_eq!(r.route(Target::AtLeast(b"a")), 0);
        assert_eq!(r.route(Target::AtLeast(b"m")), 1);
        assert_eq!(r.route(Target::Below(b"m")), 0);
        assert_eq!(r.route(Target::AtLeast(b"z")), 2);
        assert_eq!(r.route(Target::Last), 2);
    }
}
