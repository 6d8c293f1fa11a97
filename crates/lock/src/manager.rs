//! The lock table: one queue per locked key, in shards.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

use foldhash::quality::RandomState;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::stats::{Counters, LockStats};
use crate::trx::{TrxLocks, TrxShared};

/// Shards of the lock table. A power of two well above the number of cores, so that unrelated
/// keys rarely share a mutex (MySQL 8.0.21 uses 512 shards for its record locks).
const SHARDS: usize = 256;

/// The settings of a [`LockManager`]; both can be changed while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockConfig {
    /// How long a request waits before it fails with
    /// [`LockError::Timeout`](crate::LockError::Timeout) (InnoDB: `innodb_lock_wait_timeout`,
    /// default 50 s).
    pub wait_timeout: Duration,
    /// Whether a new wait searches for a deadlock (InnoDB: `innodb_deadlock_detect`, default
    /// on). Off, a deadlock lasts until one of its waits times out.
    pub deadlock_detect: bool,
}

impl Default for LockConfig {
    fn default() -> Self {
        Self {
            wait_timeout: Duration::from_secs(50),
            deadlock_detect: true,
        }
    }
}

/// The lock table of one engine: exclusive locks on `(space, key)` pairs. `Send + Sync`;
/// cheap to share by reference.
pub struct LockManager {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockManager")
            .field("stats", &self.stats())
            .finish()
    }
}

impl LockManager {
    /// A lock table with nothing locked.
    pub fn new(config: LockConfig) -> Self {
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        Self {
            shared: Arc::new(Shared {
                shards,
                hasher: RandomState::default(),
                deadlock_detect: AtomicBool::new(config.deadlock_detect),
                wait_timeout_us: AtomicU64::new(duration_us(config.wait_timeout)),
                counters: Counters::default(),
            }),
        }
    }

    /// Registers transaction `trx_id` and returns its handle, through which it locks and
    /// releases. Ids name transactions in errors and break ties between deadlock victims (the
    /// larger id, the younger transaction, loses); the caller keeps them unique among live
    /// handles.
    pub fn begin(&self, trx_id: u64) -> TrxLocks {
        TrxLocks::new(Arc::new(TrxShared::new(trx_id)), self.shared.clone())
    }

    /// Turns deadlock detection on or off for waits that start from now on.
    pub fn set_deadlock_detect(&self, on: bool) {
        self.shared.deadlock_detect.store(on, Ordering::Relaxed);
    }

    /// Whether deadlock detection is on.
    pub fn deadlock_detect(&self) -> bool {
        self.shared.deadlock_detect()
    }

    /// Sets the lock wait timeout for waits that start from now on.
    pub fn set_wait_timeout(&self, timeout: Duration) {
        self.shared
            .wait_timeout_us
            .store(duration_us(timeout), Ordering::Relaxed);
    }

    /// The lock wait timeout in force.
    pub fn wait_timeout(&self) -> Duration {
        self.shared.wait_timeout()
    }

    /// The id of the transaction holding the lock on `(space, key)`, if one does.
    pub fn owner_of(&self, space: u64, key: &[u8]) -> Option<u64> {
        self.shared.owner_of(space, key)
    }

    /// The number of transactions queued for `(space, key)` behind its owner.
    pub fn waiters_on(&self, space: u64, key: &[u8]) -> usize {
        let key = LockKey {
            space,
            key: key.into(),
        };
        let shard = self.shared.shard(&key).lock();
        shard
            .queues
            .get(&key)
            .map_or(0, |queue| queue.waiters.len())
    }

    /// The counters and gauges as of now.
    pub fn stats(&self) -> LockStats {
        self.shared.counters.snapshot(
            self.deadlock_detect(),
            self.wait_timeout()
                .as_millis()
                .try_into()
                .unwrap_or(u64::MAX),
        )
    }
}

fn duration_us(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

/// What every [`TrxLocks`] of one manager shares.
pub(crate) struct Shared {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    deadlock_detect: AtomicBool,
    wait_timeout_us: AtomicU64,
    pub(crate) counters: Counters,
}

impl Shared {
    /// The shard holding `key`'s queue.
    pub(crate) fn shard(&self, key: &LockKey) -> &Mutex<Shard> {
        let hash = self.hasher.hash_one(key) as usize;
        // `SHARDS` is a power of two, and the modulo keeps the index in range.
        &self.shards[hash % self.shards.len()]
    }

    /// The id of the transaction holding the lock on `(space, key)`, if one does.
    pub(crate) fn owner_of(&self, space: u64, key: &[u8]) -> Option<u64> {
        let key = LockKey {
            space,
            key: key.into(),
        };
        let shard = self.shard(&key).lock();
        shard.queues.get(&key).map(|queue| queue.owner.id)
    }

    pub(crate) fn deadlock_detect(&self) -> bool {
        self.deadlock_detect.load(Ordering::Relaxed)
    }

    pub(crate) fn wait_timeout(&self) -> Duration {
        Duration::from_micros(self.wait_timeout_us.load(Ordering::Relaxed))
    }
}

/// One shard of the lock table: the queues of the locked keys that hash to it. A key with no
/// owner has no entry.
#[derive(Default)]
pub(crate) struct Shard {
    pub(crate) queues: HashMap<Arc<LockKey>, Queue, RandomState>,
}

/// The owner of a key's lock and, in arrival order, the transactions waiting for it.
pub(crate) struct Queue {
    pub(crate) owner: Arc<TrxShared>,
    pub(crate) waiters: VecDeque<Arc<TrxShared>>,
}

/// A locked key: the space (table) and the key's bytes (inline up to 16 bytes: a row lock of
/// a short key then costs one allocation, its `Arc`, instead of two).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct LockKey {
    pub(crate) space: u64,
    pub(crate) key: SmallVec<[u8; 16]>,
}
