//! Row locks for Barracuda transactions: an exclusive lock per `(space, key)`, granted first
//! come first served, with a lock wait timeout and deadlock detection that never stops the
//! world, and a lock per transaction for waits on rows it changed without a row lock.
//!
//! A transaction registers with the [`LockManager`] and gets a [`TrxLocks`] handle; each
//! [`TrxLocks::lock_exclusive`] either grants the key's lock at once, or queues the
//! transaction behind the key's owner and waits until the lock is handed over, the wait times
//! out ([`LockError::Timeout`]), or the transaction is chosen as a deadlock victim
//! ([`LockError::Deadlock`]). [`TrxLocks::release_all`] (also run on drop) hands every held lock
//! to its first waiter.
//!
//! # Transaction locks: waiting for an implicit lock
//! A writer may change a row without asking for its lock: the row then carries the writer's
//! transaction id, and that is its lock while the transaction is active (InnoDB's *implicit*
//! locks; an insert in InnoDB creates no lock object). Each writing transaction holds one
//! lock of its own ([`TrxLocks::lock_own_transaction`]) until it ends; another transaction
//! that finds the row changed by it waits on that lock ([`TrxLocks::wait_for_transaction`]),
//! so the wait queues, times out and closes deadlock cycles as a row lock wait does. Before
//! changing a row without its lock, a writer checks that no other transaction holds it
//! explicitly ([`TrxLocks::locked_by_other`]), with the row's page latched.
//!
//! # Deadlock detection
//! Reads take no locks (they read a snapshot), and writes take only exclusive locks, so a
//! waiting transaction waits for exactly one other: the current owner of the key it queued on.
//! The wait-for graph has out-degree one, and a cycle through a new waiter is found by walking
//! the chain `waiter → owner of its key → the key that owner waits on → …` — as many steps as
//! the cycle is long, whatever the length of the queues. The walk runs in the thread that
//! starts to wait and takes, one at a time, only the mutex of the shard holding the key it
//! looks at and the wait slot of the transaction it looks at: no global mutex, nothing else
//! stops. (InnoDB before MySQL 8.0.18 searched the whole graph under one mutex, O(N²) for N
//! threads queued on one row; MySQL 8.0.18 moved the search to a background thread, which
//! delays every detection by its period.)
//!
//! Every new wait publishes its edge before it walks, under the shard mutex, so of two waits
//! that close a cycle together at least one walk sees the other's edge; both may see it, and
//! both then choose the same victim: the lightest transaction of the cycle (fewest locks held
//! plus whatever weight its owner added, InnoDB's `trx_weight_ge`), the youngest among equals.
//! A chain longer than [`MAX_SEARCH_DEPTH`] counts as a deadlock with the requester as victim,
//! as InnoDB's `LOCK_MAX_DEPTH_IN_DEADLOCK_CHECK` does. With detection off, only the timeout
//! ends a deadlock (InnoDB's `innodb_deadlock_detect = OFF`).

mod error;
mod manager;
mod search;
mod stats;
mod trx;

pub use error::LockError;
pub use manager::{LockConfig, LockManager};
pub use search::MAX_SEARCH_DEPTH;
pub use stats::LockStats;
pub use trx::{Acquired, TrxLocks};
