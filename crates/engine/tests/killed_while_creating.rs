//! A process killed while it creates a database or a table leaves what a tablespace's creation
//! leaves before its rename: a `<file>.new` beside the names the engine reads, never an empty or
//! half-formatted file under a tablespace's own name. What would break: a kill 6 ms into a new
//! database's creation (the sorted-load kill test, 2026-11-27) left an empty `undo.ibu`, and
//! every later open failed reading its page 0.

use barracuda::{Engine, EngineOptions, TableOptions};

#[test]
fn leftovers_of_a_killed_creation_do_not_stop_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("tables")).unwrap();
    // What kills at different moments leave: the undo tablespace and a table's file being
    // built (empty, and one page of garbage), the catalog being built.
    std::fs::write(dir.join("undo.ibu.new"), b"").unwrap();
    std::fs::write(dir.join("tables/t.ibd.new"), vec![0xa5; 16 << 10]).unwrap();
    std::fs::write(dir.join("system.ibs.new"), b"").unwrap();
    let db = Engine::open(dir, EngineOptions::default().buffer_pool_bytes(4 << 20)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(dir.join("undo.ibu").exists() && dir.join("tables/t.ibd").exists());
    assert!(
        !dir.join("tables/t.ibd.new").exists(),
        "the table's file was built under the temporary name and renamed"
    );

    let db = Engine::open(dir, EngineOptions::default().buffer_pool_bytes(4 << 20)).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.get(&t, b"k").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
}
