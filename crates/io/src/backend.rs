//! Choosing a back end: the [`Backend`] enum, the [`open_file`] factory the engine uses, and
//! the io_uring probe behind [`Backend::Auto`].

use std::path::Path;
use std::sync::{Arc, OnceLock};

use io_uring::IoUring;

use crate::error::Result;
use crate::file::PageFile;
use crate::mem_file::MemFile;
use crate::options::OpenOptions;
use crate::std_file::StdFile;
use crate::uring_file::UringFile;

/// Which implementation of [`PageFile`] to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// `pread`/`pwrite` ([`StdFile`]); O_DIRECT only if the options ask for it.
    Std,
    /// [`StdFile`] with O_DIRECT forced on.
    StdDirect,
    /// io_uring ([`UringFile`]); fails if the kernel refuses io_uring.
    Uring,
    /// io_uring when the kernel allows it, else [`StdFile`] (the reason is logged once and
    /// returned by [`uring_fallback_reason`]). Default.
    #[default]
    Auto,
    /// A fresh in-memory file ([`MemFile`]) named after the path; nothing touches the disk,
    /// and opening the same path twice gives two independent files.
    Memory,
}

/// Opens `path` with `opts` on `backend`, for the engine to hold as `Arc<dyn PageFile>`.
pub fn open_file(
    path: impl AsRef<Path>,
    opts: &OpenOptions,
    backend: Backend,
) -> Result<Arc<dyn PageFile>> {
    let path = path.as_ref();
    Ok(match backend {
        Backend::Std => Arc::new(StdFile::open(path, opts)?),
        Backend::StdDirect => Arc::new(StdFile::open(path, &opts.direct(true))?),
        Backend::Uring => Arc::new(UringFile::open(path, opts)?),
        Backend::Auto => open_best(path, opts)?,
        Backend::Memory => Arc::new(MemFile::new(&path.display().to_string())),
    })
}

/// Opens `path` on io_uring if this process may use it, else on [`StdFile`] (logging why with
/// `tracing::warn`, once per process; see [`uring_fallback_reason`]). A file whose ring cannot
/// be set up (e.g. out of locked memory) also falls back, with a warning.
pub fn open_best(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Arc<dyn PageFile>> {
    let path = path.as_ref();
    if uring_fallback_reason().is_some() {
        return Ok(Arc::new(StdFile::open(path, opts)?));
    }
    let std = StdFile::open(path, opts)?;
    let fd_path = std.path().to_path_buf();
    match UringFile::from_std(std) {
        Ok(f) => Ok(Arc::new(f)),
        Err(e) => {
            tracing::warn!(path = %fd_path.display(), error = %e, "io_uring ring setup failed; using pread/pwrite");
            Ok(Arc::new(StdFile::open(
                &fd_path,
                &opts.create(false).truncate(false).create_new(false),
            )?))
        }
    }
}

/// Why [`Backend::Auto`] does not use io_uring in this process (`None` = it does). The kernel
/// is probed once, by creating a small ring; typical reasons are ENOSYS (kernel without
/// io_uring) and EPERM (seccomp filter, `kernel.io_uring_disabled`).
pub fn uring_fallback_reason() -> Option<&'static str> {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    PROBE
        .get_or_init(|| match IoUring::new(2) {
            Ok(_) => None,
            Err(e) => {
                let reason = format!("io_uring_setup refused: {e}");
                tracing::warn!(reason = %reason, "io_uring unavailable; Backend::Auto falls back to pread/pwrite");
                Some(reason)
            }
        })
        .as_deref()
}
