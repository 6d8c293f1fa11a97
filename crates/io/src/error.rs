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
    /// EOPNOTSUPP / ENOTSUP / ENOSYS: the kernel or file system refuses the operation.
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
    pub fn new(op: Op, path: &Path, offset: u64, len: u64, source: io::Error) -> Self {
        let kind = IoErrorKind::from_io(&source);
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

    /// EOPNOTSUPP / ENOSYS.
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
        assert_eq!(
            IoError::unaligned(Op::Read, p, 1, 1, "offset", 4096).kind(),
            IoErrorKind::Unaligned
        );
    }
}
