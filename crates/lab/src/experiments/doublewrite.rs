//! `lab doublewrite`: what torn-write protection costs a flush. The seed (MariaDB 2014) measured
//! that the doublewrite buffer doubles the bytes written and that atomic writes won about 30 %
//! throughput. Each mode gets a fresh database, the same load and the same random updates (so
//! that most leaves are dirty), then a sharp checkpoint is timed: every dirty page written,
//! through the mode's protection, and synced. Measured per mode: pages flushed, bytes written
//! (in place plus the doublewrite file), bytes per page flushed (/ page size), pages per
//! second.
//!
//! This machine's disk has no untorn writes (`Auto` picks `On`; the status says why), so
//! `AtomicWrites` runs on the engine's in-memory fault-injecting file system pretending a
//! device with untorn page writes, beside `Off` on the same file system: those two show the
//! byte ratio, and their pages/s measure memory, not the disk.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use barracuda::fs::FaultyFileSystem;
use barracuda::{DoublewriteMode, DoublewriteStatus, Durability, Engine, EngineOptions, Table};
use serde::Serialize;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind};
use crate::report::TextTable;
use crate::workload::{self, Rng};
use crate::LabResult;

/// The experiment.
pub struct Doublewrite;

/// The targets: bytes per page flushed in `On` ...
const TARGET_ON_BYTES_RATIO: f64 = 2.05;
/// ... and `On`'s flush rate against `Off`'s.
const TARGET_ON_TO_OFF_RATE: f64 = 0.7;
/// Buffer pool and redo log bytes per row loaded: the pool holds the whole table (about 250
/// bytes a row), so pages stay dirty until the timed checkpoint, and the log is large enough
/// that the updates' redo stays far below the page cleaner's adaptive-flushing threshold.
const BYTES_PER_ROW: u64 = 1024;
/// The smallest pool and log, for small row counts.
const MIN_BYTES: u64 = 16 << 20;
/// The largest: at 1,000,000 rows, as the full run measured.
const MAX_BYTES: u64 = 512 << 20;

/// The buffer pool and redo log capacity for `rows` rows. Both scale with the table: a fixed
/// 512 MiB made every quick run allocate 1.5 GiB of redo log files on disk and 1 GiB of
/// memory per simulated run.
fn memory_bytes(rows: u64) -> u64 {
    rows.saturating_mul(BYTES_PER_ROW)
        .clamp(MIN_BYTES, MAX_BYTES)
}

/// One setting: the mode asked for, on the disk or on the simulated atomic device.
#[derive(Clone, Copy)]
struct Setting {
    key: &'static str,
    mode: DoublewriteMode,
    simulated: bool,
}

const SETTINGS: [Setting; 5] = [
    Setting {
        key: "off",
        mode: DoublewriteMode::Off,
        simulated: false,
    },
    Setting {
        key: "on",
        mode: DoublewriteMode::On,
        simulated: false,
    },
    Setting {
        key: "detect-only",
        mode: DoublewriteMode::DetectOnly,
        simulated: false,
    },
    Setting {
        key: "off-simulated",
        mode: DoublewriteMode::Off,
        simulated: true,
    },
    Setting {
        key: "atomic-writes-simulated",
        mode: DoublewriteMode::AtomicWrites,
        simulated: true,
    },
];

/// One timed checkpoint.
#[derive(Clone, Debug, Serialize)]
struct Flush {
    setting: &'static str,
    mode_in_effect: String,
    reason: String,
    pages_flushed: u64,
    bytes_in_place: u64,
    bytes_to_doublewrite: u64,
    bytes_written: u64,
    bytes_per_page_ratio: f64,
    seconds: f64,
    pages_per_s: f64,
    doublewrite_batches: u64,
    doublewrite_syncs: u64,
}

impl Experiment for Doublewrite {
    fn name(&self) -> &'static str {
        "doublewrite"
    }

    fn about(&self) -> &'static str {
        "a sharp checkpoint of a table whose leaves are mostly dirty, with torn-write protection \
         off, on (doublewrite), detect-only, and atomic writes (simulated device): pages \
         flushed, bytes written per page, pages/s (--seconds is not used)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (1_000_000, 1.0),
            quick: (20_000, 1.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let rounds = if ctx.quick { 1 } else { 3 };
        let mut flushes = Vec::new();
        for round in 0..rounds {
            for setting in SETTINGS {
                eprintln!("round {} of {rounds}: {}", round + 1, setting.key);
                flushes.push(flush_once(ctx, setting)?);
            }
        }
        let page_bytes = barracuda::PageSize::default().bytes() as f64;
        let median = |key: &str, f: fn(&Flush) -> f64| -> f64 {
            let mut v: Vec<f64> = flushes.iter().filter(|x| x.setting == key).map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let mut results = serde_json::Map::new();
        let mut t = TextTable::new(&[
            "setting",
            "in effect",
            "pages flushed",
            "MB in place",
            "MB doublewrite",
            "bytes/page",
            "seconds",
            "pages/s",
            "dw batches",
            "dw syncs",
        ]);
        for f in &flushes {
            t.row(vec![
                f.setting.to_owned(),
                f.mode_in_effect.clone(),
                f.pages_flushed.to_string(),
                format!("{:.1}", f.bytes_in_place as f64 / 1e6),
                format!("{:.1}", f.bytes_to_doublewrite as f64 / 1e6),
                format!("{:.3}x", f.bytes_per_page_ratio),
                format!("{:.3}", f.seconds),
                format!("{:.0}", f.pages_per_s),
                f.doublewrite_batches.to_string(),
                f.doublewrite_syncs.to_string(),
            ]);
        }
        for setting in SETTINGS {
            let of = |f: fn(&Flush) -> f64| median(setting.key, f);
            let last = flushes.iter().rev().find(|f| f.setting == setting.key);
            results.insert(
                setting.key.to_owned(),
                json!({
                    "simulated_in_memory": setting.simulated,
                    "mode_in_effect": last.map(|f| f.mode_in_effect.clone()),
                    "reason": last.map(|f| f.reason.clone()),
                    "pages_flushed": of(|f| f.pages_flushed as f64),
                    "bytes_written": of(|f| f.bytes_written as f64),
                    "bytes_per_page_ratio": of(|f| f.bytes_per_page_ratio),
                    "pages_per_s": of(|f| f.pages_per_s),
                    "rounds": flushes.iter().filter(|f| f.setting == setting.key).collect::<Vec<_>>(),
                }),
            );
        }
        let on_ratio = median("on", |f| f.bytes_per_page_ratio);
        let atomic_ratio = median("atomic-writes-simulated", |f| f.bytes_per_page_ratio);
        let rate_ratio =
            median("on", |f| f.pages_per_s) / median("off", |f| f.pages_per_s).max(1e-9);
        let mut text = t.render();
        let _ = writeln!(
            text,
            "medians over {rounds} round(s): On {on_ratio:.3}x bytes per page (target <= \
             {TARGET_ON_BYTES_RATIO}x); AtomicWrites {atomic_ratio:.3}x (target 1.0x, simulated \
             device); On flushes at {rate_ratio:.2} x Off's pages/s (target >= \
             {TARGET_ON_TO_OFF_RATE})"
        );
        text.push_str(
            "bytes/page = (bytes written in place + bytes written to the doublewrite file) / \
             (pages flushed x page size); *-simulated runs are in memory: their pages/s is not \
             the disk's\n",
        );
        let bars = |f: fn(&Flush) -> f64| -> Vec<(String, f64, usize)> {
            SETTINGS
                .iter()
                .enumerate()
                .map(|(i, s)| (s.key.to_owned(), median(s.key, f), i))
                .collect()
        };
        let svg = plot::render(
            "doublewrite: a sharp checkpoint per torn-write protection mode",
            &[
                Panel {
                    title: "bytes written per page flushed (/ page size)".into(),
                    x_desc: "setting".into(),
                    y_desc: "ratio".into(),
                    kind: PanelKind::Bars {
                        bars: bars(|f| f.bytes_per_page_ratio),
                    },
                },
                Panel {
                    title: "pages flushed per second (simulated: in memory)".into(),
                    x_desc: "setting".into(),
                    y_desc: "pages/s".into(),
                    kind: PanelKind::Bars {
                        bars: bars(|f| f.pages_per_s),
                    },
                },
            ],
        )?;
        results.insert(
            "summary".into(),
            json!({
                "on_bytes_per_page_ratio": on_ratio,
                "atomic_writes_bytes_per_page_ratio": atomic_ratio,
                "on_to_off_pages_per_s": rate_ratio,
                "targets": {
                    "on_bytes_per_page_ratio_max": TARGET_ON_BYTES_RATIO,
                    "atomic_writes_bytes_per_page_ratio": 1.0,
                    "on_to_off_pages_per_s_min": TARGET_ON_TO_OFF_RATE,
                },
            }),
        );
        Ok(Outcome {
            text,
            results: serde_json::Value::Object(results),
            settings: json!({
                "pool_bytes": memory_bytes(ctx.rows),
                "redo_log_capacity": memory_bytes(ctx.rows),
                "page_bytes": page_bytes,
                "durability": "Background (no fsync per commit: the checkpoint's writes are what is measured)",
                "updates": ctx.rows / 4,
                "rounds": rounds,
            }),
            svg: Some(svg),
        })
    }
}

/// Loads the table into a fresh database for `setting`, dirties about a quarter of the rows
/// at random, and times a sharp checkpoint.
fn flush_once(ctx: &Context, setting: Setting) -> LabResult<Flush> {
    let dir = ctx.dir.join(setting.key);
    if setting.simulated {
        // The database lives in memory; on disk there is only the engine's LOCK file.
        clear_lock_only_dir(&dir)?;
    } else {
        workload::fresh_dir(&dir)?;
    }
    let mut options = EngineOptions::default()
        .buffer_pool_bytes(usize::try_from(memory_bytes(ctx.rows))?)
        .redo_log_capacity(memory_bytes(ctx.rows))
        .durability(Durability::Background)
        .doublewrite(setting.mode);
    if setting.simulated {
        let fs = FaultyFileSystem::new();
        let page = u32::try_from(barracuda::PageSize::default().bytes())?;
        fs.pretend_atomic_writes(Some(page));
        options = options.file_system(Arc::new(fs));
    }
    let db = Engine::open(&dir, options)?;
    let table = db.create_table(workload::TABLE, barracuda::TableOptions::default())?;
    put_rows(&db, &table, &(0..ctx.rows).collect::<Vec<_>>())?;
    db.checkpoint()?;
    let mut rng = Rng::new(0x00d0_0b1e);
    let updates: Vec<u64> = (0..ctx.rows / 4).map(|_| rng.below(ctx.rows)).collect();
    put_rows(&db, &table, &updates)?;
    let before = db.status().doublewrite;
    let start = Instant::now();
    db.checkpoint()?;
    let seconds = start.elapsed().as_secs_f64();
    let after = db.status().doublewrite;
    db.close()?;
    Ok(measure(setting, &before, &after, seconds))
}

/// Empties `dir` if it holds nothing but a `LOCK` file (what a simulated run leaves), refusing
/// anything else.
fn clear_lock_only_dir(dir: &std::path::Path) -> LabResult<()> {
    if dir.exists() {
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name();
            if name != "LOCK" {
                return Err(format!(
                    "{} holds {}, not only a simulated run's LOCK: refusing to delete it",
                    dir.display(),
                    std::path::Path::new(&name).display()
                )
                .into());
            }
        }
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// Writes `ids` (as the lab's standard rows) in transactions of 1000.
fn put_rows(db: &Engine, table: &Table, ids: &[u64]) -> LabResult<()> {
    for chunk in ids.chunks(1000) {
        let mut tx = db.begin();
        for &id in chunk {
            tx.put(table, &workload::key(id), &workload::value(id))?;
        }
        tx.commit()?;
    }
    Ok(())
}

/// The checkpoint's figures, from the status before and after it.
fn measure(
    setting: Setting,
    before: &DoublewriteStatus,
    after: &DoublewriteStatus,
    seconds: f64,
) -> Flush {
    let copy = |s: &DoublewriteStatus| {
        s.doublewrite
            .map_or((0, 0, 0), |d| (d.bytes_written, d.batches, d.file_syncs))
    };
    let (dw_before, batches_before, syncs_before) = copy(before);
    let (dw_after, batches_after, syncs_after) = copy(after);
    let pages = after.pages_written_in_place - before.pages_written_in_place;
    let in_place = after.bytes_written_in_place - before.bytes_written_in_place;
    let to_doublewrite = dw_after - dw_before;
    let page_bytes = barracuda::PageSize::default().bytes() as f64;
    let bytes = in_place + to_doublewrite;
    Flush {
        setting: setting.key,
        mode_in_effect: after.mode.to_string(),
        reason: after.reason.clone(),
        pages_flushed: pages,
        bytes_in_place: in_place,
        bytes_to_doublewrite: to_doublewrite,
        bytes_written: bytes,
        bytes_per_page_ratio: bytes as f64 / (pages as f64 * page_bytes).max(1.0),
        seconds,
        pages_per_s: pages as f64 / seconds.max(1e-9),
        doublewrite_batches: batches_after - batches_before,
        doublewrite_syncs: syncs_after - syncs_before,
    }
}
