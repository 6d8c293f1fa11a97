//! [`OpenOptions`]: how a page file is opened, shared by every on-disk back end.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;

/// How to open a page file. By-value builder; the default opens an existing file read-write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent open flags, as in std::fs::OpenOptions"
)]
pub struct OpenOptions {
    pub(crate) create: bool,
    pub(crate) create_new: bool,
    pub(crate) truncate: bool,
    pub(crate) read_only: bool,
    pub(crate) direct: bool,
    /// Set by `mapped_reads(false)`: the default (false) maps.
    pub(crate) no_mapped_reads: bool,
}

impl OpenOptions {
    /// Read-write, existing file, no truncation, buffered I/O.
    pub fn new() -> Self {
        Self::default()
    }

    /// Create the file if it does not exist. Default = false.
    pub fn create(mut self, yes: bool) -> Self {
        self.create = yes;
        self
    }

    /// Create the file and fail if it exists (`O_EXCL`). Default = false.
    pub fn create_new(mut self, yes: bool) -> Self {
        self.create_new = yes;
        self
    }

    /// Truncate to length 0 on open. Default = false. Ignored when read-only.
    pub fn truncate(mut self, yes: bool) -> Self {
        self.truncate = yes;
        self
    }

    /// Open for reading only; writes then fail with EBADF. Default = false.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Bypass the page cache (`O_DIRECT`). Default = false. Buffers, offsets and lengths must
    /// then be aligned (see [`AlignedBuf`](crate::AlignedBuf)); misaligned requests fail with
    /// [`IoErrorKind::Unaligned`](crate::IoErrorKind::Unaligned) before reaching the kernel.
    /// InnoDB: `innodb_flush_method = O_DIRECT`.
    pub fn direct(mut self, yes: bool) -> Self {
        self.direct = yes;
        self
    }

    /// Serve page-sized reads of a buffered file by copying from a read-only shared mapping
    /// of it instead of `pread` (the same page-cache memory, without the system call; see
    /// [`StdFile`](crate::StdFile)). Default = true; never with O_DIRECT. The mapping's one
    /// hazard: another process truncating the file while a read copies from it raises
    /// `SIGBUS` in this one.
    pub fn mapped_reads(mut self, yes: bool) -> Self {
        self.no_mapped_reads = !yes;
        self
    }

    /// Whether O_DIRECT was asked for.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Whether the file is opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The equivalent `std::fs::OpenOptions` (with `O_DIRECT` and `O_CLOEXEC` as custom flags).
    pub(crate) fn to_std(self) -> fs::OpenOptions {
        let mut o = fs::OpenOptions::new();
        o.read(true)
            .write(!self.read_only)
            .create(self.create && !self.read_only)
            .create_new(self.create_new && !self.read_only)
            .truncate(self.truncate && !self.read_only);
        let mut flags = libc::O_CLOEXEC;
        if self.direct {
            flags |= libc::O_DIRECT;
        }
        o.custom_flags(flags);
        o
    }
}
