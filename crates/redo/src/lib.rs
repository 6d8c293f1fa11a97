//! The Barracuda redo log (work in progress, issue "Redo log"): the write-ahead log of
//! mini-transactions, its files and checkpoints, and the adaptive-flushing controller that keeps
//! the checkpoint age away from the log's capacity.
//!
//! The engine does not use this crate yet: the mini-transaction records, recovery's apply phase
//! and the page cleaner land in later steps.
#![deny(clippy::indexing_slicing)]
