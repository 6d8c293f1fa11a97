use super::input::{Database, Kind, NO_RESEAL, RAW_RESEAL};
use super::shapes::{generate, shape, SHAPES};
use super::{encode_raw, open_path};
use barracuda_page::{verify_page, FileHeader, PageId};

#[test]
fn shapes_are_deterministic() {
    for s in 0..SHAPES {
        let again = generate(s).expect("generate");
        assert!(*shape(s) == again, "shape {s} differs between two builds");
    }
}

/// The shapes hold what the module docs promise, so mutations reach every kind of page.
#[test]
fn shapes_have_deep_trees_overflow_chains_and_an_empty_table() {
    let dir = super::scratch_dir();
    let deep = Database::decode(&[0]).expect("decodes");
    deep.write_to(dir.path()).expect("write");
    let report = crate::inspect::check_database(dir.path()).expect("check");
    assert!(report.is_clean(), "{report}");
    let db = crate::Engine::open(
        dir.path(),
        crate::EngineOptions::default().buffer_pool_bytes(1 << 20),
    )
    .expect("open");
    let stats = db
        .check_table(&db.table("deep").expect("table"))
        .expect("check");
    assert!(stats.height >= 3, "{stats:?}");
    assert!(stats.overflow_pages > 0, "{stats:?}");
    db.close().expect("close");
    assert!(shape(1)
        .tables
        .values()
        .any(std::collections::BTreeMap::is_empty));
    // system.ibs, two tables, undo.ibu.
    assert!(shape(1).used_pages.len() == 4);
}

/// Shape 1 is left as by a crash after a checkpoint: an open transaction's undo log active and
/// committed history not purged; the open rolls the transaction back.
#[test]
fn the_churn_shape_holds_an_active_undo_log_that_the_open_rolls_back() {
    let dir = super::scratch_dir();
    let churn = Database::decode(&[2]).expect("decodes");
    churn.write_to(dir.path()).expect("write");
    let report = crate::inspect::check_database(dir.path()).expect("check");
    assert!(report.is_clean(), "{report}");
    let undo = report.undo.expect("an undo tablespace");
    assert_eq!(undo.active_logs, 1, "{undo:?}");
    assert!(undo.history_list_length > 0, "{undo:?}");
    let db = crate::Engine::open(
        dir.path(),
        crate::EngineOptions::default()
            .buffer_pool_bytes(1 << 20)
            .background_purge(false),
    )
    .expect("open");
    let mvcc = db.status().mvcc;
    assert_eq!(mvcc.recovered_rollbacks, 1);
    assert_eq!(mvcc.recovered_rows_undone, 40);
    let table = db.table("churn").expect("table");
    let rows: super::shapes::Rows = db
        .range(&table, ..)
        .expect("range")
        .map(|r| r.expect("row"))
        .collect();
    assert!(Some(&rows) == shape(1).tables.get("churn"));
    db.close().expect("close");
}

/// A mutated page is re-sealed, so it passes verification and the mutation reaches the
/// decoders — unless the mutation asks otherwise.
#[test]
fn mutations_are_resealed_unless_asked_not_to() {
    let shape = shape(2);
    let ps = shape.page_size;
    // Flip byte 2000 of the second data page of the first table (its root, page 1).
    let flip = |kind: u8| [4, kind, 1, 1, 0, 0xd0, 0x07, 0x5a];
    for (kind, sealed) in [
        (Kind::Flip as u8, true),
        (Kind::Flip as u8 | NO_RESEAL, false),
    ] {
        let db = Database::decode(&flip(kind)).expect("decodes");
        assert!(db.expected.is_none());
        let root_page = |files: &[super::shapes::DbFile]| -> Vec<u8> {
            let file = files.get(1).expect("the first table's file");
            file.bytes
                .get(ps.bytes()..2 * ps.bytes())
                .expect("page 1 is in the file")
                .to_vec()
        };
        let (page, intact) = (root_page(&db.files), root_page(&shape.files));
        let (page, intact) = (page.as_slice(), intact.as_slice());
        assert_eq!(page.get(2000), intact.get(2000).map(|b| b ^ 0x5a).as_ref());
        let space_id = FileHeader::read(intact).expect("header").space_id;
        let id = PageId::new(space_id, 1);
        assert_eq!(verify_page(page, id, ps).is_ok(), sealed, "kind {kind:#x}");
    }
}

#[test]
fn raw_mode_spells_out_a_whole_database() {
    let shape = shape(2);
    let mut input = vec![1, RAW_RESEAL];
    input.extend(encode_raw(&shape.files, shape.page_size.bytes()).expect("fits"));
    let db = Database::decode(&input).expect("decodes");
    // Raw mode leaves the undo tablespace out (the last file).
    assert!(Some(&db.files[..]) == shape.files.get(..shape.files.len() - 1));
    open_path(&input);
}

/// `check_database` finds damage in the undo tablespace and names the file and page: a history
/// list length that disagrees with the list, and an active slot naming a page that is no undo
/// log. (Mutations are re-sealed, so the checksums pass and the checker's own logic is tested.)
#[test]
fn the_checker_names_a_damaged_transaction_system_page_of_the_undo_tablespace() {
    let shape = shape(1);
    let undo = u8::try_from(shape.files.len() - 1).expect("few files");
    // Offsets in the transaction system page (FORMATS §13.3): history_len at 54, slot 0 at 66.
    for (offset, value, what) in [
        (54u16, 999u32, "history list"),
        (66u16, 3u32, "active slot 0"),
    ] {
        let mut input = vec![2u8, Kind::PutU32 as u8, undo];
        input.extend_from_slice(&1u16.to_le_bytes());
        input.extend_from_slice(&offset.to_le_bytes());
        input.extend_from_slice(&value.to_le_bytes());
        let db = Database::decode(&input).expect("decodes");
        let dir = super::scratch_dir();
        db.write_to(dir.path()).expect("write");
        let report = crate::inspect::check_database(dir.path()).expect("check");
        assert!(
            report.problems.iter().any(|p| p.file.ends_with("undo.ibu")
                && p.page_no.is_some()
                && p.reason.contains(what)),
            "{what}: {report}"
        );
    }
}
