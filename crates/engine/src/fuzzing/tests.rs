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
    assert!(shape(1).used_pages.len() == 3);
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
    assert!(db.files == shape.files);
    open_path(&input);
}
