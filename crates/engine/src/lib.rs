//! Barracuda: an embedded, ordered key-value storage engine organised like InnoDB.
//!
//! Each table is a B+tree clustered on its key, stored in its own tablespace file of fixed-size
//! pages (`tables/<name>.ibd`); the catalog lives in `system.ibs`. Every page access goes through
//! one buffer pool (LRU with midpoint insertion, flush list, switchable free-page policies,
//! read-ahead), and every page change happens inside a mini-transaction.
//!
//! Durability: every page change is redo-logged (`redo/ib_redo0`) before the page can reach
//! disk, a transaction's changes form one commit unit of the log (after a crash it is wholly
//! present or wholly absent), and [`Durability`] says whether `commit` waits for the log's
//! sync (shared by concurrent commits: group commit). Opening a database after a crash replays
//! the log from its last checkpoint; a page cleaner thread flushes dirty pages and moves the
//! checkpoint as InnoDB's adaptive flushing does.
//!
//! ```
//! use barracuda::{Engine, EngineOptions, FreePagePolicy, TableOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Engine::open(dir.path(), EngineOptions::default().buffer_pool_bytes(16 << 20))?;
//! let t = db.create_table("docs", TableOptions::default())?;
//! db.put(&t, b"apple", b"red")?;
//! db.delete(&t, b"pear")?;
//! assert_eq!(db.get(&t, b"apple")?, Some(b"red".to_vec()));
//! db.set_free_page_policy(FreePagePolicy::Backoff); // like SET GLOBAL, while running
//! println!("{}", db.status());
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(clippy::indexing_slicing)]

mod alloc;
mod api_assertions;
mod catalog;
mod compression;
mod engine;
mod error;
pub mod fs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod inspect;
mod layout;
mod load;
mod mvcc;
mod open;
mod options;
mod page_cleaner;
mod purge;
mod recovery;
mod redo_sink;
mod rollback;
mod row_compression;
mod snapshot;
mod status;
mod store;
mod table;
mod tablespace;
mod torn_writes;
mod txn;
mod unit;
mod verified;
mod visit;

pub use barracuda_btree::TreeStats;
pub use barracuda_buffer_pool::{FreePagePolicy, PoolStats};
pub use barracuda_doublewrite::{
    DoublewriteMode, DoublewriteStats, EffectiveMode as DoublewriteEffectiveMode,
};
pub use barracuda_io::Backend as IoBackend;
pub use barracuda_lock::LockStats as LockStatus;
pub use barracuda_page::PageSize;
pub use barracuda_redo::flushing::FlushSettings;
pub use barracuda_redo::log_path as redo_log_path;
pub use barracuda_row_compression::{CmpRow, Codec};
pub use compression::PageCompressionStatus;
pub use engine::Engine;
pub use error::{Error, IoErrorKind, Result};
pub use load::LoadReport;
pub use options::{Durability, EngineOptions, PageCompression, RowFormat, TableOptions};
pub use page_cleaner::{FlushControllerKind, FlushStatus};
pub use recovery::{RecoveryPhase, RecoveryProgress, RecoveryReport};
pub use row_compression::{CompressedTableStatus, RowCompressionStatus};
pub use snapshot::Snapshot;
pub use status::{EngineStatus, MvccStatus, RedoStatus, TableStatus};
pub use table::{Range, Table};
pub use torn_writes::DoublewriteStatus;
pub use txn::{IsolationLevel, Transaction};
