//! `lab compression-footprint`: what page compression saves on disk, and what it costs a load
//! and a flush (issue 10; the seeds: MariaDB's page compression with hole punching, and the
//! compression benchmark's footprint figures).
//!
//! Rows of 1–4 KB (consecutive windows of the GCIDE dictionary text, lengths varying
//! deterministically), keys in order, are loaded into a fresh database per variant — no
//! compression, zlib level 6 (the default) and 1, LZ4 — at 16 KiB and 64 KiB pages, then checkpointed (every page
//! written). Measured per variant: the table's logical bytes (the pages it uses × page size:
//! B-tree, overflow and header pages — not the rest of the extent the file grew by), file length,
//! allocated bytes (`st_blocks`), ratio = logical / allocated, and the load time (first put to
//! checkpoint done). `../shared/data/README.md` gives the limits for full pages of this text
//! on 4 KiB blocks: zlib 2.00x / LZ4 1.34x at 16 KiB, 2.70x / 1.74x at 64 KiB.
//!
//! Then the flush: a zlib table whose pages are all dirty in a large pool (the page cleaner
//! held back), and one timed sharp checkpoint with 1 and with N compression threads
//! (`EngineOptions::flush_threads`): pages flushed per second.
//!
//! `--quick` loads the committed 1 MB excerpt (`tests/data/gcide-excerpt.txt`) instead of the
//! whole 40 MB text.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use barracuda::{
    Codec, Durability, Engine, EngineOptions, FlushSettings, PageCompression, PageSize, RowFormat,
    TableOptions,
};
use serde::Serialize;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind};
use crate::report::{median, TextTable};
use crate::workload;
use crate::LabResult;

/// The experiment.
pub struct CompressionFootprint;

/// The whole text, from the project root.
const TEXT_PATH: &str = "../shared/data/gcide.txt.gz";
/// The committed excerpt, from the project root.
const EXCERPT_PATH: &str = "tests/data/gcide-excerpt.txt";
/// Rows per transaction while loading.
const BATCH_ROWS: u64 = 100;
/// The limits on 4 KiB blocks (`../shared/data/README.md`): (page KiB, zlib, LZ4).
const LIMITS: [(usize, f64, f64); 2] = [(16, 2.00, 1.34), (64, 2.70, 1.74)];
/// MariaDB's InnoDB on the same text, 16 KiB pages (the measurement).
const MARIADB_16K: (f64, f64) = (1.72, 1.25);

/// One loaded variant.
#[derive(Clone, Debug, Serialize)]
struct Footprint {
    variant: String,
    page_size: usize,
    compression: &'static str,
    rows: u64,
    logical_bytes: u64,
    file_bytes: u64,
    allocated_bytes: u64,
    ratio: f64,
    /// The rows' own bytes (keys and values), and raw / allocated: the measure for
    /// row compression (MariaDB's InnoDB: 1.52x at KEY_BLOCK_SIZE 8, 1.58x at 4).
    raw_bytes: u64,
    raw_ratio: f64,
    /// Row compression's INNODB_CMP counters after the load (0 for other variants).
    compress_ops: u64,
    compress_ops_ok: u64,
    /// The median over the rounds.
    load_s: f64,
    /// Every round's load time.
    load_rounds_s: Vec<f64>,
    limit: Option<f64>,
    share_of_limit: Option<f64>,
    pages_compressed: u64,
    pages_written_plain: u64,
    holes_punched: u64,
    punch_refusals: u64,
    /// Bytes the load's page writes put in place, and into the doublewrite file.
    bytes_in_place: u64,
    bytes_to_doublewrite: u64,
}

/// One timed flush.
#[derive(Clone, Debug, Serialize)]
struct Flush {
    threads: usize,
    pages_flushed: u64,
    seconds: f64,
    pages_per_s: f64,
}

impl Experiment for CompressionFootprint {
    fn name(&self) -> &'static str {
        "compression-footprint"
    }

    fn about(&self) -> &'static str {
        "GCIDE text as 1-4 KB rows, keys in order, into tables with no compression, zlib and \
         LZ4 page compression at 16 and 64 KiB pages, and ROW_FORMAT=COMPRESSED at \
         KEY_BLOCK_SIZE 16, 8, 4 (16 KiB pages) and 16, 8 (64 KiB pages): logical, file and allocated bytes, ratios, \
         load time; then a sharp checkpoint of a zlib table with 1 vs N compression threads \
         (--seconds is not used)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            // Rows average 2.5 KB: 16,000 cover the whole 40 MB text, 400 the 1 MB excerpt.
            full: (16_000, 1.0),
            quick: (300, 1.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let text = load_text(ctx.quick)?;
        let rows = ctx.rows.min(rows_in(&text));
        workload::fresh_dir(&ctx.dir)?;
        let rounds = if ctx.quick { 1 } else { 3 };
        let mut footprints = Vec::new();
        for page_size in [PageSize::K16, PageSize::K64] {
            for (name, options) in variants(page_size) {
                // The bytes are the same every round; the load time is the median.
                let mut loads = Vec::new();
                let mut last = None;
                for round in 0..rounds {
                    eprintln!(
                        "round {} of {rounds}: loading {}k-{name}",
                        round + 1,
                        page_size.bytes() >> 10
                    );
                    let f = load_variant(ctx, &text, rows, page_size, name, options)?;
                    loads.push(f.load_s);
                    last = Some(f);
                }
                if let Some(mut f) = last {
                    f.load_rounds_s.clone_from(&loads);
                    f.load_s = median(loads);
                    footprints.push(f);
                }
            }
        }
        let cores = std::thread::available_parallelism()
            .map_or(2, usize::from)
            .max(2);
        let mut flushes = Vec::new();
        for round in 0..rounds {
            for threads in [1, cores] {
                eprintln!(
                    "round {} of {rounds}: flush with {threads} thread(s)",
                    round + 1
                );
                flushes.push(flush_once(ctx, &text, rows, threads)?);
            }
        }
        report(&footprints, &flushes, cores, rows, text.len())
    }
}

/// The tables loaded at `page_size`: no compression, page compression (zlib 6 and 1, LZ4)
/// and row compression (`ROW_FORMAT=COMPRESSED`): at 16 KiB, KEY_BLOCK_SIZE 16, 8 and 4 with
/// zlib 6 and 8 with LZ4; at 64 KiB (which InnoDB does not allow), 16 and 8 with zlib 6 — a
/// 16 KiB block of a 64 KiB page compresses with four times the context of a 4 KiB block of a
/// 16 KiB page and wastes the same tail, the row that did not fit.
fn variants(page_size: PageSize) -> Vec<(&'static str, TableOptions)> {
    let page = |c| TableOptions::default().page_compression(Some(c));
    let rows = |kbs, algorithm| {
        TableOptions::default().row_format(RowFormat::Compressed {
            key_block_size: kbs,
            algorithm,
        })
    };
    let zlib6 = Codec::Zlib { level: 6 };
    let mut out = vec![
        ("none", TableOptions::default()),
        ("zlib", page(PageCompression::Zlib { level: 6 })),
        ("zlib1", page(PageCompression::Zlib { level: 1 })),
        ("lz4", page(PageCompression::Lz4)),
    ];
    if page_size == PageSize::K16 {
        out.extend([
            ("kbs16-zlib", rows(16, zlib6)),
            ("kbs8-zlib", rows(8, zlib6)),
            ("kbs4-zlib", rows(4, zlib6)),
            ("kbs8-lz4", rows(8, Codec::Lz4)),
        ]);
    }
    if page_size == PageSize::K64 {
        out.extend([
            ("kbs16-zlib", rows(16, zlib6)),
            ("kbs8-zlib", rows(8, zlib6)),
        ]);
    }
    out
}

/// The text: the whole dictionary, or the committed excerpt for `--quick`.
fn load_text(quick: bool) -> LabResult<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if quick {
        let path = root.join(EXCERPT_PATH);
        return std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()).into());
    }
    let path: PathBuf = root.join(TEXT_PATH);
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut text)
        .map_err(|e| format!("{}: not a readable gzip file: {e}", path.display()))?;
    Ok(text)
}

/// Row `i`'s length: 1–4 KB, varying deterministically.
fn row_len(i: u64) -> usize {
    1000 + (i as usize * 769) % 3000
}

/// How many consecutive rows the text holds.
fn rows_in(text: &[u8]) -> u64 {
    let (mut at, mut i) = (0usize, 0u64);
    while at + row_len(i) <= text.len() {
        at += row_len(i);
        i += 1;
    }
    i
}

/// Loads `rows` consecutive rows into a fresh table; returns the load time in seconds
/// (through the checkpoint that writes every page) and the bytes of the pages the table
/// uses (B-tree and overflow pages, and page 0), and leaves the engine open.
fn load(db: &Engine, text: &[u8], rows: u64, options: TableOptions) -> LabResult<(f64, u64, u64)> {
    let table = db.create_table(workload::TABLE, options)?;
    let start = Instant::now();
    let (mut at, mut i) = (0usize, 0u64);
    let mut raw = 0u64;
    while i < rows {
        let mut tx = db.begin();
        for _ in 0..BATCH_ROWS.min(rows - i) {
            let len = row_len(i);
            let value = text
                .get(at..at + len)
                .ok_or("engine bug: the text ran out before its rows")?;
            let key = workload::key(i);
            raw += (key.len() + value.len()) as u64;
            tx.put(&table, &key, value)?;
            at += len;
            i += 1;
        }
        tx.commit()?;
    }
    db.checkpoint()?;
    let seconds = start.elapsed().as_secs_f64();
    let tree = db.check_table(&table)?;
    let pages = tree.leaf_pages + tree.internal_pages + tree.overflow_pages + 1;
    Ok((seconds, pages * db.page_size().bytes() as u64, raw))
}

/// The buffer pool for `text_bytes` of rows: three times the text, at least 64 MiB.
fn pool_bytes(text_bytes: usize) -> usize {
    (text_bytes * 3).max(64 << 20)
}

/// Pool and redo log for `text_bytes` of rows: everything stays in memory until the
/// checkpoint, and the log never pushes the page cleaner.
fn options(text_bytes: usize, page_size: PageSize) -> EngineOptions {
    let bytes = pool_bytes(text_bytes);
    EngineOptions::default()
        .page_size(page_size)
        .buffer_pool_bytes(bytes)
        .redo_log_capacity(bytes as u64 * 2)
        .durability(Durability::Background)
}

fn load_variant(
    ctx: &Context,
    text: &[u8],
    rows: u64,
    page_size: PageSize,
    name: &'static str,
    table_options: TableOptions,
) -> LabResult<Footprint> {
    let kib = page_size.bytes() >> 10;
    let variant = format!("{kib}k-{name}");
    let dir = ctx.dir.join(&variant);
    workload::fresh_dir(&dir)?;
    let db = Engine::open(&dir, options(text.len(), page_size))?;
    let (load_s, logical_bytes, raw_bytes) = load(&db, text, rows, table_options)?;
    let status = db.status();
    let table = status
        .tables
        .first()
        .ok_or("engine bug: no table in the status")?;
    let c = &status.page_compression;
    let ratio = logical_bytes as f64 / table.allocated_bytes.max(1) as f64;
    let limit = LIMITS
        .iter()
        .find(|(k, ..)| *k == kib)
        .and_then(|&(_, zlib, lz4)| match name {
            "zlib" | "zlib1" => Some(zlib),
            "lz4" => Some(lz4),
            _ => None,
        });
    let cmp = status
        .row_compression
        .cmp
        .iter()
        .fold((0, 0), |(ops, ok), r| {
            (ops + r.compress_ops, ok + r.compress_ops_ok)
        });
    let footprint = Footprint {
        variant,
        page_size: page_size.bytes(),
        compression: name,
        rows,
        logical_bytes,
        file_bytes: table.file_bytes,
        allocated_bytes: table.allocated_bytes,
        ratio,
        raw_bytes,
        raw_ratio: raw_bytes as f64 / table.allocated_bytes.max(1) as f64,
        compress_ops: cmp.0,
        compress_ops_ok: cmp.1,
        load_s,
        load_rounds_s: vec![load_s],
        limit,
        share_of_limit: limit.map(|l| ratio / l),
        pages_compressed: c.num_pages_page_compressed,
        pages_written_plain: c.num_pages_written_plain,
        holes_punched: c.num_page_compressed_trim_op,
        punch_refusals: c.num_punch_hole_failures,
        bytes_in_place: status.doublewrite.bytes_written_in_place,
        bytes_to_doublewrite: status
            .doublewrite
            .doublewrite
            .as_ref()
            .map_or(0, |d| d.bytes_written),
    };
    db.close()?;
    Ok(footprint)
}

/// Loads the rows into a zlib table with the page cleaner held back, then times one sharp
/// checkpoint compressing on `threads` threads.
fn flush_once(ctx: &Context, text: &[u8], rows: u64, threads: usize) -> LabResult<Flush> {
    let dir = ctx.dir.join(format!("flush-{threads}"));
    workload::fresh_dir(&dir)?;
    let db = Engine::open(
        &dir,
        options(text.len(), PageSize::K16)
            .flush_threads(threads)
            .flush_settings(holding_flush_settings()?),
    )?;
    let table = db.create_table(
        workload::TABLE,
        TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 6 })),
    )?;
    let (mut at, mut i) = (0usize, 0u64);
    while i < rows {
        let mut tx = db.begin();
        for _ in 0..BATCH_ROWS.min(rows - i) {
            let len = row_len(i);
            let value = text.get(at..at + len).ok_or("the text ran out")?;
            tx.put(&table, &workload::key(i), value)?;
            at += len;
            i += 1;
        }
        tx.commit()?;
    }
    let before = db.status().doublewrite.pages_written_in_place;
    let start = Instant::now();
    db.checkpoint()?;
    let seconds = start.elapsed().as_secs_f64();
    let pages_flushed = db.status().doublewrite.pages_written_in_place - before;
    db.close()?;
    Ok(Flush {
        threads,
        pages_flushed,
        seconds,
        pages_per_s: pages_flushed as f64 / seconds.max(1e-9),
    })
}

/// The page cleaner writes nothing on its own below the log's async point.
fn holding_flush_settings() -> LabResult<FlushSettings> {
    let mut s = FlushSettings::default();
    s.set_adaptive_flushing(false);
    s.set_max_dirty_pages_pct(99.999)?;
    s.set_max_dirty_pages_pct_lwm(0.0)?;
    s.set_io_capacity(100)?;
    s.set_io_capacity_max(100)?;
    s.set_idle_flush_pct(0)?;
    s.set_write_behind(false);
    Ok(s)
}

fn report(
    footprints: &[Footprint],
    flushes: &[Flush],
    cores: usize,
    rows: u64,
    text_bytes: usize,
) -> LabResult<Outcome> {
    let mut t = TextTable::new(&[
        "variant",
        "logical MB",
        "file MB",
        "allocated MB",
        "ratio",
        "raw/alloc",
        "limit",
        "of limit",
        "load s",
        "load vs none",
        "compressed",
        "plain",
        "cmp ok/ops",
        "holes",
        "MB written",
        "MB doublewrite",
    ]);
    let mut results = serde_json::Map::new();
    for f in footprints {
        let none = footprints
            .iter()
            .find(|n| n.page_size == f.page_size && n.compression == "none")
            .map_or(f.load_s, |n| n.load_s);
        let load_vs_none = f.load_s / none.max(1e-9);
        t.row(vec![
            f.variant.clone(),
            format!("{:.1}", f.logical_bytes as f64 / 1e6),
            format!("{:.1}", f.file_bytes as f64 / 1e6),
            format!("{:.1}", f.allocated_bytes as f64 / 1e6),
            format!("{:.2}x", f.ratio),
            format!("{:.2}x", f.raw_ratio),
            f.limit.map_or("-".into(), |l| format!("{l:.2}x")),
            f.share_of_limit
                .map_or("-".into(), |s| format!("{:.0}%", s * 100.0)),
            format!("{:.2}", f.load_s),
            format!("{load_vs_none:.2}x"),
            f.pages_compressed.to_string(),
            f.pages_written_plain.to_string(),
            if f.compress_ops > 0 {
                format!("{}/{}", f.compress_ops_ok, f.compress_ops)
            } else {
                "-".into()
            },
            f.holes_punched.to_string(),
            format!("{:.1}", f.bytes_in_place as f64 / 1e6),
            format!("{:.1}", f.bytes_to_doublewrite as f64 / 1e6),
        ]);
        let mut v = serde_json::to_value(f)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("load_vs_uncompressed".into(), json!(load_vs_none));
        }
        results.insert(f.variant.clone(), v);
    }
    let mut text = format!(
        "{rows} rows ({:.1} MB of text, 1-4 KB each, keys in order); logical = pages in use x \
         page size; ratio = logical / allocated (st_blocks); raw/alloc = the rows' bytes / \
         allocated (row compression's anchors: MariaDB's InnoDB 1.52x at KEY_BLOCK_SIZE 8, 1.58x \
         at 4; RocksDB zlib 2.36x); kbsN = ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=N; limits: full pages of this text on 4 KiB blocks (../shared/data/README.md); \
         MariaDB's InnoDB on this text at 16 KiB: zlib {:.2}x, lz4 {:.2}x\n",
        text_bytes as f64 / 1e6,
        MARIADB_16K.0,
        MARIADB_16K.1
    );
    text.push_str(&t.render());
    let refused: u64 = footprints.iter().map(|f| f.punch_refusals).sum();
    if refused > 0 {
        let _ = writeln!(
            text,
            "THIS FILE SYSTEM REFUSED HOLE PUNCHING ({refused} times): allocated bytes are not \
             lowered, the ratios above show it"
        );
    }
    let mut ft = TextTable::new(&["flush threads", "pages flushed", "seconds", "pages/s"]);
    let mut by_threads = serde_json::Map::new();
    for threads in [1, cores] {
        let of: Vec<&Flush> = flushes.iter().filter(|f| f.threads == threads).collect();
        for f in &of {
            ft.row(vec![
                threads.to_string(),
                f.pages_flushed.to_string(),
                format!("{:.3}", f.seconds),
                format!("{:.0}", f.pages_per_s),
            ]);
        }
        by_threads.insert(
            threads.to_string(),
            json!({
                "pages_flushed": median(of.iter().map(|f| f.pages_flushed as f64).collect()),
                "seconds": median(of.iter().map(|f| f.seconds).collect()),
                "pages_per_s": median(of.iter().map(|f| f.pages_per_s).collect()),
                "rounds": of,
            }),
        );
    }
    let one = median(
        flushes
            .iter()
            .filter(|f| f.threads == 1)
            .map(|f| f.pages_per_s)
            .collect(),
    );
    let n = median(
        flushes
            .iter()
            .filter(|f| f.threads == cores)
            .map(|f| f.pages_per_s)
            .collect(),
    );
    text.push_str("\nsharp checkpoint of a zlib-6 table, 16 KiB pages, all pages dirty:\n");
    text.push_str(&ft.render());
    let _ = writeln!(
        text,
        "medians: {n:.0} pages/s with {cores} compression threads, {one:.0} with 1: {:.2}x",
        n / one.max(1e-9)
    );
    results.insert(
        "flush_threads".into(),
        serde_json::Value::Object(by_threads),
    );
    let bars: Vec<(String, f64, usize)> = footprints
        .iter()
        .enumerate()
        .map(|(i, f)| (f.variant.clone(), f.ratio, i))
        .collect();
    let svg = plot::render(
        "compression-footprint: logical / allocated bytes per variant",
        &[Panel {
            title: "footprint ratio (higher is smaller on disk)".into(),
            x_desc: "variant".into(),
            y_desc: "ratio".into(),
            kind: PanelKind::Bars { bars },
        }],
    )?;
    Ok(Outcome {
        text,
        results: serde_json::Value::Object(results),
        settings: json!({
            "table_bytes": footprints.first().map_or(0, |f| f.logical_bytes),
            "buffer_pool_bytes": pool_bytes(text_bytes),
            "rows": rows,
            "text_bytes": text_bytes,
            "row_bytes": "1000 + (i * 769) % 3000",
            "rows_per_transaction": BATCH_ROWS,
            "durability": "Background",
            "flush_threads_compared": [1, cores],
        }),
        svg: Some(svg),
    })
}
