//! [`FaultyFileSystem`]: a whole file system in memory, for error-path and crash tests of
//! everything above the [`FileSystem`] seam.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::{IoError, Op, Result};
use crate::faulty::{
    check_atomic_unit, check_crash_mode, CrashMode, CrashReport, ErrorKind, Failpoint, Failpoints,
    FaultyFile, OpKind,
};
use crate::file::PageFile;
use crate::mem_file::MemFile;
use crate::options::OpenOptions;

use super::handle::FsFile;
use super::FileSystem;

/// A file of the model, shared by every name and handle that refers to it.
type Node = Arc<FaultyFile<MemFile>>;

/// The names of the model: what a process sees (`live`) and what a crash would leave
/// (`durable`, updated per directory by `sync_dir`).
#[derive(Default)]
pub(super) struct Namespace {
    /// Crashes so far; handles opened in an earlier epoch are dead.
    pub(super) epoch: u64,
    live: BTreeMap<PathBuf, Node>,
    /// Each directory's file entries as of its last `sync_dir`.
    durable: BTreeMap<PathBuf, Node>,
    /// Directories; durable as soon as created (as `create_dir_all` promises).
    dirs: BTreeSet<PathBuf>,
    crash_mode: CrashMode,
    /// The pretended untorn-write unit of every file (see `pretend_atomic_writes`).
    atomic_write_unit: Option<u32>,
    /// Whether every file refuses hole punching (see `refuse_punch_hole`).
    refuse_punch_hole: bool,
}

/// State shared by the file system and its open handles.
#[derive(Default)]
pub(super) struct Shared {
    /// Read-locked by every file operation, write-locked by namespace changes and crashes.
    pub(super) namespace: RwLock<Namespace>,
    /// Counted across every file (and `sync_dir`), so "the N-th write" means of the whole
    /// file system.
    pub(super) faults: Mutex<Failpoints>,
}

/// What [`FaultyFileSystem::crash`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsCrashReport {
    /// Files created or renamed into a directory that was not synced afterwards: gone.
    pub lost_entries: Vec<PathBuf>,
    /// Files removed or renamed away without a sync of their directory: back, with their
    /// durable contents.
    pub restored_entries: Vec<PathBuf>,
    /// What the crash did to the contents of each surviving file (one entry per file, under
    /// one of its names).
    pub files: Vec<(PathBuf, CrashReport)>,
}

/// A file system held in memory that fails on request and simulates power loss; a testing
/// hook for everything above the [`FileSystem`] seam (also usable as a plain in-memory file
/// system: without failpoints and crashes it never fails).
///
/// - Every file is a [`FaultyFile`] over a [`MemFile`], kept by path: reopening a path gives
///   the same bytes, so an engine closed and reopened on the same `FaultyFileSystem` sees its
///   data.
/// - Failpoints are counted across all files: [`fail_nth`](Self::fail_nth)`(OpKind::Write, 7,
///   ..)` fails the 7th write of the whole file system from now, whichever file it hits, with
///   an error naming that file. [`op_count`](Self::op_count) tells how many operations of a
///   kind a workload did, so a test can run it once, then again failing each of them in turn.
///   `sync_data`, `sync_all` and `sync_dir` all count as [`OpKind::Sync`].
/// - [`crash`](Self::crash) is a power loss: file contents go back to their last synced image
///   (unsynced writes lost or torn per the [`CrashMode`]), directory entries created, renamed or
///   removed since the last [`sync_dir`](FileSystem::sync_dir) of their directory are undone,
///   and every handle opened before the crash fails from then on (the process that held them
///   would not have survived).
/// - [`pretend_atomic_writes`](Self::pretend_atomic_writes) makes it an atomic-write device:
///   [`PageFile::write_atomic_at`] on a handle opened with O_DIRECT is then untorn at a crash,
///   plain writes still tear.
///
/// Directories exist only as names (no contents of their own); `create_dir_all` makes them
/// durable at once. Paths are compared as given, component by component.
#[derive(Clone, Default)]
pub struct FaultyFileSystem {
    shared: Arc<Shared>,
}

impl fmt::Debug for FaultyFileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.shared.namespace.read();
        f.debug_struct("FaultyFileSystem")
            .field("files", &ns.live.keys().collect::<Vec<_>>())
            .field("dirs", &ns.dirs)
            .field("crashes", &ns.epoch)
            .finish_non_exhaustive()
    }
}

/// An [`IoError`] with errno `errno` for a path operation.
fn errno_error(op: Op, path: &Path, errno: i32) -> IoError {
    IoError::from_errno(op, path, 0, 0, errno)
}

/// The directory holding `path` (`None` for a root or a bare relative name).
fn parent_of(path: &Path) -> Option<&Path> {
    path.parent().filter(|p| !p.as_os_str().is_empty())
}

impl Namespace {
    /// Fails with ENOENT unless the directory that would hold `path` exists.
    fn check_parent(&self, op: Op, path: &Path) -> Result<()> {
        match parent_of(path) {
            Some(dir) if !self.dirs.contains(dir) => Err(errno_error(op, path, libc::ENOENT)),
            _ => Ok(()),
        }
    }

    /// The live file at `path`, or the error `op` gets for a missing file or a directory.
    fn file(&self, op: Op, path: &Path) -> Result<&Node> {
        if self.dirs.contains(path) {
            return Err(errno_error(op, path, libc::EISDIR));
        }
        self.live
            .get(path)
            .ok_or_else(|| errno_error(op, path, libc::ENOENT))
    }
}

impl FaultyFileSystem {
    /// An empty file system (no directories, no files, no failpoints).
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms a failpoint: the `nth` (1-based, counted from now across all files) operation of
    /// kind `op` fails with `error`, once, changing nothing.
    ///
    /// # Panics
    /// If `nth` is 0.
    pub fn fail_nth(&self, op: OpKind, nth: u64, error: ErrorKind) {
        self.shared.faults.lock().arm(Failpoint { op, nth, error });
    }

    /// Disarms every failpoint (the counters keep counting).
    pub fn clear_failpoints(&self) {
        self.shared.faults.lock().clear();
    }

    /// Operations of kind `op` done through this file system so far, failed ones included.
    pub fn op_count(&self, op: OpKind) -> u64 {
        self.shared.faults.lock().count(op)
    }

    /// Sets how [`crash`](Self::crash) treats unsynced writes, for every file present and
    /// future. Default [`CrashMode::DropUnsynced`].
    ///
    /// # Panics
    /// If a tearing sector is not a power of two.
    pub fn set_crash_mode(&self, mode: CrashMode) {
        check_crash_mode(mode);
        let mut ns = self.shared.namespace.write();
        ns.crash_mode = mode;
        for file in ns.live.values().chain(ns.durable.values()) {
            file.set_crash_mode(mode);
        }
    }

    /// Pretends the whole file system sits on a device with untorn writes of up to `unit`
    /// bytes, for every file present and future (see [`FaultyFile::pretend_atomic_writes`] for
    /// what a file then accepts). Only [`PageFile::write_atomic_at`] on handles opened with
    /// [`OpenOptions::direct`] is untorn; such a write on a buffered handle is refused
    /// (`Unsupported`), as Linux refuses it. `None` (the default) turns it off: every untorn
    /// write is refused. A single file can still be switched on its own through
    /// [`file`](Self::file).
    ///
    /// # Panics
    /// If `unit` is not a power of two of at least
    /// [`PRETENDED_ATOMIC_UNIT_MIN`](crate::faulty::PRETENDED_ATOMIC_UNIT_MIN) bytes.
    pub fn pretend_atomic_writes(&self, unit: Option<u32>) {
        check_atomic_unit(unit);
        let mut ns = self.shared.namespace.write();
        ns.atomic_write_unit = unit;
        for file in ns.live.values().chain(ns.durable.values()) {
            file.pretend_atomic_writes(unit);
        }
    }

    /// Makes every file present and future refuse hole punching as a file system without it
    /// does (EOPNOTSUPP: [`PunchOutcome::Unsupported`](crate::PunchOutcome::Unsupported),
    /// logged once per file, data untouched). `false` (the default) punches.
    pub fn refuse_punch_hole(&self, yes: bool) {
        let mut ns = self.shared.namespace.write();
        ns.refuse_punch_hole = yes;
        for file in ns.live.values().chain(ns.durable.values()) {
            file.refuse_punch_hole(yes);
        }
    }

    /// Simulates power loss (see the type's documentation) and returns what was lost.
    /// Afterwards the file system holds exactly the durable state, and only handles opened
    /// from now on work.
    pub fn crash(&self) -> Result<FsCrashReport> {
        let mut ns = self.shared.namespace.write();
        ns.epoch += 1;
        let same = |a: Option<&Node>, b: &Node| a.is_some_and(|a| Arc::ptr_eq(a, b));
        let mut report = FsCrashReport {
            lost_entries: ns
                .live
                .iter()
                .filter(|(path, file)| !same(ns.durable.get(*path), file))
                .map(|(path, _)| path.clone())
                .collect(),
            restored_entries: ns
                .durable
                .iter()
                .filter(|(path, file)| !same(ns.live.get(*path), file))
                .map(|(path, _)| path.clone())
                .collect(),
            files: Vec::new(),
        };
        let mut crashed: Vec<&Node> = Vec::new();
        for (path, file) in &ns.durable {
            if crashed.iter().any(|done| Arc::ptr_eq(done, file)) {
                continue;
            }
            report.files.push((path.clone(), file.crash()?));
            crashed.push(file);
        }
        ns.live = ns.durable.clone();
        tracing::debug!(
            lost = report.lost_entries.len(),
            restored = report.restored_entries.len(),
            "simulated file-system crash"
        );
        Ok(report)
    }

    /// The file now at `path`, to inspect its live or durable image.
    pub fn file(&self, path: &Path) -> Option<Arc<FaultyFile<MemFile>>> {
        self.shared.namespace.read().live.get(path).cloned()
    }

    /// Whether the entry `path` would survive a crash now, i.e. its directory was synced since
    /// it was created or renamed there.
    pub fn is_entry_durable(&self, path: &Path) -> bool {
        let ns = self.shared.namespace.read();
        ns.dirs.contains(path) || ns.durable.contains_key(path)
    }
}

impl FileSystem for FaultyFileSystem {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn PageFile>> {
        let mut ns = self.shared.namespace.write();
        ns.check_parent(Op::Open, path)?;
        let writable = !opts.read_only;
        let file = match ns.file(Op::Open, path) {
            Ok(file) => {
                if opts.create_new && writable {
                    return Err(errno_error(Op::Open, path, libc::EEXIST));
                }
                if opts.truncate && writable {
                    // Part of the open on a real system: not a counted `set_len`.
                    file.set_len(0)?;
                }
                file.clone()
            }
            Err(e) if e.kind() == crate::IoErrorKind::NotFound => {
                if !(writable && (opts.create || opts.create_new)) {
                    return Err(e);
                }
                let file = Arc::new(FaultyFile::new(MemFile::new(&path.display().to_string()))?);
                file.set_crash_mode(ns.crash_mode);
                file.pretend_atomic_writes(ns.atomic_write_unit);
                file.refuse_punch_hole(ns.refuse_punch_hole);
                ns.live.insert(path.to_owned(), file.clone());
                file
            }
            Err(e) => return Err(e),
        };
        Ok(Arc::new(FsFile {
            file,
            path: path.to_owned(),
            read_only: opts.read_only,
            direct: opts.direct,
            epoch: ns.epoch,
            shared: self.shared.clone(),
        }))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let ns = self.shared.namespace.read();
        Ok(ns.dirs.contains(path) || ns.live.contains_key(path))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut ns = self.shared.namespace.write();
        ns.file(Op::Remove, path)?;
        ns.live.remove(path);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut ns = self.shared.namespace.write();
        let file = ns.file(Op::Rename, from)?.clone();
        ns.check_parent(Op::Rename, to)?;
        if ns.dirs.contains(to) {
            return Err(errno_error(Op::Rename, to, libc::EISDIR));
        }
        ns.live.remove(from);
        ns.live.insert(to.to_owned(), file);
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut ns = self.shared.namespace.write();
        let ancestors: Vec<&Path> = path
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if let Some(file) = ancestors.iter().find(|p| ns.live.contains_key(**p)) {
            return Err(errno_error(Op::CreateDir, file, libc::ENOTDIR));
        }
        ns.dirs.extend(ancestors.iter().map(|p| p.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let mut ns = self.shared.namespace.write();
        if !ns.dirs.contains(path) {
            let errno = if ns.live.contains_key(path) {
                libc::ENOTDIR
            } else {
                libc::ENOENT
            };
            return Err(errno_error(Op::SyncDir, path, errno));
        }
        if let Some(error) = self.shared.faults.lock().tick(OpKind::Sync) {
            return Err(errno_error(Op::SyncDir, path, error.errno()));
        }
        let in_dir = |p: &Path| parent_of(p) == Some(path);
        ns.durable.retain(|p, _| !in_dir(p));
        let entries: Vec<(PathBuf, Node)> = ns
            .live
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, f)| (p.clone(), f.clone()))
            .collect();
        ns.durable.extend(entries);
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<PathBuf>> {
        let ns = self.shared.namespace.read();
        if !ns.dirs.contains(path) {
            let errno = if ns.live.contains_key(path) {
                libc::ENOTDIR
            } else {
                libc::ENOENT
            };
            return Err(errno_error(Op::ListDir, path, errno));
        }
        let in_dir = |p: &&PathBuf| parent_of(p) == Some(path);
        let mut entries: Vec<PathBuf> = ns
            .live
            .keys()
            .chain(ns.dirs.iter())
            .filter(in_dir)
            .cloned()
            .collect();
        entries.sort();
        Ok(entries)
    }
}
