//! Rollback: a transaction's changes taken back from its undo log, newest first.
//!
//! Used by [`Transaction::rollback`](crate::Transaction::rollback) (and a transaction dropped
//! without commit, or chosen as a deadlock victim) while it still holds its row locks, and by
//! [`Engine::open`](crate::Engine::open) for every transaction a crash left uncommitted, before
//! the engine serves anyone. Each undo record is taken back inside its own redo commit unit, and
//! taking one back twice is harmless ([`undo_one`](crate::mvcc::undo_one)), so a
//! crash during a rollback leaves the log active and the next open finishes it. The log is
//! discarded in a last unit, which also ends the transaction.

use std::collections::HashMap;

use barracuda_btree::BTree;
use barracuda_page::PageNo;
use barracuda_undo::UndoLog;

use crate::engine::EngineInner;
use crate::error::{Error, Result};
use crate::unit::OnFailure;

/// The undo log to roll back: a live transaction's, or one found active at open.
pub(crate) enum LogToRollBack {
    Live(UndoLog),
    Recovered(PageNo),
}

impl LogToRollBack {
    fn first_page(&self) -> PageNo {
        match self {
            Self::Live(log) => log.first_page(),
            Self::Recovered(page) => *page,
        }
    }
}

/// Rolls transaction `trx_id` back: applies its undo records newest first, discards its log and
/// ends it. Its row locks (if any) are the caller's to release afterwards. A failure turns the
/// engine read-only (the log stays active, so the next open finishes the rollback).
pub(crate) fn roll_back(inner: &EngineInner, trx_id: u64, log: LogToRollBack) -> Result<u64> {
    let result = roll_back_inner(inner, trx_id, log);
    if let Err(err) = &result {
        inner.poison(format!("rolling back transaction {trx_id} failed: {err}"));
    }
    result
}

fn roll_back_inner(inner: &EngineInner, trx_id: u64, log: LogToRollBack) -> Result<u64> {
    let mvcc = &inner.mvcc;
    let undo_err = |e| Error::table("(undo tablespace)", e);
    let first = log.first_page();
    let pages = mvcc.undo.log_pages(first).map_err(undo_err)?;
    let trees: HashMap<u32, BTree> = inner
        .tables
        .read()
        .values()
        .map(|t| (t.tree.space(), t.tree.clone()))
        .collect();
    let mut undone = 0u64;
    // Newest first, one page of records in memory at a time (a transaction of millions of
    // rows has megabytes of undo).
    for &page in pages.iter().rev() {
        let records = mvcc.undo.records_on_page(first, page).map_err(undo_err)?;
        for (ptr, record) in records.iter().rev() {
            // A record of a dropped table: its rows went with the file.
            let Some(tree) = trees.get(&record.space) else {
                continue;
            };
            // Room for the restored version and a split it may cause.
            let redo = 2 * record.payload.len() as u64 + 512;
            inner.in_unit(redo, OnFailure::Poison, || {
                crate::mvcc::undo_one(&mvcc.trx, tree, trx_id, *ptr, record)
                    .map_err(|e| Error::table(&tree_name(inner, record.space), e))
            })?;
            undone += 1;
        }
    }
    inner.in_unit(512, OnFailure::Poison, || {
        let discarded = match log {
            LogToRollBack::Live(log) => mvcc.undo.discard(log),
            LogToRollBack::Recovered(page) => mvcc.undo.discard_recovered(page),
        };
        discarded.map_err(|e| Error::table("(undo tablespace)", e))
    })?;
    mvcc.trx.end_rolled_back(trx_id);
    Ok(undone)
}

fn tree_name(inner: &EngineInner, space: u32) -> String {
    inner
        .tables
        .read()
        .values()
        .find(|t| t.tree.space() == space)
        .map_or_else(|| format!("(space {space})"), |t| t.name.clone())
}

/// Rolls back every transaction the last run left uncommitted (`active`: first page and id of
/// each log, as [`Mvcc::open`](crate::mvcc::Mvcc::open) found them), newest first, before the
/// engine serves anyone.
pub(crate) fn roll_back_recovered(inner: &EngineInner, active: &[(PageNo, u64)]) -> Result<()> {
    let mut logs = active.to_vec();
    logs.sort_by_key(|&(_, id)| std::cmp::Reverse(id));
    for (page, trx_id) in logs {
        let undone = roll_back(inner, trx_id, LogToRollBack::Recovered(page))?;
        let counters = &inner.mvcc.purge;
        counters
            .recovered_rollbacks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        counters
            .recovered_rows_undone
            .fetch_add(undone, std::sync::atomic::Ordering::Relaxed);
        tracing::info!(
            trx_id,
            undone,
            "rolled back a transaction left open by a crash"
        );
    }
    Ok(())
}
