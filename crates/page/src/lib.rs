//! On-disk page formats of Barracuda, with no I/O and no locks.
//!
//! Every page starts with a [`FileHeader`](header::FileHeader) and ends with a trailer; the
//! formats are specified byte for byte in `docs/FORMATS.md`. All integers are little-endian.
//! Every decoder in this crate is *total*: arbitrary bytes give `Ok` or a typed
//! [`PageError`], never a panic — which is what makes the crate property-testable and fuzzable.
#![deny(clippy::indexing_slicing)]

mod ids;

pub use ids::{Lsn, PageId, PageNo, PageSize, SpaceId, FIL_NULL};
