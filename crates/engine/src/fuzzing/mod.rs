//! The `open_path` fuzz target's logic (cargo feature `fuzzing`): build a database directory
//! from arbitrary bytes, then open it, check and scan every table, and run the offline checker
//! on it. Shared by `fuzz/fuzz_targets/open_path.rs` and the corpus replay test
//! (`crates/engine/tests/fuzz_open_corpus.rs`), so a crash the fuzzer finds replays in
//! `cargo test` once its input is in `fuzz/corpus/open_path/`.
//!
//! [`open_path`] panics if, and only if, the engine or the checker misbehaves: a panic inside
//! them, a scan that yields rows out of order, more rows than the files could hold or anything
//! after its error, or — for a database the input left intact — any error at all or rows other
//! than those written. Hangs and unbounded allocations are caught by libFuzzer's `-timeout`
//! and `-malloc_limit_mb`.
//!
//! # Input format
//! The first byte chooses the mode.
//!
//! **Even: mutate a valid database.** Byte 0 / 2 selects one of a few databases built by the
//! engine (4, 8 and 16 KiB pages; a three-level tree, off-page values, deleted rows, an empty
//! table, a dropped table, page-compressed tables whose pages are envelopes with holes behind). The rest is a list of mutations, each
//! `[kind: u8][file: u8][page: u16][offset: u16][operand]` (little-endian): `file` indexes
//! `system.ibs` then the tables by name; `page` is an index into the pages of the file that
//! hold data, or any page number with its top bit set; `kind` modulo 6 is a byte flip, an
//! overwrite, a `u32`, a special `u32` (0, `FIL_NULL`, the file's page count, …), a truncation,
//! or a copy of another page (re-stamped with this page's number).
//! Mutated pages are re-sealed (checksum and trailer) afterwards so the mutation reaches the
//! decoders — unless the kind byte's top bit is set. No mutation at all leaves the database
//! valid, and then everything must succeed.
//!
//! **Odd: raw files.** `[flags: u8]`, then `system.ibs` as `[len: u16][pages: u16][bytes]`,
//! then tables as `[name_len: u8][name][len: u16][pages: u16][bytes]` until the input ends. A
//! file is its bytes padded with zeros to `pages` pages (at most 2 MiB); name bytes outside the
//! table-name alphabet are mapped into it; flag bit 0 re-seals every whole page that is not all
//! zero.
//!
//! # Environment
//! The directory is a fresh temporary directory on `/dev/shm` (tmpfs) when it exists, else in
//! the system's temporary directory; the engine runs with a 32-page pool and the `Std` I/O
//! back end. Real files rather than an in-memory [`FileSystem`](crate::fs::FileSystem): the
//! offline checker reads the directory with `std::fs`, and both must see the same bytes.

mod input;
mod shapes;

#[cfg(test)]
mod tests;

use std::ops::Bound;
use std::path::Path;

use input::{Database, Kind, ANY_PAGE, NO_RESEAL, RAW_RESEAL};
use shapes::{DbFile, Rows, SHAPES};

use crate::{inspect, Engine, EngineOptions, IoBackend, Result, Table};

/// The fuzz target's name, which is also its corpus directory (`fuzz/corpus/open_path/`).
pub const TARGET: &str = "open_path";

/// Frames in the buffer pool: small, so scans of the larger databases evict.
pub const POOL_FRAMES: usize = 32;

/// Runs one input: decodes it into a database directory, runs the offline checker on it, opens
/// it, checks and scans every table forwards and backwards, looks up a few keys, and closes it.
///
/// # Panics
/// When the engine or the checker misbehaves (see the [module docs](self)): that panic is the
/// crash libFuzzer reports. Errors returned by the engine are expected and ignored, except for
/// an input that leaves a generated database intact.
pub fn open_path(data: &[u8]) {
    let Some(db) = Database::decode(data) else {
        return;
    };
    let dir = scratch_dir();
    db.write_to(dir.path())
        .unwrap_or_else(|e| panic!("writing the database to {}: {e}", dir.path().display()));
    exercise(dir.path(), &db);
}

/// A seed of the corpus: a file name and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// File name inside `fuzz/corpus/open_path/`.
    pub name: String,
    /// The input.
    pub bytes: Vec<u8>,
}

/// The seed corpus: every generated database intact and under a few typical mutations, and the
/// smaller databases spelled out in raw mode. Deterministic.
pub fn seeds() -> Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for s in 0..SHAPES {
        let shape = shapes::shape(s);
        let mode = 2 * s as u8;
        let half = (shape.page_size.bytes() / 2) as u16;
        let mut seed = |what: &str, ops: &[u8]| {
            let mut bytes = vec![mode];
            bytes.extend_from_slice(ops);
            seeds.push(Seed {
                name: format!("shape{s}-{what}"),
                bytes,
            });
        };
        let op = |kind: u8, file: u8, page: u16, offset: u16, operand: &[u8]| {
            let mut op = vec![kind, file];
            op.extend_from_slice(&page.to_le_bytes());
            op.extend_from_slice(&offset.to_le_bytes());
            op.extend_from_slice(operand);
            op
        };
        seed("intact", &[]);
        // Data page 1 of the first table is its root.
        seed("flip-root", &op(Kind::Flip as u8, 1, 1, half, &[0x55]));
        seed(
            "copy-over-root",
            &op(Kind::CopyPage as u8, 1, 1, 0, &[2, 0]),
        );
        // Byte 12 of the file header is the next-page link.
        seed("null-next", &op(Kind::PutSpecial as u8, 1, 2, 12, &[4]));
        seed("truncate-table", &op(Kind::Truncate as u8, 1, 2, 0, &[]));
        seed(
            "stale-catalog-checksum",
            &op(Kind::Flip as u8 | NO_RESEAL, 0, 1, 100, &[1]),
        );
        seed(
            "beyond-data",
            &op(
                Kind::Overwrite as u8,
                1,
                ANY_PAGE | 0xc8,
                0,
                &[4, 1, 2, 3, 4],
            ),
        );
        // The undo tablespace is the last file: its transaction system page (data page 1),
        // its first undo log page (data page 2), its end.
        let undo = u8::try_from(shape.files.len() - 1).unwrap_or(u8::MAX);
        for offset in [40u16, 48, 56, 64] {
            seed(
                &format!("flip-trx-sys-{offset}"),
                &op(Kind::Flip as u8, undo, 1, offset, &[0x11]),
            );
        }
        seed(
            "flip-undo-log",
            &op(Kind::Flip as u8, undo, 2, half / 8, &[0x04]),
        );
        seed(
            "copy-over-trx-sys",
            &op(Kind::CopyPage as u8, undo, 1, 0, &[2, 0]),
        );
        seed("truncate-undo", &op(Kind::Truncate as u8, undo, 2, 0, &[]));
        if let Some(raw) = encode_raw(&shape.files, shape.page_size.bytes()) {
            let mut bytes = vec![1, RAW_RESEAL];
            bytes.extend_from_slice(&raw);
            seeds.push(Seed {
                name: format!("shape{s}-raw"),
                bytes,
            });
        }
    }
    Ok(seeds)
}

/// The files in raw-mode form (after the flags byte), each cut after its last page holding
/// data; `None` if a file holds more data than a raw-mode file can.
fn encode_raw(files: &[DbFile], page_size: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    // The system file and the tables: raw mode names a file by its table (the undo tablespace
    // is left out, and the open makes a new one).
    let files = files
        .iter()
        .enumerate()
        .filter(|(i, f)| *i == 0 || f.rel.starts_with(crate::layout::TABLES_DIR))
        .map(|(_, f)| f);
    for (i, file) in files.enumerate() {
        if i > 0 {
            let name = file.rel.file_stem()?.to_str()?;
            out.push(u8::try_from(name.len()).ok()?);
            out.extend_from_slice(name.as_bytes());
        }
        let used = file
            .bytes
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |p| p + 1);
        let used = used.div_ceil(page_size) * page_size;
        out.extend_from_slice(&u16::try_from(used).ok()?.to_le_bytes());
        let pages = file.bytes.len() / page_size;
        out.extend_from_slice(&u16::try_from(pages).ok()?.to_le_bytes());
        out.extend_from_slice(file.bytes.get(..used)?);
    }
    Some(out)
}

/// A fresh directory for one input, on tmpfs when there is one.
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new()
        .prefix("barracuda-fuzz-")
        .to_owned();
    let dir = if shm.is_dir() {
        builder.tempdir_in(shm)
    } else {
        builder.tempdir()
    };
    dir.unwrap_or_else(|e| panic!("creating a scratch directory: {e}"))
}

fn exercise(dir: &Path, db: &Database) {
    let expected = db.expected;
    let report = inspect::check_database(dir);
    if expected.is_some() {
        match &report {
            Ok(report) => assert!(report.is_clean(), "intact database: {report}"),
            Err(e) => panic!("intact database: check_database failed: {e}"),
        }
    }
    // Frames sized for the page size the input claims, so every page size is reachable.
    let page_size = db.page_size().map_or(4096, barracuda_page::PageSize::bytes);
    let options = EngineOptions::default()
        .buffer_pool_bytes(POOL_FRAMES * page_size)
        .create_if_missing(false)
        // Purge runs at close: `check_table` wants a quiescent tree.
        .background_purge(false)
        .io_backend(IoBackend::Std);
    let engine = match Engine::open(dir, options) {
        Ok(engine) => engine,
        Err(e) => {
            assert!(expected.is_none(), "intact database: open failed: {e}");
            return;
        }
    };
    let max_rows = db.total_bytes();
    for name in engine.list_tables() {
        let table = engine
            .table(&name)
            .unwrap_or_else(|e| panic!("table {name:?} is listed but cannot be opened: {e}"));
        let check = engine.check_table(&table);
        let forward = scan(&engine, &table, false, max_rows);
        let backward = scan(&engine, &table, true, max_rows);
        let mut probes: Vec<&[u8]> = vec![b"", b"\xff\xff\xff\xff"];
        for rows in [&forward.0, &backward.0] {
            probes.extend(
                [rows.first(), rows.get(rows.len() / 2), rows.last()]
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k.as_slice()),
            );
        }
        let gets: Vec<_> = probes.iter().map(|k| engine.get(&table, k)).collect();
        if let Some(tables) = expected {
            let rows = tables
                .get(&name)
                .unwrap_or_else(|| panic!("intact database: unexpected table {name:?}"));
            assert_intact(&name, rows, &check, &forward, &backward, &probes, &gets);
        }
    }
    if let Some(tables) = expected {
        assert_eq!(
            engine.list_tables(),
            tables.keys().cloned().collect::<Vec<_>>(),
            "intact database: tables"
        );
    }
    let closed = engine.close();
    assert!(
        expected.is_none() || closed.is_ok(),
        "intact database: close failed: {closed:?}"
    );
}

/// A `(key, value)` row.
type Row = (Vec<u8>, Vec<u8>);

/// Rows a scan yielded, and the error that ended it.
type Scanned = (Vec<Row>, Option<crate::Error>);

/// Scans the whole table in one direction, checking the iterator's promises: strictly ordered
/// keys, no item after an error, and no more rows than `max_rows`.
fn scan(engine: &Engine, table: &Table, backward: bool, max_rows: usize) -> Scanned {
    let name = table.name();
    let range = match engine.range(table, (Bound::<&[u8]>::Unbounded, Bound::Unbounded)) {
        Ok(range) => range,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut iter: Box<dyn Iterator<Item = Result<Row>>> = if backward {
        Box::new(range.rev())
    } else {
        Box::new(range)
    };
    let mut rows: Vec<Row> = Vec::new();
    while let Some(item) = iter.next() {
        match item {
            Ok((key, value)) => {
                if let Some((last, _)) = rows.last() {
                    let ordered = if backward { key < *last } else { key > *last };
                    assert!(
                        ordered,
                        "table {name}: scan (backward: {backward}) yielded {key:?} after {last:?}"
                    );
                }
                rows.push((key, value));
                assert!(
                    rows.len() <= max_rows,
                    "table {name}: scan yielded more rows than the files have bytes ({max_rows})"
                );
            }
            Err(e) => {
                let after = iter.next().map(|item| item.map(|(k, _)| k));
                assert!(
                    after.is_none(),
                    "table {name}: scan yielded {after:?} after its error {e}"
                );
                return (rows, Some(e));
            }
        }
    }
    (rows, None)
}

/// For an intact database: everything succeeded and agrees with the rows written.
fn assert_intact(
    name: &str,
    rows: &Rows,
    check: &Result<crate::TreeStats>,
    forward: &Scanned,
    backward: &Scanned,
    probes: &[&[u8]],
    gets: &[Result<Option<Vec<u8>>>],
) {
    let stats = check
        .as_ref()
        .unwrap_or_else(|e| panic!("intact database: check_table({name}): {e}"));
    // Rows deleted by committed transactions stay delete-marked until purge (at close here).
    assert_eq!(
        stats.records - stats.delete_marked,
        rows.len() as u64,
        "table {name}: live records"
    );
    let want: Vec<Row> = rows.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(forward.1.is_none(), "table {name}: {:?}", forward.1);
    assert!(backward.1.is_none(), "table {name}: {:?}", backward.1);
    assert!(forward.0 == want, "table {name}: forward scan differs");
    let mut back = backward.0.clone();
    back.reverse();
    assert!(back == want, "table {name}: backward scan differs");
    for (key, got) in probes.iter().zip(gets) {
        let got = got
            .as_ref()
            .unwrap_or_else(|e| panic!("table {name}: get({key:?}): {e}"));
        assert_eq!(got.as_ref(), rows.get(*key), "table {name}: get({key:?})");
    }
}
