//! Table handles and row iterators.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use barracuda_btree::{BTree, RangeIter, StoredRecord, StoredValue, VersionedRow};
use barracuda_undo::ReadView;

use crate::mvcc::Mvcc;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::options::TableOptions;

pub(crate) struct TableInner {
    /// Serial of the engine that opened the table (handles of another engine are refused).
    pub(crate) engine_serial: u64,
    pub(crate) name: String,
    pub(crate) tree: BTree,
    pub(crate) options: TableOptions,
    pub(crate) dropped: AtomicBool,
}

impl TableInner {
    pub(crate) fn new(
        engine_serial: u64,
        name: String,
        tree: BTree,
        options: TableOptions,
    ) -> Self {
        Self {
            engine_serial,
            name,
            tree,
            options,
            dropped: AtomicBool::new(false),
        }
    }
}

/// A handle to a table. Cheap to clone; valid until the table is dropped.
#[derive(Clone)]
pub struct Table {
    pub(crate) inner: Arc<TableInner>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.inner.name)
            .field("space_id", &self.inner.tree.space())
            .finish()
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The options the table was created with.
    pub fn options(&self) -> TableOptions {
        self.inner.options
    }

    /// The table's tablespace id.
    pub fn space_id(&self) -> u32 {
        self.inner.tree.space()
    }

    /// The tree, after checking the handle belongs to `engine` and the table still exists.
    pub(crate) fn tree_of(&self, engine: &Engine) -> Result<&BTree> {
        crate::visit::check_not_in_read_closure()?;
        // Two loads, no lock: this runs on every read. `dropped` is set under the catalog lock
        // before the table's pages are discarded.
        if self.inner.engine_serial != engine.inner.serial
            || self.inner.dropped.load(Ordering::Acquire)
        {
            return Err(Error::StaleTable(self.inner.name.clone()));
        }
        Ok(&self.inner.tree)
    }
}

/// An iterator over `(key, value)` rows of a key range: ascending, or descending with `.rev()`.
/// It holds no latch between items, so the caller may write to the table while iterating.
///
/// It reads through a read view: [`Engine::range`](crate::Engine::range) takes one when it is
/// called (every row as committed then, none of a transaction still open or committed later, so
/// a scan never sees part of a transaction); a [`Snapshot`](crate::Snapshot)'s or a
/// [`Transaction`](crate::Transaction)'s range reads through theirs (a transaction's sees its
/// own writes). Rows changed since are rebuilt from the undo log.
pub struct Range {
    table: String,
    tree: BTree,
    iter: RangeIter,
    view: Arc<ReadView>,
    mvcc: Arc<Mvcc>,
    /// An error was yielded: the iteration is over.
    failed: bool,
}

impl Range {
    pub(crate) fn new(
        table: String,
        tree: BTree,
        iter: RangeIter,
        view: Arc<ReadView>,
        mvcc: Arc<Mvcc>,
    ) -> Self {
        Self {
            table,
            tree,
            iter,
            view,
            mvcc,
            failed: false,
        }
    }

    /// The row the view sees of a row as the leaf holds it, `None` to skip it (deleted or
    /// inserted after the view).
    fn visible(&self, (key, value, sys): VersionedRow) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.view.sees(sys.trx_id) {
            return Ok((!sys.deleted).then_some((key, value)));
        }
        // Only the fields start the walk back; the newest value is not needed.
        let current = StoredRecord {
            value: StoredValue::Inline(Vec::new()),
            sys,
        };
        let old = self
            .mvcc
            .resolve(&self.table, &self.tree, &self.view, &key, current)?;
        Ok(old.map(|v| (key, v)))
    }

    fn next_visible(
        &mut self,
        mut next: impl FnMut(&mut RangeIter) -> Option<barracuda_btree::Result<VersionedRow>>,
    ) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.failed {
            return None;
        }
        loop {
            let result = match next(&mut self.iter)? {
                Ok(row) => self.visible(row),
                Err(e) => Err(Error::table(&self.table, e)),
            };
            match result {
                Ok(Some(kv)) => return Some(Ok(kv)),
                Ok(None) => {}
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_visible(RangeIter::next_row)
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_visible(RangeIter::next_back_row)
    }
}
