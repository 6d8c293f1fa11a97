//! Barracuda: one table, `Durability::Background` (the redo log on, no sync at commit: InnoDB's
//! `innodb_flush_log_at_trx_commit = 0`), the buffer pool sized by the caller; opened
//! [`durable`](OpenSpec::durable), `Durability::SyncEachCommit` (`= 1`: concurrent commits
//! share one log sync).
//!
//! Loads write each batch with `Transaction::put_many` (the engine's batch write, as the RocksDB
//! side writes a `WriteBatch`): a leaf's rows in one mini-transaction.
//!
//! Reads use the lending reads, `Engine::get_with` and `Engine::scan`: rows are seen in place,
//! as LMDB's, redb's and RocksDB's borrowed slices are (the copying `get` / `range` are what
//! `cargo bench --bench engine` measures beside them).

use std::ops::ControlFlow;

use barracuda::{Durability, Engine, EngineOptions, PageSize, Table, TableOptions};

use super::{OpenSpec, PeerDb, Result};
use crate::workload::{self, Batch};

/// The table every workload uses.
const TABLE: &str = "t";

/// An open Barracuda database and its table.
pub struct Db {
    engine: Engine,
    table: Table,
}

impl Db {
    /// Opens (or creates) the database in `spec.dir` with a buffer pool of `spec.cache_bytes`
    /// and pages of `page_size` (a new database's; an existing one keeps its own).
    pub fn open(spec: OpenSpec<'_>, page_size: PageSize) -> Result<Self> {
        let options = EngineOptions::default()
            .page_size(page_size)
            .buffer_pool_bytes(spec.cache_bytes)
            .durability(if spec.durable {
                Durability::SyncEachCommit
            } else {
                Durability::Background
            });
        let engine = Engine::open(spec.dir, options)?;
        let table = if engine.list_tables().iter().any(|t| t == TABLE) {
            engine.table(TABLE)?
        } else {
            engine.create_table(TABLE, TableOptions::default())?
        };
        Ok(Self { engine, table })
    }
}

impl PeerDb for Db {
    fn write_batch(&self, batch: &Batch, _last: bool) -> Result<()> {
        let mut tx = self.engine.begin();
        tx.put_many(&self.table, batch.rows())?;
        tx.commit()?;
        Ok(())
    }

    fn commit_row(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut tx = self.engine.begin();
        tx.put(&self.table, key, value)?;
        tx.commit()?;
        Ok(())
    }

    fn bulk_load(&self, rows: u64) -> Result<()> {
        let rows = (0..rows).map(|n| (workload::key(n), workload::value(n)));
        self.engine.load_sorted(&self.table, rows)?;
        Ok(())
    }

    fn get(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.engine.get_with(&self.table, key, |v| f(v))?.is_some())
    }

    fn scan(&self, start: &[u8], n: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let mut seen = 0;
        if n > 0 {
            self.engine.scan(&self.table, start.., |k, v| {
                f(k, v);
                seen += 1;
                if seen == n {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })?;
        }
        Ok(seen)
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Self { engine, table } = *self;
        drop(table);
        engine.close()?;
        Ok(())
    }
}
