//! [`RedoError`]: every failure of the redo log names the log file and says what was expected.

use std::path::PathBuf;
use std::sync::Arc;

use barracuda_io::IoError;

use crate::Lsn;

/// A failure of the redo log.
#[derive(Debug, thiserror::Error)]
pub enum RedoError {
    /// A file operation failed (the error names the file, the operation and the byte range).
    #[error("redo log: {0}")]
    Io(#[from] IoError),
    /// An earlier write or sync of the log failed; the log refuses every further append, sync
    /// and checkpoint, because after a failed `fsync` the kernel may have dropped the dirty
    /// pages and a retry could report success for data that never reached the disk
    /// (fsyncgate). Reopening the log (recovery) is the only way on.
    #[error("redo log {path} failed earlier and accepts nothing more: {cause}", path = path.display())]
    Failed {
        /// The log file.
        path: PathBuf,
        /// The first failure.
        cause: Arc<IoError>,
    },
    /// Appending `needed` bytes would overwrite log not yet behind the checkpoint: the caller
    /// must flush pages and advance the checkpoint first.
    #[error(
        "redo log {path} is full: {needed} bytes needed, {free} free before checkpoint LSN {checkpoint_lsn} is reached again",
        path = path.display()
    )]
    LogFull {
        /// The log file.
        path: PathBuf,
        /// Frame bytes the append needed.
        needed: u64,
        /// Bytes that could still be appended.
        free: u64,
        /// The current checkpoint LSN.
        checkpoint_lsn: Lsn,
    },
    /// An mtr must be 1 to `max` bytes long.
    #[error("redo log {path}: an mtr of {len} bytes is outside 1..={max}", path = path.display())]
    BadMtrLength {
        /// The log file.
        path: PathBuf,
        /// The mtr's length.
        len: usize,
        /// The largest mtr the log buffer holds.
        max: u64,
    },
    /// A checkpoint was asked for at an LSN the log cannot record.
    #[error("redo log {path}: cannot checkpoint at LSN {lsn}: {why}", path = path.display())]
    BadCheckpoint {
        /// The log file.
        path: PathBuf,
        /// The LSN asked for.
        lsn: Lsn,
        /// Why not (beyond the flushed LSN, behind the current checkpoint, not an mtr start).
        why: String,
    },
    /// The log file's bytes are not a valid log (bad header, no valid checkpoint slot).
    #[error("redo log {path} at offset {offset}: {what}", path = path.display())]
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// Byte offset in the file of the bad structure.
        offset: u64,
        /// What was expected and found.
        what: String,
    },
    /// `create` found a log already there.
    #[error("redo log {path} already exists", path = path.display())]
    AlreadyExists {
        /// The existing log file.
        path: PathBuf,
    },
    /// The options cannot make a log.
    #[error("invalid redo log options: {0}")]
    BadOptions(String),
}

/// Result of the redo log's operations.
pub type Result<T> = std::result::Result<T, RedoError>;
