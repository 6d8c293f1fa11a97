//! What a [`FaultyFile`](super::FaultyFile) does wrong: named failpoints that fail the N-th
//! operation of a kind, refusal of hole punching, pretended untorn writes, and how a crash
//! treats unsynced writes.

use std::fmt;

use crate::error::Op;

/// The operations a failpoint can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `read_at` and each buffer of `read_vectored_at`.
    Read,
    /// `write_at` and each buffer of `write_vectored_at`.
    Write,
    /// `write_atomic_at` (counted apart from [`Write`](Self::Write)); arm it with
    /// [`ErrorKind::Eopnotsupp`] or [`ErrorKind::Einval`] to make the N-th untorn write refused
    /// at run time, as a kernel may refuse one.
    AtomicWrite,
    /// `sync_data` and `sync_all`.
    Sync,
    /// `set_len`.
    SetLen,
    /// `punch_hole`.
    PunchHole,
}

impl OpKind {
    /// Every kind, in counter order.
    pub const ALL: [OpKind; 6] = [
        OpKind::Read,
        OpKind::Write,
        OpKind::Sync,
        OpKind::SetLen,
        OpKind::PunchHole,
        OpKind::AtomicWrite,
    ];

    /// Index into per-kind counters.
    pub(crate) fn index(self) -> usize {
        match self {
            OpKind::Read => 0,
            OpKind::Write => 1,
            OpKind::Sync => 2,
            OpKind::SetLen => 3,
            OpKind::PunchHole => 4,
            OpKind::AtomicWrite => 5,
        }
    }

    /// The failpoint name, raft-engine style: `faulty_file::write::err`.
    pub fn failpoint(self) -> &'static str {
        match self {
            OpKind::Read => "faulty_file::read::err",
            OpKind::Write => "faulty_file::write::err",
            OpKind::Sync => "faulty_file::sync::err",
            OpKind::SetLen => "faulty_file::set_len::err",
            OpKind::PunchHole => "faulty_file::punch_hole::err",
            OpKind::AtomicWrite => "faulty_file::atomic_write::err",
        }
    }

    /// The kind whose [`failpoint`](Self::failpoint) name is `name`.
    pub fn from_failpoint(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.failpoint() == name)
    }

    /// The [`Op`] reported in errors (for `Sync`, the data-sync op).
    pub(crate) fn op(self) -> Op {
        match self {
            OpKind::Read => Op::Read,
            OpKind::Write => Op::Write,
            OpKind::Sync => Op::SyncData,
            OpKind::SetLen => Op::SetLen,
            OpKind::PunchHole => Op::PunchHole,
            OpKind::AtomicWrite => Op::AtomicWrite,
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.failpoint())
    }
}

/// The operating-system error an injected failure imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// EIO (`IoErrorKind::Eio`).
    Eio,
    /// ENOSPC (`IoErrorKind::NoSpace`).
    Enospc,
    /// EOPNOTSUPP (`IoErrorKind::Unsupported`): the file system refuses the operation.
    Eopnotsupp,
    /// EINVAL: for [`OpKind::AtomicWrite`] the kernel's refusal of an untorn write it cannot
    /// do (`IoErrorKind::Unsupported`); for other kinds `IoErrorKind::Other`.
    Einval,
}

impl ErrorKind {
    /// The errno.
    pub fn errno(self) -> i32 {
        match self {
            ErrorKind::Eio => libc::EIO,
            ErrorKind::Enospc => libc::ENOSPC,
            ErrorKind::Eopnotsupp => libc::EOPNOTSUPP,
            ErrorKind::Einval => libc::EINVAL,
        }
    }
}

/// How [`FaultyFile::crash`](super::FaultyFile::crash) treats writes not yet synced.
/// `set_len` and `punch_hole` not followed by a sync are always lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashMode {
    /// Every unsynced write is lost: the file returns to its last synced image.
    #[default]
    DropUnsynced,
    /// Each unsynced write, in order, is cut at `sector` boundaries (of the file offset) and a
    /// random prefix of its sectors — from none to all, drawn from `seed` — reaches the
    /// durable image; the rest keeps the old bytes. `sector` is 512 or 4096 (any power of two
    /// is accepted).
    TearUnsynced {
        /// Tearing granularity in bytes.
        sector: u32,
        /// Seed of the deterministic choice of prefixes.
        seed: u64,
    },
}

/// One armed failpoint: the `nth` next operation of kind `op` fails with `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failpoint {
    /// The operation kind counted.
    pub op: OpKind,
    /// 1 = the next operation of that kind, counted from when the failpoint is armed.
    pub nth: u64,
    /// The error returned.
    pub error: ErrorKind,
}

/// A scripted set of faults for a [`FaultyFile`](super::FaultyFile). By-value builder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct FaultPlan {
    pub(crate) failpoints: Vec<Failpoint>,
    pub(crate) refuse_punch_hole: bool,
    pub(crate) atomic_write_unit: Option<u32>,
    pub(crate) crash_mode: CrashMode,
}

impl FaultPlan {
    /// No faults; crashes drop unsynced writes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `nth` (1-based) operation of kind `op` fails with `error`, once.
    ///
    /// # Panics
    /// If `nth` is 0.
    pub fn fail_nth(mut self, op: OpKind, nth: u64, error: ErrorKind) -> Self {
        assert!(nth > 0, "fail_nth counts from 1");
        self.failpoints.push(Failpoint { op, nth, error });
        self
    }

    /// Arms the failpoint named `name` (see [`OpKind::failpoint`]); `None` for an unknown name.
    pub fn failpoint(self, name: &str, nth: u64, error: ErrorKind) -> Option<Self> {
        OpKind::from_failpoint(name).map(|op| self.fail_nth(op, nth, error))
    }

    /// Pretend the file system answers EOPNOTSUPP to hole punching.
    pub fn refuse_punch_hole(mut self, yes: bool) -> Self {
        self.refuse_punch_hole = yes;
        self
    }

    /// Pretend the device has untorn writes of up to `unit` bytes (see
    /// [`FaultyFile::pretend_atomic_writes`](super::FaultyFile::pretend_atomic_writes)).
    ///
    /// # Panics
    /// If `unit` is not a power of two of at least [`PRETENDED_ATOMIC_UNIT_MIN`] bytes.
    pub fn atomic_writes(mut self, unit: Option<u32>) -> Self {
        check_atomic_unit(unit);
        self.atomic_write_unit = unit;
        self
    }

    /// How crashes treat unsynced writes.
    ///
    /// # Panics
    /// If a tearing sector size is not a power of two.
    pub fn crash_mode(mut self, mode: CrashMode) -> Self {
        check_crash_mode(mode);
        self.crash_mode = mode;
        self
    }
}

/// Armed failpoints and the per-kind operation counters they count against: the state of one
/// [`FaultyFile`](super::FaultyFile), or shared by all files of a
/// [`FaultyFileSystem`](crate::FaultyFileSystem).
#[derive(Debug, Default)]
pub(crate) struct Failpoints {
    /// Operations seen per [`OpKind`] (index = `OpKind::index`), failed ones included.
    counts: [u64; OpKind::ALL.len()],
    /// Each armed failpoint with the count of its kind when it was armed.
    armed: Vec<(Failpoint, u64)>,
}

impl Failpoints {
    /// Arms `fp`, counting its `nth` from now.
    pub(crate) fn arm(&mut self, fp: Failpoint) {
        assert!(fp.nth > 0, "fail_nth counts from 1");
        let now = self.counts[fp.op.index()];
        self.armed.push((fp, now));
    }

    /// Disarms every failpoint; the counters keep counting.
    pub(crate) fn clear(&mut self) {
        self.armed.clear();
    }

    /// Operations of kind `op` counted so far.
    pub(crate) fn count(&self, op: OpKind) -> u64 {
        self.counts[op.index()]
    }

    /// Counts one operation of `kind`; returns the injected error if a failpoint fires (each
    /// fires once and is then disarmed).
    pub(crate) fn tick(&mut self, kind: OpKind) -> Option<ErrorKind> {
        let idx = kind.index();
        self.counts[idx] += 1;
        let now = self.counts[idx];
        let hit = self
            .armed
            .iter()
            .position(|(fp, at)| fp.op == kind && at + fp.nth == now)?;
        let (fp, _) = self.armed.remove(hit);
        tracing::debug!(failpoint = fp.op.failpoint(), nth = fp.nth, error = ?fp.error, "failpoint fired");
        Some(fp.error)
    }
}

/// The shortest untorn write a pretended atomic-write device accepts (its
/// `stx_atomic_write_unit_min`): one 512-byte sector, as on an NVMe drive with 512-byte
/// logical blocks.
pub const PRETENDED_ATOMIC_UNIT_MIN: u32 = 512;

/// Panics on a pretended atomic-write unit that is not a power of two of at least
/// [`PRETENDED_ATOMIC_UNIT_MIN`] bytes.
pub(crate) fn check_atomic_unit(unit: Option<u32>) {
    if let Some(unit) = unit {
        assert!(
            unit.is_power_of_two() && unit >= PRETENDED_ATOMIC_UNIT_MIN,
            "a pretended atomic-write unit must be a power of two of at least \
             {PRETENDED_ATOMIC_UNIT_MIN} bytes, got {unit}"
        );
    }
}

/// Panics on a tearing sector that is not a power of two.
pub(crate) fn check_crash_mode(mode: CrashMode) {
    if let CrashMode::TearUnsynced { sector, .. } = mode {
        assert!(
            sector.is_power_of_two(),
            "CrashMode::TearUnsynced sector must be a power of two (512 or 4096), got {sector}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failpoint_names_round_trip() {
        for k in OpKind::ALL {
            assert_eq!(OpKind::from_failpoint(k.failpoint()), Some(k));
        }
        assert!(FaultPlan::new()
            .failpoint("faulty_file::nope::err", 1, ErrorKind::Eio)
            .is_none());
        let plan = FaultPlan::new()
            .failpoint("faulty_file::sync::err", 2, ErrorKind::Enospc)
            .unwrap();
        assert_eq!(
            plan.failpoints,
            vec![Failpoint {
                op: OpKind::Sync,
                nth: 2,
                error: ErrorKind::Enospc
            }]
        );
    }
}
