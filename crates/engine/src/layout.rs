//! Where a database's files live inside its directory (one place, used by the engine and by
//! the offline inspector).

use std::path::{Path, PathBuf};

/// The advisory lock file.
pub(crate) const LOCK_FILE: &str = "LOCK";
/// The system tablespace (catalog).
pub(crate) const SYSTEM_FILE: &str = "system.ibs";
/// The folder of per-table tablespaces.
pub(crate) const TABLES_DIR: &str = "tables";

/// `<dir>/tables/<name>.ibd`.
pub(crate) fn table_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(TABLES_DIR).join(format!("{name}.ibd"))
}
