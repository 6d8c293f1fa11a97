//! [`FaultyFile`]: a fault-injecting wrapper around any [`PageFile`], for crash and error-path
//! tests. It keeps the *durable image* (what a crash would leave) beside the live file, and the
//! list of operations done since the last sync. [`FaultyFile::crash`] turns the live file back
//! into the durable image, losing or tearing what was not synced; failpoints make the N-th
//! operation of a kind fail with EIO, ENOSPC, EOPNOTSUPP or EINVAL. Only writes made through
//! [`PageFile::write_atomic_at`] on a file pretending to be on an atomic-write device survive a
//! crash untorn; every other write tears, whatever its size, so a test proves that the code
//! under it really uses the untorn path.
//!
//! Like redb's crash backend (separate live and durable images) with raft-engine-style named
//! failpoints (`faulty_file::write::err`).

mod crash;
mod plan;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::aligned::AlignedBuf;
use crate::atomic::{AtomicTarget, AtomicUnits};
use crate::error::{IoError, Op, Result};
use crate::file::{PageFile, PunchOutcome};

pub use crash::{CrashReport, WriteFate};
pub use plan::{CrashMode, ErrorKind, Failpoint, FaultPlan, OpKind, PRETENDED_ATOMIC_UNIT_MIN};

use crash::Pending;
pub(crate) use plan::{check_atomic_unit, check_crash_mode, Failpoints};

/// Granularity at which [`FaultyFile::crash`] compares and rewrites the live file.
const RESTORE_CHUNK_BYTES: usize = 4096;

/// Mutable state of a [`FaultyFile`], behind one lock so operations, syncs and crashes are
/// totally ordered.
#[derive(Debug)]
struct State {
    durable: Vec<u8>,
    pending: Vec<Pending>,
    plan: FaultPlan,
    /// The failpoints of `plan`, armed, and the operation counters.
    failpoints: Failpoints,
    crashes: u64,
}

impl State {
    /// Counts one operation of `kind`; returns the injected error if a failpoint fires.
    fn tick(&mut self, kind: OpKind) -> Option<plan::ErrorKind> {
        self.failpoints.tick(kind)
    }
}

/// A [`PageFile`] that injects faults into an inner file `F` (usually [`MemFile`]). Share it
/// as `Arc<FaultyFile<_>>`; [`crash`](Self::crash) takes `&self`.
///
/// Every operation takes one internal lock (so operations, syncs and crashes are totally
/// ordered); the durable image and the unsynced writes are kept in memory, so this is for
/// test-sized files. Over an O_DIRECT inner file the file length must stay a multiple of 4096
/// for [`crash`](Self::crash) to rewrite it.
///
/// [`MemFile`]: crate::MemFile
#[derive(Debug)]
pub struct FaultyFile<F: PageFile> {
    inner: F,
    state: Mutex<State>,
    punch_refusal_logged: AtomicBool,
}

impl<F: PageFile> FaultyFile<F> {
    /// Wraps `inner` with no faults; its current contents are taken as durable.
    pub fn new(inner: F) -> Result<Self> {
        Self::with_plan(inner, FaultPlan::new())
    }

    /// Wraps `inner` with the faults of `plan`; failpoints count from now.
    pub fn with_plan(inner: F, mut plan: FaultPlan) -> Result<Self> {
        let len = inner.len()?;
        // Aligned, so that an O_DIRECT inner file accepts the read.
        let mut image = AlignedBuf::zeroed(len as usize);
        if len > 0 {
            inner.read_at(&mut image, 0)?;
        }
        let durable = image.to_vec();
        let mut failpoints = Failpoints::default();
        for fp in std::mem::take(&mut plan.failpoints) {
            failpoints.arm(fp);
        }
        Ok(FaultyFile {
            inner,
            state: Mutex::new(State {
                durable,
                pending: Vec::new(),
                plan,
                failpoints,
                crashes: 0,
            }),
            punch_refusal_logged: AtomicBool::new(false),
        })
    }

    /// The wrapped file (the live image).
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// Arms a failpoint: the `nth` (1-based, counted from now) operation of kind `op` fails
    /// with `error` (its raw OS error), once. Failed operations change nothing.
    ///
    /// # Panics
    /// If `nth` is 0.
    pub fn fail_nth(&self, op: OpKind, nth: u64, error: ErrorKind) {
        self.state
            .lock()
            .failpoints
            .arm(Failpoint { op, nth, error });
    }

    /// Disarms every failpoint.
    pub fn clear_failpoints(&self) {
        self.state.lock().failpoints.clear();
    }

    /// When `yes`, `punch_hole` answers as a file system refusing it (EOPNOTSUPP):
    /// `Ok(PunchOutcome::Unsupported)`, data unchanged, logged once.
    pub fn refuse_punch_hole(&self, yes: bool) {
        self.state.lock().plan.refuse_punch_hole = yes;
    }

    /// Pretends the device supports untorn writes of [`PRETENDED_ATOMIC_UNIT_MIN`] to `unit`
    /// bytes: [`atomic_write_unit`](PageFile::atomic_write_unit) returns `unit`, and
    /// [`write_atomic_at`](PageFile::write_atomic_at) accepts what the Linux rules accept for
    /// that range (length a power of two within it, offset a multiple of the length, buffer
    /// aligned as the inner file needs) and writes so that a crash keeps all of it or none.
    /// Plain writes still tear at a crash in [`CrashMode::TearUnsynced`], whatever their size.
    ///
    /// `None` turns this off: `write_atomic_at` is then the inner file's (for a [`MemFile`],
    /// refused as `Unsupported`). The file does not model O_DIRECT (its inner file may be in
    /// memory); handles of a [`FaultyFileSystem`](crate::FaultyFileSystem) opened without it
    /// refuse untorn writes, as Linux does.
    ///
    /// # Panics
    /// If `unit` is not a power of two of at least [`PRETENDED_ATOMIC_UNIT_MIN`] bytes.
    ///
    /// [`MemFile`]: crate::MemFile
    pub fn pretend_atomic_writes(&self, unit: Option<u32>) {
        check_atomic_unit(unit);
        self.state.lock().plan.atomic_write_unit = unit;
    }

    /// Sets how [`crash`](Self::crash) treats unsynced writes.
    ///
    /// # Panics
    /// If a tearing sector is not a power of two.
    pub fn set_crash_mode(&self, mode: CrashMode) {
        plan::check_crash_mode(mode);
        self.state.lock().plan.crash_mode = mode;
    }

    /// Simulates power loss: unsynced `set_len`/`punch_hole` are lost, unsynced writes are
    /// lost or torn per the [`CrashMode`], and the live file is rewritten to that durable image
    /// (only the 4 KiB chunks that differ are rewritten, then synced). Operations of other
    /// threads wait while it runs and afterwards see the crashed image.
    pub fn crash(&self) -> Result<CrashReport> {
        let mut st = self.state.lock();
        let st = &mut *st;
        st.crashes += 1;
        let report =
            crash::crash_image(&mut st.durable, &st.pending, st.plan.crash_mode, st.crashes);
        st.pending.clear();
        self.restore_inner(&st.durable)?;
        tracing::debug!(
            path = %self.inner.path().display(),
            writes = report.writes.len(),
            torn = report.torn_writes(),
            "simulated crash"
        );
        Ok(report)
    }

    /// A copy of the durable image (what a crash in `DropUnsynced` mode would leave).
    pub fn durable_image(&self) -> Vec<u8> {
        self.state.lock().durable.clone()
    }

    /// Operations (writes, `set_len`, `punch_hole`) done since the last sync.
    pub fn unsynced_ops(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// Operations of kind `op` seen so far (failed ones included).
    pub fn op_count(&self, op: OpKind) -> u64 {
        self.state.lock().failpoints.count(op)
    }

    /// Makes the live file equal to `image`, rewriting only differing chunks.
    fn restore_inner(&self, image: &[u8]) -> Result<()> {
        let live_len = self.inner.len()?;
        if live_len != image.len() as u64 {
            self.inner.set_len(image.len() as u64)?;
        }
        let mut live = AlignedBuf::zeroed(RESTORE_CHUNK_BYTES);
        for (i, want) in image.chunks(RESTORE_CHUNK_BYTES).enumerate() {
            let offset = (i * RESTORE_CHUNK_BYTES) as u64;
            let got = &mut live[..want.len()];
            match self.inner.read_at(got, offset) {
                Ok(()) => {}
                Err(e) if e.is_past_eof() => {}
                Err(e) => return Err(e),
            }
            if got != want {
                let mut buf = AlignedBuf::zeroed(want.len());
                buf.copy_from_slice(want);
                self.inner.write_at(&buf, offset)?;
            }
        }
        self.inner.sync_all()
    }

    /// Counts an operation and returns the injected error, if any.
    fn check(&self, kind: OpKind, offset: u64, len: u64) -> Result<()> {
        match self.state.lock().tick(kind) {
            Some(e) => Err(IoError::from_errno(
                kind.op(),
                self.inner.path(),
                offset,
                len,
                e.errno(),
            )),
            None => Ok(()),
        }
    }

    /// One write: failpoint, live write, remembered as unsynced.
    fn write_one(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(e) = st.tick(OpKind::Write) {
            return Err(IoError::from_errno(
                Op::Write,
                self.inner.path(),
                offset,
                buf.len() as u64,
                e.errno(),
            ));
        }
        self.inner.write_at(buf, offset)?;
        st.pending.push(Pending::Write {
            offset,
            data: buf.to_vec(),
            atomic: false,
        });
        Ok(())
    }

    /// One untorn write: failpoint, the pretended device's rules (or the inner file's own
    /// untorn write), live write, remembered as unsynced and untorn.
    fn write_atomic(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(e) = st.tick(OpKind::AtomicWrite) {
            return Err(IoError::from_errno(
                Op::AtomicWrite,
                self.inner.path(),
                offset,
                buf.len() as u64,
                e.errno(),
            ));
        }
        match st.plan.atomic_write_unit {
            Some(unit) => {
                let target = AtomicTarget {
                    path: self.inner.path(),
                    units: Some(AtomicUnits {
                        min: PRETENDED_ATOMIC_UNIT_MIN,
                        max: unit,
                    }),
                    direct: true,
                    mem_align: self.inner.alignment(),
                };
                target.check(buf, offset)?;
                self.inner.write_at(buf, offset)?;
            }
            None => self.inner.write_atomic_at(buf, offset)?,
        }
        st.pending.push(Pending::Write {
            offset,
            data: buf.to_vec(),
            atomic: true,
        });
        Ok(())
    }

    /// A sync: failpoint, live sync, then everything pending becomes durable.
    fn sync(&self, op: Op) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(e) = st.tick(OpKind::Sync) {
            return Err(IoError::from_errno(op, self.inner.path(), 0, 0, e.errno()));
        }
        if op == Op::SyncAll {
            self.inner.sync_all()?;
        } else {
            self.inner.sync_data()?;
        }
        let st = &mut *st;
        for p in st.pending.drain(..) {
            crash::apply(&mut st.durable, &p);
        }
        Ok(())
    }
}

impl<F: PageFile> PageFile for FaultyFile<F> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check(OpKind::Read, offset, buf.len() as u64)?;
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.write_one(buf, offset)
    }

    fn write_vectored_at(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        for (offset, buf) in writes {
            self.write_one(buf, *offset)?;
        }
        Ok(())
    }

    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.write_atomic(buf, offset)
    }

    fn sync_data(&self) -> Result<()> {
        self.sync(Op::SyncData)
    }

    fn sync_all(&self) -> Result<()> {
        self.sync(Op::SyncAll)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(e) = st.tick(OpKind::SetLen) {
            return Err(IoError::from_errno(
                Op::SetLen,
                self.inner.path(),
                len,
                0,
                e.errno(),
            ));
        }
        self.inner.set_len(len)?;
        st.pending.push(Pending::SetLen(len));
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        self.inner.len()
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.inner.allocated_bytes()
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        let mut st = self.state.lock();
        if let Some(e) = st.tick(OpKind::PunchHole) {
            return Err(IoError::from_errno(
                Op::PunchHole,
                self.inner.path(),
                offset,
                len,
                e.errno(),
            ));
        }
        if st.plan.refuse_punch_hole {
            if !self.punch_refusal_logged.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    path = %self.inner.path().display(),
                    "file system refuses hole punching (EOPNOTSUPP, injected); punch_hole disabled for this file"
                );
            }
            return Ok(PunchOutcome::Unsupported);
        }
        let outcome = self.inner.punch_hole(offset, len)?;
        if outcome == PunchOutcome::Punched {
            st.pending.push(Pending::Punch { offset, len });
        }
        Ok(outcome)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        let pretended = self.state.lock().plan.atomic_write_unit;
        pretended.or_else(|| self.inner.atomic_write_unit())
    }

    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn alignment(&self) -> usize {
        self.inner.alignment()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn backend_name(&self) -> &'static str {
        "faulty"
    }
}
