//! LMDB through heed: one unnamed database, the environment opened with `NO_SYNC` and
//! `NO_META_SYNC` (commits write their pages with `write`, never `fsync`) — but for the
//! `commit_*` phases ([`OpenSpec::durable`]), where it keeps LMDB's durable default (a commit
//! syncs its data pages, then its meta page) —, no `WRITE_MAP`, no
//! `APPEND` hint at load (Barracuda gets none either) but in `bulk_load`, LMDB's own bulk path. LMDB reads through its memory map, so it
//! has no cache to size: the OS page cache holds the data in every phase.
//!
//! Reads: one read transaction per operation; `get` and the cursor return slices of the map.

use std::ops::Bound;

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, PutFlags};

use super::{OpenSpec, PeerDb, Result};
use crate::workload::{self, Batch};

/// An open LMDB environment and its database.
pub struct Db {
    env: Env,
    db: Database<Bytes, Bytes>,
}

impl Db {
    /// Opens (or creates) the environment in `spec.dir`, its map sized for the data with room for
    /// a randomly loaded tree's half-full pages (4× the rows' bytes, at least 64 MiB).
    pub fn open(spec: OpenSpec<'_>) -> Result<Self> {
        std::fs::create_dir_all(spec.dir)?;
        let map_size = (spec.data_bytes.saturating_mul(4).max(64 << 20)).next_multiple_of(1 << 20);
        let mut options = EnvOpenOptions::new();
        options.map_size(map_size).max_dbs(1);
        #[expect(
            unsafe_code,
            reason = "heed marks these unsafe: NO_SYNC may lose the last commits in a power loss \
                      (wanted here: no sync per batch), and the map must not be changed under \
                      LMDB by another program (this directory is the benchmark's own)"
        )]
        let env = unsafe {
            if !spec.durable {
                options.flags(EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC);
            }
            options.open(spec.dir)?
        };
        let mut wtxn = env.write_txn()?;
        let db: Database<Bytes, Bytes> = env.create_database(&mut wtxn, None)?;
        wtxn.commit()?;
        Ok(Self { env, db })
    }
}

impl PeerDb for Db {
    fn write_batch(&self, batch: &Batch, _last: bool) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        for (k, v) in batch.rows() {
            self.db.put(&mut wtxn, k, v)?;
        }
        wtxn.commit()?;
        Ok(())
    }

    fn commit_row(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        self.db.put(&mut wtxn, key, value)?;
        wtxn.commit()?;
        Ok(())
    }

    fn bulk_load(&self, rows: u64) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        for n in 0..rows {
            self.db.put_with_flags(
                &mut wtxn,
                PutFlags::APPEND,
                &workload::key(n),
                &workload::value(n),
            )?;
        }
        wtxn.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let rtxn = self.env.read_txn()?;
        Ok(match self.db.get(&rtxn, key)? {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        })
    }

    fn scan(&self, start: &[u8], n: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let rtxn = self.env.read_txn()?;
        let mut seen = 0;
        for row in self
            .db
            .range(&rtxn, &(Bound::Included(start), Bound::Unbounded))?
            .take(n)
        {
            let (k, v) = row?;
            f(k, v);
            seen += 1;
        }
        Ok(seen)
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Self { env, db: _ } = *self;
        // heed closes an environment when its last handle goes; wait for that, so that the same
        // directory can be opened again right after.
        env.prepare_for_closing().wait();
        Ok(())
    }
}
