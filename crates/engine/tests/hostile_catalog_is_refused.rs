//! Bytes on disk are untrusted: a `system.ibs` crafted with valid checksums but a hostile table
//! name, duplicate or stale ids, or a root page outside its file, and a tablespace whose header
//! claims more pages than the file holds or another page size than the catalog's, are refused
//! at open with an error naming the file — before any path built from those bytes is opened or
//! removed.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::path::{Path, PathBuf};

use barracuda::{Engine, EngineOptions, Error, PageSize, TableOptions};
use barracuda_page::{seal_page, CatalogPage, SpaceHeader};

const PS: PageSize = PageSize::K4;

fn options() -> EngineOptions {
    EngineOptions::default()
        .page_size(PS)
        .buffer_pool_bytes(64 * 4096)
}

/// A database in `<tmp>/db` with tables `a` and `b` (one row each), closed.
fn database() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Engine::open(&dir, options()).unwrap();
    for name in ["a", "b"] {
        let t = db.create_table(name, TableOptions::default()).unwrap();
        db.put(&t, b"k", b"v").unwrap();
    }
    db.close().unwrap();
    (tmp, dir)
}

/// Rewrites both catalog copies (pages 1 and 2 of `system.ibs`) through `edit`, resealed, so the
/// crafted catalog is the one the engine reads whichever copy is newer.
fn craft_catalog(dir: &Path, edit: impl Fn(&mut CatalogPage)) {
    let path = dir.join("system.ibs");
    let mut bytes = std::fs::read(&path).unwrap();
    for page_no in [1, 2] {
        let page = &mut bytes[page_no * PS.bytes()..(page_no + 1) * PS.bytes()];
        let mut catalog = CatalogPage::read(page, PS).unwrap();
        edit(&mut catalog);
        catalog.write(page, PS).unwrap();
        seal_page(page);
    }
    std::fs::write(&path, bytes).unwrap();
}

/// Opens `dir` and returns the `Error::Corrupt` it must fail with, checking it names `file`.
fn refused(dir: &Path, file: &str) -> String {
    let err = Engine::open(dir, options()).err().unwrap();
    match err {
        Error::Corrupt { file: f, what, .. } if f.ends_with(file) => what,
        other => panic!("expected Error::Corrupt naming {file}, got {other:?}"),
    }
}

#[test]
fn a_table_name_leaving_the_directory_is_refused_before_any_file_is_touched() {
    for hostile in ["../../escape", "/tmp/escape", "..", "a/b", "x.y"] {
        let (tmp, dir) = database();
        // Where `tables/<name>.ibd` would point: a file that must stay untouched.
        let decoy = tmp.path().join("escape.ibd");
        std::fs::write(&decoy, b"not a tablespace").unwrap();
        craft_catalog(&dir, |c| c.entries[0].name = hostile.to_owned());
        let what = refused(&dir, "system.ibs");
        assert!(what.contains(&format!("{hostile:?}")), "{hostile}: {what}");
        assert_eq!(std::fs::read(&decoy).unwrap(), b"not a tablespace");
    }
}

#[test]
fn duplicate_names_and_ids_are_refused() {
    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.entries[1].name = c.entries[0].name.clone());
    assert!(refused(&dir, "system.ibs").contains("twice"));

    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.entries[1].space_id = c.entries[0].space_id);
    assert!(refused(&dir, "system.ibs").contains("space id"));

    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.entries[1].space_id = 0);
    assert!(refused(&dir, "system.ibs").contains("system space"));

    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.entries[1].index_id = c.entries[0].index_id);
    assert!(refused(&dir, "system.ibs").contains("index id"));
}

#[test]
fn next_ids_not_above_every_id_in_use_are_refused() {
    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.next_space_id = c.entries[1].space_id);
    assert!(refused(&dir, "system.ibs").contains("next space id"));

    let (_tmp, dir) = database();
    craft_catalog(&dir, |c| c.next_index_id = 1);
    assert!(refused(&dir, "system.ibs").contains("next index id"));
}

#[test]
fn a_root_page_outside_the_tablespace_is_refused() {
    for root in [0, 1 << 20, u32::MAX] {
        let (_tmp, dir) = database();
        craft_catalog(&dir, |c| c.entries[0].root_page_no = root);
        let what = refused(&dir, "system.ibs");
        assert!(what.contains(&format!("root page {root}")), "{what}");
    }
}

#[test]
fn a_space_header_larger_than_its_file_is_refused() {
    let (_tmp, dir) = database();
    let path = dir.join("tables/a.ibd");
    let mut bytes = std::fs::read(&path).unwrap();
    let page0 = &mut bytes[..PS.bytes()];
    let mut header = SpaceHeader::read(page0, PS).unwrap();
    header.size_in_pages = u32::MAX;
    header.write(page0);
    seal_page(page0);
    std::fs::write(&path, bytes).unwrap();
    let what = refused(&dir, "tables/a.ibd");
    assert!(what.contains(&u32::MAX.to_string()), "{what}");
}

#[test]
fn a_tablespace_of_another_page_size_than_the_catalog_is_refused() {
    let (_tmp, dir) = database();
    let path = dir.join("tables/b.ibd");
    let mut bytes = std::fs::read(&path).unwrap();
    let page0 = &mut bytes[..PS.bytes()];
    page0[barracuda_page::space::OFF_SPACE_PAGE_SHIFT] = PageSize::K16.shift();
    seal_page(page0);
    std::fs::write(&path, bytes).unwrap();
    match Engine::open(&dir, options()).err().unwrap() {
        Error::Page {
            file,
            page_no: 0,
            source,
            ..
        } if file.ends_with("tables/b.ibd") => {
            assert!(source.to_string().contains("page size"), "{source}");
        }
        other => panic!("expected Error::Page naming tables/b.ibd page 0, got {other:?}"),
    }
}

#[test]
fn the_untouched_database_opens() {
    // The helpers above craft nothing by themselves: without an edit the database is fine.
    let (_tmp, dir) = database();
    craft_catalog(&dir, |_| {});
    let db = Engine::open(&dir, options()).unwrap();
    assert_eq!(db.list_tables(), ["a", "b"]);
    assert_eq!(
        db.get(&db.table("b").unwrap(), b"k").unwrap(),
        Some(b"v".to_vec())
    );
}
