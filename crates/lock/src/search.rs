//! The deadlock search: a walk along the wait-for chain of a transaction that starts to wait.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::manager::{LockKey, Shared};
use crate::trx::{Outcome, TrxShared};

/// The longest wait-for chain searched: a longer one counts as a deadlock with the requester as
/// its victim (InnoDB's `LOCK_MAX_DEPTH_IN_DEADLOCK_CHECK`).
pub const MAX_SEARCH_DEPTH: usize = 200;

/// A deadlock found: the transaction to roll back, and what was found.
pub(crate) struct Verdict {
    pub(crate) victim: Arc<TrxShared>,
    pub(crate) why: String,
    pub(crate) too_deep: bool,
}

/// Walks from `me`, just queued on `key`, to the owner of `key`, then to the owner of the key
/// that owner waits on, and so on. Returns the deadlock if the walk comes back to `me`, and
/// the number of steps taken.
///
/// Each step locks one shard (to read a key's owner) and then one wait slot (to read what that
/// owner waits on), never both at once and never more than one of each: a search holds up no
/// other search, request or release for longer than one hash lookup.
pub(crate) fn search(
    shared: &Shared,
    me: &Arc<TrxShared>,
    mut key: Arc<LockKey>,
) -> (Option<Verdict>, u64) {
    let mut chain: Vec<Arc<TrxShared>> = vec![me.clone()];
    let mut steps = 0u64;
    loop {
        if chain.len() > MAX_SEARCH_DEPTH {
            let why = format!(
                "the wait-for chain from transaction {} is longer than {MAX_SEARCH_DEPTH}",
                me.id
            );
            let verdict = Verdict {
                victim: me.clone(),
                why,
                too_deep: true,
            };
            return (Some(verdict), steps);
        }
        steps += 1;
        let owner = shared
            .shard(&key)
            .lock()
            .queues
            .get(&*key)
            .map(|queue| queue.owner.clone());
        // Released since: whoever waits on it now is not waiting for this chain.
        let Some(owner) = owner else {
            return (None, steps);
        };
        if Arc::ptr_eq(&owner, me) {
            return (Some(cycle_verdict(&chain)), steps);
        }
        // A cycle that does not pass through `me`: the search of the wait that closed it found
        // it (or detection was off then, and a timeout will end it).
        if chain.iter().any(|t| Arc::ptr_eq(t, &owner)) {
            return (None, steps);
        }
        let next = {
            let slot = owner.slot.lock();
            if slot.outcome == Outcome::Waiting {
                slot.on.clone()
            } else {
                None
            }
        };
        // The owner runs: the chain ends without a cycle.
        let Some(next) = next else {
            return (None, steps);
        };
        chain.push(owner);
        key = next;
    }
}

/// The victim of the cycle `chain[0] → chain[1] → … → chain[0]`: the lightest transaction,
/// the youngest (largest id) among equally light ones. Every search that finds this cycle
/// picks the same one, and describes the cycle the same way: starting from the victim (two
/// waiters may both search, and which one finds the cycle first is a race).
fn cycle_verdict(chain: &[Arc<TrxShared>]) -> Verdict {
    let mut at = 0;
    let rank = |t: &TrxShared| (t.weight.load(Ordering::Relaxed), u64::MAX - t.id);
    for (i, trx) in chain.iter().enumerate() {
        if rank(trx) < rank(&chain[at]) {
            at = i;
        }
    }
    let victim = &chain[at];
    let mut why = String::from("cycle ");
    for trx in chain[at..].iter().chain(&chain[..at]) {
        let _ = write!(why, "{} → ", trx.id);
    }
    let _ = write!(why, "{}; victim {}", victim.id, victim.id);
    Verdict {
        victim: victim.clone(),
        why,
        too_deep: false,
    }
}
