//! Reads that lend rows to a closure instead of copying them into `Vec`s:
//! [`Engine::get_with`], [`Engine::scan`], [`Snapshot::scan`](crate::Snapshot::scan) and
//! [`Transaction::scan`](crate::Transaction::scan).
//!
//! The closure sees the row in place, in its leaf, while the leaf is latched shared — which is
//! what makes these reads cost no copy and no allocation per row. So the closure must not call
//! the engine: a write to the same leaf would wait for the latch its own thread holds. Such a
//! call fails at once with [`Error::CalledFromReadClosure`] instead of hanging (a thread-local
//! flag checked where every table operation starts). Rows the closure cannot see in place (a
//! version rebuilt from the undo log, an off-page value) are built after the leaf is let go and
//! handed to the closure from a buffer; the scan then goes on after that key.

use std::cell::Cell;
use std::ops::{Bound, ControlFlow, RangeBounds};

use barracuda_btree::{BTree, StoredRecord, StoredValue, ValueView};
use barracuda_undo::ReadView;

use crate::error::{Error, Result};
use crate::mvcc::Mvcc;

thread_local! {
    /// Depth of read closures running on this thread under a page latch.
    static IN_READ_CLOSURE: Cell<u32> = const { Cell::new(0) };
}

/// Marks the thread as running a read closure while it lives.
struct ClosureScope;

impl ClosureScope {
    fn enter() -> Self {
        IN_READ_CLOSURE.with(|depth| depth.set(depth.get() + 1));
        Self
    }
}

impl Drop for ClosureScope {
    fn drop(&mut self) {
        IN_READ_CLOSURE.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Fails if this thread is inside a read closure (see the module documentation).
pub(crate) fn check_not_in_read_closure() -> Result<()> {
    if IN_READ_CLOSURE.with(Cell::get) > 0 {
        return Err(Error::CalledFromReadClosure);
    }
    Ok(())
}

/// A closure lent rows by a scan: key, value; `Break` stops the scan.
pub(crate) type RowVisitor<'f> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'f;

/// What a visit under the latch left for after it: a row to build from its stored record.
struct Later {
    key: Vec<u8>,
    current: StoredRecord,
}

impl Later {
    fn of(key: &[u8], value: ValueView<'_>, sys: barracuda_page::SysFields) -> Self {
        Self {
            key: key.to_vec(),
            current: StoredRecord {
                value: value.to_stored(),
                sys,
            },
        }
    }
}

impl Mvcc {
    /// The newest committed value of `key` — what a view opened now sees — handed to `f`, in
    /// place when it is inline and its transaction has ended (the common case, and the cheap
    /// one: no view is needed).
    pub(crate) fn read_latest_with<R>(
        &self,
        table: &str,
        tree: &BTree,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let table_err = |e| Error::table(table, e);
        // Transactions below this had ended when the read began: what any new view sees.
        let ended_below = self.trx.committed_below();
        let mut f = Some(f);
        let seen = tree
            .get_stored_with(key, |value, sys| {
                if sys.trx_id < ended_below {
                    if sys.deleted {
                        return Ok(None);
                    }
                    if let ValueView::Inline(bytes) = value {
                        if let Some(f) = f.take() {
                            let _scope = ClosureScope::enter();
                            return Ok(Some(f(bytes)));
                        }
                    }
                }
                Err(Later::of(key, value, sys))
            })
            .map_err(table_err)?;
        let later = match seen {
            None | Some(Ok(None)) => return Ok(None),
            Some(Ok(Some(r))) => return Ok(Some(r)),
            Some(Err(later)) => later,
        };
        let value = if later.current.sys.trx_id < ended_below {
            Some(tree.read_stored(&later.current.value).map_err(table_err)?)
        } else {
            let view = self.trx.read_view(0);
            self.resolve(table, tree, &view, key, later.current)?
        };
        Ok(value.and_then(|v| f.take().map(|f| f(&v))))
    }

    /// Hands `f` every row of `range` that `view` sees, ascending, until it breaks.
    pub(crate) fn scan_in_view(
        &self,
        table: &str,
        tree: &BTree,
        view: &ReadView,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        f: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let table_err = |e| Error::table(table, e);
        let (start, end) = range;
        let mut resume: Option<Vec<u8>> = None;
        loop {
            let from = resume.as_deref().map_or(start, Bound::Excluded);
            let mut later = None;
            tree.scan_stored(from, end, |key, value, sys| {
                if view.sees(sys.trx_id) {
                    if sys.deleted {
                        return ControlFlow::Continue(());
                    }
                    if let ValueView::Inline(bytes) = value {
                        let _scope = ClosureScope::enter();
                        return f(key, bytes);
                    }
                }
                later = Some(Later::of(key, value, sys));
                ControlFlow::Break(())
            })
            .map_err(table_err)?;
            // The scan ended, or `f` stopped it.
            let Some(Later { key, current }) = later else {
                return Ok(());
            };
            let value = if view.sees(current.sys.trx_id) {
                Some(tree.read_stored(&current.value).map_err(table_err)?)
            } else {
                // Only the fields start the walk back; the newest value is not needed.
                let fields = StoredRecord {
                    value: StoredValue::Inline(Vec::new()),
                    sys: current.sys,
                };
                self.resolve(table, tree, view, &key, fields)?
            };
            if let Some(value) = value {
                if f(&key, &value).is_break() {
                    return Ok(());
                }
            }
            resume = Some(key);
        }
    }
}

/// The bounds of `range` as slices.
pub(crate) fn bounds<'r, R: RangeBounds<&'r [u8]>>(
    range: &R,
) -> (Bound<&'r [u8]>, Bound<&'r [u8]>) {
    (
        range.start_bound().map(|k| *k),
        range.end_bound().map(|k| *k),
    )
}
