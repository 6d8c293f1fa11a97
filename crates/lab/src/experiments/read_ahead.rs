//! `lab read-ahead`: a full scan of a table larger than the buffer pool, cold (the engine is
//! reopened before each scan; the file stays in the OS page cache), with linear read-ahead on
//! (`read_ahead_threshold = 56`, InnoDB's default) and off. The seed (Domas Mituzas, 2010) found
//! servers "much much much faster" with read-ahead disabled; we measure both sides.

use std::time::Instant;

use barracuda::{Engine, EngineOptions};
use serde::Serialize;
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind};
use crate::report::TextTable;
use crate::workload;
use crate::LabResult;

/// The experiment.
pub struct ReadAhead;

/// One cold scan.
#[derive(Clone, Debug, Serialize)]
struct Scan {
    read_ahead: bool,
    seconds: f64,
    rows: u64,
    rows_per_s: f64,
    page_requests: u64,
    /// Demand reads: misses a scanning thread waited for.
    pages_read: u64,
    read_ahead_linear: u64,
    read_ahead_evicted: u64,
}

impl Experiment for ReadAhead {
    fn name(&self) -> &'static str {
        "read-ahead"
    }

    fn about(&self) -> &'static str {
        "cold full scans of a table 4x the buffer pool with linear read-ahead on (threshold 56) \
         and off: time, rows/s, demand reads, read-ahead counters (--seconds is not used)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (1_000_000, 1.0),
            quick: (200_000, 1.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        workload::fresh_dir(&ctx.dir)?;
        let table_bytes = workload::load(&ctx.dir, ctx.rows, 128 << 20)?;
        // At least 6 MiB: the pool skips read-ahead when it holds fewer than four extents.
        let pool_bytes = (table_bytes / 4).max(6 << 20) as usize;
        let repeats = if ctx.quick { 2 } else { 3 };
        let mut scans = Vec::new();
        for round in 0..repeats {
            for read_ahead in [false, true] {
                let threshold = read_ahead.then_some(56);
                let options = EngineOptions::default()
                    .buffer_pool_bytes(pool_bytes)
                    .read_ahead_threshold(threshold);
                let db = Engine::open(&ctx.dir, options)?;
                let table = db.table(workload::TABLE)?;
                let label = format!(
                    "scan {} read-ahead {}",
                    round + 1,
                    if read_ahead { "on" } else { "off" }
                );
                let mut progress = crate::progress::Progress::new(&label, ctx.rows, "rows");
                let start = Instant::now();
                let mut rows = 0u64;
                for row in db.range(&table, ..)? {
                    row?;
                    rows += 1;
                    if rows.is_multiple_of(16_384) {
                        progress.set(rows);
                    }
                }
                let seconds = start.elapsed().as_secs_f64();
                progress.set(rows);
                progress.finish();
                let stats = db.status().pool;
                db.close()?;
                if rows != ctx.rows {
                    return Err(format!(
                        "engine bug: the scan returned {rows} rows, {} were loaded",
                        ctx.rows
                    )
                    .into());
                }
                scans.push(Scan {
                    read_ahead,
                    seconds,
                    rows,
                    rows_per_s: rows as f64 / seconds.max(1e-9),
                    page_requests: stats.page_requests,
                    pages_read: stats.pages_read,
                    read_ahead_linear: stats.read_ahead_linear,
                    read_ahead_evicted: stats.read_ahead_evicted,
                });
            }
        }

        let median = |on: bool| -> f64 {
            let mut v: Vec<f64> = scans
                .iter()
                .filter(|s| s.read_ahead == on)
                .map(|s| s.seconds)
                .collect();
            v.sort_by(f64::total_cmp);
            let mid = v.len() / 2;
            match (v.get(mid.wrapping_sub(1)), v.get(mid)) {
                (Some(a), Some(b)) if v.len().is_multiple_of(2) => (a + b) / 2.0,
                (_, Some(m)) => *m,
                _ => 0.0,
            }
        };
        let (off_s, on_s) = (median(false), median(true));
        let mut t = TextTable::new(&[
            "read-ahead",
            "scan s",
            "rows/s",
            "page requests",
            "demand reads",
            "read ahead",
            "ra evicted unused",
        ]);
        for s in &scans {
            t.row(vec![
                if s.read_ahead {
                    "on (56)".into()
                } else {
                    "off".into()
                },
                format!("{:.3}", s.seconds),
                format!("{:.0}", s.rows_per_s),
                s.page_requests.to_string(),
                s.pages_read.to_string(),
                s.read_ahead_linear.to_string(),
                s.read_ahead_evicted.to_string(),
            ]);
        }
        let text = format!(
            "table {:.1} MiB, buffer pool {:.1} MiB, {repeats} cold scans per setting (alternating)\n{}\
             median scan: off {off_s:.3} s, on {on_s:.3} s (on/off = {:.2})\n",
            table_bytes as f64 / f64::from(1u32 << 20),
            pool_bytes as f64 / f64::from(1u32 << 20),
            t.render(),
            on_s / off_s.max(1e-9)
        );
        let last = |on: bool| scans.iter().rev().find(|s| s.read_ahead == on).cloned();
        let mut page_bars = Vec::new();
        if let (Some(off), Some(on)) = (last(false), last(true)) {
            page_bars.push(("off: demand reads".to_owned(), off.pages_read as f64, 0));
            page_bars.push(("on: demand reads".to_owned(), on.pages_read as f64, 1));
            page_bars.push(("on: read ahead".to_owned(), on.read_ahead_linear as f64, 2));
            page_bars.push((
                "on: evicted unused".to_owned(),
                on.read_ahead_evicted as f64,
                3,
            ));
        }
        let svg = plot::render(
            &format!(
                "read-ahead: cold scan of {:.0} MiB through a {:.0} MiB pool",
                table_bytes as f64 / f64::from(1u32 << 20),
                pool_bytes as f64 / f64::from(1u32 << 20)
            ),
            &[
                Panel {
                    title: format!("median full-scan time of {repeats} cold scans per setting"),
                    x_desc: "linear read-ahead".into(),
                    y_desc: "seconds".into(),
                    kind: PanelKind::Bars {
                        bars: vec![
                            ("off".into(), off_s, 0),
                            ("on (threshold 56)".into(), on_s, 1),
                        ],
                    },
                },
                Panel {
                    title: "pages read in the last scan of each setting".into(),
                    x_desc: String::new(),
                    y_desc: "pages".into(),
                    kind: PanelKind::Bars { bars: page_bars },
                },
            ],
        )?;
        Ok(Outcome {
            text,
            results: json!({
                "scans": scans,
                "median_scan_s": { "off": off_s, "on": on_s },
            }),
            settings: json!({
                "table_bytes": table_bytes,
                "buffer_pool_bytes": pool_bytes,
                "table_larger_than_pool": table_bytes > pool_bytes as u64,
                "read_ahead_threshold": 56,
                "repeats": repeats,
            }),
            svg: Some(svg),
        })
    }
}
