//! The seeds reach what they are for: a harness whose seeds all stop at the first check would
//! replay cleanly and fuzz nothing.

use std::path::Path;

use barracuda_io::{FaultyFileSystem, FileSystem, OpenOptions};
use barracuda_page::{IndexPage, PageId};

use super::records::{base_index_page, Selector};
use super::scan::input_file;
use super::{redo_log_scan, redo_records, seeds, Seed, REDO_LOG_SCAN, REDO_RECORDS};
use crate::record::{apply, decode, PageState};
use crate::{log_path, Recovery};

fn seeds_of(target: &str) -> Vec<Seed> {
    seeds()
        .expect("seeds generate")
        .into_iter()
        .filter(|s| s.target == target)
        .collect()
}

/// Every record seed decodes, and every index record change in it replays onto the base index
/// page, leaving a valid page; the raw-page seed replays onto its own bytes too.
#[test]
fn record_seeds_decode_and_replay_onto_the_index_page() {
    let mut kinds = std::collections::HashSet::new();
    let seeds = seeds_of(REDO_RECORDS);
    for seed in &seeds {
        let (&selector, mtr) = seed.bytes.split_first().expect("a selector byte");
        let sel = Selector::from_byte(selector);
        let records =
            decode(mtr, sel.page_size).unwrap_or_else(|e| panic!("seed {}: {e}", seed.name));
        for rec in &records {
            kinds.insert(std::mem::discriminant(rec));
        }
        let page = PageId::new(1, 3);
        if seed.name.contains("index") || seed.name.contains("diff") {
            let mut buf = base_index_page(sel, page);
            let state = apply(page, &mut buf, &records)
                .unwrap_or_else(|e| panic!("seed {}: {e}", seed.name));
            assert_eq!(state, PageState::Live);
            IndexPage::open(&buf[..], sel.page_size)
                .unwrap_or_else(|e| panic!("seed {}: {e}", seed.name));
        }
        if seed.name.contains("raw-index-page") {
            let mut buf = seed
                .bytes
                .get(..sel.page_size.bytes())
                .expect("a page")
                .to_vec();
            apply(page, &mut buf, &records).unwrap_or_else(|e| panic!("seed {}: {e}", seed.name));
        }
        redo_records(&seed.bytes);
    }
    // FREE_PAGE, INIT_PAGE, WRITE, MEMSET, MEMMOVE, OPTION and the five EXTENDED subtypes.
    assert_eq!(kinds.len(), 11, "the record seeds lack a record type");
}

/// The mtrs of the log an input describes (the file opened as the target opens it).
fn mtrs_of(input: &[u8]) -> Vec<crate::RecoveredMtr> {
    let (file, _) = input_file(input).expect("a file");
    let fs = FaultyFileSystem::new();
    let dir = Path::new("/t");
    fs.create_dir_all(&dir.join("redo")).expect("mkdir");
    fs.open(&log_path(dir), &OpenOptions::new().create(true))
        .and_then(|f| f.write_at(&file, 0))
        .expect("write the log");
    let recovery = Recovery::open(&fs, dir).expect("the seed log opens");
    recovery.map(|m| m.expect("a frame")).collect()
}

/// Every log seed opens with mtrs in it; the wrapped log crosses the data area's end and ends
/// with a discarded unit; the seed with a changed payload yields every frame once re-sealed.
#[test]
fn log_seeds_open_and_yield_mtrs() {
    let seeds = seeds_of(REDO_LOG_SCAN);
    let input = |name: &str| {
        seeds
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no seed {name}"))
            .bytes
            .clone()
    };
    for seed in &seeds {
        redo_log_scan(&seed.bytes);
        assert!(mtrs_of(&seed.bytes).len() > 3, "seed {}", seed.name);
    }
    let capacity = 16 << 10;
    for name in ["raw-wrapped", "built-near-end"] {
        let mtrs = mtrs_of(&input(name));
        let first = mtrs.first().expect("an mtr").start_lsn / capacity;
        assert!(
            mtrs.iter().any(|m| (m.end_lsn - 1) / capacity > first),
            "{name}: no frame crosses the data area's end"
        );
    }
    let (file, _) = input_file(&input("raw-wrapped")).expect("a file");
    let fs = FaultyFileSystem::new();
    let dir = Path::new("/d");
    fs.create_dir_all(&dir.join("redo")).expect("mkdir");
    fs.open(&log_path(dir), &OpenOptions::new().create(true))
        .and_then(|f| f.write_at(&file, 0))
        .expect("write the log");
    let recovery = Recovery::open(&fs, dir).expect("the seed log opens");
    assert!(recovery.discarded_bytes() > 0, "no discarded unit");
    let resealed = mtrs_of(&input("built-wrapped-reseal-frames"));
    let intact = mtrs_of(&input("built-wrapped"));
    assert_eq!(resealed.len(), intact.len());
    assert!(
        resealed != intact,
        "the changed payload byte is not in a frame"
    );
}
