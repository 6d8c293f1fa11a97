//! [`PowerCut`]: a [`FileSystem`] over a [`FaultyFileSystem`] that cuts the power at one chosen
//! operation — the N-th write, sync or file-size change of one thread — for tests that place a
//! crash *inside* something (a checkpoint, a recovery) rather than between calls.
//!
//! At the cut the operation is not done, the underlying file system crashes there and then
//! (unsynced writes lost or torn per its crash mode) and the operation fails with an I/O error;
//! from then on every operation through this `PowerCut` fails, as nothing outlives a power loss:
//! the engine that was running can do nothing more to the files. The next "boot" opens the
//! engine through a new `PowerCut` over the same `FaultyFileSystem`.
//!
//! Without a cut point it only records the operations it counts, so a first run tells a test
//! how many there are and what each one is (for messages: "cut at 7: sync tables/b.ibd").
#![allow(
    dead_code,
    reason = "each test binary that includes this module uses part of it"
)]

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::ThreadId;

use parking_lot::Mutex;

use barracuda::fs::{
    FaultyFileSystem, FileSystem, IoError, Op, OpenOptions, PageFile, PunchOutcome,
};

/// Whose operations a [`PowerCut`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// Every thread's.
    Any,
    /// One thread (the test's own, around a call it makes).
    Thread(ThreadId),
    /// Threads with this name (an engine's background thread).
    Named(&'static str),
}

impl Who {
    /// The calling thread.
    pub fn me() -> Self {
        Who::Thread(std::thread::current().id())
    }

    fn is_current(self) -> bool {
        let current = std::thread::current();
        match self {
            Who::Any => true,
            Who::Thread(id) => current.id() == id,
            Who::Named(name) => current.name() == Some(name),
        }
    }
}

/// Which operations count, besides whose they are: `(operation, path, offset)`.
pub type Filter = Box<dyn Fn(Op, &Path, u64) -> bool + Send>;

#[derive(Default)]
struct Plan {
    /// Whose operations are counted; `None`: nobody's.
    who: Option<Who>,
    /// Which of them; `None`: every one.
    filter: Option<Filter>,
    /// The counted operation (1-based) at which the power goes; `None`: record only.
    at: Option<u64>,
    /// The counted operations so far, described.
    ops: Vec<String>,
    /// The power is off: every operation fails.
    dead: bool,
}

struct State {
    fs: FaultyFileSystem,
    plan: Mutex<Plan>,
}

/// See the module documentation. Cheap to clone (shared state).
#[derive(Clone)]
pub struct PowerCut {
    state: Arc<State>,
}

impl fmt::Debug for PowerCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = self.state.plan.lock();
        f.debug_struct("PowerCut")
            .field("who", &plan.who)
            .field("at", &plan.at)
            .field("counted", &plan.ops.len())
            .field("dead", &plan.dead)
            .finish_non_exhaustive()
    }
}

fn power_off(op: Op, path: &Path, offset: u64, len: u64) -> IoError {
    IoError::new(op, path, offset, len, io::Error::other("the power was cut"))
}

impl PowerCut {
    /// A new "boot" over `fs`: counts nothing until [`arm`](Self::arm)ed.
    pub fn new(fs: &FaultyFileSystem) -> Self {
        Self {
            state: Arc::new(State {
                fs: fs.clone(),
                plan: Mutex::new(Plan::default()),
            }),
        }
    }

    /// Counts the operations of `who` from now (forgetting earlier ones), and cuts the power at
    /// the `at`-th if given.
    pub fn arm(&self, who: Who, at: Option<u64>) {
        self.arm_filtered(who, None, at);
    }

    /// [`arm`](Self::arm), counting only the operations `filter` accepts.
    pub fn arm_filtered(&self, who: Who, filter: Option<Filter>, at: Option<u64>) {
        let mut plan = self.state.plan.lock();
        plan.who = Some(who);
        plan.filter = filter;
        plan.at = at;
        plan.ops.clear();
    }

    /// Stops counting (the operations counted so far are kept).
    pub fn disarm(&self) {
        let mut plan = self.state.plan.lock();
        plan.who = None;
        plan.filter = None;
        plan.at = None;
    }

    /// The operations counted since [`arm`](Self::arm), described, in order.
    pub fn ops(&self) -> Vec<String> {
        self.ops_from(0)
    }

    /// The operations counted since [`arm`](Self::arm) from the `from`-th (0-based) on.
    pub fn ops_from(&self, from: usize) -> Vec<String> {
        self.state
            .plan
            .lock()
            .ops
            .get(from..)
            .map_or_else(Vec::new, <[String]>::to_vec)
    }

    /// Whether the power was cut.
    pub fn fired(&self) -> bool {
        self.state.plan.lock().dead
    }

    /// Cuts the power now, between operations.
    pub fn cut_now(&self) {
        let mut plan = self.state.plan.lock();
        if !plan.dead {
            plan.dead = true;
            if let Err(err) = self.state.fs.crash() {
                panic!("the simulated crash failed: {err}");
            }
        }
    }

    /// Before an operation that changes what a crash leaves (a write, a sync, a size change, a
    /// directory change): counts it if it is `who`'s, and cuts the power if it is the chosen one.
    fn before_change(
        &self,
        op: Op,
        path: &Path,
        offset: u64,
        len: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), IoError> {
        let mut plan = self.state.plan.lock();
        if plan.dead {
            return Err(power_off(op, path, offset, len));
        }
        let counted = plan.who.is_some_and(Who::is_current)
            && plan.filter.as_ref().is_none_or(|f| f(op, path, offset));
        if counted {
            plan.ops.push(what());
            if plan.at == Some(plan.ops.len() as u64) {
                plan.dead = true;
                // Under the plan's lock: no operation of any thread starts after the cut.
                self.state.fs.crash()?;
                return Err(power_off(op, path, offset, len));
            }
        }
        Ok(())
    }

    /// Before a read: fails once the power is off, else shows it to the armed filter (as an
    /// observer: a read is never counted, nor cut).
    fn observe_read(&self, path: &Path, offset: u64) -> Result<(), IoError> {
        let plan = self.state.plan.lock();
        if plan.dead {
            return Err(power_off(Op::Read, path, offset, 0));
        }
        if plan.who.is_some_and(Who::is_current) {
            if let Some(filter) = plan.filter.as_ref() {
                filter(Op::Read, path, offset);
            }
        }
        Ok(())
    }

    /// Before any other operation: fails once the power is off.
    fn alive(&self, op: Op, path: &Path) -> Result<(), IoError> {
        if self.state.plan.lock().dead {
            return Err(power_off(op, path, 0, 0));
        }
        Ok(())
    }
}

/// The last two components of `path` (`tables/a.ibd`, `redo/ib_redo0`), for descriptions.
fn short(path: &Path) -> String {
    let mut parts: Vec<_> = path.iter().rev().take(2).collect();
    parts.reverse();
    parts.iter().collect::<PathBuf>().display().to_string()
}

impl FileSystem for PowerCut {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn PageFile>, IoError> {
        self.alive(Op::Open, path)?;
        let file = self.state.fs.open(path, opts)?;
        Ok(Arc::new(CutFile {
            file,
            path: path.to_owned(),
            cut: self.clone(),
        }))
    }

    fn exists(&self, path: &Path) -> Result<bool, IoError> {
        self.alive(Op::Stat, path)?;
        self.state.fs.exists(path)
    }

    fn remove(&self, path: &Path) -> Result<(), IoError> {
        self.before_change(Op::Remove, path, 0, 0, || format!("remove {}", short(path)))?;
        self.state.fs.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<(), IoError> {
        self.before_change(Op::Rename, from, 0, 0, || {
            format!("rename {} to {}", short(from), short(to))
        })?;
        self.state.fs.rename(from, to)
    }

    fn create_dir_all(&self, path: &Path) -> Result<(), IoError> {
        self.alive(Op::CreateDir, path)?;
        self.state.fs.create_dir_all(path)
    }

    fn sync_dir(&self, path: &Path) -> Result<(), IoError> {
        self.before_change(Op::SyncDir, path, 0, 0, || {
            format!("sync directory {}", short(path))
        })?;
        self.state.fs.sync_dir(path)
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<PathBuf>, IoError> {
        self.alive(Op::ListDir, path)?;
        self.state.fs.list_dir(path)
    }
}

/// A file opened through a [`PowerCut`].
struct CutFile {
    file: Arc<dyn PageFile>,
    path: PathBuf,
    cut: PowerCut,
}

impl fmt::Debug for CutFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CutFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl PageFile for CutFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.cut.observe_read(&self.path, offset)?;
        self.file.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let len = buf.len() as u64;
        self.cut
            .before_change(Op::Write, &self.path, offset, len, || {
                format!("write {} at {offset} ({len} bytes)", short(&self.path))
            })?;
        self.file.write_at(buf, offset)
    }

    // An untorn write is one operation too: the power goes before it or after it.
    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let len = buf.len() as u64;
        self.cut
            .before_change(Op::AtomicWrite, &self.path, offset, len, || {
                format!(
                    "untorn write {} at {offset} ({len} bytes)",
                    short(&self.path)
                )
            })?;
        self.file.write_atomic_at(buf, offset)
    }

    // Each buffer of a vectored write is one operation: the power may go between two of them.
    fn write_vectored_at(&self, writes: &[(u64, &[u8])]) -> Result<(), IoError> {
        for (offset, buf) in writes {
            self.write_at(buf, *offset)?;
        }
        Ok(())
    }

    fn sync_data(&self) -> Result<(), IoError> {
        self.cut.before_change(Op::SyncData, &self.path, 0, 0, || {
            format!("sync {}", short(&self.path))
        })?;
        self.file.sync_data()
    }

    fn sync_all(&self) -> Result<(), IoError> {
        self.cut.before_change(Op::SyncAll, &self.path, 0, 0, || {
            format!("sync {}", short(&self.path))
        })?;
        self.file.sync_all()
    }

    fn set_len(&self, len: u64) -> Result<(), IoError> {
        self.cut.before_change(Op::SetLen, &self.path, len, 0, || {
            format!("set length of {} to {len}", short(&self.path))
        })?;
        self.file.set_len(len)
    }

    fn len(&self) -> Result<u64, IoError> {
        self.cut.alive(Op::Stat, &self.path)?;
        self.file.len()
    }

    fn allocated_bytes(&self) -> Result<u64, IoError> {
        self.cut.alive(Op::Stat, &self.path)?;
        self.file.allocated_bytes()
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome, IoError> {
        self.cut
            .before_change(Op::PunchHole, &self.path, offset, len, || {
                format!("punch {} at {offset} ({len} bytes)", short(&self.path))
            })?;
        self.file.punch_hole(offset, len)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        self.file.atomic_write_unit()
    }

    fn block_size(&self) -> u32 {
        self.file.block_size()
    }

    fn alignment(&self) -> usize {
        self.file.alignment()
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn backend_name(&self) -> &'static str {
        "power-cut"
    }
}
