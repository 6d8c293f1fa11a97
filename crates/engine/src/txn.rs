//! Write transactions: atomic batches with read-your-writes.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::table::{Table, TableInner};

/// Staged rows of one table: key → new value (`None` = delete).
type StagedRows = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// A batch of writes applied all together at [`commit`](Self::commit), or not at all.
///
/// Reads through the transaction see its own writes first. Until commit nothing is visible to
/// others. Commits are applied one batch at a time; a reader running while a batch is applied
/// may see part of it (there is no MVCC yet — it comes with undo logs). Each row is applied
/// all or nothing; if a row after the first fails (an I/O error, a full disk), the engine turns
/// read-only and writes nothing more rather than let anything build on a half-applied batch
/// (the redo log, next, makes the batch one log record instead). A batch whose first row
/// fails changed nothing and the engine stays writable.
pub struct Transaction<'e> {
    engine: &'e Engine,
    /// Per table (keyed by name, holding its handle), key → new value (`None` = delete).
    writes: BTreeMap<String, (Arc<TableInner>, StagedRows)>,
    finished: bool,
}

impl<'e> Transaction<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            writes: BTreeMap::new(),
            finished: false,
        }
    }

    fn table_writes(&mut self, table: &Table) -> Result<&mut StagedRows> {
        table.tree_of(self.engine)?;
        let entry = self
            .writes
            .entry(table.name().to_owned())
            .or_insert_with(|| (table.inner.clone(), BTreeMap::new()));
        if !Arc::ptr_eq(&entry.0, &table.inner) {
            return Err(Error::StaleTable(table.name().to_owned()));
        }
        Ok(&mut entry.1)
    }

    /// Stages `key → value`. Keys and values over the limits are refused now, not at commit.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(self.engine, table, key)?;
        let (len, max) = (value.len() as u64, barracuda_btree::MAX_VALUE_LEN);
        if len > max {
            return Err(Error::ValueTooLong {
                table: table.name().to_owned(),
                len,
                max,
            });
        }
        self.table_writes(table)?
            .insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    /// Stages the deletion of `key`.
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        check_key(self.engine, table, key)?;
        self.table_writes(table)?.insert(key.to_vec(), None);
        Ok(())
    }

    /// Reads `key`, seeing this transaction's own staged writes first.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some((_, writes)) = self.writes.get(table.name()) {
            if let Some(staged) = writes.get(key) {
                return Ok(staged.clone());
            }
        }
        self.engine.get(table, key)
    }

    /// Number of staged writes.
    pub fn len(&self) -> usize {
        self.writes.values().map(|(_, w)| w.len()).sum()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies every staged write. On success all of them are visible; durability follows the
    /// engine's checkpoints until the redo log lands.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        let writes = std::mem::take(&mut self.writes);
        if writes.is_empty() {
            return Ok(());
        }
        let inner = &self.engine.inner;
        let _commit = inner.commit_lock.lock();
        self.engine.check_writable()?;
        // Validate all handles before applying anything.
        for (name, (table, _)) in &writes {
            if table.dropped.load(Ordering::Acquire) {
                return Err(Error::StaleTable(name.clone()));
            }
        }
        let (mut written, mut deleted) = (0u64, 0u64);
        for (name, (table, rows)) in &writes {
            for (key, value) in rows {
                let result = match value {
                    Some(value) => table.tree.put(key, value).map(|_| written += 1),
                    None => table.tree.delete(key).map(|_| deleted += 1),
                };
                if let Err(err) = result {
                    let err = Error::table(name, err);
                    // A put or delete that fails leaves its row as it was, so a batch whose
                    // first row failed changed nothing. Any later failure leaves the batch half
                    // applied, with no undo to take it back: nothing may build on it, nor may
                    // it reach disk.
                    if written + deleted > 0 {
                        inner.poison(format!("a commit failed part-way: {err}"));
                    }
                    return Err(err);
                }
            }
        }
        inner
            .counters
            .rows_written
            .fetch_add(written, Ordering::Relaxed);
        inner
            .counters
            .rows_deleted
            .fetch_add(deleted, Ordering::Relaxed);
        inner.counters.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Discards every staged write.
    pub fn rollback(mut self) {
        self.finished = true;
        self.writes.clear();
        self.engine
            .inner
            .counters
            .rollbacks
            .fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.engine
                .inner
                .counters
                .rollbacks
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn check_key(engine: &Engine, table: &Table, key: &[u8]) -> Result<()> {
    let max = barracuda_btree::max_key_len(engine.page_size());
    if key.len() > max {
        return Err(Error::KeyTooLong {
            table: table.name().to_owned(),
            len: key.len(),
            max,
        });
    }
    Ok(())
}
