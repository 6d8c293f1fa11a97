//! Sorted loads: an empty table built bottom-up from rows in key order
//! ([`Engine::load_sorted`]), as InnoDB builds an index from sorted rows and MariaDB loads an
//! empty table.
//!
//! Each page is written once, full, as a created page whose image is its redo record; no row
//! is locked and no undo is written. The load is a transaction of its own: its rows carry its
//! id and a roll pointer that says "inserted, no older version", so a read view opened before
//! the load ends does not see them (as it would not see any insert it did not see commit), and
//! one opened after sees them all. The rows become part of the table in one mini-transaction,
//! the rewrite of the table's root page (see `barracuda_btree::SortedBuild`): after a crash
//! the table holds every row or none.

use barracuda_btree::BTreeError;
use barracuda_page::SysFields;
use barracuda_undo::RollPtr;

use crate::alloc::SpaceAllocator;
use crate::engine::{Engine, EngineInner};
use crate::error::{Error, Result};
use crate::table::Table;
use crate::txn::{check_key, check_value};

/// What [`Engine::load_sorted`] built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Rows loaded.
    pub rows: u64,
    /// Pages written besides the table's root page (leaves, internal and overflow pages).
    pub pages: u64,
    /// Levels of the table's tree (1: every row is in the root page).
    pub height: u32,
}

/// Ends the load's transaction id on every path: after the install its rows become visible to
/// views opened from then on; before it, nothing of it is reachable.
/// The load holds its transaction's own lock meanwhile: a writer that meets one of its rows
/// after the install and before this end waits for the lock (the rows' implicit lock), and
/// the lock goes (the field drops) only after the id stopped being active.
struct EndsLoad<'e> {
    engine: &'e Engine,
    trx_id: u64,
    _locks: barracuda_lock::TrxLocks,
}

impl Drop for EndsLoad<'_> {
    fn drop(&mut self) {
        self.engine.inner.mvcc.trx.end_rolled_back(self.trx_id);
    }
}

impl Engine {
    /// Loads `rows`, whose keys must be strictly ascending, into the empty table `table`, and
    /// returns what it built. Much faster than [`put_many`](crate::Transaction::put_many) for
    /// an initial load: leaves are filled in order to fifteen sixteenths (room for later
    /// inserts, as InnoDB leaves) and written once each, with no row lock and no undo record.
    ///
    /// All or nothing: the rows become visible together when the call returns (durable as the
    /// engine's [`Durability`](crate::Durability) promises a commit); an error — a key out of
    /// order ([`Error::NotSorted`]), a table with rows ([`Error::TableNotEmpty`], also when a
    /// writer adds one while the load runs), a key or value over the limits, an I/O error —
    /// leaves the table as it was and frees what was built. A crash during the load leaves the
    /// table empty, and the open that recovers the database frees the pages the load had
    /// taken (an empty table is its root page alone).
    ///
    /// Tables with `RowFormat::Compressed` are refused ([`Error::Unsupported`]): load them
    /// with `put_many`. Rows deleted from a table but not yet purged still count as rows.
    pub fn load_sorted<I, K, V>(&self, table: &Table, rows: I) -> Result<LoadReport>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let tree = table.tree_of(self)?.clone();
        self.check_writable()?;
        let inner = &self.inner;
        let name = table.name();
        let lift = |err: BTreeError| {
            if matches!(err, BTreeError::Log(_)) {
                inner.poison(format!(
                    "the redo log refused a page of a sorted load: {err}"
                ));
            }
            Error::table(name, err)
        };
        let trx_id = inner.mvcc.begin()?;
        let mut locks = inner.locks.begin(trx_id);
        locks.lock_own_transaction();
        let ends = EndsLoad {
            engine: self,
            trx_id,
            _locks: locks,
        };
        let inserted = RollPtr {
            page_no: 0,
            offset: 0,
            insert: true,
        };
        let sys = SysFields {
            trx_id,
            roll_ptr: inserted.to_u64(),
            deleted: false,
        };
        let mut build = tree.build_sorted(sys).map_err(lift)?;
        for (key, value) in rows {
            let (key, value) = (key.as_ref(), value.as_ref());
            check_key(self, table, key)?;
            check_value(table, value)?;
            inner.check_writable_for_lone_mtr(build.redo_bound(value.len()))?;
            build.push(key, value).map_err(lift)?;
        }
        if table
            .inner
            .dropped
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(Error::StaleTable(name.to_owned()));
        }
        inner.check_writable_for_lone_mtr(build.redo_bound(0))?;
        let (stats, end) = build.finish().map_err(lift)?;
        // Visible to views opened from here on, as a commit's rows are.
        drop(ends);
        let counters = &inner.counters;
        counters
            .rows_written
            .fetch_add(stats.rows, std::sync::atomic::Ordering::Relaxed);
        counters
            .commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(end) = end {
            inner.wait_committed(end)?;
        }
        Ok(LoadReport {
            rows: stats.rows,
            pages: stats.pages,
            height: stats.height,
        })
    }
}

/// At an open that replayed or discarded redo (a crash; a clean close leaves none): frees the pages that a sorted load cut short left
/// allocated (and any overflow chain written for a row an empty table never got). A table with
/// no record is its root page alone, so every other page its bitmaps mark in use is one nothing
/// reaches. Returns how many pages were freed.
pub(crate) fn reclaim_pages_of_empty_tables(inner: &EngineInner) -> Result<u64> {
    let alloc = SpaceAllocator::new(inner.pool.clone(), inner.spaces.clone(), inner.log.clone());
    let tables: Vec<_> = inner.tables.read().values().cloned().collect();
    let mut freed = 0;
    for table in tables {
        let tree = &table.tree;
        let lift = |err: BTreeError| Error::table(&table.name, err);
        if !tree.is_empty().map_err(lift)? {
            continue;
        }
        let leaked = alloc
            .used_pages_besides(tree.space(), tree.root())
            .map_err(lift)?;
        if leaked.is_empty() {
            continue;
        }
        inner.check_writable_for_lone_mtr(4096)?;
        barracuda_btree::PageAllocator::free_pages(&alloc, &leaked).map_err(lift)?;
        tracing::info!(
            table = %table.name,
            pages = leaked.len(),
            "freed the pages of a load cut short (the table is empty)"
        );
        freed += leaked.len() as u64;
    }
    Ok(freed)
}
