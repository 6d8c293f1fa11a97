//! Table handles and row iterators.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use barracuda_btree::{BTree, RangeIter};

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
pub struct Range {
    table: String,
    iter: RangeIter,
}

impl Range {
    pub(crate) fn new(table: String, iter: RangeIter) -> Self {
        Self { table, iter }
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
        Some(self.iter.next()?.map_err(|e| Error::table(&self.table, e)))
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        Some(
            self.iter
                .next_back()?
                .map_err(|e| Error::table(&self.table, e)),
        )
    }
}
