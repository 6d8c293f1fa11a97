//! [`RedoLog`]: appending mtrs, the writer with group commit, and checkpoints.
//!
//! Appenders copy their framed mtr into the log buffer under one short mutex. Whoever needs
//! bytes on disk (a committer in [`Durability::Sync`], an appender finding the buffer full, the
//! background thread) becomes the *leader* if nobody is writing: it takes the whole buffer,
//! writes it and syncs outside the mutex, while the others append to a fresh buffer or wait.
//! One `fdatasync` thus serves every committer whose bytes were in the buffer when the leader
//! took it.
//!
//! Each waiter sleeps on its own condition variable, registered with the LSN it needs: a
//! finishing stage wakes only the waiters it satisfied, plus one waiter to lead the next write
//! (queued first, so the next group's write and sync start at once), instead of a thundering
//! herd that mostly goes back to sleep. Writes are serialised (they go in LSN order); the write
//! and sync stages are tracked apart so that up to [`SYNCS_IN_FLIGHT`] syncs could overlap.
//!
//! With one sync at a time, a leader starting the next write the moment a sync returns takes
//! only the committers that appended *during* that sync: those the sync released come back
//! after, miss the group and wait two syncs, so each thread commits once per two syncs at best
//! (16 threads: 8 commits per fsync, measured 0.123 fsyncs/commit). So a committer about to
//! lead first waits, on a condition with a deadline of half the last sync's duration, until
//! as many appends arrived as the last sync released threads; the groups then fill
//! (0.063 fsyncs/commit with 16 threads). A lone committer never waits: it released only
//! itself and has appended since.
// MySQL: binlog_group_commit_sync_delay / binlog_group_commit_sync_no_delay_count (a bounded
// wait for a known number of committers before the sync).
// InnoDB: log_write_up_to (5.7 group commit: one thread writes and flushes for all waiters);
// MySQL 8 (WL#10310) separates the write and flush stages likewise.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use barracuda_io::{FileSystem, IoError, OpenOptions, PageFile};
use parking_lot::{Condvar, Mutex};

use crate::error::{RedoError, Result};
use crate::format::{self, Checkpoint, Header, DATA_OFFSET, FRAME_OVERHEAD, SLOT_OFFSETS};
use crate::ring;
use crate::Lsn;

/// The log's file name inside `<dir>/redo/`.
pub const LOG_FILE_NAME: &str = "ib_redo0";
/// The LSN a new log starts at unless told otherwise (InnoDB: LOG_START_LSN, 16 × 512).
pub const DEFAULT_START_LSN: Lsn = 8192;
/// How many `fdatasync` calls on the log may be in flight at once. A sync completing out of
/// order would be harmless (it was issued after every byte below its end had been written), but
/// one is measured best: on the development VM's disk, which serialises cache flushes, two in
/// flight gave the same 16-thread commit rate with 0.187 instead of 0.123 fsyncs per commit
/// (the second sync is issued at once and carries a smaller group).
pub(crate) const SYNCS_IN_FLIGHT: u32 = 1;
/// A leader gathers the committers the last sync released for at most that sync's duration
/// divided by this (measured: 2 and 4 give the same 16-thread rate, both with full groups).
const GATHER_FRACTION: u32 = 2;
/// The gathering window's cap, so that a stalled sync does not make the next commit wait long.
const MAX_GATHER: Duration = Duration::from_millis(1);
/// How often the background thread syncs in [`Durability::Async`] and [`Durability::None`].
pub const BACKGROUND_INTERVAL: Duration = Duration::from_secs(1);

/// When a [`RedoLog::commit`] returns, relative to the disk.
// InnoDB: innodb_flush_log_at_trx_commit = 1 / 2 / 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The mtr is written and synced before `commit` returns.
    #[default]
    Sync,
    /// The mtr is written to the file (the OS page cache) before `commit` returns; a background
    /// thread syncs about once a second, so a power loss may lose about a second of commits.
    Async,
    /// `commit` only copies into the log buffer; a background thread writes and syncs about
    /// once a second (or an append writes when the buffer is full).
    None,
}

/// How [`RedoLog::create`] makes a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedoOptions {
    /// Bytes of the circular data area (InnoDB: `innodb_redo_log_capacity`); a multiple of
    /// 4096, at least 4 × `buffer_bytes`. Default 100 MiB.
    pub capacity: u64,
    /// Log buffer size (InnoDB: `innodb_log_buffer_size`): the largest frame, and the most
    /// bytes ever written but not yet synced. Default 1 MiB.
    pub buffer_bytes: u32,
    /// The LSN of the first byte of the new log. A log replacing an older one must start above
    /// every LSN stamped on a page. Default [`DEFAULT_START_LSN`].
    pub start_lsn: Lsn,
    /// When commits return.
    pub durability: Durability,
}

impl Default for RedoOptions {
    fn default() -> Self {
        RedoOptions {
            capacity: 100 << 20,
            buffer_bytes: 1 << 20,
            start_lsn: DEFAULT_START_LSN,
            durability: Durability::Sync,
        }
    }
}

/// Counters of a [`RedoLog`] since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// mtrs appended.
    pub appends: u64,
    /// `write_at` batches issued for log data (a batch crossing the wrap point counts once).
    pub writes: u64,
    /// `fdatasync` calls on the log file, checkpoint syncs included.
    pub fsyncs: u64,
}

/// The path of the log file of the database in `dir`.
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join("redo").join(LOG_FILE_NAME)
}

/// The mutable state, under [`Shared::state`].
struct State {
    /// Framed mtrs from `buf_lsn` to `next_lsn`, not yet taken by a writer.
    buf: Vec<u8>,
    /// A cleared buffer the next leader swaps in, so steady state allocates nothing.
    spare: Vec<u8>,
    buf_lsn: Lsn,
    next_lsn: Lsn,
    /// A leader is writing (outside the mutex); writes go one at a time, in LSN order.
    writing: bool,
    /// `fdatasync` calls in flight, at most [`SYNCS_IN_FLIGHT`].
    syncing: u32,
    written_lsn: Lsn,
    /// The end of the newest sync issued (or about to be): waiters at or below it need not lead.
    sync_lsn: Lsn,
    flushed_lsn: Lsn,
    checkpoint: Checkpoint,
    failed: Option<Arc<IoError>>,
    shutdown: bool,
    /// The most bytes that may be written but not synced: two log buffers, what recovery
    /// erases past the end it finds (`Recovery::finish`, `docs/FORMATS.md` §9).
    max_unsynced: u64,
    /// Threads blocked in `write_up_to`, each woken alone when its LSN is reached or when it
    /// is to lead.
    waiters: Vec<Waiter>,
    /// Threads the last completed sync released (its leader and the waiters it satisfied).
    released: u64,
    /// Appends since then: a gathering leader writes once this reaches `released`.
    appended_since: u64,
    /// The leader holding the write stage to gather a group, woken by the append that
    /// completes it.
    gatherer: Option<Arc<Condvar>>,
    /// How long the last sync took: sizes the gathering window.
    last_sync: Duration,
    /// The background thread was asked to write the buffer (it passed half full).
    write_wanted: bool,
}

/// A thread blocked until `written_lsn` (or, with `sync`, `flushed_lsn`) reaches `target`.
struct Waiter {
    target: Lsn,
    sync: bool,
    wake: Arc<Condvar>,
}

impl State {
    fn reached(&self, sync: bool) -> Lsn {
        if sync {
            self.flushed_lsn
        } else {
            self.written_lsn
        }
    }

    /// Wakes the waiters whose LSN is reached and, if a new write may start, one waiter that
    /// still needs one, to lead it. Called whenever a stage ends.
    fn wake(&mut self) {
        let (written, flushed) = (self.written_lsn, self.flushed_lsn);
        let leader = if self.failed.is_none() {
            self.waiters.iter().position(|w| {
                w.target > if w.sync { flushed } else { written } && self.may_lead(w.target, w.sync)
            })
        } else {
            None
        }
        .map(|i| self.waiters.swap_remove(i));
        // The leader first: it queues first on the mutex, so the next sync starts soonest.
        if let Some(leader) = leader {
            leader.wake.notify_one();
        }
        self.waiters.retain(|w| {
            let done = w.target <= if w.sync { flushed } else { written };
            if done {
                w.wake.notify_one();
            }
            !done
        });
    }

    /// Whether the waiter for (`target`, `sync`) should take the lead now rather than wait:
    /// nobody is writing, no sync already issued covers it, a sync may start, and writing the
    /// buffer keeps the bytes written but not synced within `max_unsynced` (with one sync in
    /// flight they may not be: its bytes count until it returns).
    fn may_lead(&self, target: Lsn, sync: bool) -> bool {
        let end = self.buf_lsn + self.buf.len() as u64;
        !self.writing
            && (!sync || self.sync_lsn < target)
            && self.syncing < SYNCS_IN_FLIGHT
            && end - self.flushed_lsn <= self.max_unsynced
    }
}

/// What the log's handle and its background thread share.
struct Shared {
    file: Arc<dyn PageFile>,
    path: PathBuf,
    header: Header,
    durability: Durability,
    state: Mutex<State>,
    /// Wakes the background thread: at shutdown, and when the buffer passes half full (if
    /// there is a background thread: not in [`Durability::Sync`]).
    wake_background: Condvar,
    /// Serialises checkpoints (each picks the slot from the sequence number).
    checkpointing: Mutex<()>,
    appends: AtomicU64,
    writes: AtomicU64,
    fsyncs: AtomicU64,
    /// `next_lsn` and the checkpoint's LSN, stored under `state` each time they change, for
    /// [`RedoLog::checkpoint_age_estimate`] (read without the mutex every appender takes).
    next_lsn_hint: AtomicU64,
    checkpoint_lsn_hint: AtomicU64,
}

/// An open redo log: append mtrs, make them durable, write checkpoints. Cheap to share: every
/// method takes `&self` and may be called from many threads.
pub struct RedoLog {
    shared: Arc<Shared>,
    background: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RedoLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedoLog")
            .field("path", &self.shared.path)
            .field("header", &self.shared.header)
            .field("durability", &self.shared.durability)
            .finish_non_exhaustive()
    }
}

/// A per-log id that differs between logs created anywhere (std's per-process random keys,
/// mixed with the clock and the pid).
fn new_log_id() -> u64 {
    let mut h = RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}

impl RedoLog {
    /// Creates a new, empty log in `<dir>/redo/` and opens it. The file is preallocated by
    /// writing zeros over its whole data area (so later log writes overwrite allocated blocks
    /// and `fdatasync` never has to update the file size), built under a temporary name, synced,
    /// then renamed into place and the directory synced: a crash leaves either no log or a
    /// complete one.
    pub fn create(fs: &dyn FileSystem, dir: &Path, opts: &RedoOptions) -> Result<RedoLog> {
        format::check_geometry(opts.capacity, opts.buffer_bytes).map_err(RedoError::BadOptions)?;
        if opts.start_lsn.checked_add(opts.capacity << 1).is_none() {
            return Err(RedoError::BadOptions(format!(
                "start LSN {} leaves no room to grow",
                opts.start_lsn
            )));
        }
        let redo_dir = dir.join("redo");
        let path = log_path(dir);
        fs.create_dir_all(&redo_dir)?;
        if fs.exists(&path)? {
            return Err(RedoError::AlreadyExists { path });
        }
        let header = Header {
            log_id: new_log_id(),
            capacity: opts.capacity,
            buffer_bytes: opts.buffer_bytes,
            start_lsn: opts.start_lsn,
            creator: format!("barracuda {}", env!("CARGO_PKG_VERSION")),
        };
        let checkpoint = Checkpoint {
            seq: 0,
            lsn: opts.start_lsn,
            offset: header.offset_of(opts.start_lsn),
        };
        let tmp = redo_dir.join(format!("{LOG_FILE_NAME}.tmp"));
        let file = fs.open(&tmp, &OpenOptions::new().create(true).truncate(true))?;
        let mut head = vec![0u8; DATA_OFFSET as usize];
        for (dst, src) in head.iter_mut().zip(header.encode()) {
            *dst = src;
        }
        file.write_at(&head, 0)?;
        // Slot 1 stays zero (invalid): the first checkpoint written goes there.
        file.write_at(&checkpoint.encode(header.log_id), SLOT_OFFSETS[0])?;
        ring::zero(&*file, &header, 0, header.capacity)?;
        file.sync_all()?;
        drop(file);
        fs.rename(&tmp, &path)?;
        fs.sync_dir(&redo_dir)?;
        let file = fs.open(&path, &OpenOptions::new())?;
        tracing::info!(path = %path.display(), capacity = header.capacity, "created redo log");
        Ok(RedoLog::start(
            file,
            path,
            header,
            checkpoint,
            opts.start_lsn,
            opts.durability,
        ))
    }

    /// Opens the log for appending at `end` (every byte from the checkpoint to `end` is valid
    /// log, and nothing a previous session wrote past `end` can be taken for a record).
    pub(crate) fn start(
        file: Arc<dyn PageFile>,
        path: PathBuf,
        header: Header,
        checkpoint: Checkpoint,
        end: Lsn,
        durability: Durability,
    ) -> RedoLog {
        let buffer = header.buffer_bytes as usize;
        let max_unsynced = 2 * u64::from(header.buffer_bytes);
        let shared = Arc::new(Shared {
            file,
            path,
            header,
            durability,
            state: Mutex::new(State {
                buf: Vec::with_capacity(buffer),
                spare: Vec::with_capacity(buffer),
                buf_lsn: end,
                next_lsn: end,
                writing: false,
                syncing: 0,
                written_lsn: end,
                sync_lsn: end,
                max_unsynced,
                flushed_lsn: end,
                checkpoint,
                failed: None,
                shutdown: false,
                waiters: Vec::new(),
                released: 0,
                appended_since: 0,
                gatherer: None,
                last_sync: Duration::ZERO,
                write_wanted: false,
            }),
            wake_background: Condvar::new(),
            checkpointing: Mutex::new(()),
            appends: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            next_lsn_hint: AtomicU64::new(end),
            checkpoint_lsn_hint: AtomicU64::new(checkpoint.lsn),
        });
        let background = (durability != Durability::Sync).then(|| {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("redo-log-sync".into())
                .spawn(move || shared.background())
                .ok()
        });
        RedoLog {
            shared,
            background: background.flatten(),
        }
    }

    /// Copies `mtr` into the log buffer as one frame and returns its LSN range
    /// `(start, end)`: ranges of successive appends are contiguous and increasing, whichever
    /// thread appends. Not durable yet (see [`commit`](Self::commit),
    /// [`wait_durable`](Self::wait_durable)).
    ///
    /// Fails with [`RedoError::LogFull`] when the frame would overwrite log not yet behind the
    /// checkpoint (nothing is written; advance the checkpoint and retry), and with
    /// [`RedoError::Failed`] once a write or sync has failed.
    pub fn append(&self, mtr: &[u8]) -> Result<(Lsn, Lsn)> {
        self.append_to_unit(mtr, false)
    }

    /// [`append`](Self::append) as a part of a *commit unit*: with `continues`, the frame is
    /// marked as followed by more frames of the same unit, and recovery applies none of them
    /// unless the unit's last frame (appended with `continues = false`) is found too. The
    /// caller keeps other appends out while a unit is open (units do not interleave).
    pub fn append_to_unit(&self, mtr: &[u8], continues: bool) -> Result<(Lsn, Lsn)> {
        let s = &self.shared;
        let max = s.header.max_mtr_bytes();
        if mtr.is_empty() || mtr.len() as u64 > max {
            return Err(RedoError::BadMtrLength {
                path: s.path.clone(),
                len: mtr.len(),
                max,
            });
        }
        let frame = mtr.len() as u64 + FRAME_OVERHEAD;
        loop {
            let mut st = s.state.lock();
            s.check_failed(&st)?;
            let limit = st.checkpoint.lsn + s.header.capacity;
            if st.next_lsn + frame > limit {
                return Err(RedoError::LogFull {
                    path: s.path.clone(),
                    needed: frame,
                    free: limit - st.next_lsn,
                    checkpoint_lsn: st.checkpoint.lsn,
                });
            }
            if st.buf.len() as u64 + frame <= u64::from(s.header.buffer_bytes) {
                let start = st.next_lsn;
                format::encode_frame(start, mtr, continues, &mut st.buf);
                st.next_lsn += frame;
                s.next_lsn_hint.store(st.next_lsn, Ordering::Relaxed);
                s.appends.fetch_add(1, Ordering::Relaxed);
                st.appended_since += 1;
                // Half full: the background thread writes it out while appends go on into the
                // spare buffer, so that an appender seldom finds the buffer full and writes
                // (copies megabytes into the OS) itself. InnoDB's log writer thread.
                if s.durability != Durability::Sync
                    && !st.write_wanted
                    && !st.writing
                    && 2 * st.buf.len() as u64 >= u64::from(s.header.buffer_bytes)
                {
                    st.write_wanted = true;
                    s.wake_background.notify_one();
                }
                if st.appended_since >= st.released {
                    if let Some(g) = st.gatherer.take() {
                        g.notify_one();
                    }
                }
                return Ok((start, start + frame));
            }
            // The buffer is full: write it out (or wait for the leader doing so), then retry.
            let target = st.next_lsn;
            drop(st);
            s.write_up_to(target, false, false)?;
        }
    }

    /// Ends a commit unit whose last frame, `last` (its start and end LSN), was appended with
    /// `continues = true` and is the newest frame of the log. If no writer has taken that frame
    /// from the log buffer yet, its `CONTINUES` flag (FORMATS §9.3) is cleared in
    /// place and its CRC recomputed: the unit ends with no extra log bytes (a one-mtr
    /// transaction costs no commit frame). Otherwise `end_frame` (records that change no page)
    /// is appended as the unit's last frame. Returns the LSN the unit's commit must be durable
    /// up to.
    ///
    /// Fails as [`append`](Self::append) does, and with [`RedoError::Failed`] once a write or
    /// sync has failed.
    pub fn end_unit(&self, last: (Lsn, Lsn), end_frame: &[u8]) -> Result<Lsn> {
        {
            let mut st = self.shared.state.lock();
            self.shared.check_failed(&st)?;
            if last.1 == st.next_lsn && last.0 >= st.buf_lsn {
                let at = usize::try_from(last.0 - st.buf_lsn).unwrap_or(usize::MAX);
                let len = usize::try_from(last.1 - last.0).unwrap_or(usize::MAX);
                if let Some(frame) = st.buf.get_mut(at..at.saturating_add(len)) {
                    if format::end_unit_in_place(last.0, frame) {
                        return Ok(last.1);
                    }
                }
            }
        }
        Ok(self.append_to_unit(end_frame, false)?.1)
    }

    /// Appends `mtr` and returns once it is as durable as the log's [`Durability`] promises.
    pub fn commit(&self, mtr: &[u8]) -> Result<(Lsn, Lsn)> {
        let range = self.append(mtr)?;
        self.wait_for_commit(range.1)?;
        Ok(range)
    }

    /// Returns once the log up to `lsn` (the end of a commit's last frame, appended before) is
    /// as durable as the log's [`Durability`] promises a commit: synced (`Sync`, joining a
    /// group commit), written to the file (`Async`), or at once (`None`).
    pub fn wait_for_commit(&self, lsn: Lsn) -> Result<()> {
        match self.shared.durability {
            Durability::Sync => self.shared.write_up_to(lsn, true, true),
            Durability::Async => self.shared.write_up_to(lsn, false, false),
            Durability::None => Ok(()),
        }
    }

    /// The durability the log was opened with.
    pub fn durability(&self) -> Durability {
        self.shared.durability
    }

    /// Blocks until every mtr ending at or below `lsn` is synced (`flushed_lsn >= lsn`),
    /// writing and syncing itself if no other thread is. `lsn` beyond the current end is
    /// clamped to it.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.shared.write_up_to(lsn, true, false)
    }

    /// Writes and syncs everything appended so far.
    pub fn sync(&self) -> Result<()> {
        self.shared.write_up_to(Lsn::MAX, true, false)
    }

    /// Records a checkpoint at `lsn`: recovery will scan from there. `lsn` must be the start
    /// LSN of an appended mtr or the end of the log, at or below [`flushed_lsn`](Self::flushed_lsn),
    /// and not behind the current checkpoint. Writes the older slot and syncs before the space
    /// behind `lsn` may be reused.
    pub fn write_checkpoint(&self, lsn: Lsn) -> Result<()> {
        let s = &self.shared;
        let _one_at_a_time = s.checkpointing.lock();
        let (seq, flushed, current) = {
            let st = s.state.lock();
            s.check_failed(&st)?;
            (
                st.checkpoint.seq.wrapping_add(1),
                st.flushed_lsn,
                st.checkpoint.lsn,
            )
        };
        let refuse = |why: String| RedoError::BadCheckpoint {
            path: s.path.clone(),
            lsn,
            why,
        };
        if lsn > flushed {
            return Err(refuse(format!("beyond the flushed LSN {flushed}")));
        }
        if lsn < current {
            return Err(refuse(format!("behind the current checkpoint {current}")));
        }
        if lsn < flushed && !s.frame_starts_at(lsn, flushed)? {
            return Err(refuse("no valid mtr frame starts there".into()));
        }
        let cp = Checkpoint {
            seq,
            lsn,
            offset: s.header.offset_of(lsn),
        };
        let slot = if seq % 2 == 0 {
            SLOT_OFFSETS[0]
        } else {
            SLOT_OFFSETS[1]
        };
        let result = s
            .file
            .write_at(&cp.encode(s.header.log_id), slot)
            .and_then(|()| {
                s.fsyncs.fetch_add(1, Ordering::Relaxed);
                s.file.sync_data()
            });
        let mut st = s.state.lock();
        match result {
            Ok(()) => {
                st.checkpoint = cp;
                s.checkpoint_lsn_hint.store(cp.lsn, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(s.fail(&mut st, e)),
        }
    }

    /// The LSN the next append will start at.
    pub fn current_lsn(&self) -> Lsn {
        self.shared.state.lock().next_lsn
    }

    /// Every mtr ending at or below this LSN is synced.
    pub fn flushed_lsn(&self) -> Lsn {
        self.shared.state.lock().flushed_lsn
    }

    /// The LSN of the newest checkpoint.
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.shared.state.lock().checkpoint.lsn
    }

    /// Bytes of log between the checkpoint and the end: what recovery would scan now.
    pub fn checkpoint_age(&self) -> u64 {
        let st = self.shared.state.lock();
        st.next_lsn - st.checkpoint.lsn
    }

    /// [`checkpoint_age`](Self::checkpoint_age) without the log's mutex, for checks made at
    /// every mtr (is there room, must the page cleaner hurry). Approximate: it may lag the
    /// exact age by the appends of other threads in flight, a few frames.
    pub fn checkpoint_age_estimate(&self) -> u64 {
        let s = &self.shared;
        let next = s.next_lsn_hint.load(Ordering::Relaxed);
        next.saturating_sub(s.checkpoint_lsn_hint.load(Ordering::Relaxed))
    }

    /// Bytes that can still be appended (frames included) before the checkpoint must advance.
    pub fn free_space(&self) -> u64 {
        self.shared.header.capacity - self.checkpoint_age()
    }

    /// Bytes of the circular data area.
    pub fn capacity(&self) -> u64 {
        self.shared.header.capacity
    }

    /// The largest mtr [`append`](Self::append) accepts.
    pub fn max_mtr_bytes(&self) -> u64 {
        self.shared.header.max_mtr_bytes()
    }

    /// The log file's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Counters since the log was opened.
    pub fn stats(&self) -> LogStats {
        let s = &self.shared;
        LogStats {
            appends: s.appends.load(Ordering::Relaxed),
            writes: s.writes.load(Ordering::Relaxed),
            fsyncs: s.fsyncs.load(Ordering::Relaxed),
        }
    }

    /// Writes and syncs everything appended, stops the background thread and closes the log.
    pub fn close(mut self) -> Result<()> {
        let result = self.sync();
        self.stop_background();
        result
    }

    fn stop_background(&mut self) {
        if let Some(handle) = self.background.take() {
            self.shared.state.lock().shutdown = true;
            self.shared.wake_background.notify_all();
            if handle.join().is_err() {
                tracing::error!(path = %self.shared.path.display(), "redo background thread panicked");
            }
        }
    }
}

impl Drop for RedoLog {
    /// Stops the background thread without writing: what is not synced is as lost as in a
    /// crash. Use [`RedoLog::close`] to sync first.
    fn drop(&mut self) {
        self.stop_background();
    }
}

impl Shared {
    fn check_failed(&self, st: &State) -> Result<()> {
        match &st.failed {
            Some(cause) => Err(RedoError::Failed {
                path: self.path.clone(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Makes the failure sticky and wakes every waiter so it sees it.
    fn fail(&self, st: &mut State, error: IoError) -> RedoError {
        tracing::error!(path = %self.path.display(), %error, "redo log write failed; the log is now read-only");
        let cause = Arc::new(error);
        st.failed.get_or_insert_with(|| cause.clone());
        for waiter in st.waiters.drain(..) {
            waiter.wake.notify_one();
        }
        RedoError::Failed {
            path: self.path.clone(),
            cause,
        }
    }

    /// Returns once `written_lsn >= target` (and `flushed_lsn >= target` when `sync`), with
    /// `target` clamped to the current end; leads a write itself when nobody is writing. A
    /// committer (`gather`) that leads first gives the committers the last sync released a
    /// moment to append again (see the module docs).
    fn write_up_to(&self, target: Lsn, sync: bool, gather: bool) -> Result<()> {
        let mut st = self.state.lock();
        let target = target.min(st.next_lsn);
        let mut wake: Option<Arc<Condvar>> = None;
        let mut gather = gather;
        loop {
            self.check_failed(&st)?;
            if st.reached(sync) >= target {
                return Ok(());
            }
            // Bound the bytes written but not synced to one buffer, which bounds what recovery
            // has to erase past the end of the log it finds (`Recovery::finish`).
            let end = st.buf_lsn + st.buf.len() as u64;
            let must_sync = sync || end - st.flushed_lsn > u64::from(self.header.buffer_bytes);
            if !st.may_lead(target, must_sync) {
                let cv = wake.get_or_insert_with(|| Arc::new(Condvar::new())).clone();
                st.waiters.push(Waiter {
                    target,
                    sync,
                    wake: cv.clone(),
                });
                cv.wait(&mut st);
                // Whoever woke us unregistered us; this only matters if nobody did.
                st.waiters.retain(|w| !Arc::ptr_eq(&w.wake, &cv));
                continue;
            }
            if gather && st.appended_since < st.released {
                // Hold the write stage (others queue as waiters) until every committer the last
                // sync released has appended again, or half a sync has passed: otherwise they
                // miss this group and, the disk being busy with it, wait two syncs.
                gather = false;
                st.writing = true;
                let window = (st.last_sync / GATHER_FRACTION).min(MAX_GATHER);
                let deadline = Instant::now() + window;
                let cv = wake.get_or_insert_with(|| Arc::new(Condvar::new())).clone();
                st.gatherer = Some(cv.clone());
                while st.appended_since < st.released
                    && !cv.wait_until(&mut st, deadline).timed_out()
                {}
                st.gatherer = None;
                st.writing = false;
                continue;
            }
            // Lead: take the whole buffer, so this write (and its sync) serves every appender
            // whose bytes are in it.
            st.writing = true;
            if must_sync {
                st.syncing += 1;
                st.sync_lsn = st.sync_lsn.max(end);
            }
            let spare = std::mem::take(&mut st.spare);
            let data = std::mem::replace(&mut st.buf, spare);
            let start = st.buf_lsn;
            st.buf_lsn = end;
            drop(st);
            let written = self.write(start, &data);
            st = self.state.lock();
            st.writing = false;
            let mut data = data;
            data.clear();
            st.spare = data;
            if let Err(e) = written {
                st.syncing -= u32::from(must_sync);
                return Err(self.fail(&mut st, e));
            }
            st.written_lsn = end;
            // The write stage is free: the next group may be written while this one syncs.
            st.wake();
            if !must_sync {
                continue;
            }
            drop(st);
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            let synced = self.file.sync_data();
            let took = started.elapsed();
            st = self.state.lock();
            st.syncing -= 1;
            if let Err(e) = synced {
                return Err(self.fail(&mut st, e));
            }
            st.last_sync = took;
            st.flushed_lsn = st.flushed_lsn.max(end);
            let flushed = st.flushed_lsn;
            // This thread and the waiters about to be woken are the committers that may be
            // back with another commit before the next group is written.
            let woken = st.waiters.iter().filter(|w| w.sync && w.target <= flushed);
            st.released = 1 + woken.count() as u64;
            st.appended_since = 0;
            st.wake();
        }
    }

    fn write(&self, start: Lsn, data: &[u8]) -> barracuda_io::Result<()> {
        if !data.is_empty() {
            self.writes.fetch_add(1, Ordering::Relaxed);
            ring::write(&*self.file, &self.header, start, data)?;
        }
        Ok(())
    }

    /// Whether a valid frame starts at `lsn` and ends at or below `end` (reads the file: only
    /// synced log, below `flushed_lsn`, is asked about).
    fn frame_starts_at(&self, lsn: Lsn, end: Lsn) -> Result<bool> {
        let mut len_bytes = [0u8; 4];
        ring::read(&*self.file, &self.header, lsn, &mut len_bytes)?;
        let Some((len, continues)) = format::frame_len(&self.header, lsn, len_bytes, end) else {
            return Ok(false);
        };
        let mut rest = vec![0u8; len as usize + 4];
        ring::read(&*self.file, &self.header, lsn + 4, &mut rest)?;
        let (payload, crc) = rest.split_at(len as usize);
        Ok(crc
            .try_into()
            .is_ok_and(|crc| format::frame_valid(lsn, payload, continues, crc)))
    }

    /// The background thread of `Async`/`None`: about once a second, write and sync what was
    /// appended; in between, write the buffer whenever an append takes it past half full.
    /// Exits at shutdown or once the log has failed.
    fn background(&self) {
        let mut deadline = Instant::now() + BACKGROUND_INTERVAL;
        loop {
            let write_only = {
                let mut st = self.state.lock();
                // A timed wait is the point here (a periodic sync), not a test's guess.
                while !st.shutdown
                    && st.failed.is_none()
                    && !st.write_wanted
                    && !self
                        .wake_background
                        .wait_until(&mut st, deadline)
                        .timed_out()
                {}
                if st.shutdown || st.failed.is_some() {
                    return;
                }
                let wanted = std::mem::take(&mut st.write_wanted);
                wanted && Instant::now() < deadline
            };
            // A write of the half-full buffer (synced too when the bytes written but not synced
            // would pass a buffer, as any write), or the periodic sync.
            if !write_only {
                deadline = Instant::now() + BACKGROUND_INTERVAL;
            }
            if let Err(e) = self.write_up_to(Lsn::MAX, !write_only, false) {
                tracing::error!(%e, "redo background write failed");
                return;
            }
        }
    }
}
