//! Page files of Barracuda: the [`PageFile`] trait the engine does all file I/O through, and
//! its back ends.
//!
//! - [`StdFile`]: `pread`/`pwrite`, optionally O_DIRECT (with [`AlignedBuf`] buffers).
//! - [`UringFile`]: io_uring, with batched submission for the flusher and read-ahead.
//! - [`MemFile`]: in memory, with a block-allocation model so hole punching is visible.
//! - [`FaultyFile`]: wraps any of them to lose or tear unsynced writes at a simulated crash
//!   (only untorn writes on a pretended atomic-write device survive whole) and to fail the
//!   N-th operation with EIO, ENOSPC, EOPNOTSUPP or EINVAL.
//!
//! [`FileSystem`] is the seam for everything done with paths (open, create, remove, rename,
//! directory sync): [`OsFileSystem`] is the real one, [`FaultyFileSystem`] an in-memory model
//! that fails on request and simulates power loss, directory entries included.
//!
//! [`open_file`] picks one by [`Backend`]; [`Backend::Auto`] uses io_uring where the kernel
//! allows it and says why not otherwise ([`uring_fallback_reason`]).
//!
//! [`PageFile::write_atomic_at`] is an untorn write (`RWF_ATOMIC`) where the device has them,
//! and an `Unsupported` error everywhere else, so a caller can fall back to doublewrite per
//! file; [`probe_atomic_writes`] asks a directory once whether page writes can be untorn.
//!
//! Hole punching that the file system refuses (EOPNOTSUPP) is reported once as
//! [`PunchOutcome::Unsupported`] and switched off for the file, never an error.

mod aligned;
mod atomic;
mod backend;
mod error;
pub mod faulty;
mod file;
mod fs;
mod mapped_reads;
mod mem_file;
mod options;
mod probe;
mod punch;
mod std_file;
mod sync_latch;
mod sys;
mod uring_file;

pub use aligned::{AlignedBuf, DIRECT_IO_ALIGN};
pub use backend::{open_best, open_file, uring_fallback_reason, Backend};
pub use error::{IoError, IoErrorKind, Op, Result};
pub use faulty::{CrashMode, CrashReport, FaultPlan, FaultyFile, OpKind};
pub use file::{PageFile, PunchOutcome, UNKNOWN_BLOCK_SIZE};
pub use fs::{FaultyFileSystem, FileSystem, FsCrashReport, OsFileSystem};
pub use mem_file::{MemFile, MEM_BLOCK_BYTES};
pub use options::OpenOptions;
pub use probe::{
    probe_atomic_writes, AtomicWriteProbe, AtomicWriteRefusal, ATOMIC_WRITE_PROBE_FILE,
};
pub use std_file::StdFile;
pub use sync_latch::SyncLatch;
pub use uring_file::UringFile;
