//! The Barracuda redo log (work in progress, issue "Redo log"): the write-ahead log of
//! mini-transactions, its files and checkpoints, and the adaptive-flushing controller that keeps
//! the checkpoint age away from the log's capacity.
//!
//! The engine does not use this crate yet: the mini-transaction records, recovery's apply phase
//! and the page cleaner land in later steps.
//!
//! - [`flushing`]: the adaptive-flushing controller as a pure function of measured state
//!   (InnoDB's formulas in [`flushing::InnoDbController`], a PI controller to compare), and the
//!   async/sync flush points of a log's capacity.
#![deny(clippy::indexing_slicing)]

pub mod flushing;
