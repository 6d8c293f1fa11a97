//! The engines under test behind one trait, [`PeerDb`]: Barracuda always, LMDB (heed), redb and
//! RocksDB behind the cargo features `lmdb`, `redb` and `rocksdb`.
//!
//! Each engine reads through its own zero-copy API where it has one: the closures given to
//! [`PeerDb::get`] and [`PeerDb::scan`] see slices borrowed from the engine (LMDB's map, redb's
//! `AccessGuard`, RocksDB's pinned slice and iterator), valid only during the call.
//!
//! Every read is its own read transaction (LMDB, redb) or a read of the latest committed data
//! (Barracuda `Engine::get` / `Engine::range`, RocksDB without a snapshot), as a server
//! answering independent requests would read.

use std::path::Path;

use ::barracuda::PageSize;

use clap::ValueEnum;
use serde::Serialize;

use crate::workload::Batch;

pub mod barracuda;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

/// Any engine's error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The result of an engine's operation.
pub type Result<T> = std::result::Result<T, BoxError>;

/// One engine's database, open in a directory of its own, shared by the measuring threads.
pub trait PeerDb: Send + Sync {
    /// Writes `batch` in one write transaction (one write batch), without syncing it; `last`:
    /// the load's final batch, which engines that must be told to make a load durable commit
    /// durably (redb).
    fn write_batch(&self, batch: &Batch, last: bool) -> Result<()>;

    /// Loads rows `0..rows` (ascending keys) into the empty database by the engine's own bulk
    /// path, without syncing: Barracuda `load_sorted`, LMDB one write transaction with the
    /// `APPEND` flag, redb one write transaction, RocksDB batches of 1000 with the WAL off.
    fn bulk_load(&self, rows: u64) -> Result<()>;

    /// After a load, untimed: brings the database to the shape it is read in (RocksDB: its
    /// memtable flushed and its files compacted into one sorted run). Nothing for the others.
    fn settle(&self) -> Result<()> {
        Ok(())
    }

    /// Writes one row in a transaction of its own and commits it as the database was opened:
    /// durably (synced before this returns) when [`OpenSpec::durable`], else as
    /// [`write_batch`](Self::write_batch) does. Called from many threads at once.
    fn commit_row(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Looks `key` up; calls `f` with its value (borrowed from the engine where it can) and
    /// returns `true` if found.
    fn get(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;

    /// Calls `f` with the first `n` rows whose keys are ≥ `start`, ascending; returns how many.
    fn scan(&self, start: &[u8], n: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize>;

    /// Closes the database, waiting for whatever it writes at close.
    fn close(self: Box<Self>) -> Result<()>;
}

/// The engines this program knows (whether compiled in or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Barracuda, this workspace's engine (always compiled in), with its default 16 KiB pages.
    Barracuda,
    /// Barracuda with 4 KiB pages, the page size of LMDB and redb: a miss copies a quarter of
    /// the bytes (always compiled in).
    #[value(name = "barracuda-4k")]
    #[serde(rename = "barracuda-4k")]
    Barracuda4k,
    /// LMDB through heed (feature `lmdb`).
    Lmdb,
    /// redb (feature `redb`).
    Redb,
    /// RocksDB through the `rocksdb` crate (feature `rocksdb`).
    Rocksdb,
}

impl EngineKind {
    /// Its name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Barracuda => "barracuda",
            Self::Barracuda4k => "barracuda-4k",
            Self::Lmdb => "lmdb",
            Self::Redb => "redb",
            Self::Rocksdb => "rocksdb",
        }
    }

    /// The cargo feature that compiles it in (`None`: always there).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Self::Barracuda | Self::Barracuda4k => None,
            Self::Lmdb => Some("lmdb"),
            Self::Redb => Some("redb"),
            Self::Rocksdb => Some("rocksdb"),
        }
    }

    /// Whether this build has it.
    pub fn compiled_in(self) -> bool {
        match self {
            Self::Barracuda | Self::Barracuda4k => true,
            Self::Lmdb => cfg!(feature = "lmdb"),
            Self::Redb => cfg!(feature = "redb"),
            Self::Rocksdb => cfg!(feature = "rocksdb"),
        }
    }

    /// What it does with the cache size it is given (a note for the table).
    pub fn cache_note(self) -> &'static str {
        match self {
            Self::Barracuda | Self::Barracuda4k => "buffer pool",
            Self::Lmdb => "none: mmap, the OS page cache holds the data in every phase",
            Self::Redb => "cache_size",
            Self::Rocksdb => "LRU block cache (index blocks in it too)",
        }
    }
}

/// Where and how to open a database.
#[derive(Clone, Copy, Debug)]
pub struct OpenSpec<'p> {
    /// The database's directory (created if absent; empty for a fresh database).
    pub dir: &'p Path,
    /// Bytes of cache (buffer pool, block cache) to give the engine.
    pub cache_bytes: usize,
    /// Bytes of the rows to be stored (keys and values), for engines that size a map by it.
    #[cfg_attr(
        not(feature = "lmdb"),
        expect(dead_code, reason = "only LMDB sizes its map by it")
    )]
    pub data_bytes: usize,
    /// Every commit durable before it returns (the `commit_*` phases): Barracuda
    /// `Durability::SyncEachCommit`, LMDB without `NO_SYNC`, redb `Durability::Immediate`,
    /// RocksDB `sync = true`. Otherwise no sync per commit.
    pub durable: bool,
}

/// Opens `kind`'s database as `spec` says.
pub fn open(kind: EngineKind, spec: OpenSpec<'_>) -> Result<Box<dyn PeerDb>> {
    match kind {
        EngineKind::Barracuda => Ok(Box::new(barracuda::Db::open(spec, PageSize::K16)?)),
        EngineKind::Barracuda4k => Ok(Box::new(barracuda::Db::open(spec, PageSize::K4)?)),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => Ok(Box::new(lmdb::Db::open(spec)?)),
        #[cfg(feature = "redb")]
        EngineKind::Redb => Ok(Box::new(redb::Db::open(spec)?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocksdb::Db::open(spec)?)),
        #[allow(
            unreachable_patterns,
            reason = "reached only in builds without some of the features"
        )]
        other => Err(not_compiled_in(other).into()),
    }
}

/// The error for an engine this build does not have.
pub fn not_compiled_in(kind: EngineKind) -> String {
    format!(
        "engine `{}` is not compiled in: rebuild with `--features {}` (or `--features all`)",
        kind.name(),
        kind.feature().unwrap_or("?")
    )
}
