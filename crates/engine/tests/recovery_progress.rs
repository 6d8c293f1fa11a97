//! Recovery progress can be watched while `Engine::open` blocks (issue 8, "Recovery ... progress
//! ... in `status()`"): a [`RecoveryProgress`] given in the options reports the phase, the LSNs
//! and a percent done that only grows and reaches 100 when the open is past recovery; its last
//! values agree with the [`RecoveryReport`](barracuda::RecoveryReport) that `status()` keeps.
//!
//! Watched two ways during a real recovery of several batches: from another thread polling it,
//! as a monitor would, and from inside the recovering thread at each read of the log (through the
//! file system), which sees every batch's value whatever the scheduling.
//!
//! What would break it: percent computed against a moving total, or from a field written after
//! the phase; a phase set to done before the checkpoint is written; progress left unreset by a
//! second open, or never marked done when there is nothing to recover; a failed recovery that
//! still says done.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

mod power_cut;

use std::sync::Arc;

use parking_lot::Mutex;

use barracuda::fs::{FaultError, FaultyFileSystem, Op, OpKind};
use barracuda::{Engine, EngineOptions, RecoveryPhase, RecoveryProgress, TableOptions};
use barracuda_testkit::crash::SplitMix64;
use power_cut::{PowerCut, Who};

/// A 4 MiB pool: recovery applies the log in batches of 1 MiB (a quarter of the pool, at least
/// 1 MiB), so a few MiB of redo take several batches.
fn options(fs: &FaultyFileSystem) -> EngineOptions {
    EngineOptions::default()
        .buffer_pool_bytes(4 << 20)
        .redo_log_capacity(16 << 20)
        .file_system(Arc::new(fs.clone()))
}

/// A database holding `transactions` × 100 rows of 3000 bytes (about 300 KiB of redo each) past
/// its checkpoint, then a power loss.
fn crashed_database(dir: &std::path::Path, transactions: u32) -> FaultyFileSystem {
    let fs = FaultyFileSystem::new();
    let db = Engine::open(dir, options(&fs)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // Random bytes: a run of equal bytes would be logged as one MEMSET.
    let mut rng = SplitMix64::new(0x9E0C);
    let mut value = vec![0u8; 3000];
    for batch in 0..transactions {
        let mut tx = db.begin();
        for row in 0..100u32 {
            let key = format!("k{batch:03}{row:03}");
            rng.fill_bytes(&mut value);
            tx.put(&t, key.as_bytes(), &value).unwrap();
        }
        tx.commit().unwrap();
    }
    fs.crash().unwrap();
    drop(db);
    fs
}

#[test]
fn a_watcher_sees_recovery_progress_grow_to_100_and_match_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = crashed_database(tmp.path(), 10);
    let progress = Arc::new(RecoveryProgress::new());
    assert_eq!(
        (progress.phase(), progress.percent()),
        (RecoveryPhase::Waiting, 0)
    );

    // Inside the recovering thread: the percent at each read of the log (256 KiB windows, so
    // several per batch; recovery keeps pages in memory, so page writes come at the end).
    let cut = PowerCut::new(&fs);
    let at_reads = Arc::new(Mutex::new(Vec::new()));
    {
        let (progress, at_reads) = (progress.clone(), at_reads.clone());
        let observe = move |op: Op, path: &std::path::Path, _offset: u64| {
            if op == Op::Read && path.ends_with("redo/ib_redo0") {
                at_reads.lock().push((progress.phase(), progress.percent()));
            }
            false // observe only: nothing is counted, the power stays on
        };
        cut.arm_filtered(Who::me(), Some(Box::new(observe)), None);
    }
    // From another thread, as a monitor would: every change until the open is past recovery.
    let watcher = {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let mut seen = vec![(progress.phase(), progress.percent())];
            while seen
                .last()
                .is_some_and(|(phase, _)| *phase < RecoveryPhase::Done)
            {
                let now = (progress.phase(), progress.percent());
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
                std::thread::yield_now();
            }
            seen
        })
    };
    let db = Engine::open(
        tmp.path(),
        options(&fs)
            .file_system(Arc::new(cut.clone()))
            .recovery_progress(progress.clone()),
    )
    .unwrap();
    cut.disarm();
    let polled = watcher.join().unwrap();
    let report = db.status().recovery.expect("the open recovered");

    assert!(
        report.batches >= 3,
        "too little redo for batches: {report:?}"
    );
    for (name, seen) in [("polled", &polled), ("at log reads", &*at_reads.lock())] {
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]),
            "{name}: phase or percent went back: {seen:?}"
        );
    }
    assert_eq!(
        polled.last(),
        Some(&(RecoveryPhase::Done, 100)),
        "{polled:?}"
    );
    // Every batch but the last is applied while the log is still being read.
    let at_reads = at_reads.lock().clone();
    let applying: std::collections::BTreeSet<u8> = at_reads
        .iter()
        .filter(|(phase, _)| *phase == RecoveryPhase::Applying)
        .map(|&(_, percent)| percent)
        .collect();
    assert!(
        applying.len() as u64 >= report.batches - 1 && applying.iter().all(|p| *p < 100),
        "one percent per batch applied while reading the log, below 100: {at_reads:?} ({report:?})"
    );
    assert_eq!(
        (progress.phase(), progress.percent()),
        (RecoveryPhase::Done, 100)
    );
    assert_eq!(
        (progress.checkpoint_lsn(), progress.end_lsn()),
        (report.checkpoint_lsn, report.end_lsn)
    );
    assert_eq!(progress.scanned_lsn(), report.end_lsn);
    assert_eq!(
        (
            progress.mtrs(),
            progress.pages_written(),
            progress.batches()
        ),
        (report.mtrs, report.pages_written, report.batches)
    );
    let t = db.table("t").unwrap();
    assert_eq!(db.range(&t, ..).unwrap().count(), 1000);
    db.close().unwrap();

    // The next open resets it: nothing to replay after a clean close.
    let db = Engine::open(tmp.path(), options(&fs).recovery_progress(progress.clone())).unwrap();
    let report = db.status().recovery.unwrap();
    assert_eq!((report.redo_bytes, report.mtrs), (0, 0));
    assert_eq!(
        (progress.phase(), progress.percent(), progress.mtrs()),
        (RecoveryPhase::Done, 100, 0)
    );
    db.close().unwrap();
}

#[test]
fn a_new_database_reports_recovery_done_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let progress = Arc::new(RecoveryProgress::new());
    let db = Engine::open(tmp.path(), options(&fs).recovery_progress(progress.clone())).unwrap();
    assert!(db.status().recovery.is_none());
    assert_eq!(
        (progress.phase(), progress.percent()),
        (RecoveryPhase::Done, 100)
    );
    db.close().unwrap();
}

#[test]
fn a_failed_recovery_reports_failed_not_done() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = crashed_database(tmp.path(), 2);
    let progress = Arc::new(RecoveryProgress::new());
    // Reads before recovery: the catalog's two copies. The tenth read is the log's or a page's.
    fs.fail_nth(OpKind::Read, 10, FaultError::Eio);
    let err = Engine::open(tmp.path(), options(&fs).recovery_progress(progress.clone()))
        .err()
        .expect("the open fails");
    assert_eq!(progress.phase(), RecoveryPhase::Failed, "{err}");
    assert!(progress.percent() < 100);
}
