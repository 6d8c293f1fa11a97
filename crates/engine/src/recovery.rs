//! Crash recovery: replaying the redo log onto the tablespace files before the engine opens.
//!
//! From the newest valid checkpoint to the end of the last complete commit unit
//! ([`Recovery`]), mtrs are read in order and their records sorted by page into a batch; when the
//! batch holds `batch_bytes` of log (or the log ends) each page of it is read once, the records
//! of every mtr newer than the page's LSN are applied in log order, and the page is written
//! back. Cost is linear in the log: each mtr is decoded twice (once to learn its pages, once
//! to apply), each page is read and written once per batch, and nothing compares an mtr with
//! another (the 2009 recovery seed: a quadratic check made recovery take 30 min instead of 3).
//!
//! Idempotent: a page written by an earlier, interrupted recovery carries the LSN of the last
//! mtr applied to it, so the same mtrs are skipped the second time. The checkpoint moves only
//! after every page is written and synced.
// InnoDB: recv_recovery_from_checkpoint_start, recv_parse_log_recs (into recv_sys.pages),
// recv_apply_hashed_log_recs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use barracuda_io::{FileSystem, OpenOptions, PageFile};
use barracuda_page::{
    page_lsn, seal_page, set_page_lsn, verify_page, Lsn, PageId, PageSize, SpaceId,
};
use barracuda_redo::record::{apply, decode, Record};
use barracuda_redo::{Durability, RecoveredMtr, Recovery, RedoLog};

use crate::error::{Error, Result};

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
/// at the end of the log and returns the log open for appending.
pub(crate) fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    spaces: &HashMap<SpaceId, PathBuf>,
    page_size: PageSize,
    durability: Durability,
    batch_bytes: usize,
    progress: Option<&RecoveryProgress>,
) -> Result<(RedoLog, RecoveryReport)> {
    let quiet = RecoveryProgress::new();
    let progress = progress.unwrap_or(&quiet);
    progress.begin();
    let result = replay(
        fs,
        dir,
        spaces,
        page_size,
        durability,
        batch_bytes,
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
    spaces: &HashMap<SpaceId, PathBuf>,
    page_size: PageSize,
    durability: Durability,
    batch_bytes: usize,
    progress: &RecoveryProgress,
) -> Result<(RedoLog, RecoveryReport)> {
    let started = Instant::now();
    let mut recovery = Recovery::open(fs, dir)?;
    let mut report = RecoveryReport {
        checkpoint_lsn: recovery.checkpoint_lsn(),
        end_lsn: recovery.end_lsn(),
        redo_bytes: recovery.end_lsn() - recovery.checkpoint_lsn(),
        discarded_bytes: recovery.discarded_bytes(),
        ..RecoveryReport::default()
    };
    progress.applying(report.checkpoint_lsn, report.end_lsn);
    let mut files = Files::new(fs, spaces);
    let mut batch = Batch::default();
    let mut next_progress = 10;
    while let Some(mtr) = recovery.next() {
        let mtr = mtr?;
        report.mtrs += 1;
        batch.add(mtr, page_size, spaces)?;
        if batch.bytes >= batch_bytes {
            batch.apply(&mut files, page_size, &mut report)?;
        }
        progress.update(&report, recovery.scanned_lsn());
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
    batch.apply(&mut files, page_size, &mut report)?;
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
        seconds = report.duration.as_secs_f64(),
        "redo recovery complete"
    );
    Ok((log, report))
}

/// Mtrs read but not applied yet, and the pages they change.
#[derive(Default)]
struct Batch {
    mtrs: Vec<RecoveredMtr>,
    /// Page → indices into `mtrs`, ascending (log order).
    pages: HashMap<PageId, Vec<u32>>,
    bytes: usize,
}

impl Batch {
    fn add(
        &mut self,
        mtr: RecoveredMtr,
        page_size: PageSize,
        spaces: &HashMap<SpaceId, PathBuf>,
    ) -> Result<()> {
        let index = self.mtrs.len() as u32;
        for record in decode(&mtr.payload, page_size).map_err(|e| bad_mtr(&mtr, &e))? {
            let page = record.page();
            if matches!(record, Record::Option { .. }) || !spaces.contains_key(&page.space_id) {
                continue;
            }
            let list = self.pages.entry(page).or_default();
            if list.last() != Some(&index) {
                list.push(index);
            }
        }
        self.bytes += mtr.payload.len();
        self.mtrs.push(mtr);
        Ok(())
    }

    /// Applies the batch page by page, in file order, and empties it.
    fn apply(
        &mut self,
        files: &mut Files<'_>,
        page_size: PageSize,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        if self.mtrs.is_empty() {
            return Ok(());
        }
        report.batches += 1;
        let decoded: Vec<Vec<Record<'_>>> = self
            .mtrs
            .iter()
            .map(|m| decode(&m.payload, page_size).map_err(|e| bad_mtr(m, &e)))
            .collect::<Result<_>>()?;
        let mut order: Vec<(&PageId, &Vec<u32>)> = self.pages.iter().collect();
        order.sort_unstable_by_key(|(id, _)| **id);
        let mut buf = vec![0u8; page_size.bytes()];
        for (&id, indices) in order {
            let file = files.get(id.space_id)?;
            let offset = u64::from(id.page_no) * page_size.bytes() as u64;
            let initialised_first = indices.first().is_some_and(|&i| {
                decoded
                    .get(i as usize)
                    .and_then(|records| records.iter().find(|r| r.page() == id))
                    .is_some_and(|r| matches!(r, Record::InitPage { .. }))
            });
            let lsn = read_page(&*file, offset, id, page_size, initialised_first, &mut buf)?;
            report.pages_read += 1;
            let mut changed = false;
            for &i in indices {
                let (Some(mtr), Some(records)) =
                    (self.mtrs.get(i as usize), decoded.get(i as usize))
                else {
                    continue;
                };
                // Log order: once one mtr is newer than the page, every later one is too.
                if mtr.end_lsn <= lsn {
                    continue;
                }
                apply(id, &mut buf, records).map_err(|e| bad_mtr(mtr, &e))?;
                set_page_lsn(&mut buf, mtr.end_lsn);
                changed = true;
            }
            if changed {
                seal_page(&mut buf);
                file.write_at(&buf, offset)?;
                report.pages_written += 1;
                files.touched(id.space_id);
            }
        }
        self.mtrs.clear();
        self.pages.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// Reads page `id` at `offset` into `buf` and returns its LSN: 0 for a page past the end of the
/// file or all zeros (never written), and for a damaged page whose first record here rebuilds
/// it from nothing (`INIT_PAGE`). Any other damaged page is an error naming it: redo records
/// are byte changes to a page that must be intact (a torn page needs the doublewrite copy).
fn read_page(
    file: &dyn PageFile,
    offset: u64,
    id: PageId,
    page_size: PageSize,
    initialised_first: bool,
    buf: &mut [u8],
) -> Result<Lsn> {
    let len = file.len()?;
    if offset + page_size.bytes() as u64 > len {
        buf.fill(0);
        return Ok(0);
    }
    file.read_at(buf, offset)?;
    if buf.iter().all(|&b| b == 0) {
        return Ok(0);
    }
    match verify_page(buf, id, page_size) {
        Ok(()) => Ok(page_lsn(buf).unwrap_or(0)),
        Err(_) if initialised_first => {
            buf.fill(0);
            Ok(0)
        }
        Err(e) => Err(Error::page(file.path(), id, e)),
    }
}

/// An mtr that the log's CRC accepted but whose records do not decode or apply: the log was
/// written by a broken writer (or crafted), and recovery must stop rather than guess.
fn bad_mtr(mtr: &RecoveredMtr, e: &barracuda_redo::record::RecordError) -> Error {
    Error::Corrupt {
        file: PathBuf::from("redo"),
        what: format!("mtr at LSN {}..{}: {e}", mtr.start_lsn, mtr.end_lsn),
    }
}

/// The tablespace files recovery writes, opened on first use.
struct Files<'a> {
    fs: &'a dyn FileSystem,
    paths: &'a HashMap<SpaceId, PathBuf>,
    open: HashMap<SpaceId, Arc<dyn PageFile>>,
    touched: Vec<SpaceId>,
}

impl<'a> Files<'a> {
    fn new(fs: &'a dyn FileSystem, paths: &'a HashMap<SpaceId, PathBuf>) -> Self {
        Self {
            fs,
            paths,
            open: HashMap::new(),
            touched: Vec::new(),
        }
    }

    fn get(&mut self, space: SpaceId) -> Result<Arc<dyn PageFile>> {
        if let Some(file) = self.open.get(&space) {
            return Ok(file.clone());
        }
        let path = self.paths.get(&space).ok_or_else(|| Error::Corrupt {
            file: PathBuf::from("redo"),
            what: format!("record for space {space}, which no table uses"),
        })?;
        let file = self.fs.open(path, &OpenOptions::new())?;
        self.open.insert(space, file.clone());
        Ok(file)
    }

    fn touched(&mut self, space: SpaceId) {
        if !self.touched.contains(&space) {
            self.touched.push(space);
        }
    }

    /// Syncs the files recovery wrote. (File growth needs no repair: it is made durable before
    /// any mtr records the new size, see `Tablespace::grow_to`.)
    fn finish(&mut self) -> Result<()> {
        for space in &self.touched {
            if let Some(file) = self.open.get(space) {
                file.sync_data()?;
            }
        }
        Ok(())
    }
}
