//! MVCC building blocks for Barracuda: the pieces between the B-tree and the engine's
//! transactions.
//!
//! * [`RollPtr`]: the 56-bit pointer a leaf record keeps to its previous version.
//! * [`TrxSystem`] and [`ReadView`]: transaction ids and commit numbers from one counter, the
//!   active read-write transactions, and the views that decide which versions a reader sees
//!   (InnoDB's `trx_sys` and `ReadView`), with the purge limit they imply.
//! * [`UndoSpace`]: undo logs in the undo tablespace (FORMATS.md §13) through the buffer pool,
//!   every change in a mini-transaction so the redo log protects it: a log per writing
//!   transaction named by a slot of a rollback segment page until it commits, then linked
//!   into that segment's history list, which purge consumes oldest first.
//! * [`visible_version`]: the walk back along roll pointers that gives a read view the version
//!   of a row it sees (or none), with [`encode_version`] for what an undo record keeps.

mod append;
mod described;
mod history;
mod log;
mod read;
mod roll_ptr;
mod rseg;
mod version;
mod view;

pub use log::{
    HistoryEntry, OwnedUndoRecord, UndoLog, UndoSpace, UndoSpaceState, CACHED_HEADER_PAGES,
    TRX_SYS_PAGE,
};
pub use roll_ptr::RollPtr;
pub use rseg::ROLLBACK_SEGMENTS;
pub use version::{decode_version, encode_version, visible_version, MAX_CHAIN};
pub use view::{Assigned, ReadView, TrxSystem, ID_RESERVE_STEP};
