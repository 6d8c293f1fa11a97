//! An I/O error at any point of a write workload never leaves a half-done change behind.
//!
//! The workload (puts and deletes in batches, with splits, merges, overflow chains and
//! checkpoints) runs on the fault-injecting file system with the N-th read, write, sync or file
//! growth failing (EIO or ENOSPC), for every N the workload reaches. A write that fails rolls
//! its transaction back. Then the database is closed and reopened on healthy files (the reopen
//! replays the redo log when the close could not checkpoint, and rolls back a transaction a
//! failure left open), and the table must hold exactly the batches that committed — plus,
//! possibly, the last batch whose commit failed after its log was written (a failed log sync),
//! whole, never in part.
//!
//! And before the close, while the engine is still writable, every committed row reads back and
//! the tree passes `check_table`: a failed batch changed nothing, a failed split or merge left no
//! trace. Never a panic, never a tree `check_table` rejects.
//!
//! What would break it: a split that allocates after changing the page (a failed allocation
//! leaves records moved out of a page and no sibling to hold them); a merge that latches the
//! right neighbour after copying records; an mtr that stamps its pages when abandoned; `close`
//! or `Drop` flushing a read-only engine's pages; a page holding part of a failed batch reaching
//! disk (the open commit unit's write barrier); a checkpoint passing a change not yet on disk.
//!
//! CI runs a sample of N for each kind; `cargo test --test faults_leave_no_half_done_change --
//! --ignored` runs every N (thousands of runs).
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use barracuda::fs::{FaultError, FaultyFileSystem, OpKind};
use barracuda::{Engine, EngineOptions, Error, PageSize, TableOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One staged write: `None` deletes.
type Op = (Vec<u8>, Option<Vec<u8>>);

/// SplitMix64: a deterministic workload without a dependency on a generator's stream stability.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const BATCHES: usize = 36;
const CHECKPOINT_EVERY: usize = 6;

/// Batches of puts and deletes over 2000 keys on 4 KiB pages: the first half grows the tree
/// (splits up to three levels, overflow chains, the file grown past its first extent), the
/// second half deletes most of it (merges, rebalancing, the root lowered).
fn workload() -> Vec<Vec<Op>> {
    let mut rng = Rng(0x5EED);
    (0..BATCHES)
        .map(|b| {
            let deleting = b >= BATCHES / 2;
            (0..40)
                .map(|_| {
                    let key = format!("key{:05}", rng.below(2000)).into_bytes();
                    if rng.below(100) < if deleting { 80 } else { 10 } {
                        (key, None)
                    } else {
                        let len = if rng.below(4) == 0 {
                            1500 + rng.below(12_000) as usize // off-page on 4 KiB pages
                        } else {
                            40 + rng.below(560) as usize
                        };
                        let byte = rng.below(256) as u8;
                        (key, Some(vec![byte; len]))
                    }
                })
                .collect()
        })
        .collect()
}

fn options(fs: &FaultyFileSystem) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        // 48 frames: pages are evicted, written and read back. A row write is one redo unit
        // whose pages stay in the pool until it ends: its table pages (a split, an overflow
        // chain) plus its undo page, the transaction system page and the undo space's bitmap.
        .buffer_pool_bytes(48 * 4096)
        // Purge runs at close only, so that the op counts of a run do not depend on when a
        // background thread woke.
        .background_purge(false)
        // A small log: creating it is quick, and it wraps and checkpoints during the workload.
        .redo_log_capacity(2 << 20)
        .file_system(Arc::new(fs.clone()))
}

fn scan(db: &Engine, table: &barracuda::Table) -> Result<Model, Error> {
    db.range(table, ..)?.collect()
}

/// How one run ended.
#[derive(Debug, Default)]
struct Outcome {
    fired: bool,
    failed_commits: usize,
    read_only: bool,
    /// The reopen replayed redo (the close did not checkpoint).
    recovered: bool,
}

/// Held by each test of this file for its whole run. The op counts of a run depend on how busy
/// the machine is: with a second workload beside it the page cleaner keeps fewer frames free,
/// user threads flush single pages (each a doublewrite sync) and a run's syncs grew from ~680
/// to ~980 when measured. Clean runs measured beside another test then overstate the counts the
/// fault runs reach, and their failpoints seem not to fire.
static ONE_TEST_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_test_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed while holding it leaves nothing the next test depends on.
    ONE_TEST_AT_A_TIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The operation kinds faults are injected into.
const KINDS: [OpKind; 4] = [OpKind::Read, OpKind::Write, OpKind::Sync, OpKind::SetLen];

/// Runs the workload with `fault` armed (after the table exists), closes, reopens on healthy
/// files and checks the invariants of the module documentation. Returns the op counts of the
/// workload by kind (for the fault-free run) and how the run ended.
fn run(fault: Option<(OpKind, u64, FaultError)>) -> ([u64; 4], Outcome) {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let table = db.create_table("t", TableOptions::default()).unwrap();
    db.checkpoint().unwrap();
    let start = KINDS.map(|k| fs.op_count(k));
    if let Some((kind, nth, error)) = fault {
        fs.fail_nth(kind, nth, error);
    }
    let what = format!("{fault:?}");

    let mut outcome = Outcome::default();
    let mut committed = Model::new();
    // The last commit that failed, applied: it may be found after reopen when its failure came
    // after its log was written (a failed log sync), never in part.
    let mut uncertain: Option<Model> = None;
    let batches = workload();
    let last = batches.len() - 1;
    for (i, batch) in batches.into_iter().enumerate() {
        let mut tx = db.begin();
        let mut something_failed = false;
        let mut applied = committed.clone();
        let mut wrote_all = true;
        for (key, value) in batch {
            // A write changes the table at once: it can meet the failpoint itself.
            let written = match &value {
                Some(v) => tx.put(&table, &key, v),
                None => tx.delete(&table, &key),
            };
            if written.is_err() {
                wrote_all = false;
                break;
            }
            match value {
                Some(v) => applied.insert(key, v),
                None => applied.remove(&key),
            };
        }
        if !wrote_all {
            // The batch is taken back from its undo log; if that fails too, the engine turns
            // read-only and the next open rolls it back: either way it is wholly absent.
            outcome.failed_commits += 1;
            something_failed = true;
            uncertain = None;
            let _ = tx.rollback();
        } else if tx.commit().is_ok() {
            committed = applied;
            uncertain = None;
        } else {
            outcome.failed_commits += 1;
            something_failed = true;
            uncertain = Some(applied);
        }
        if i % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1 && db.checkpoint().is_err() {
            something_failed = true;
        }
        if db.status().read_only.is_some() {
            outcome.read_only = true;
            break;
        }
        if something_failed || i == last {
            // Still writable: whatever failed changed nothing that can be seen (a commit that
            // failed while the engine stays writable applied nothing). (These reads can meet
            // the failpoint themselves; it fires once, so a second try reads.)
            uncertain = None;
            let rows = scan(&db, &table).or_else(|_| scan(&db, &table)).unwrap();
            assert_eq!(rows, committed, "{what}: batch {i}");
            db.check_table(&table)
                .or_else(|_| db.check_table(&table))
                .unwrap_or_else(|e| panic!("{what}: batch {i}: {e}"));
        }
    }
    let counts: [u64; 4] = std::array::from_fn(|i| fs.op_count(KINDS[i]) - start[i]);
    if let Some((kind, nth, _)) = fault {
        let i = KINDS.iter().position(|&k| k == kind).unwrap();
        outcome.fired = counts[i] >= nth;
    }
    let closed = db.close();
    fs.clear_failpoints();

    // Reopening recovers from the redo log: every committed batch is there, whether the close
    // succeeded or not, and the last failed one is wholly there or wholly absent.
    match Engine::open(tmp.path(), options(&fs)) {
        Err(err) => panic!("{what}: reopening on healthy files failed: {err}"),
        Ok(db) => {
            outcome.recovered = db.status().recovery.is_some_and(|r| r.redo_bytes > 0);
            let table = db.table("t").unwrap();
            db.check_table(&table)
                .unwrap_or_else(|e| panic!("{what}: after reopen: {e}"));
            let rows = scan(&db, &table).unwrap();
            if uncertain.as_ref() != Some(&rows) {
                assert_eq!(
                    rows,
                    committed,
                    "{what}: after reopen (close {}) the table must hold every committed batch",
                    if closed.is_ok() {
                        "succeeded"
                    } else {
                        "failed"
                    }
                );
            }
            db.close().unwrap();
        }
    }
    (counts, outcome)
}

/// Every `step`-th N of `1..=total`, plus the first few (where the first split, merge and
/// checkpoint happen).
fn sample(total: u64, step: u64) -> impl Iterator<Item = u64> {
    (1..=total).filter(move |n| *n <= 12 || n % step == 0)
}

fn run_all(step_for: impl Fn(u64) -> u64) {
    // The ops a run does vary with the machine's load (background flushes and log syncs are
    // timed): sample N below the fewer of two clean runs' counts.
    let (first, clean) = run(None);
    assert!(!clean.read_only && clean.failed_commits == 0);
    let (second, _) = run(None);
    let counts: [u64; 4] = std::array::from_fn(|i| first[i].min(second[i]));
    for (kind, total) in KINDS.into_iter().zip(counts) {
        assert!(total > 0, "the workload does no {kind:?}");
        let (mut runs, mut fired, mut failed, mut read_only, mut recovered) = (0, 0, 0, 0, 0);
        // Runs whose N is one of the first 12 or lies in the first 40 % of the clean runs' ops,
        // and how many fired: the ops that depend on timing (background flushes and log syncs,
        // single-page flushes when the free list runs dry, the close's checkpoint) vary with the
        // machine's load, so an N near the total may not be reached; those runs still check
        // what they do. (Syncs vary most: once, two clean runs did at least 1,148 and the
        // failing runs after them about 640, so with 75 % here only 639 of the 861 runs of N up
        // to 861 fired, and the check below failed with nothing wrong.)
        let (mut early_runs, mut early_fired) = (0, 0);
        for nth in sample(total, step_for(total)) {
            let error = if nth % 2 == 0 {
                FaultError::Enospc
            } else {
                FaultError::Eio
            };
            let (_, outcome) = run(Some((kind, nth, error)));
            runs += 1;
            fired += usize::from(outcome.fired);
            if nth <= 12 || nth * 100 <= total * 40 {
                early_runs += 1;
                early_fired += usize::from(outcome.fired);
            }
            failed += usize::from(outcome.failed_commits > 0);
            read_only += usize::from(outcome.read_only);
            recovered += usize::from(outcome.recovered);
        }
        eprintln!(
            "{kind:?}: {total} ops; {runs} runs, failpoint fired in {fired}, a commit failed in \
             {failed}, read-only in {read_only}, redo replayed at reopen in {recovered}"
        );
        // Background writes make op counts vary a little between runs; most must still fire.
        assert!(
            early_fired * 10 >= early_runs * 9,
            "{kind:?}: the failpoint fired in only {early_fired} of the {early_runs} runs \
             failing an early op"
        );
    }
}

#[test]
fn a_failed_operation_leaves_no_half_done_change_sampled() {
    let _alone = one_test_at_a_time();
    // About 25 runs per kind.
    run_all(|total| (total / 12).max(1));
}

#[test]
#[ignore = "thousands of runs; run with --ignored"]
fn a_failed_operation_leaves_no_half_done_change_for_every_n() {
    let _alone = one_test_at_a_time();
    run_all(|_| 1);
}

#[test]
fn a_full_disk_while_growing_a_table_is_a_no_space_error_and_the_row_can_be_retried() {
    let _alone = one_test_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let table = db.create_table("t", TableOptions::default()).unwrap();
    fs.fail_nth(OpKind::SetLen, 1, FaultError::Enospc);
    let value = [3u8; 900];
    let mut failed_at = None;
    for i in 0..2000u32 {
        let key = format!("k{i:06}");
        if let Err(err) = db.put(&table, key.as_bytes(), &value) {
            assert!(
                matches!(
                    &err,
                    // The table's file, or the undo tablespace, whichever grows first.
                    Error::Io { file, kind: barracuda::IoErrorKind::NoSpace, .. }
                        if file.ends_with("tables/t.ibd") || file.ends_with("undo.ibu")
                ),
                "{err:?}"
            );
            // A one-row batch that failed changed nothing: the engine stays writable.
            assert!(db.status().read_only.is_none());
            db.put(&table, key.as_bytes(), &value).unwrap();
            failed_at = Some(i);
            break;
        }
    }
    let failed_at = failed_at.expect("the file had to grow");
    assert_eq!(scan(&db, &table).unwrap().len(), failed_at as usize + 1);
    db.check_table(&table).unwrap();
    db.close().unwrap();
}
