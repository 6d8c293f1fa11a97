//! The file-system seam: [`FileSystem`] is everything the engine does with paths — opening
//! page files, checking, creating, renaming and removing them, listing and syncing directories.
//! [`OsFileSystem`] is the real one; [`FaultyFileSystem`] keeps every file in memory behind a
//! [`FaultyFile`](crate::FaultyFile), injects failures counted across all its files and
//! simulates power loss, directory entries included.

mod faulty;
mod handle;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::{open_file, Backend};
use crate::error::{IoError, Op, Result};
use crate::file::PageFile;
use crate::options::OpenOptions;

pub use faulty::{FaultyFileSystem, FsCrashReport};

/// The operations on paths the engine needs, so that a whole database can run on the real
/// file system, in memory, or on a fault-injecting model of one.
///
/// Durability contract (POSIX, and what [`FaultyFileSystem`] enforces): a file's *data* is
/// durable after [`PageFile::sync_all`]/[`PageFile::sync_data`]; its *directory entry* — that
/// it was created, renamed or removed — is durable only after [`sync_dir`](Self::sync_dir) of
/// the directory holding it. Directories made by [`create_dir_all`](Self::create_dir_all) are
/// durable when it returns.
///
/// Every error is an [`IoError`] naming the path and the operation.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Opens (or creates, as `opts` say) the page file at `path`.
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn PageFile>>;

    /// Whether a file or directory exists at `path`. An error (e.g. permission denied) is
    /// reported, never taken for "absent": the engine creates a database where it finds none.
    fn exists(&self, path: &Path) -> Result<bool>;

    /// Removes the file at `path` (open handles keep working, as with `unlink`).
    fn remove(&self, path: &Path) -> Result<()>;

    /// Renames the file `from` to `to`, replacing `to` if it exists (atomically, as `rename`).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;

    /// Creates the directory `path` and any missing parents, and makes every directory it
    /// created durable before returning. Existing directories are not an error.
    fn create_dir_all(&self, path: &Path) -> Result<()>;

    /// Makes the entries of directory `path` durable (`fsync` of the directory): files created,
    /// renamed into or removed from it survive a power loss only after this returns.
    fn sync_dir(&self, path: &Path) -> Result<()>;

    /// Paths of the entries (files and directories) directly inside directory `path`, sorted.
    fn list_dir(&self, path: &Path) -> Result<Vec<PathBuf>>;
}

/// The operating system's file system; page files are opened on `backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OsFileSystem {
    backend: Backend,
    /// Set by `mapped_reads(false)`: every file opened without mapped reads.
    no_mapped_reads: bool,
}

impl OsFileSystem {
    /// The real file system, opening page files on `backend` (with mapped reads where the back
    /// end has them, see [`OpenOptions::mapped_reads`]).
    pub fn new(backend: Backend) -> Self {
        OsFileSystem {
            backend,
            no_mapped_reads: false,
        }
    }

    /// Whether buffered files serve page reads from a mapping ([`OpenOptions::mapped_reads`]);
    /// `false` opens every file with `mapped_reads(false)`, whatever the caller asked. Default
    /// = true.
    #[must_use]
    pub fn mapped_reads(mut self, yes: bool) -> Self {
        self.no_mapped_reads = !yes;
        self
    }

    /// The back end page files are opened on.
    pub fn backend(&self) -> Backend {
        self.backend
    }
}

/// An [`IoError`] for a path operation without a byte range.
fn path_error(op: Op, path: &Path, source: io::Error) -> IoError {
    IoError::new(op, path, 0, 0, source)
}

impl FileSystem for OsFileSystem {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn PageFile>> {
        if self.no_mapped_reads {
            return open_file(path, &opts.mapped_reads(false), self.backend);
        }
        open_file(path, opts, self.backend)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| path_error(Op::Stat, path, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| path_error(Op::Remove, path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| {
            let described = io::Error::new(e.kind(), format!("to {}: {e}", to.display()));
            path_error(Op::Rename, from, described)
        })
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        // The missing directories, outermost last; each needs its parent synced once created.
        let mut missing = Vec::new();
        let mut cursor = Some(path);
        while let Some(dir) = cursor {
            if dir.as_os_str().is_empty() || self.exists(dir)? {
                break;
            }
            missing.push(dir);
            cursor = dir.parent();
        }
        for dir in missing.iter().rev() {
            match fs::create_dir(dir) {
                Ok(()) => {}
                // Another process created it meanwhile: it exists, which is all we promise.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                Err(e) => return Err(path_error(Op::CreateDir, dir, e)),
            }
        }
        for dir in &missing {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                self.sync_dir(parent)?;
            }
        }
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        fs::File::open(path)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| path_error(Op::SyncDir, path, e))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<PathBuf>> {
        let error = |e| path_error(Op::ListDir, path, e);
        let mut entries = fs::read_dir(path)
            .map_err(error)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()
            .map_err(error)?;
        entries.sort();
        Ok(entries)
    }
}
