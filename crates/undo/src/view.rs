//! The transaction system in memory: transaction ids and commit numbers, the active
//! transactions, and the read views that decide which versions a reader sees.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Ids are persisted in steps of this many (InnoDB's `TRX_SYS_TRX_ID_WRITE_MARGIN` is 256):
/// most transactions start without writing the transaction system page.
pub const ID_RESERVE_STEP: u64 = 256;

/// Transaction ids, commit numbers, active read-write transactions and open read views.
/// `Send + Sync`; every method takes one short mutex.
///
/// Ids and commit numbers come from one counter, as in InnoDB: a transaction gets an id when it
/// first writes and a commit number when it commits, each the counter's next value. A view
/// opened when the counter stood at `n` sees exactly the transactions that committed before it:
/// those not in its list of then-active ids and below `n`.
#[derive(Clone, Debug)]
pub struct TrxSystem {
    state: Arc<Mutex<State>>,
    /// Every id below this has committed or rolled back (the smallest active id, or the
    /// counter when none is active): read without the mutex, it lets a reader that wants the
    /// newest committed data skip building a view for rows no active transaction touched.
    committed_below: Arc<AtomicU64>,
}

#[derive(Debug)]
struct State {
    /// The next value of the id / commit-number counter.
    next: u64,
    /// Values below this may be handed out without persisting anything first.
    reserved_below: u64,
    /// Read-write transactions that have not committed or rolled back.
    active: BTreeSet<u64>,
    /// Open read views: serial → the counter when the view opened (its `low_limit_no`) and
    /// the ids active then (shared with the view).
    views: BTreeMap<u64, (u64, Arc<[u64]>)>,
    next_view: u64,
}

/// A transaction id handed out, and whether the persisted high-water mark must first be raised
/// to `raise_to` (write it to the transaction system page before the id reaches disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assigned {
    /// The id or commit number.
    pub value: u64,
    /// The new high-water mark to persist, when the reserve ran out.
    pub raise_to: Option<u64>,
}

impl TrxSystem {
    /// A transaction system whose counter starts at `start` (1 for a new database; after a
    /// restart, the persisted high-water mark, which is above every id and commit number ever
    /// handed out).
    pub fn new(start: u64) -> Self {
        let start = start.max(1);
        Self {
            state: Arc::new(Mutex::new(State {
                next: start,
                reserved_below: start,
                active: BTreeSet::new(),
                views: BTreeMap::new(),
                next_view: 0,
            })),
            committed_below: Arc::new(AtomicU64::new(start)),
        }
    }

    /// Publishes the low-water mark after a change of the active set (under the mutex).
    fn publish(&self, state: &State) {
        let low = state.active.first().copied().unwrap_or(state.next);
        self.committed_below.store(low, Ordering::Release);
    }

    /// Every transaction id below this has committed or rolled back: a row version changed by
    /// one of them is what a view opened now would see.
    pub fn committed_below(&self) -> u64 {
        self.committed_below.load(Ordering::Acquire)
    }

    fn take(state: &mut State) -> Assigned {
        let value = state.next;
        state.next += 1;
        let raise_to = (state.next > state.reserved_below).then(|| {
            state.reserved_below = state.next + ID_RESERVE_STEP;
            state.reserved_below
        });
        Assigned { value, raise_to }
    }

    /// Starts a read-write transaction: a new id, now active.
    pub fn begin(&self) -> Assigned {
        let mut state = self.state.lock();
        let assigned = Self::take(&mut state);
        state.active.insert(assigned.value);
        self.publish(&state);
        assigned
    }

    /// Starts a read-write transaction like [`begin`](Self::begin), but when the reserve runs
    /// out calls `persist` with the new high-water mark *before* handing the id out, holding
    /// the mutex meanwhile: no thread can write an id above the old mark to a page before the
    /// new mark is logged, whatever order their mini-transactions reach the log in. `persist`
    /// must not call back into this transaction system. On its failure no id is handed out.
    pub fn begin_persisting<E>(
        &self,
        persist: impl FnOnce(u64) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut state = self.state.lock();
        let next = state.next + 1;
        if next > state.reserved_below {
            let to = next + ID_RESERVE_STEP;
            persist(to)?;
            state.reserved_below = to;
        }
        let id = state.next;
        state.next = next;
        state.active.insert(id);
        self.publish(&state);
        Ok(id)
    }

    /// Commits transaction `id`: it gets its commit number and stops being active, so every
    /// view opened from now on sees it. Views opened before do not.
    pub fn commit(&self, id: u64) -> Assigned {
        let mut state = self.state.lock();
        state.active.remove(&id);
        let assigned = Self::take(&mut state);
        self.publish(&state);
        assigned
    }

    /// Commits transaction `id` like [`commit`](Self::commit), persisting a new high-water mark
    /// through `persist` first when the reserve runs out (see
    /// [`begin_persisting`](Self::begin_persisting)). On its failure the transaction stays
    /// active and nothing is handed out.
    pub fn commit_persisting<E>(
        &self,
        id: u64,
        persist: impl FnOnce(u64) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.commit_seeing_views(id, persist).map(|(no, _)| no)
    }

    /// Commits transaction `id` like [`commit_persisting`](Self::commit_persisting) and says
    /// whether no read view was open at that moment. Then no view can ever need a version
    /// this transaction replaced: a view opened from now on sees the transaction, and so reads
    /// its versions or newer ones (the check and the end of the transaction are one step under
    /// the mutex every view opens under).
    pub fn commit_seeing_views<E>(
        &self,
        id: u64,
        persist: impl FnOnce(u64) -> Result<(), E>,
    ) -> Result<(u64, bool), E> {
        let mut state = self.state.lock();
        let next = state.next + 1;
        if next > state.reserved_below {
            let to = next + ID_RESERVE_STEP;
            persist(to)?;
            state.reserved_below = to;
        }
        let no = state.next;
        state.next = next;
        state.active.remove(&id);
        self.publish(&state);
        Ok((no, state.views.is_empty()))
    }

    /// Ends transaction `id` without committing (its changes were rolled back).
    pub fn end_rolled_back(&self, id: u64) {
        let mut state = self.state.lock();
        state.active.remove(&id);
        self.publish(&state);
    }

    /// Registers a transaction found active in the undo log at recovery (it is rolled back
    /// before the engine serves anyone, but until then it is active).
    pub fn resurrect(&self, id: u64) {
        let mut state = self.state.lock();
        state.active.insert(id);
        state.next = state.next.max(id + 1);
        state.reserved_below = state.reserved_below.max(state.next);
        self.publish(&state);
    }

    /// Opens a read view for transaction `creator` (0 for a reader that writes nothing): it
    /// sees what committed before now, plus `creator`'s own changes.
    pub fn read_view(&self, creator: u64) -> ReadView {
        let mut state = self.state.lock();
        let low_limit_id = state.next;
        let active: Arc<[u64]> = state
            .active
            .iter()
            .copied()
            .filter(|&id| id != creator)
            .collect();
        let serial = state.next_view;
        state.next_view += 1;
        state.views.insert(serial, (low_limit_id, active.clone()));
        ReadView {
            creator: AtomicU64::new(creator),
            low_limit_id,
            up_limit_id: active.first().copied().unwrap_or(low_limit_id),
            active,
            registration: Some((self.state.clone(), serial)),
        }
    }

    /// Commit numbers below this belong to transactions every open view sees, so their undo
    /// (the versions before them) is needed by no reader: purge may remove it.
    pub fn purge_limit(&self) -> u64 {
        let state = self.state.lock();
        state
            .views
            .values()
            .map(|&(low, _)| low)
            .min()
            .unwrap_or(state.next)
    }

    /// Whether the changes of transaction `id`, which has ended, are seen by every open view
    /// (and so by every view opened from now on): no reader needs a version older than its.
    /// Exact, unlike a comparison with [`purge_limit`](Self::purge_limit): a transaction
    /// that purge has passed is seen by every view.
    pub fn all_views_see(&self, id: u64) -> bool {
        let state = self.state.lock();
        !state.active.contains(&id)
            && state
                .views
                .values()
                .all(|(low, active)| id < *low && active.binary_search(&id).is_err())
    }

    /// Whether transaction `id` is active now (begun or resurrected, not yet committed or
    /// rolled back). Ids below [`committed_below`](Self::committed_below) are answered
    /// without the mutex.
    pub fn is_active(&self, id: u64) -> bool {
        id >= self.committed_below() && self.state.lock().active.contains(&id)
    }

    /// Transactions active now.
    pub fn active_count(&self) -> usize {
        self.state.lock().active.len()
    }

    /// Read views open now.
    pub fn view_count(&self) -> usize {
        self.state.lock().views.len()
    }

    /// The counter's next value.
    pub fn next_value(&self) -> u64 {
        self.state.lock().next
    }
}

/// Which transactions' changes a reader sees (InnoDB's `ReadView`): those committed before the
/// view opened, and its creator's own. Closing (dropping) it lets purge pass it.
#[derive(Debug)]
pub struct ReadView {
    /// Whose own changes it sees; set later for a view opened before its transaction's first
    /// write ([`set_creator`](Self::set_creator)).
    creator: AtomicU64,
    /// Ids at or above this started after the view opened: invisible.
    low_limit_id: u64,
    /// Ids below this had committed when the view opened: visible.
    up_limit_id: u64,
    /// Ids active when the view opened (sorted): invisible.
    active: Arc<[u64]>,
    registration: Option<(Arc<Mutex<State>>, u64)>,
}

impl ReadView {
    /// A view that sees every change (no transaction system behind it): for single-threaded
    /// tools and tests.
    pub fn everything() -> Self {
        Self {
            creator: AtomicU64::new(0),
            low_limit_id: u64::MAX,
            up_limit_id: u64::MAX,
            active: Arc::new([]),
            registration: None,
        }
    }

    /// Whether a record version last changed by transaction `trx_id` is visible. Id 0 (no
    /// history) is always visible.
    pub fn sees(&self, trx_id: u64) -> bool {
        if trx_id < self.up_limit_id || trx_id == self.creator() {
            return true;
        }
        trx_id < self.low_limit_id && self.active.binary_search(&trx_id).is_err()
    }

    /// The transaction the view belongs to (0 for a pure reader).
    pub fn creator(&self) -> u64 {
        self.creator.load(Ordering::Relaxed)
    }

    /// Makes the view see the changes of transaction `id` from now on: for a view a
    /// transaction opened at its first read, before its first write gave it an id. The id must
    /// be one that started after the view opened (so no other view decision changes).
    pub fn set_creator(&self, id: u64) {
        debug_assert!(id >= self.low_limit_id, "an id the view already judged");
        self.creator.store(id, Ordering::Relaxed);
    }
}

impl Drop for ReadView {
    fn drop(&mut self) {
        if let Some((state, serial)) = self.registration.take() {
            state.lock().views.remove(&serial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_sees_what_committed_before_it_and_its_own_changes() {
        let sys = TrxSystem::new(1);
        let t1 = sys.begin().value;
        let t2 = sys.begin().value;
        sys.commit(t1);
        let view = sys.read_view(0);
        let t3 = sys.begin().value;
        let own = sys.read_view(t2);
        assert!(view.sees(0), "no history");
        assert!(view.sees(t1), "committed before the view");
        assert!(!view.sees(t2), "active when the view opened");
        assert!(!view.sees(t3), "started after the view");
        assert!(own.sees(t2), "its own changes");
        sys.commit(t2);
        assert!(!view.sees(t2), "a commit after the view changes nothing");
        assert!(sys.read_view(0).sees(t2));
    }

    #[test]
    fn a_transaction_is_active_from_begin_to_commit_or_rollback() {
        let sys = TrxSystem::new(5);
        let (t1, t2) = (sys.begin().value, sys.begin().value);
        assert!(sys.is_active(t1) && sys.is_active(t2));
        assert!(!sys.is_active(4), "below the first id: ended long ago");
        assert!(!sys.is_active(t2 + 1), "not begun");
        sys.commit(t1);
        assert!(!sys.is_active(t1) && sys.is_active(t2));
        sys.end_rolled_back(t2);
        assert!(!sys.is_active(t2));
        sys.resurrect(40);
        assert!(
            sys.is_active(40),
            "found active in the undo log at recovery"
        );
    }

    #[test]
    fn purge_stops_at_the_oldest_open_view() {
        let sys = TrxSystem::new(10);
        let t = sys.begin().value;
        let old = sys.read_view(0);
        let no = sys.commit(t).value;
        assert!(
            sys.purge_limit() <= no,
            "the old view still needs what t replaced"
        );
        drop(old);
        assert!(sys.purge_limit() > no);
        assert_eq!(sys.view_count(), 0);
    }

    #[test]
    fn a_transaction_is_seen_by_all_views_once_no_view_opened_while_it_was_active() {
        let sys = TrxSystem::new(1);
        let old = sys.begin().value;
        let t = sys.begin().value;
        assert!(!sys.all_views_see(t), "still active");
        let during = sys.read_view(0);
        sys.commit(t);
        let after = sys.read_view(0);
        assert!(!sys.all_views_see(t), "a view opened while it was active");
        drop(during);
        assert!(sys.all_views_see(t));
        // An older transaction still active does not matter: `t` committed before `after`.
        assert!(!sys.all_views_see(old) && after.sees(t));
    }

    #[test]
    fn the_low_water_mark_follows_the_oldest_active_transaction() {
        let sys = TrxSystem::new(5);
        assert_eq!(sys.committed_below(), 5);
        let a = sys.begin().value;
        let b = sys.begin().value;
        assert_eq!(sys.committed_below(), a);
        sys.commit(a);
        assert_eq!(sys.committed_below(), b);
        sys.end_rolled_back(b);
        assert_eq!(sys.committed_below(), sys.next_value());
    }

    #[test]
    fn ids_are_reserved_in_steps() {
        let sys = TrxSystem::new(1);
        let first = sys.begin();
        assert_eq!(first.value, 1);
        assert_eq!(first.raise_to, Some(2 + ID_RESERVE_STEP));
        for _ in 0..ID_RESERVE_STEP {
            assert_eq!(sys.begin().raise_to, None);
        }
        assert!(sys.begin().raise_to.is_some());
    }

    #[test]
    fn persisting_begins_and_commits_log_the_mark_before_handing_out_an_id_above_it() {
        let sys = TrxSystem::new(1);
        let mut persisted = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..300 {
            let id = sys
                .begin_persisting(|to| {
                    persisted.push(to);
                    Ok::<(), ()>(())
                })
                .unwrap();
            // Every id handed out is below the newest mark persisted.
            assert!(persisted.last().is_some_and(|&mark| id < mark), "{id}");
            ids.push(id);
        }
        assert_eq!(persisted.len(), 2, "{persisted:?}");
        let no = sys
            .commit_persisting(ids[0], |_| Err::<(), _>("log full"))
            .unwrap_or(0);
        // The first commit number needs no new mark.
        assert!(no > 0 && no < persisted[1]);
        assert_eq!(sys.active_count(), 299);
        // A failed persist hands nothing out and changes nothing.
        let before = sys.next_value();
        for _ in before..persisted[1] {
            sys.begin_persisting(|_| Err::<(), _>("unexpected"))
                .unwrap();
        }
        assert_eq!(
            sys.begin_persisting(|_| Err::<(), _>("log full")),
            Err("log full")
        );
        assert_eq!(sys.next_value(), persisted[1]);
    }
}
