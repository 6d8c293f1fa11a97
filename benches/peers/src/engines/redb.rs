//! redb: one table of byte-slice keys and values in one file, `cache_size` set by the caller.
//! Load batches commit with `Durability::None` (nothing synced) but the last, which commits
//! with `Durability::Immediate` (the load's durable end, timed with the load as redb needs it to
//! persist the non-durable commits before it). `commit_row` commits with `Immediate` when the
//! database was opened [`durable`](OpenSpec::durable), else with `None`.
//!
//! Reads: one read transaction per operation; values through `AccessGuard::value()`, slices of
//! redb's own pages.

use redb::{Builder, Database, Durability, ReadableDatabase, TableDefinition};

use super::{OpenSpec, PeerDb, Result};
use crate::workload::{self, Batch};

/// The table every workload uses.
const TABLE: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("t");

/// The database file inside the directory.
const FILE: &str = "data.redb";

/// An open redb database.
pub struct Db {
    db: Database,
    /// [`OpenSpec::durable`]: `commit_row` commits with `Durability::Immediate`.
    durable: bool,
}

impl Db {
    /// Opens (or creates) the database file in `spec.dir` with a cache of `spec.cache_bytes`.
    pub fn open(spec: OpenSpec<'_>) -> Result<Self> {
        std::fs::create_dir_all(spec.dir)?;
        let db = Builder::new()
            .set_cache_size(spec.cache_bytes)
            .create(spec.dir.join(FILE))?;
        // Create the table, so that readers of an empty database find it.
        let txn = db.begin_write()?;
        txn.open_table(TABLE)?;
        txn.commit()?;
        Ok(Self {
            db,
            durable: spec.durable,
        })
    }
}

impl PeerDb for Db {
    fn write_batch(&self, batch: &Batch, last: bool) -> Result<()> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(if last {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        {
            let mut table = txn.open_table(TABLE)?;
            for (k, v) in batch.rows() {
                table.insert(k, v)?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn commit_row(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(if self.durable {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        txn.open_table(TABLE)?.insert(key, value)?;
        txn.commit()?;
        Ok(())
    }

    fn bulk_load(&self, rows: u64) -> Result<()> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::None)?;
        {
            let mut table = txn.open_table(TABLE)?;
            for n in 0..rows {
                table.insert(workload::key(n).as_slice(), workload::value(n).as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        Ok(match table.get(key)? {
            Some(guard) => {
                f(guard.value());
                true
            }
            None => false,
        })
    }

    fn scan(&self, start: &[u8], n: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        let mut seen = 0;
        for row in table.range::<&[u8]>(start..)?.take(n) {
            let (k, v) = row?;
            f(k.value(), v.value());
            seen += 1;
        }
        Ok(seen)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}
