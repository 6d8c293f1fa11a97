//! Crash recovery: replaying the redo log onto the tablespace files before the engine opens.
//!
//! [`Recovery::open`] finds the newest valid checkpoint and, in a first scan that checks every
//! frame's CRC, the end of the last complete commit unit. Then two kinds of thread share the
//! work, so that both cores are busy:
//! - the opening thread reads the mtrs again (without a second CRC pass) into memory-bounded
//!   batches, decoding each mtr once to note which pages it changes, each page going to the
//!   apply thread that owns it (pages partitioned by hash, so one thread applies all of a
//!   page's mtrs, in log order);
//! - apply threads (one per core, up to [`MAX_APPLY_THREADS`]) take each batch while the next
//!   is read. Each checks the CRC of an mtr before using it, keeps its own page cache across
//!   batches, and applies every mtr newer than the page's LSN. A batch whose pages fit in the
//!   cache is applied in log order (missing pages read first, in file order; the bytes each
//!   change writes prefetched a few changes ahead); otherwise sorted by page, each page read
//!   once for the batch, and the cache written back when full.
//!
//! At the end the opening thread writes every changed page in one pass in file order, syncs
//! the files and moves the checkpoint. Cost is linear in the log: each mtr is decoded twice
//! (once to route it, once to apply it), each page is read and written once per cache fill,
//! and nothing compares an mtr with another (the 2009 recovery seed: a quadratic check made
//! recovery take 30 min instead of 3). See [`batch`] and [`apply`].
//!
//! Idempotent: a page written by an earlier, interrupted recovery carries the LSN of the last
//! mtr applied to it, so the same mtrs are skipped the second time. The checkpoint moves only
//! after every page is written and synced.
// InnoDB: recv_recovery_from_checkpoint_start, recv_parse_log_recs (into recv_sys.pages),
// recv_apply_hashed_log_recs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use barracuda_io::FileSystem;
use barracuda_page::{Lsn, PageSize, SpaceId};
use barracuda_redo::{Durability, Recovery, RedoLog};

use self::apply::{Applier, Counters, DirtyPages};
use self::batch::{Batch, BatchBuilder, Change};
use self::files::Files;

use crate::compression::PageEncoder;
use crate::error::{Error, Result};
use crate::options::PageCompression;
use crate::torn_writes::PageWrites;

mod apply;
mod batch;
mod files;
#[cfg(test)]
mod tests;

/// The most apply threads recovery starts (one per core up to this): beyond a few, the
/// single thread reading and decoding the log is the limit.
const MAX_APPLY_THREADS: usize = 4;

/// How often (in mtrs read) the progress handle and the `tracing` events are updated between
/// batches: often enough for a watcher, rare enough to cost nothing per mtr.
const PROGRESS_EVERY_MTRS: u64 = 4096;

/// What the last recovery did, for `status()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The checkpoint recovery started from.
    pub checkpoint_lsn: Lsn,
    /// The end of the log it found (the end of the last complete commit unit). The log goes on
    /// after the discarded bytes, at `end_lsn + discarded_bytes`, so that no LSN a discarded
    /// unit stamped on a page is handed out again.
    pub end_lsn: Lsn,
    /// Bytes of log scanned and applied: `end_lsn − checkpoint_lsn`.
    pub redo_bytes: u64,
    /// Bytes of an incomplete commit unit (a transaction in flight at the crash) discarded.
    pub discarded_bytes: u64,
    /// Mtrs read.
    pub mtrs: u64,
    /// Page reads done (a page in several batches counts once per batch).
    pub pages_read: u64,
    /// Pages changed and written back.
    pub pages_written: u64,
    /// Batches applied.
    pub batches: u64,
    /// Threads that applied the batches (one per core, up to 4), beside the one reading the
    /// log.
    pub apply_threads: u64,
    /// Wall time of the whole recovery, scan, apply and syncs included.
    pub duration: Duration,
}

/// What a recovery is doing (see [`RecoveryProgress::phase`]), in the order it does it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RecoveryPhase {
    /// The open has not reached recovery yet.
    Waiting,
    /// Reading the checkpoint and finding the end of the log (a scan that checks every frame's
    /// CRC and reads no record).
    Scanning,
    /// Replaying the log onto the pages, batch by batch.
    Applying,
    /// Syncing the pages written, erasing past the end of the log, writing the checkpoint.
    Finishing,
    /// Recovered, or there was nothing to recover: the open goes on.
    Done,
    /// Recovery failed: the open returns the error.
    Failed,
}

impl RecoveryPhase {
    const ALL: [RecoveryPhase; 6] = [
        RecoveryPhase::Waiting,
        RecoveryPhase::Scanning,
        RecoveryPhase::Applying,
        RecoveryPhase::Finishing,
        RecoveryPhase::Done,
        RecoveryPhase::Failed,
    ];
}

/// Live progress of the crash recovery [`Engine::open`](crate::Engine::open) runs, for a thread
/// that watches while `open` blocks (the engine being opened has no `status()` to ask until
/// `open` returns; then `status().recovery` holds the final [`RecoveryReport`]).
///
/// Share one through
/// [`EngineOptions::recovery_progress`](crate::EngineOptions::recovery_progress) and read it
/// from any thread. The opening thread alone writes it; every field is an atomic, so reading
/// never blocks recovery. A recovery starts by resetting it (use one per open). A watcher should
/// also stop when `open` returns: an open that fails before it reaches recovery (a locked
/// directory, a damaged catalog) leaves it [`Waiting`](RecoveryPhase::Waiting).
///
/// ```
/// use std::sync::Arc;
/// use barracuda::{Engine, EngineOptions, RecoveryPhase, RecoveryProgress};
///
/// let dir = tempfile::tempdir()?;
/// let progress = Arc::new(RecoveryProgress::new());
/// let options = EngineOptions::default()
///     .buffer_pool_bytes(8 << 20)
///     .recovery_progress(progress.clone());
/// let watcher = {
///     let progress = progress.clone();
///     // A monitoring thread: prints until the open is past recovery.
///     std::thread::spawn(move || {
///         while progress.phase() < RecoveryPhase::Done {
///             println!("recovery: {:?} {}%", progress.phase(), progress.percent());
///             std::thread::sleep(std::time::Duration::from_millis(100));
///         }
///     })
/// };
/// let db = Engine::open(dir.path(), options)?;
/// watcher.join().expect("the watcher ran");
/// assert_eq!(progress.percent(), 100);
/// db.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct RecoveryProgress {
    /// Index into [`RecoveryPhase::ALL`]; written last (release) when the LSNs below change.
    phase: AtomicU8,
    checkpoint_lsn: AtomicU64,
    end_lsn: AtomicU64,
    scanned_lsn: AtomicU64,
    mtrs: AtomicU64,
    pages_written: AtomicU64,
    batches: AtomicU64,
}

impl RecoveryProgress {
    /// A progress in [`RecoveryPhase::Waiting`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The phase the recovery is in.
    pub fn phase(&self) -> RecoveryPhase {
        let i = usize::from(self.phase.load(Ordering::Acquire));
        RecoveryPhase::ALL
            .get(i)
            .copied()
            .unwrap_or(RecoveryPhase::Failed)
    }

    /// The checkpoint the recovery starts from (0 before [`RecoveryPhase::Applying`]).
    pub fn checkpoint_lsn(&self) -> u64 {
        self.checkpoint_lsn.load(Ordering::Acquire)
    }

    /// The end of the log the scan found: the end of the last complete commit unit (0 before
    /// [`RecoveryPhase::Applying`]).
    pub fn end_lsn(&self) -> u64 {
        self.end_lsn.load(Ordering::Acquire)
    }

    /// How far the log has been read for replay (from the checkpoint up to the end).
    pub fn scanned_lsn(&self) -> u64 {
        self.scanned_lsn.load(Ordering::Acquire)
    }

    /// Percent of the log between the checkpoint and its end read for replay: 0 while
    /// scanning, at most 99 until the recovery is [`Done`](RecoveryPhase::Done), 100 after.
    /// Never decreases during one recovery.
    pub fn percent(&self) -> u8 {
        let phase = self.phase();
        match phase {
            RecoveryPhase::Done => 100,
            RecoveryPhase::Waiting | RecoveryPhase::Scanning => 0,
            RecoveryPhase::Finishing => 99,
            RecoveryPhase::Applying | RecoveryPhase::Failed => {
                let from = self.checkpoint_lsn();
                let total = self.end_lsn().saturating_sub(from);
                if total == 0 {
                    return if phase == RecoveryPhase::Failed {
                        0
                    } else {
                        99
                    };
                }
                let done = self.scanned_lsn().saturating_sub(from).min(total);
                u8::try_from((u128::from(done) * 100 / u128::from(total)).min(99)).unwrap_or(99)
            }
        }
    }

    /// Mini-transactions read so far.
    pub fn mtrs(&self) -> u64 {
        self.mtrs.load(Ordering::Relaxed)
    }

    /// Pages changed and written back so far.
    pub fn pages_written(&self) -> u64 {
        self.pages_written.load(Ordering::Relaxed)
    }

    /// Batches applied so far.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    fn set_phase(&self, phase: RecoveryPhase) {
        let i = RecoveryPhase::ALL
            .iter()
            .position(|p| *p == phase)
            .unwrap_or(0);
        self.phase
            .store(u8::try_from(i).unwrap_or(u8::MAX), Ordering::Release);
    }

    /// Resets every field and enters [`RecoveryPhase::Scanning`].
    fn begin(&self) {
        for field in [
            &self.checkpoint_lsn,
            &self.end_lsn,
            &self.scanned_lsn,
            &self.mtrs,
            &self.pages_written,
            &self.batches,
        ] {
            field.store(0, Ordering::Relaxed);
        }
        self.set_phase(RecoveryPhase::Scanning);
    }

    /// Marks an open that found no log to replay (a new database, or a clean shutdown without
    /// a log): nothing to do, done.
    pub(crate) fn nothing_to_recover(&self) {
        self.begin();
        self.set_phase(RecoveryPhase::Done);
    }

    fn applying(&self, checkpoint_lsn: Lsn, end_lsn: Lsn) {
        self.checkpoint_lsn.store(checkpoint_lsn, Ordering::Relaxed);
        self.end_lsn.store(end_lsn, Ordering::Relaxed);
        self.scanned_lsn.store(checkpoint_lsn, Ordering::Relaxed);
        self.set_phase(RecoveryPhase::Applying);
    }

    fn update(&self, report: &RecoveryReport, scanned_lsn: Lsn) {
        self.mtrs.store(report.mtrs, Ordering::Relaxed);
        self.pages_written
            .store(report.pages_written, Ordering::Relaxed);
        self.batches.store(report.batches, Ordering::Relaxed);
        self.scanned_lsn.store(scanned_lsn, Ordering::Release);
    }
}

/// Replays the log of `dir` onto the tablespaces in `spaces` (space id → file; records for a
/// space not listed belong to a dropped table and are skipped), syncs them, writes a checkpoint
/// at the end of the log and returns the log open for appending. Holds at most about
/// `memory_bytes`: a quarter for the two batches of log alive at a time (one being read, one
/// being applied), the rest for the apply threads' pages.
pub(crate) fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    tables: Tables<'_>,
    page_size: PageSize,
    durability: Durability,
    memory_bytes: usize,
    progress: Option<&RecoveryProgress>,
) -> Result<(RedoLog, RecoveryReport)> {
    let quiet = RecoveryProgress::new();
    let progress = progress.unwrap_or(&quiet);
    progress.begin();
    let result = replay(
        fs,
        dir,
        tables,
        page_size,
        durability,
        memory_bytes,
        progress,
    );
    progress.set_phase(if result.is_ok() {
        RecoveryPhase::Done
    } else {
        RecoveryPhase::Failed
    });
    result
}

/// [`recover`], reporting to `progress`.
fn replay(
    fs: &dyn FileSystem,
    dir: &Path,
    tables: Tables<'_>,
    page_size: PageSize,
    durability: Durability,
    memory_bytes: usize,
    progress: &RecoveryProgress,
) -> Result<(RedoLog, RecoveryReport)> {
    let started = Instant::now();
    let Tables {
        spaces,
        compression,
        page_writes,
        encoder,
    } = tables;
    let mut recovery = Recovery::open(fs, dir)?;
    // Torn pages first: redo records change intact pages only.
    page_writes.start(spaces, recovery.checkpoint_lsn())?;
    let mut report = RecoveryReport {
        checkpoint_lsn: recovery.checkpoint_lsn(),
        end_lsn: recovery.end_lsn(),
        redo_bytes: recovery.end_lsn() - recovery.checkpoint_lsn(),
        discarded_bytes: recovery.discarded_bytes(),
        ..RecoveryReport::default()
    };
    progress.applying(report.checkpoint_lsn, report.end_lsn);
    let files = Files::new(fs, spaces, page_writes, encoder, compression);
    let counters = Counters::default();
    let plan = Plan::new(memory_bytes, page_size);
    report.apply_threads = plan.threads as u64;
    let dirty = std::thread::scope(|s| {
        let mut workers = Vec::with_capacity(plan.threads);
        for i in 0..plan.threads {
            workers.push(Worker::spawn(s, i, &plan, &files, &counters)?);
        }
        let scanned = scan(
            &mut recovery,
            &plan,
            spaces,
            &workers,
            &counters,
            &mut report,
            progress,
        );
        let finished = scanned.and_then(|()| {
            workers
                .iter()
                .try_for_each(|w| w.send(Job::Finish))
                .map_err(|()| stopped())
        });
        // Join every thread before returning: an apply thread's own error explains a scan
        // that stopped because the thread was gone.
        let mut dirty = Ok(DirtyPages::new());
        for worker in workers {
            match (worker.join(), &mut dirty) {
                (Ok(Some(pages)), Ok(all)) => all.append(pages),
                (Err(e), Ok(_)) => dirty = Err(e),
                _ => {}
            }
        }
        match (finished, dirty) {
            (Err(e), Ok(_)) | (_, Err(e)) => Err(e),
            (Ok(()), Ok(dirty)) => Ok(dirty),
        }
    })?;
    // Written here rather than by the apply threads: one pass in file order over every
    // thread's pages, from the thread that opens the engine.
    dirty.write(&files, &counters)?;
    report.pages_read = counters.pages_read.load(Ordering::Relaxed);
    report.pages_written = counters.pages_written.load(Ordering::Relaxed);
    progress.update(&report, recovery.scanned_lsn());
    progress.set_phase(RecoveryPhase::Finishing);
    files.finish()?;
    let log = recovery.finish(durability)?;
    // Every change up to the end is in synced pages: the next recovery starts here. (After a
    // discarded unit `finish` has written this checkpoint already.)
    if log.checkpoint_lsn() < log.current_lsn() {
        log.write_checkpoint(log.current_lsn())?;
    }
    report.duration = started.elapsed();
    tracing::info!(
        redo_bytes = report.redo_bytes,
        mtrs = report.mtrs,
        pages_written = report.pages_written,
        discarded_bytes = report.discarded_bytes,
        apply_threads = plan.threads,
        seconds = report.duration.as_secs_f64(),
        "redo recovery complete"
    );
    Ok((log, report))
}

/// The tablespaces recovery replays onto, and how it writes their pages.
#[derive(Clone, Copy)]
pub(crate) struct Tables<'a> {
    /// Each table's file by space id; records for other spaces are errors.
    pub(crate) spaces: &'a HashMap<SpaceId, PathBuf>,
    /// The page compression of each table that has one: recovery writes its pages as the
    /// pool would.
    pub(crate) compression: &'a HashMap<SpaceId, PageCompression>,
    /// The torn-write protection its page writes go through.
    pub(crate) page_writes: &'a PageWrites,
    /// What makes the images written (and decompresses what is read).
    pub(crate) encoder: &'a PageEncoder,
}

/// How recovery divides its memory and its work.
struct Plan {
    /// Apply threads; each owns the pages [`batch::partition`] gives it.
    threads: usize,
    /// The bound on one batch. Two are held at a time (one being read while the threads apply
    /// the other): together a quarter of recovery's memory.
    batch_bytes: usize,
    /// Pages each apply thread may keep: the other three quarters, shared equally.
    pages_per_thread: usize,
    page_size: PageSize,
}

impl Plan {
    fn new(memory_bytes: usize, page_size: PageSize) -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .clamp(1, MAX_APPLY_THREADS);
        let cache_bytes = memory_bytes - memory_bytes / 4;
        Self {
            threads,
            batch_bytes: memory_bytes / 8,
            pages_per_thread: cache_bytes / page_size.bytes() / threads,
            page_size,
        }
    }
}

/// What the reading thread hands an apply thread.
enum Job {
    /// A batch, and the changes in it of the pages this thread owns.
    Apply(Arc<Batch>, Vec<Change>),
    /// The log is read: hand back the changed pages and stop.
    Finish,
}

/// An apply thread, and the channel that feeds it.
struct Worker<'scope> {
    /// Rendezvous (capacity 0): a send returns once the thread is done with the previous
    /// batch, so at most two batches are alive.
    jobs: SyncSender<Job>,
    /// The thread's changed pages when it finishes, `None` if the reading thread stopped
    /// early (on an error it reports).
    thread: ScopedJoinHandle<'scope, Result<Option<DirtyPages>>>,
}

impl<'scope> Worker<'scope> {
    fn spawn<'env>(
        s: &'scope Scope<'scope, 'env>,
        index: usize,
        plan: &Plan,
        files: &'env Files<'env>,
        counters: &'env Counters,
    ) -> Result<Self> {
        let (jobs, received) = std::sync::mpsc::sync_channel::<Job>(0);
        let (pages, page_size) = (plan.pages_per_thread, plan.page_size);
        let thread = std::thread::Builder::new()
            .name(format!("barracuda-recovery-{index}"))
            .spawn_scoped(s, move || {
                let mut applier = Applier::new(pages, page_size, files, counters);
                for job in received {
                    match job {
                        Job::Apply(batch, changes) => applier.apply(&batch, changes)?,
                        Job::Finish => return Ok(Some(applier.finish())),
                    }
                }
                // The reading thread stopped on an error: it reports it, nothing is written.
                Ok(None)
            })
            .map_err(|e| Error::fs("recovery apply thread", e))?;
        Ok(Self { jobs, thread })
    }

    /// Hands `job` to the thread; `Err` if the thread has stopped (on an error `join` returns).
    fn send(&self, job: Job) -> std::result::Result<(), ()> {
        self.jobs.send(job).map_err(|_| ())
    }

    fn join(self) -> Result<Option<DirtyPages>> {
        drop(self.jobs);
        self.thread.join().unwrap_or_else(|_| {
            Err(Error::Corrupt {
                file: PathBuf::from("redo"),
                what: "a recovery apply thread panicked".into(),
            })
        })
    }
}

/// The error of a scan whose apply thread has gone: replaced by the thread's own error.
fn stopped() -> Error {
    Error::Corrupt {
        file: PathBuf::from("redo"),
        what: "a recovery apply thread stopped".into(),
    }
}

/// Reads the log to its end into batches, handing each to the apply threads when it is full.
fn scan(
    recovery: &mut Recovery,
    plan: &Plan,
    spaces: &HashMap<SpaceId, PathBuf>,
    workers: &[Worker<'_>],
    counters: &Counters,
    report: &mut RecoveryReport,
    progress: &RecoveryProgress,
) -> Result<()> {
    let mut builder = BatchBuilder::new(workers.len(), plan.page_size, spaces);
    let mut applying: Option<Arc<Batch>> = None;
    let mut next_progress = 10;
    loop {
        let next = recovery.next_mtr_unchecked()?;
        let done = next.is_none();
        if let Some(mtr) = next {
            report.mtrs += 1;
            builder.add(&mtr)?;
        }
        let full = builder.bytes() >= plan.batch_bytes || (done && !builder.is_empty());
        if full {
            let (batch, parts) = builder.take();
            let batch = Arc::new(batch);
            for (worker, changes) in workers.iter().zip(parts) {
                worker
                    .send(Job::Apply(batch.clone(), changes))
                    .map_err(|()| stopped())?;
            }
            report.batches += 1;
            // Every thread has taken the new batch, so none holds the previous one: its
            // buffers serve the next.
            if let Some(done_with) = applying.replace(batch).and_then(Arc::into_inner) {
                builder.reuse(done_with);
            }
        }
        if done {
            return Ok(());
        }
        if full || report.mtrs.is_multiple_of(PROGRESS_EVERY_MTRS) {
            report.pages_read = counters.pages_read.load(Ordering::Relaxed);
            report.pages_written = counters.pages_written.load(Ordering::Relaxed);
            progress.update(report, recovery.scanned_lsn());
            let percent = progress.percent();
            if percent >= next_progress {
                tracing::info!(
                    percent,
                    lsn = recovery.scanned_lsn(),
                    "redo recovery progress"
                );
                next_progress = percent - percent % 10 + 10;
            }
        }
    }
}
