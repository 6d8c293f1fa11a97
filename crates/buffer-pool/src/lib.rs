//! placeholder crate root, replaced by the issue that builds this crate.
