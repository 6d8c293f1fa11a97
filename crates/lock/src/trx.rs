//! A transaction's side of the lock table: requesting, waiting, releasing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::LockError;
use crate::manager::{LockKey, Queue, Shard, Shared};
use crate::search::{search, Verdict};
use crate::stats::Counters;

/// The space of the transaction locks (row locks' spaces are table space ids, below 2^32).
const TRANSACTION_SPACE: u64 = u64::MAX;

/// The key of transaction `trx_id`'s own lock.
fn transaction_key(trx_id: u64) -> LockKey {
    LockKey {
        space: TRANSACTION_SPACE,
        key: trx_id.to_le_bytes().as_slice().into(),
    }
}

/// How a granted [`TrxLocks::lock_exclusive`] got its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Nobody held it: granted without waiting.
    Now,
    /// This transaction already held it.
    AlreadyHeld,
    /// Granted when its previous owner released it, after this wait.
    AfterWait(Duration),
}

/// One transaction's locks. Requests are made through `&mut self`: a transaction waits for
/// one lock at a time. Dropping the handle releases every lock it holds.
pub struct TrxLocks {
    trx: Arc<TrxShared>,
    shared: Arc<Shared>,
    /// The keys this transaction owns, in the order it got them.
    held: Vec<Arc<LockKey>>,
}

impl std::fmt::Debug for TrxLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrxLocks")
            .field("trx", &self.trx.id)
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}

/// What other transactions may look at: the id, the weight and the wait slot.
pub(crate) struct TrxShared {
    pub(crate) id: u64,
    /// Locks held plus the weight the owner added (undo records, say): a deadlock's victim is
    /// its lightest transaction.
    pub(crate) weight: AtomicU64,
    pub(crate) slot: Mutex<WaitSlot>,
    pub(crate) wake: Condvar,
}

impl TrxShared {
    pub(crate) fn new(id: u64) -> Self {
        Self {
            id,
            weight: AtomicU64::new(0),
            slot: Mutex::new(WaitSlot::default()),
            wake: Condvar::new(),
        }
    }
}

/// A transaction's wait: the key it is queued on (its edge in the wait-for graph) and how
/// the wait ended. Written under the mutex of the key's shard when the edge appears or is
/// resolved by a grant, and by a deadlock search that picks the transaction as its victim.
#[derive(Default)]
pub(crate) struct WaitSlot {
    pub(crate) on: Option<Arc<LockKey>>,
    pub(crate) outcome: Outcome,
    /// Why the transaction was made a victim, when another transaction's search chose it.
    pub(crate) victim_why: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not waiting.
    #[default]
    Idle,
    /// Queued, waiting for the grant.
    Waiting,
    /// The previous owner handed the lock over.
    Granted,
    /// A deadlock search chose this transaction as its victim.
    Victim,
}

impl TrxLocks {
    pub(crate) fn new(trx: Arc<TrxShared>, shared: Arc<Shared>) -> Self {
        Self {
            trx,
            shared,
            held: Vec::new(),
        }
    }

    /// The transaction's id.
    pub fn id(&self) -> u64 {
        self.trx.id
    }

    /// The number of locks held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Adds to the transaction's weight (say, one per undo record it wrote): of the
    /// transactions in a deadlock, the one with the least weight is rolled back.
    pub fn add_weight(&self, weight: u64) {
        self.trx.weight.fetch_add(weight, Ordering::Relaxed);
    }

    /// Takes the exclusive lock on `(space, key)`: at once if nobody holds it, else after the
    /// transactions queued before this one had it. Fails when the wait times out or this
    /// transaction is chosen as a deadlock victim; then it is no longer queued, and it still
    /// holds every lock it held (the caller rolls a deadlock victim back, which releases them).
    pub fn lock_exclusive(&mut self, space: u64, key: &[u8]) -> Result<Acquired, LockError> {
        debug_assert_ne!(space, TRANSACTION_SPACE, "the transaction locks' space");
        Counters::bump(&self.shared.counters.requests);
        self.acquire(LockKey {
            space,
            key: key.into(),
        })
    }

    /// Takes this transaction's own lock, held until [`release_all`](Self::release_all): the
    /// lock that others wait on, through [`wait_for_transaction`](Self::wait_for_transaction),
    /// for a row this transaction changed without locking it (its *implicit* lock: the row
    /// carries the transaction's id, as InnoDB's inserts carry `DB_TRX_ID` and no lock
    /// object). Take it before the first such change. Not counted among the row locks of
    /// [`LockStats`](crate::LockStats). Nobody else holds it, so it is granted at once.
    pub fn lock_own_transaction(&mut self) {
        let wanted = transaction_key(self.trx.id);
        // Another transaction queues on this key only after it saw this id on a row, which
        // this one writes only after holding the key: nobody owns it before, nobody can be
        // granted it, and the request never waits.
        let _granted_at_once = self.acquire(wanted);
    }

    /// Waits until transaction `trx_id` ends (commits or rolls back and releases its locks):
    /// the wait for a row it changed without a row lock (see
    /// [`lock_own_transaction`](Self::lock_own_transaction)). The wait is a lock request on
    /// that transaction's own lock, so it queues, times out and takes part in deadlock
    /// detection as any row lock wait does; once granted, the lock is let go at once.
    /// Returns [`Acquired::Now`] when `trx_id` held no lock (it has ended, or never took its
    /// own lock: the caller decides what that means).
    pub fn wait_for_transaction(&mut self, trx_id: u64) -> Result<Acquired, LockError> {
        Counters::bump(&self.shared.counters.requests);
        let acquired = self.acquire(transaction_key(trx_id))?;
        if acquired != Acquired::AlreadyHeld {
            if let Some(key) = self.held.pop() {
                self.release(&key);
            }
        }
        Ok(acquired)
    }

    /// The transaction other than this one that holds the row lock on `(space, key)`, if
    /// any: a writer about to change the row without a row lock checks that nobody locked it
    /// explicitly (a locking read, a delete) first. The answer holds while the caller keeps
    /// the row's page latched: a later locker reads the row after taking its lock, and so
    /// sees the change.
    pub fn locked_by_other(&self, space: u64, key: &[u8]) -> Option<u64> {
        debug_assert_ne!(space, TRANSACTION_SPACE, "the transaction locks' space");
        // Every put asks, and nearly always nobody holds a row lock at all: then the answer
        // needs no hash and no shard mutex. `held_now` counts row locks exactly (up under the
        // shard mutex when a lock is entered, down after one is removed). A locker counts its
        // lock before it latches the row's page; if that latch came after the caller's, the
        // locker reads the caller's change, and if before, its release ordered the count
        // before the caller's latch, so this load sees at least that lock.
        if self.shared.counters.held_now.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.shared
            .owner_of(space, key)
            .filter(|&owner| owner != self.trx.id)
    }

    /// Takes the exclusive lock on `(space, key)` if nobody else holds it; `None` (nothing
    /// queued, nothing counted) if another transaction does. For a writer that would rather
    /// look at the row again than wait.
    pub fn try_lock_exclusive(&mut self, space: u64, key: &[u8]) -> Option<Acquired> {
        debug_assert_ne!(space, TRANSACTION_SPACE, "the transaction locks' space");
        let wanted = LockKey {
            space,
            key: key.into(),
        };
        let mut shard = self.shared.shard(&wanted).lock();
        let acquired = match shard.queues.get(&wanted) {
            None => {
                let key = self.own_free_key(&mut shard, wanted);
                drop(shard);
                self.now_held(key);
                Acquired::Now
            }
            Some(queue) if Arc::ptr_eq(&queue.owner, &self.trx) => Acquired::AlreadyHeld,
            Some(_) => return None,
        };
        Counters::bump(&self.shared.counters.requests);
        Some(acquired)
    }

    /// Lets go of the row lock on `(space, key)` before the transaction ends, handing it to
    /// the first transaction waiting for it; nothing if this transaction does not hold it.
    /// For a lock that only bridged a read and a change: once the row carries the
    /// transaction's id, that (its implicit lock) keeps others off it.
    pub fn unlock(&mut self, space: u64, key: &[u8]) {
        debug_assert_ne!(space, TRANSACTION_SPACE, "the transaction locks' space");
        // Nearly always the lock taken last.
        let Some(at) = self
            .held
            .iter()
            .rposition(|held| held.space == space && held.key.as_slice() == key)
        else {
            return;
        };
        let held = self.held.swap_remove(at);
        self.release(&held);
        // The weight counts locks held (and what the owner added): one fewer now.
        let _ = self
            .trx
            .weight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| w.checked_sub(1));
    }

    /// Enters `wanted`, which has no queue in `shard` (whose mutex the caller holds), with
    /// this transaction as its owner.
    fn own_free_key(&self, shard: &mut Shard, wanted: LockKey) -> Arc<LockKey> {
        let key = Arc::new(wanted);
        shard.queues.insert(
            key.clone(),
            Queue {
                owner: self.trx.clone(),
                waiters: std::collections::VecDeque::new(),
            },
        );
        if key.space != TRANSACTION_SPACE {
            Counters::bump(&self.shared.counters.held_now);
        }
        key
    }

    /// Grants `wanted` at once, or queues for it and waits (see
    /// [`lock_exclusive`](Self::lock_exclusive)).
    fn acquire(&mut self, wanted: LockKey) -> Result<Acquired, LockError> {
        let counters = &self.shared.counters;
        let queued_on = {
            let mut shard = self.shared.shard(&wanted).lock();
            match shard.queues.get_key_value(&wanted) {
                None => {
                    let key = self.own_free_key(&mut shard, wanted);
                    drop(shard);
                    self.now_held(key);
                    return Ok(Acquired::Now);
                }
                Some((_, queue)) if Arc::ptr_eq(&queue.owner, &self.trx) => {
                    return Ok(Acquired::AlreadyHeld);
                }
                Some((key, _)) => {
                    let key = key.clone();
                    if let Some(queue) = shard.queues.get_mut(&*key) {
                        queue.waiters.push_back(self.trx.clone());
                    }
                    // The edge is published under the shard mutex, before any search runs.
                    let mut slot = self.trx.slot.lock();
                    slot.on = Some(key.clone());
                    slot.outcome = Outcome::Waiting;
                    slot.victim_why = None;
                    key
                }
            }
        };
        Counters::bump(&counters.waits);
        Counters::bump(&counters.waiting_now);
        let started = Instant::now();
        if self.shared.deadlock_detect() {
            self.search_for_deadlock(&queued_on, started);
        }
        self.wait(queued_on, started)
    }

    /// Runs the deadlock search for the wait that just started on `key`; marks the victim of
    /// a cycle it finds (this transaction or another) so that its wait ends.
    fn search_for_deadlock(&self, key: &Arc<LockKey>, started: Instant) {
        let counters = &self.shared.counters;
        let (verdict, steps) = search(&self.shared, &self.trx, key.clone());
        counters
            .deadlock_search_steps
            .fetch_add(steps, Ordering::Relaxed);
        Counters::bump(&counters.deadlock_searches);
        let elapsed = started.elapsed().as_nanos().try_into().unwrap_or(u64::MAX);
        counters
            .deadlock_search_ns
            .fetch_add(elapsed, Ordering::Relaxed);
        if let Some(Verdict {
            victim,
            why,
            too_deep,
        }) = verdict
        {
            let mut slot = victim.slot.lock();
            // Another search may have chosen the same victim already, or the victim's wait
            // may have ended meanwhile: then there is nothing to break.
            if slot.outcome == Outcome::Waiting {
                slot.outcome = Outcome::Victim;
                slot.victim_why = Some(why);
                drop(slot);
                victim.wake.notify_one();
                Counters::bump(&counters.deadlocks);
                if too_deep {
                    Counters::bump(&counters.too_deep);
                }
            }
        }
    }

    /// Waits on `key` until granted, chosen as a victim, or timed out.
    fn wait(&mut self, key: Arc<LockKey>, started: Instant) -> Result<Acquired, LockError> {
        let deadline = started + self.shared.wait_timeout();
        let mut slot = self.trx.slot.lock();
        loop {
            match slot.outcome {
                Outcome::Granted => {
                    *slot = WaitSlot::default();
                    drop(slot);
                    return Ok(self.granted_after_wait(key, started));
                }
                Outcome::Victim => {
                    let why = slot.victim_why.take().unwrap_or_default();
                    drop(slot);
                    // A victim is never granted: grants skip transactions not `Waiting`.
                    self.withdraw(&key);
                    self.wait_ended(started);
                    return Err(LockError::Deadlock {
                        trx: self.trx.id,
                        why,
                    });
                }
                Outcome::Waiting | Outcome::Idle => {}
            }
            if self.trx.wake.wait_until(&mut slot, deadline).timed_out()
                && slot.outcome == Outcome::Waiting
            {
                drop(slot);
                if self.withdraw(&key) {
                    return Ok(self.granted_after_wait(key, started));
                }
                self.wait_ended(started);
                Counters::bump(&self.shared.counters.timeouts);
                return Err(LockError::Timeout {
                    waited: started.elapsed(),
                });
            }
        }
    }

    fn granted_after_wait(&mut self, key: Arc<LockKey>, started: Instant) -> Acquired {
        self.wait_ended(started);
        self.now_held(key);
        Acquired::AfterWait(started.elapsed())
    }

    fn wait_ended(&self, started: Instant) {
        let micros = started.elapsed().as_micros().try_into().unwrap_or(u64::MAX);
        self.shared.counters.wait_ended(micros);
    }

    fn now_held(&mut self, key: Arc<LockKey>) {
        self.held.push(key);
        self.trx.weight.fetch_add(1, Ordering::Relaxed);
    }

    /// Leaves `key`'s queue. Returns whether the lock had been granted meanwhile (then the
    /// transaction owns it and stays the owner).
    fn withdraw(&self, key: &Arc<LockKey>) -> bool {
        let mut shard = self.shared.shard(key).lock();
        let mut owned = false;
        if let Some(queue) = shard.queues.get_mut(&**key) {
            if Arc::ptr_eq(&queue.owner, &self.trx) {
                owned = true;
            } else {
                queue.waiters.retain(|t| !Arc::ptr_eq(t, &self.trx));
            }
        }
        *self.trx.slot.lock() = WaitSlot::default();
        owned
    }

    /// Releases every lock this transaction holds, handing each to the first transaction
    /// still waiting for it (first come, first served).
    pub fn release_all(&mut self) {
        let held = std::mem::take(&mut self.held);
        for key in held {
            self.release(&key);
        }
        self.trx.weight.store(0, Ordering::Relaxed);
    }

    /// Releases one held lock, handing it to the first transaction still waiting for it.
    fn release(&self, key: &LockKey) {
        let mut shard = self.shared.shard(key).lock();
        // Taken out (one lookup: nearly always nobody waits) and put back for a waiter.
        let Some((map_key, mut queue)) = shard.queues.remove_entry(key) else {
            return;
        };
        debug_assert!(Arc::ptr_eq(&queue.owner, &self.trx));
        while let Some(waiter) = queue.waiters.pop_front() {
            let mut slot = waiter.slot.lock();
            // A victim or a waiter that timed out is leaving the queue on its own.
            if slot.outcome == Outcome::Waiting {
                slot.outcome = Outcome::Granted;
                drop(slot);
                waiter.wake.notify_one();
                queue.owner = waiter;
                shard.queues.insert(map_key, queue);
                return;
            }
        }
        drop(shard);
        if key.space != TRANSACTION_SPACE {
            self.shared
                .counters
                .held_now
                .fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for TrxLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}
