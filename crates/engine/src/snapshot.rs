//! Read-only snapshots: a read view held for a series of reads.

use std::ops::{ControlFlow, RangeBounds};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use barracuda_undo::ReadView;

use crate::engine::Engine;
use crate::error::Result;
use crate::table::{Range, Table};

/// A consistent, read-only view of every table: each read sees exactly the data committed
/// before [`Engine::snapshot`] was called — nothing of a transaction open then or committed
/// since. Versions changed since are rebuilt from the undo log; while a snapshot lives, purge
/// keeps the undo it may need (a long-lived snapshot makes the history list grow, as an old
/// InnoDB read view does). Dropping it lets purge go on. Takes no lock.
pub struct Snapshot<'e> {
    engine: &'e Engine,
    view: Arc<ReadView>,
}

impl<'e> Snapshot<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            view: Arc::new(engine.inner.mvcc.trx.read_view(0)),
        }
    }

    /// The value of `key` in `table` as of the snapshot.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let tree = table.tree_of(self.engine)?;
        let inner = &self.engine.inner;
        inner.counters.rows_read.fetch_add(1, Ordering::Relaxed);
        inner.mvcc.read_in(table.name(), tree, &self.view, key)
    }

    /// The rows of `table` in `range` as of the snapshot, ascending (`.rev()`: descending).
    /// The iterator keeps the snapshot's view alive on its own.
    pub fn range<'r, R: RangeBounds<&'r [u8]>>(&self, table: &Table, range: R) -> Result<Range> {
        let tree = table.tree_of(self.engine)?;
        Ok(Range::new(
            table.name().to_owned(),
            tree.clone(),
            tree.range(range),
            self.view.clone(),
            self.engine.inner.mvcc.clone(),
        ))
    }
    /// Calls `f` with each row of `table` in `range` as of the snapshot, ascending, until it
    /// returns [`ControlFlow::Break`]; rows are lent in place, as
    /// [`Engine::scan`](crate::Engine::scan) lends them (`f` must not call the engine).
    pub fn scan<'r, R: RangeBounds<&'r [u8]>>(
        &self,
        table: &Table,
        range: R,
        mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<()>,
    ) -> Result<()> {
        let tree = table.tree_of(self.engine)?;
        self.engine.inner.mvcc.scan_in_view(
            table.name(),
            tree,
            &self.view,
            crate::visit::bounds(&range),
            &mut f,
        )
    }
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").finish_non_exhaustive()
    }
}
