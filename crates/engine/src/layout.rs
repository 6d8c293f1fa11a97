//! Where a database's files live inside its directory (one place, used by the engine and by
//! the offline inspector), and the table-name rule that keeps every table file inside it.

use std::path::{Path, PathBuf};

/// The advisory lock file.
pub(crate) const LOCK_FILE: &str = "LOCK";
/// The system tablespace (catalog).
pub(crate) const SYSTEM_FILE: &str = "system.ibs";
/// The undo tablespace: undo logs and the transaction system page.
pub(crate) const UNDO_FILE: &str = "undo.ibu";
/// The undo tablespace's id: above every table's (those count up from 1).
pub(crate) const UNDO_SPACE_ID: barracuda_page::SpaceId = 0xFFFF_FF00;
/// The folder of per-table tablespaces.
pub(crate) const TABLES_DIR: &str = "tables";
/// What a table name must be, for error messages.
pub(crate) const TABLE_NAME_RULE: &str = "1 to 64 bytes of ASCII letters, digits, '_' and '-'";

/// Whether `name` may name a table: 1 to 64 bytes of ASCII letters, digits, `_` and `-`. Such
/// a name is one plain path component — never empty, `.`, `..`, absolute or holding a `/` — so
/// `tables/<name>.ibd` stays inside the database directory. The one rule for `create_table`,
/// for names read from `system.ibs`, and for the inspector.
pub(crate) fn is_valid_table_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= barracuda_page::catalog::MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `<dir>/tables/<name>.ibd`, or `None` when `name` is not a valid table name: a path built from
/// on-disk bytes can never leave the database directory.
pub(crate) fn table_path(dir: &Path, name: &str) -> Option<PathBuf> {
    is_valid_table_name(name).then(|| dir.join(TABLES_DIR).join(format!("{name}.ibd")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_make_table_paths() {
        let dir = Path::new("/db");
        assert_eq!(
            table_path(dir, "Orders_2024-x"),
            Some(PathBuf::from("/db/tables/Orders_2024-x.ibd"))
        );
        let long = "x".repeat(65);
        for bad in [
            "",
            ".",
            "..",
            "../../x",
            "/etc/passwd",
            "a/b",
            "a.b",
            "a\0b",
            "é",
            &long,
        ] {
            assert_eq!(table_path(dir, bad), None, "{bad:?}");
        }
        assert!(is_valid_table_name(&"x".repeat(64)));
    }
}
