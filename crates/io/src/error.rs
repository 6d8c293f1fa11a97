//! The one error type of the crate: every failure names the file, the operation, the byte range
//! and the operating-system error, so a log line alone tells what broke where.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Result of every fallible operation of this crate.
pub type Result<T> = std::result::Result<T, IoError>;

/// The operation that failed, as printed in [`IoError`] messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Opening or creating the file.
    Open,
    /// A positioned read (`pread`, io_uring `READ`).
    Read,
    /// A positioned write (`pwrite`, io_uring `WRITE`).
    Write,
    /// An untorn write (`pwritev2` with `RWF_ATOMIC`), see
    /// [`PageFile::write_atomic_at`](crate::PageFile::write_atomic_at).
    AtomicWrite,
    /// `fdatasync` (io_uring `FSYNC` with `DATASYNC`).
    SyncData,
    /// `fsync`.
    SyncAll,
    /// `ftruncate`.
    SetLen,
    /// `fstat` / `statx` (length, allocated blocks, atomic-write unit).
    Stat,
    /// `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`.
    PunchHole,
    /// `io_uring_setup` or `io_uring_enter` itself (not one request).
    Uring,
    /// Removing a file from its directory (`unlink`).
    Remove,
    /// Renaming a file (`rename`).
    Rename,
    /// Creating a directory (`mkdir`).
    CreateDir,
    /// `fsync` of a directory, making its entries durable.
    SyncDir,
    /// Listing a directory (`readdir`).
    ListDir,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Open => "open",
            Op::Read => "read",
            Op::Write => "write",
            Op::AtomicWrite => "atomic_write",
            Op::SyncData => "sync_data",
            Op::SyncAll => "sync_all",
            Op::SetLen => "set_len",
            Op::Stat => "stat",
            Op::PunchHole => "punch_hole",
            Op::Uring => "io_uring",
            Op::Remove => "remove",
            Op::Rename => "rename",
            Op::CreateDir => "create_dir",
            Op::SyncDir => "sync_dir",
            Op::ListDir => "list_dir",
        })
    }
}

/// What kind of failure an [`IoError`] is, so callers can react without matching on errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoErrorKind {
    /// ENOSPC or EDQUOT: the file system (or quota) is full.
    NoSpace,
    /// EIO: the device reported a media or transport error.
    Eio,
    /// EOPNOTSUPP / ENOTSUP / ENOSYS: the kernel or file system refuses the operation. For
    /// [`Op::AtomicWrite`] also EINVAL (how the kernel refuses an untorn write it cannot do) and
    /// every refusal of the atomic-write rules detected before the system call: the caller's
    /// cue to fall back to a torn-write-safe path (doublewrite) for that file.
    Unsupported,
    /// EPERM / EACCES (for io_uring: typically a seccomp filter or `io_uring_disabled`).
    PermissionDenied,
    /// ENOENT: the file does not exist.
    NotFound,
    /// The read range reaches beyond the end of the file ("page beyond EOF"); see
    /// [`PageFile::read_at`](crate::PageFile::read_at).
    PastEof,
    /// An O_DIRECT file was given a buffer, offset or length that is not aligned; detected before
    /// the system call, so this never is the kernel's bare EINVAL.
    Unaligned,
    /// Anything else (see [`IoError::raw_os_error`]).
    Other,
}

impl IoErrorKind {
    /// Classifies an operating-system error.
    pub fn from_io(err: &io::Error) -> Self {
        match err.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => IoErrorKind::NoSpace,
            Some(libc::EIO) => IoErrorKind::Eio,
            // On Linux ENOTSUP == EOPNOTSUPP.
            Some(libc::EOPNOTSUPP | libc::ENOSYS) => IoErrorKind::Unsupported,
            Some(libc::EPERM | libc::EACCES) => IoErrorKind::PermissionDenied,
            Some(libc::ENOENT) => IoErrorKind::NotFound,
            _ => match err.kind() {
                io::ErrorKind::UnexpectedEof => IoErrorKind::PastEof,
                io::ErrorKind::NotFound => IoErrorKind::NotFound,
                io::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
                io::ErrorKind::Unsupported => IoErrorKind::Unsupported,
                _ => IoErrorKind::Other,
            },
        }
    }
}

/// A failed file operation: `"{op} {path} [offset, +len): {os error}"`.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path} at offset {offset} len {len}: {source}", path = path.display())]
pub struct IoError {
    op: Op,
    path: PathBuf,
    offset: u64,
    len: u64,
    kind: IoErrorKind,
    #[source]
    source: io::Error,
}

impl IoError {
    /// Wraps an operating-system error; the kind is derived from it.
    ///
    /// For [`Op::AtomicWrite`], EINVAL counts as [`IoErrorKind::Unsupported`]: the kernel
    /// answers EINVAL to an untorn write the device or file cannot do (length outside the
    /// atomic-write unit range, misalignment), EOPNOTSUPP when the file cannot do any.
    pub fn new(op: Op, path: &Path, offset: u64, len: u64, source: io::Error) -> Self {
        let kind = match (op, source.raw_os_error()) {
            (Op::AtomicWrite, Some(libc::EINVAL)) => IoErrorKind::Unsupported,
            _ => IoErrorKind::from_io(&source),
        };
        IoError {
            op,
            path: path.to_path_buf(),
            offset,
            len,
            kind,
            source,
        }
    }

    /// Wraps the raw errno `errno`.
    pub fn from_errno(op: Op, path: &Path, offset: u64, len: u64, errno: i32) -> Self {
        Self::new(op, path, offset, len, io::Error::from_raw_os_error(errno))
    }

    /// The read of `[offset, offset + len)` reaches beyond `file_len`, the end of the file.
    pub fn past_eof(path: &Path, offset: u64, len: u64, file_len: u64) -> Self {
        IoError {
            op: Op::Read,
            path: path.to_path_buf(),
            offset,
            len,
            kind: IoErrorKind::PastEof,
            source: io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read beyond end of file (file length {file_len})"),
            ),
        }
    }

    /// An O_DIRECT request whose `what` (buffer address, offset or length) is not a multiple of
    /// `align` bytes.
    pub fn unaligned(op: Op, path: &Path, offset: u64, len: u64, what: &str, align: usize) -> Self {
        IoError {
            op,
            path: path.to_path_buf(),
            offset,
            len,
            kind: IoErrorKind::Unaligned,
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "O_DIRECT needs {what} aligned to {align} bytes (use AlignedBuf and \
                     page-aligned offsets)"
                ),
            ),
        }
    }

    /// A request refused before reaching the operating system because the file or device
    /// cannot do it; `why` says which rule it breaks. Kind [`IoErrorKind::Unsupported`], no
    /// errno.
    pub fn unsupported(op: Op, path: &Path, offset: u64, len: u64, why: impl Into<String>) -> Self {
        IoError {
            op,
            path: path.to_path_buf(),
            offset,
            len,
            kind: IoErrorKind::Unsupported,
            source: io::Error::new(io::ErrorKind::Unsupported, why.into()),
        }
    }

    /// The failed operation.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The file the operation was on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset of the request (0 where it has none, e.g. sync).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length of the request in bytes (0 where it has none).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the request had no length (sync, stat).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The classified kind of failure.
    pub fn kind(&self) -> IoErrorKind {
        self.kind
    }

    /// The errno, when the failure came from (or imitates) the operating system.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// The underlying `std::io::Error`.
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }

    /// ENOSPC / EDQUOT.
    pub fn is_no_space(&self) -> bool {
        self.kind == IoErrorKind::NoSpace
    }

    /// EIO.
    pub fn is_eio(&self) -> bool {
        self.kind == IoErrorKind::Eio
    }

    /// The file system, device or back end refuses the operation ([`IoErrorKind::Unsupported`]:
    /// EOPNOTSUPP / ENOSYS, a refused untorn write). For
    /// [`PageFile::write_atomic_at`](crate::PageFile::write_atomic_at) this means "fall back for
    /// this file"; any other error of an atomic write is a real I/O error.
    pub fn is_unsupported(&self) -> bool {
        self.kind == IoErrorKind::Unsupported
    }

    /// The read reached beyond the end of the file.
    pub fn is_past_eof(&self) -> bool {
        self.kind == IoErrorKind::PastEof
    }
}

impl From<IoError> for io::Error {
    fn from(err: IoError) -> Self {
        let kind = err.source.kind();
        io::Error::new(kind, err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn einval_refuses_only_an_atomic_write() {
        let p = Path::new("x");
        let atomic = IoError::from_errno(Op::AtomicWrite, p, 0, 4096, libc::EINVAL);
        assert!(atomic.is_unsupported(), "{atomic}");
        assert_eq!(atomic.raw_os_error(), Some(libc::EINVAL));
        assert!(atomic.to_string().contains("atomic_write"), "{atomic}");
        let plain = IoError::from_errno(Op::Write, p, 0, 4096, libc::EINVAL);
        assert_eq!(plain.kind(), IoErrorKind::Other);
        assert!(IoError::from_errno(Op::AtomicWrite, p, 0, 1, libc::EOPNOTSUPP).is_unsupported());
        assert!(IoError::from_errno(Op::AtomicWrite, p, 0, 1, libc::EIO).is_eio());
    }

    #[test]
    fn message_names_path_op_range_and_os_error() {
        let err = IoError::from_errno(Op::Write, Path::new("/d/t.ibd"), 16384, 4096, libc::ENOSPC);
        let msg = err.to_string();
        assert!(msg.contains("write"), "{msg}");
        assert!(msg.contains("/d/t.ibd"), "{msg}");
        assert!(msg.contains("16384") && msg.contains("4096"), "{msg}");
        assert!(err.is_no_space());
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    }

    #[test]
    fn kinds_are_classified() {
        let p = Path::new("x");
        assert_eq!(
            IoError::from_errno(Op::Read, p, 0, 1, libc::EIO).kind(),
            IoErrorKind::Eio
        );
        assert_eq!(
            IoError::from_errno(Op::PunchHole, p, 0, 1, libc::EOPNOTSUPP).kind(),
            IoErrorKind::Unsupported
        );
        assert!(IoError::past_eof(p, 0, 1, 0).is_past_eof());
        assert!(IoError::unsupported(Op::AtomicWrite, p, 0, 1, "no").is_unsupported());
        assert_eq!(
            IoError::unaligned(Op::Read, p, 1, 1, "offset", 4096).kind(),
            IoErrorKind::Unaligned
        );
    }
}
