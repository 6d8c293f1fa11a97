//! The valid databases the mutating mode starts from: built by the engine itself, with real
//! tables, off-page values and multi-level trees, then read back into memory once per process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use barracuda_page::PageSize;

use crate::layout::{SYSTEM_FILE, TABLES_DIR};
use crate::{Engine, EngineOptions, IoBackend, PageCompression, Result, RowFormat, TableOptions};

/// The rows of one table, by key.
pub(crate) type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// How many database shapes there are; the mutating mode picks one by index.
pub(crate) const SHAPES: usize = 5;

/// One file of a database: its path relative to the database directory and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DbFile {
    /// `system.ibs` or `tables/<name>.ibd`.
    pub(crate) rel: PathBuf,
    /// The whole file.
    pub(crate) bytes: Vec<u8>,
    /// Every byte from here on is zero: only the bytes before are written out (the rest of a
    /// table's first extent is a hole), and nothing is scanned to find out.
    pub(crate) data_len: usize,
}

/// A generated database: its files (`system.ibs` first, then the tables by name), where their
/// pages are, and the rows every table must hold.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The page size the database was created with.
    pub(crate) page_size: PageSize,
    /// `system.ibs`, then `tables/*.ibd` sorted by name.
    pub(crate) files: Vec<DbFile>,
    /// Per file, the numbers of its pages that are not all zero: mutations aim at these.
    pub(crate) used_pages: Vec<Vec<u32>>,
    /// Table name → rows, as written.
    pub(crate) tables: BTreeMap<String, Rows>,
}

/// Shape `index` (`< SHAPES`), generated on first use and then shared by every input.
///
/// # Panics
/// If the engine cannot build the database: that is a bug the harness must report.
pub(crate) fn shape(index: usize) -> &'static Shape {
    static CACHE: [OnceLock<Shape>; SHAPES] = [const { OnceLock::new() }; SHAPES];
    let cell = CACHE.get(index % SHAPES).expect("index % SHAPES < SHAPES");
    cell.get_or_init(|| {
        generate(index % SHAPES)
            .unwrap_or_else(|e| panic!("generating fuzzing database shape {index}: {e}"))
    })
}

/// Builds shape `index` in a scratch directory and reads its files back. Deterministic: the
/// same index gives the same bytes, so a crash found by the fuzzer replays in `cargo test`.
pub(crate) fn generate(index: usize) -> Result<Shape> {
    let dir = super::scratch_dir();
    let (page_size, tables) = match index {
        0 => (PageSize::K4, deep_tree()),
        1 => (PageSize::K8, churn()),
        2 => (PageSize::K4, many_small()),
        3 => (PageSize::K16, wide()),
        _ => (PageSize::K8, compressed()),
    };
    // A pool that holds every page and an LRU manager that scans nothing: no page is written
    // before `close`, so nothing depends on when the background flusher runs (a first page
    // write after a checkpoint is recorded in the catalog, which would change its generation).
    // And a page cleaner that flushes nothing before `close`: neither by the dirty-page
    // percentage, nor when the engine looks idle, nor adaptively (on a loaded machine the
    // generation spans several of its rounds).
    let mut flushing = crate::FlushSettings::default();
    flushing.set_adaptive_flushing(false);
    let quiet = flushing
        .set_max_dirty_pages_pct(99.999)
        .and_then(|()| flushing.set_max_dirty_pages_pct_lwm(0.0))
        .and_then(|()| flushing.set_idle_flush_pct(0));
    quiet.map_err(|e| crate::Error::InvalidOption(e.to_string()))?;
    let options = EngineOptions::default()
        .page_size(page_size)
        .buffer_pool_bytes(1024 * page_size.bytes())
        .flush_settings(flushing)
        .lru_scan_depth(0)
        .background_purge(false)
        .io_backend(IoBackend::Std);
    let db = Engine::open(dir.path(), options)?;
    let mut expected = BTreeMap::new();
    let mut open_at_crash = Vec::new();
    for plan in tables {
        let table = db.create_table(
            plan.name,
            TableOptions::default()
                .page_compression(plan.compression)
                .row_format(plan.row_format),
        )?;
        // One transaction for the puts and one for the deletes: each transaction allocates an
        // undo log page, which only purge gives back, and a page per row would outgrow the
        // pool (pages written before `close`, at times that vary).
        let mut rows = Rows::new();
        let mut tx = db.begin();
        for (key, value) in plan.puts {
            tx.put(&table, &key, &value)?;
            rows.insert(key, value);
        }
        tx.commit()?;
        let mut tx = db.begin();
        for key in plan.deletes {
            tx.delete(&table, &key)?;
            rows.remove(&key);
        }
        tx.commit()?;
        if plan.dropped {
            db.drop_table(plan.name)?;
        } else {
            expected.insert(plan.name.to_owned(), rows);
        }
        if !plan.open_at_crash.is_empty() {
            open_at_crash.push((table, plan.open_at_crash));
        }
    }
    if open_at_crash.is_empty() {
        db.close()?;
    } else {
        // A transaction that never ends, and an engine dropped without `close`: its drop
        // writes every page (a checkpoint) but purges nothing, so the files hold the open
        // transaction's rows in place with its undo log active, and the history of the
        // committed ones — what a crash after a checkpoint leaves.
        let mut tx = db.begin();
        for (table, writes) in &open_at_crash {
            for (key, value) in writes {
                match value {
                    Some(v) => tx.put(table, key, v)?,
                    None => tx.delete(table, key)?,
                }
            }
        }
        tx.abandon_as_if_crashed();
        drop(db);
    }

    // The undo tablespace comes last.
    let mut files = vec![read_file(dir.path(), PathBuf::from(SYSTEM_FILE))?];
    for name in expected.keys() {
        files.push(read_file(
            dir.path(),
            Path::new(TABLES_DIR).join(format!("{name}.ibd")),
        )?);
    }
    files.push(read_file(
        dir.path(),
        PathBuf::from(crate::layout::UNDO_FILE),
    )?);
    for file in &mut files {
        let ps = page_size.bytes();
        file.data_len = (file.data_len.div_ceil(ps) * ps).min(file.bytes.len());
    }
    let used_pages = files
        .iter()
        .map(|f| {
            f.bytes
                .chunks(page_size.bytes())
                .enumerate()
                .filter(|(_, page)| page.iter().any(|&b| b != 0))
                .map(|(n, _)| n as u32)
                .collect()
        })
        .collect();
    Ok(Shape {
        page_size,
        files,
        used_pages,
        tables: expected,
    })
}

fn read_file(dir: &Path, rel: PathBuf) -> Result<DbFile> {
    let path = dir.join(&rel);
    let bytes = std::fs::read(&path).map_err(|e| crate::Error::fs(&path, e))?;
    let data_len = bytes.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    Ok(DbFile {
        rel,
        bytes,
        data_len,
    })
}

/// What to do to one table while building a shape.
struct TablePlan {
    name: &'static str,
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
    /// Created, filled, then dropped: the catalog moves on without it.
    dropped: bool,
    /// Page compression: its pages on disk are envelopes (FORMATS.md §12) with holes behind.
    compression: Option<PageCompression>,
    /// Row format: compressed rows keep index pages as blocks (FORMATS.md §14.5).
    row_format: RowFormat,
    /// Writes of a transaction still open when the database is left as by a crash (`None`
    /// deletes): on disk in place, with their undo log active, for the open to roll back.
    open_at_crash: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl TablePlan {
    fn new(name: &'static str, puts: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        Self {
            name,
            puts,
            deletes: Vec::new(),
            dropped: false,
            compression: None,
            row_format: RowFormat::Dynamic,
            open_at_crash: Vec::new(),
        }
    }
}

/// A fixed permutation of `0..n` (multiplication by a unit modulo `n`), so that inserts land
/// all over the tree and splits happen in the middle of pages, not only at the end.
fn scattered(n: u32) -> impl Iterator<Item = u32> {
    // 7919 is prime and larger than every `n` used here, hence coprime with it.
    (0..n).map(move |i| (u64::from(i) * 7919 % u64::from(n)) as u32)
}

/// A value of `len` bytes that differs per key, so a value read from the wrong row shows.
fn value(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed as usize * 31 + i * 7) as u8 | 1)
        .collect()
}

/// 4 KiB pages, one table of height 3: 200-byte key prefixes keep separators long (suffix
/// truncation cannot shorten them past the prefix), so internal pages fan out only ~15 ways;
/// every 40th value is off-page (a two-page overflow chain).
fn deep_tree() -> Vec<TablePlan> {
    let prefix = vec![b'k'; 200];
    let puts = scattered(420)
        .map(|i| {
            let mut key = prefix.clone();
            key.extend_from_slice(format!("{i:08}").as_bytes());
            let len = if i % 40 == 0 {
                6000
            } else {
                100 + (i as usize % 5) * 20
            };
            (key, value(i, len))
        })
        .collect();
    vec![TablePlan::new("deep", puts)]
}

/// 8 KiB pages, an empty table and one that lost a third of its rows after filling (merged
/// pages, freed pages in the bitmap) and holds one 20 KB value.
fn churn() -> Vec<TablePlan> {
    let key = |i: u32| format!("row-{i:05}").into_bytes();
    let mut puts: Vec<_> = scattered(300).map(|i| (key(i), value(i, 60))).collect();
    puts.push((key(1000), value(1000, 20_000)));
    let mut churn = TablePlan::new("churn", puts);
    churn.deletes = (0..300).filter(|i| i % 3 == 0).map(key).collect();
    // Left open at the "crash": updates (one off-page), deletes and inserts to roll back.
    churn.open_at_crash = (0..40)
        .map(|i| match i % 4 {
            0 => (key(i * 3 + 1), Some(value(i + 5000, 70))),
            1 => (key(i * 3 + 1), None),
            2 => (key(2000 + i), Some(value(i, 90))),
            _ => (
                key(i * 3 + 2),
                Some(value(i, if i == 3 { 12_000 } else { 50 })),
            ),
        })
        .collect();
    vec![TablePlan::new("empty", Vec::new()), churn]
}

/// 4 KiB pages, four small tables each with one off-page value, and a fifth table created and
/// dropped (a later catalog generation, a missing file it used to name).
fn many_small() -> Vec<TablePlan> {
    let mut plans: Vec<TablePlan> = ["a", "b", "c", "d"]
        .into_iter()
        .enumerate()
        .map(|(t, name)| {
            let rows = 1 + 6 * t as u32;
            let puts = (0..rows)
                .map(|i| {
                    let len = if i == 0 { 3000 } else { 10 + i as usize };
                    (format!("{name}{i:03}").into_bytes(), value(i + 100, len))
                })
                .collect();
            TablePlan::new(name, puts)
        })
        .collect();
    let mut gone = TablePlan::new("gone", vec![(b"x".to_vec(), b"y".to_vec())]);
    gone.dropped = true;
    plans.insert(2, gone);
    plans
}

/// 16 KiB pages, one table of height 2 with short keys and a 100 KB value (a 7-page chain).
fn wide() -> Vec<TablePlan> {
    let mut puts: Vec<_> = scattered(1500)
        .map(|i| (format!("w{i:06}").into_bytes(), value(i, 24)))
        .collect();
    puts.push((b"w999999".to_vec(), value(7, 100_000)));
    vec![TablePlan::new("wide", puts)]
}

/// Words for values that compress like text (the pattern of [`value`] compresses to nothing).
const WORDS: [&str; 16] = [
    "the",
    "page",
    "of",
    "a",
    "compressed",
    "table",
    "holds",
    "records",
    "whose",
    "bytes",
    "repeat",
    "often",
    "enough",
    "to",
    "shrink",
    "well",
];

/// A value of `len` bytes of words chosen by `seed`.
fn text_value(seed: u32, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 16);
    let mut x = u64::from(seed) * 0x9E37_79B9 + 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = WORDS.get((x % 16) as usize).copied().unwrap_or("?");
        out.extend_from_slice(word.as_bytes());
        out.push(b' ');
    }
    out.truncate(len);
    out
}

/// 8 KiB pages, two page-compressed tables: zlib with 300 text rows (some deleted: garbage the
/// compressor zeroes), LZ4 with 120 rows and one 20 KB value (compressed overflow pages); and
/// a row-compressed one (`KEY_BLOCK_SIZE=2`) with 200 text rows and a 6 KB random value.
fn compressed() -> Vec<TablePlan> {
    let key = |i: u32| format!("z{i:05}").into_bytes();
    let puts = scattered(300)
        .map(|i| (key(i), text_value(i, 80 + (i as usize % 7) * 40)))
        .collect();
    let mut zipped = TablePlan::new("zipped", puts);
    zipped.deletes = (0..300).filter(|i| i % 5 == 0).map(key).collect();
    zipped.compression = Some(PageCompression::Zlib { level: 6 });
    let mut puts: Vec<_> = (0..120)
        .map(|i| (format!("l{i:04}").into_bytes(), text_value(i + 1000, 150)))
        .collect();
    puts.push((b"l9999".to_vec(), text_value(9999, 20_000)));
    let mut fast = TablePlan::new("fast", puts);
    fast.compression = Some(PageCompression::Lz4);
    // Row-compressed (KEY_BLOCK_SIZE=2): blocks with modification logs at the start of their
    // slots, a plain index page or two, a page-compressed overflow chain.
    let mut puts: Vec<_> = scattered(200)
        .map(|i| {
            (
                format!("r{i:04}").into_bytes(),
                text_value(i + 2000, 60 + (i as usize % 5) * 50),
            )
        })
        .collect();
    puts.push((b"r9999".to_vec(), value(9999, 6_000)));
    let mut rows = TablePlan::new("rows", puts);
    rows.deletes = (0..200)
        .filter(|i| i % 7 == 0)
        .map(|i| format!("r{i:04}").into_bytes())
        .collect();
    rows.row_format = RowFormat::compressed(2);
    vec![zipped, fast, rows]
}
