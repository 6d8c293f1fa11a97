//! RocksDB: the default column family, no compression (none is compiled in: the data is in the
//! OS page cache in every phase, so compression would only cost CPU), an LRU block cache of the
//! caller's size holding index blocks too (`cache_index_and_filter_blocks`, so that the cache
//! size is the whole budget), other options at RocksDB's defaults (4 KiB blocks, no bloom
//! filter). Writes: one `WriteBatch` per batch, `sync = false`, WAL on (`sync = true` when
//! opened [`durable`](OpenSpec::durable): RocksDB's group commit shares a WAL sync among
//! concurrent writers).
//!
//! After a load, [`PeerDb::settle`] flushes the memtable and compacts everything (untimed), so
//! the read phases read sorted files, as they read the other engines' finished B-trees.
//!
//! Reads: `get_pinned` (a slice pinned in the block cache or memtable) and a raw iterator whose
//! `key()` / `value()` are slices; the latest data, no snapshot.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch, WriteOptions, DB};

use super::{OpenSpec, PeerDb, Result};
use crate::workload::{self, Batch, BATCH_ROWS};

/// An open RocksDB database.
pub struct Db {
    db: DB,
    write_options: WriteOptions,
}

impl Db {
    /// Opens (or creates) the database in `spec.dir` with a block cache of `spec.cache_bytes`.
    pub fn open(spec: OpenSpec<'_>) -> Result<Self> {
        let cache = Cache::new_lru_cache(spec.cache_bytes);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_cache_index_and_filter_blocks(true);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_compression_type(DBCompressionType::None);
        options.set_bottommost_compression_type(DBCompressionType::None);
        options.set_block_based_table_factory(&table);
        let db = DB::open(&options, spec.dir)?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(spec.durable);
        write_options.disable_wal(false);
        Ok(Self { db, write_options })
    }
}

impl PeerDb for Db {
    fn write_batch(&self, batch: &Batch, _last: bool) -> Result<()> {
        let mut wb = WriteBatch::default();
        for (k, v) in batch.rows() {
            wb.put(k, v);
        }
        self.db.write_opt(wb, &self.write_options)?;
        Ok(())
    }

    fn commit_row(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut wb = WriteBatch::default();
        wb.put(key, value);
        self.db.write_opt(wb, &self.write_options)?;
        Ok(())
    }

    fn bulk_load(&self, rows: u64) -> Result<()> {
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        let mut start = 0;
        while start < rows {
            let mut wb = WriteBatch::default();
            for n in start..(start + BATCH_ROWS as u64).min(rows) {
                wb.put(workload::key(n), workload::value(n));
            }
            self.db.write_opt(wb, &options)?;
            start += BATCH_ROWS as u64;
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        self.db.flush()?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn get(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(match self.db.get_pinned(key)? {
            Some(v) => {
                f(&v);
                true
            }
            None => false,
        })
    }

    fn scan(&self, start: &[u8], n: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut seen = 0;
        while seen < n {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            f(k, v);
            seen += 1;
            it.next();
        }
        it.status()?;
        Ok(seen)
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Self { db, .. } = *self;
        // Stop compactions rather than wait for them: the database is about to be read again
        // or deleted. The files stay consistent either way.
        db.cancel_all_background_work(true);
        drop(db);
        Ok(())
    }
}
