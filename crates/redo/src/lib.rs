//! The Barracuda redo log (work in progress, issue "Redo log"): the write-ahead log of
//! mini-transactions, its files and checkpoints, and the adaptive-flushing controller that keeps
//! the checkpoint age away from the log's capacity.
//!
//! The engine does not use this crate yet: the mini-transaction records, recovery's apply phase
//! and the page cleaner land in later steps.
//!
//! - [`RedoLog`]: one preallocated, fixed-capacity log file under `<dir>/redo/`, used
//!   circularly; mtrs (opaque byte strings here) are framed with their length and a CRC-32C
//!   that covers their LSN, appended concurrently into a log buffer, written and synced by
//!   group commit ([`Durability`]), and checkpointed in two alternating slots.
//! - [`Recovery`]: opens a log, picks the newest valid checkpoint and scans the mtrs from it to
//!   the first torn, stale or corrupt frame, then opens the log for appending at that end.
//!   Byte layout: `docs/FORMATS.md`, "Redo log files".
//! - [`flushing`]: the adaptive-flushing controller as a pure function of measured state
//!   (InnoDB's formulas in [`flushing::InnoDbController`], a PI controller to compare), and the
//!   async/sync flush points of a log's capacity.
//! - [`record`]: what is inside an mtr — physical page-change records (WRITE, MEMSET, MEMMOVE,
//!   INIT_PAGE, FREE_PAGE, OPTION), built by [`record::MtrWriter`] (including the diff of a
//!   page's before/after images), decoded totally and replayed onto pages. Byte layout:
//!   `docs/FORMATS.md`, "Redo records".
#![deny(clippy::indexing_slicing)]

mod error;
pub mod flushing;
mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod log;
pub mod record;
mod recovery;
mod ring;

pub use error::{RedoError, Result};
pub use log::{
    log_path, Durability, LogStats, RedoLog, RedoOptions, BACKGROUND_INTERVAL, DEFAULT_START_LSN,
    LOG_FILE_NAME,
};
pub use recovery::{RecoveredMtr, Recovery, UncheckedMtr};

/// A log sequence number: the byte position in the logical log stream (frames included), which
/// only grows; LSN `l` is stored at data-area offset `l % capacity`.
pub type Lsn = u64;
