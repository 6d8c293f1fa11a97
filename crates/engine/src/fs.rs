//! The file-system seam of the engine, re-exported from its I/O layer: what
//! [`EngineOptions::file_system`](crate::EngineOptions::file_system) takes, and what a test
//! needs to inject faults or simulate power loss under a running engine.
//!
//! ```
//! use std::sync::Arc;
//! use barracuda::fs::{FaultError, FaultyFileSystem, OpKind};
//! use barracuda::{Engine, EngineOptions, TableOptions};
//!
//! let dir = tempfile::tempdir()?; // holds only the LOCK file; the data lives in `fs`
//! let fs = FaultyFileSystem::new();
//! let options = EngineOptions::default()
//!     .buffer_pool_bytes(4 << 20)
//!     .file_system(Arc::new(fs.clone()));
//! let db = Engine::open(dir.path(), options.clone())?;
//! let t = db.create_table("t", TableOptions::default())?;
//! db.put(&t, b"k", b"v")?;
//! fs.fail_nth(OpKind::Sync, 1, FaultError::Eio);
//! assert!(db.checkpoint().is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use barracuda_io::faulty::{ErrorKind as FaultError, OpKind};
pub use barracuda_io::{
    CrashMode, CrashReport, FaultyFile, FaultyFileSystem, FileSystem, FsCrashReport, IoError,
    IoErrorKind as FileErrorKind, MemFile, Op, OpenOptions, OsFileSystem, PageFile, PunchOutcome,
};
