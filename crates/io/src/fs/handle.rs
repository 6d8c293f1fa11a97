//! [`FsFile`]: the handle [`FaultyFileSystem::open`](super::FaultyFileSystem) returns. It counts
//! every operation in the file system's counters (where the failpoints live), refuses writes on
//! a read-only open and untorn writes on an open without O_DIRECT (as Linux does), and stops
//! working once the file system has crashed, as a process does not outlive a power loss.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{IoError, Op, Result};
use crate::faulty::{FaultyFile, OpKind};
use crate::file::{PageFile, PunchOutcome};
use crate::mem_file::MemFile;

use super::faulty::Shared;

/// An open file of a [`FaultyFileSystem`](super::FaultyFileSystem).
pub(super) struct FsFile {
    pub(super) file: Arc<FaultyFile<MemFile>>,
    pub(super) path: PathBuf,
    pub(super) read_only: bool,
    /// Opened with O_DIRECT: only then are untorn writes allowed.
    pub(super) direct: bool,
    /// The file system's crash count when this handle was opened.
    pub(super) epoch: u64,
    pub(super) shared: Arc<Shared>,
}

impl fmt::Debug for FsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the file: its Debug would print every byte of both images.
        f.debug_struct("FsFile")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .field("direct", &self.direct)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl FsFile {
    /// Runs `op` on the file unless the handle predates a crash or a failpoint fires. The
    /// namespace stays read-locked throughout, so a crash cannot slip between the check and
    /// the operation.
    fn run<T>(
        &self,
        kind: OpKind,
        op: Op,
        offset: u64,
        len: u64,
        f: impl FnOnce(&FaultyFile<MemFile>) -> Result<T>,
    ) -> Result<T> {
        let ns = self.shared.namespace.read();
        if ns.epoch != self.epoch {
            return Err(IoError::new(
                op,
                &self.path,
                offset,
                len,
                io::Error::other("the file system crashed after this handle was opened"),
            ));
        }
        let writes = matches!(
            kind,
            OpKind::Write | OpKind::AtomicWrite | OpKind::SetLen | OpKind::PunchHole
        );
        if writes && self.read_only {
            return Err(IoError::from_errno(
                op,
                &self.path,
                offset,
                len,
                libc::EBADF,
            ));
        }
        if let Some(error) = self.shared.faults.lock().tick(kind) {
            return Err(IoError::from_errno(
                op,
                &self.path,
                offset,
                len,
                error.errno(),
            ));
        }
        let result = f(&self.file);
        drop(ns);
        result
    }
}

impl PageFile for FsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let len = buf.len() as u64;
        self.run(OpKind::Read, Op::Read, offset, len, |f| {
            f.read_at(buf, offset)
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let len = buf.len() as u64;
        self.run(OpKind::Write, Op::Write, offset, len, |f| {
            f.write_at(buf, offset)
        })
    }

    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let len = buf.len() as u64;
        self.run(OpKind::AtomicWrite, Op::AtomicWrite, offset, len, |f| {
            if !self.direct {
                return Err(IoError::unsupported(
                    Op::AtomicWrite,
                    &self.path,
                    offset,
                    len,
                    "an untorn write (RWF_ATOMIC) needs a file opened with O_DIRECT; this \
                     handle is buffered",
                ));
            }
            f.write_atomic_at(buf, offset)
        })
    }

    fn sync_data(&self) -> Result<()> {
        self.run(OpKind::Sync, Op::SyncData, 0, 0, PageFile::sync_data)
    }

    fn sync_all(&self) -> Result<()> {
        self.run(OpKind::Sync, Op::SyncAll, 0, 0, PageFile::sync_all)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.run(OpKind::SetLen, Op::SetLen, len, 0, |f| f.set_len(len))
    }

    fn len(&self) -> Result<u64> {
        self.file.len()
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.file.allocated_bytes()
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        self.run(OpKind::PunchHole, Op::PunchHole, offset, len, |f| {
            f.punch_hole(offset, len)
        })
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        self.file.atomic_write_unit()
    }

    fn block_size(&self) -> u32 {
        self.file.block_size()
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn backend_name(&self) -> &'static str {
        "faulty"
    }
}
