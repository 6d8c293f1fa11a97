//! The checker against databases written by the engine: a multi-page overflow chain, with its
//! `prev` links (FORMATS.md §6), checks clean; a wrong `prev` link is a problem naming the file
//! and the page; a hostile table name in the catalog is a problem, never a path followed.

use std::path::{Path, PathBuf};

use barracuda_page::{
    payload_capacity, seal_page, FileHeader, PageNo, PageSize, PageType, FIL_NULL,
};

use super::{check_database, decode_page, inspect_database, PageBody};
use crate::{Engine, EngineOptions, TableOptions};

const PAGE_SIZE: PageSize = PageSize::K4;

/// A closed database with table `t`: a few small values and two values of several overflow
/// pages each.
fn database_with_overflow_chains(dir: &Path) -> PathBuf {
    let options = EngineOptions::default()
        .page_size(PAGE_SIZE)
        .buffer_pool_bytes(1 << 20);
    let db = Engine::open(dir, options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let long = payload_capacity(PAGE_SIZE) * 3 + 100;
    for i in 0u8..20 {
        let value = if i % 10 == 3 {
            vec![i; long]
        } else {
            vec![i; 10]
        };
        db.put(&t, &[b'k', i], &value).unwrap();
    }
    db.close().unwrap();
    dir.join("tables").join("t.ibd")
}

/// The overflow pages of `t`, with their `prev` links.
fn overflow_pages(dir: &Path) -> Vec<(PageNo, PageNo)> {
    let pages = inspect_database(dir, Some("t"))
        .unwrap()
        .first()
        .expect("table t is reported")
        .file_pages;
    (0..pages)
        .filter_map(|page_no| {
            let view = decode_page(dir, "t", page_no).unwrap();
            match (view.body, view.header) {
                (PageBody::Overflow { .. }, Some(h)) => Some((page_no, h.prev)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn a_multi_page_overflow_value_passes_check_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    database_with_overflow_chains(tmp.path());

    let report = check_database(tmp.path()).unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(report.warnings.is_empty(), "{report}");
    let table = report.tables.first().expect("one table");
    assert_eq!(table.records, 20, "{report}");
    assert_eq!(
        table.overflow_pages, 8,
        "two chains of four pages:\n{report}"
    );
    assert!(table.warnings.is_empty(), "{table}");

    let linked = overflow_pages(tmp.path())
        .iter()
        .filter(|(_, prev)| *prev != FIL_NULL)
        .count();
    assert_eq!(
        linked, 6,
        "every page but the first of a chain has a prev link"
    );
}

#[test]
fn a_wrong_overflow_prev_link_is_a_problem_naming_file_and_page() {
    let tmp = tempfile::tempdir().unwrap();
    let file = database_with_overflow_chains(tmp.path());
    let pages = overflow_pages(tmp.path());
    let &(page_no, prev) = pages
        .iter()
        .find(|(_, prev)| *prev != FIL_NULL)
        .expect("a chain of several pages");
    let &(first, _) = pages
        .iter()
        .find(|(_, prev)| *prev == FIL_NULL)
        .expect("the first page of a chain");

    // Drop one back link, and give one first page a back link it must not have.
    let mut bytes = std::fs::read(&file).unwrap();
    let ps = PAGE_SIZE.bytes();
    for (target, link) in [(page_no, FIL_NULL), (first, page_no)] {
        let page = bytes
            .get_mut(target as usize * ps..(target as usize + 1) * ps)
            .expect("the chain page is inside the file");
        let mut header = FileHeader::read(page).unwrap();
        assert_eq!(header.page_type, PageType::Overflow);
        header.prev = link;
        header.write(page);
        seal_page(page);
    }
    std::fs::write(&file, bytes).unwrap();

    let report = check_database(tmp.path()).unwrap();
    assert!(!report.is_clean(), "{report}");
    let problem = |p: PageNo| {
        report
            .problems
            .iter()
            .find(|problem| problem.page_no == Some(p))
            .unwrap_or_else(|| panic!("no problem names page {p}:\n{report}"))
    };
    let dropped = problem(page_no);
    assert_eq!(dropped.file, file);
    assert!(
        dropped
            .reason
            .ends_with(&format!("prev link FIL_NULL, expected {prev}")),
        "{report}"
    );
    assert!(
        problem(first)
            .reason
            .ends_with(&format!("prev link {page_no}, expected FIL_NULL")),
        "{report}"
    );
    assert_eq!(report.problems.len(), 2, "{report}");
    let text = report.to_string();
    assert!(text.contains(&format!("t.ibd: page {page_no}: overflow chain of page")));
    assert!(!text.contains("warning"), "{text}");
}

/// The catalog-copy reader shared with `Catalog::open`: a bad page in the older copy is a
/// problem for `check`, while the newer copy stays in force for both `check` and the engine.
#[test]
fn a_bad_catalog_copy_is_named_and_the_other_copy_wins() {
    let tmp = tempfile::tempdir().unwrap();
    database_with_overflow_chains(tmp.path());
    let generation = |page_no| {
        decode_page(tmp.path(), super::SYSTEM_FILE_NAME, page_no)
            .unwrap()
            .header
            .unwrap()
            .lsn
    };
    // Copy A starts at page 1, copy B at page 2; the page LSN is the copy's generation.
    let (older, name) = if generation(1) < generation(2) {
        (1, "A")
    } else {
        (2, "B")
    };
    let system = tmp.path().join(super::SYSTEM_FILE_NAME);
    let mut bytes = std::fs::read(&system).unwrap();
    *bytes
        .get_mut(older as usize * PAGE_SIZE.bytes() + 100)
        .expect("the older copy is inside system.ibs") ^= 0x5a;
    std::fs::write(&system, bytes).unwrap();

    let report = check_database(tmp.path()).unwrap();
    assert_eq!(report.problems.len(), 1, "{report}");
    let problem = report.problems.first().expect("a problem is reported");
    assert_eq!(
        (problem.file.as_path(), problem.page_no),
        (system.as_path(), Some(older))
    );
    assert!(
        problem
            .reason
            .starts_with(&format!("catalog copy {name}: ")),
        "{report}"
    );
    assert_eq!(report.tables.len(), 1, "{report}");

    let options = EngineOptions::default()
        .page_size(PAGE_SIZE)
        .buffer_pool_bytes(1 << 20);
    let db = Engine::open(tmp.path(), options).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.get(&t, b"k\x01").unwrap(), Some(vec![1; 10]));
    db.close().unwrap();
}

#[test]
fn the_checker_does_not_follow_a_hostile_table_name_out_of_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    database_with_overflow_chains(&dir);
    // `tables/../../escape.ibd`: a file the checker must neither open nor report on.
    let decoy = tmp.path().join("escape.ibd");
    std::fs::write(&decoy, b"not a tablespace").unwrap();
    let system = dir.join(super::SYSTEM_FILE_NAME);
    let mut bytes = std::fs::read(&system).unwrap();
    for page_no in [1usize, 2] {
        let ps = PAGE_SIZE.bytes();
        let page = bytes
            .get_mut(page_no * ps..(page_no + 1) * ps)
            .expect("both catalog copies are inside system.ibs");
        let mut catalog = barracuda_page::CatalogPage::read(page, PAGE_SIZE).unwrap();
        catalog
            .entries
            .first_mut()
            .expect("table t is in the catalog")
            .name = "../../escape".to_owned();
        catalog.write(page, PAGE_SIZE).unwrap();
        seal_page(page);
    }
    std::fs::write(&system, bytes).unwrap();

    let report = check_database(&dir).unwrap();
    let problem = report
        .problems
        .iter()
        .find(|p| p.reason.contains("\"../../escape\""))
        .expect("the hostile name is a problem");
    assert_eq!(problem.file, system);
    assert!(
        report.problems.iter().all(|p| p.file != decoy),
        "{:?}",
        report.problems
    );
    assert!(matches!(
        decode_page(&dir, "../../escape", 0),
        Err(crate::Error::InvalidTableName { .. })
    ));
}

#[test]
fn a_database_stopped_after_writing_pages_past_its_checkpoint_without_its_redo_log_is_a_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let options = EngineOptions::default()
        .page_size(PAGE_SIZE)
        .buffer_pool_bytes(64 * PAGE_SIZE.bytes());
    let db = Engine::open(tmp.path(), options.clone()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // Far more than 64 frames of rows: evictions write pages after the (initial) checkpoint.
    for i in 0u32..4000 {
        db.put(&t, format!("k{i:06}").as_bytes(), &[7; 200])
            .unwrap();
    }
    assert!(db.status().pool.pages_written() > 0);
    // Read-only: the close writes nothing, as after a crash.
    db.inner.poison("test: stop as a crash would".into());
    assert!(db.close().is_err());
    // With its redo log the database recovers; without it, nothing can make it consistent.
    std::fs::remove_dir_all(tmp.path().join("redo")).unwrap();

    let report = check_database(tmp.path()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.reason.contains("not shut down cleanly")),
        "{report}"
    );
    assert!(matches!(
        Engine::open(tmp.path(), options),
        Err(crate::Error::UncleanShutdown { .. })
    ));
}
