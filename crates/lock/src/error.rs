//! Why a lock request failed.

use std::time::Duration;

/// Why [`TrxLocks::lock_exclusive`](crate::TrxLocks::lock_exclusive) did not grant the lock.
/// Either way the transaction is no longer queued for it, and it still holds what it held.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The lock was not granted within the wait timeout.
    #[error("lock wait timeout: not granted within {waited:?}")]
    Timeout {
        /// How long the request waited.
        waited: Duration,
    },
    /// The transaction was chosen as the victim of a deadlock (or of a wait-for chain too
    /// long to search): it must roll back, which releases its locks.
    #[error("deadlock: transaction {trx} was chosen as the victim ({why})")]
    Deadlock {
        /// The victim: the transaction that made the request.
        trx: u64,
        /// What was found: the cycle, or a chain too deep to search.
        why: String,
    },
}
