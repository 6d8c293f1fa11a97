//! `lab point-select`: sysbench `oltp_point_select` against a table that fits in the buffer pool:
//! queries per second and the latency distribution. The seed's figure: 33,056 qps single-threaded
//! uncompressed vs 10,528 qps with `KEY_BLOCK_SIZE=4` (Percona Server 8.0.29).

use barracuda::{Engine, EngineOptions, Error, PageCompression, RowFormat, TableOptions};
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind, Series};
use crate::report::{ms, us, TextTable};
use crate::workload::{self, Percentiles};
use crate::LabResult;

/// The experiment.
pub struct PointSelect;

impl Experiment for PointSelect {
    fn name(&self) -> &'static str {
        "point-select"
    }

    fn about(&self) -> &'static str {
        "random point selects on a table that fits in the buffer pool: qps and latency \
         percentiles (compressed variants are reported as not available until the engine has them)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (400_000, 10.0),
            quick: (100_000, 3.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        workload::fresh_dir(&ctx.dir)?;
        // Room for the whole table (≈ 80 rows per 16 KiB page at the load's fill) and then some.
        let pool_bytes = (64usize << 20).max(ctx.rows as usize * 450);
        let table_bytes = workload::load(&ctx.dir, ctx.rows, pool_bytes)?;
        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default().buffer_pool_bytes(pool_bytes),
        )?;
        let table = db.table(workload::TABLE)?;
        // Warm the pool with one scan so that the run measures the in-memory path.
        let mut warm = 0u64;
        for row in db.range(&table, ..)? {
            row?;
            warm += 1;
        }
        if warm != ctx.rows {
            return Err(format!(
                "engine bug: scan returned {warm} rows, {} were loaded",
                ctx.rows
            )
            .into());
        }
        let before = db.status().pool;
        let run = workload::point_selects(
            &db,
            &table,
            ctx.rows,
            ctx.threads,
            ctx.phase,
            "point selects",
        )?;
        let after = db.status().pool;
        let variants = compressed_variants(&db)?;
        db.close()?;

        let p = Percentiles::of(&run.hist);
        let mut t = TextTable::new(&[
            "variant",
            "qps",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "max ms",
            "pool misses",
        ]);
        t.row(vec![
            "uncompressed (DYNAMIC)".into(),
            format!("{:.0}", run.qps()),
            us(p.p50_ns),
            us(p.p99_ns),
            us(p.p999_ns),
            ms(p.max_ns),
            (after.pages_read - before.pages_read).to_string(),
        ]);
        for (name, status) in &variants {
            t.row(vec![
                name.clone(),
                status.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        let text = format!(
            "table {:.1} MiB, buffer pool {:.1} MiB, {} threads, {:.1} s\n{}",
            table_bytes as f64 / f64::from(1u32 << 20),
            pool_bytes as f64 / f64::from(1u32 << 20),
            ctx.threads,
            run.elapsed.as_secs_f64(),
            t.render()
        );

        let dist: Vec<(f64, f64)> = run
            .distribution()
            .into_iter()
            .filter(|(q, _)| *q < 100.0)
            .map(|(q, ns)| (plot::nines(q), ns as f64 / 1000.0))
            .collect();
        let qps: Vec<(f64, f64)> = run
            .timeline
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * 0.1, b.queries as f64 * 10.0))
            .collect();
        let svg = plot::render(
            &format!(
                "point-select: {} rows, {} threads, uncompressed",
                ctx.rows, ctx.threads
            ),
            &[
                Panel {
                    title: "latency distribution".into(),
                    x_desc: "percentile".into(),
                    y_desc: "latency (us, log)".into(),
                    kind: PanelKind::Lines {
                        series: vec![Series {
                            name: "uncompressed".into(),
                            points: dist,
                        }],
                        y_log: true,
                        x_nines: true,
                    },
                },
                Panel {
                    title: "throughput per 100 ms".into(),
                    x_desc: "time (s)".into(),
                    y_desc: "queries/s".into(),
                    kind: PanelKind::Lines {
                        series: vec![Series {
                            name: "uncompressed".into(),
                            points: qps,
                        }],
                        y_log: false,
                        x_nines: false,
                    },
                },
            ],
        )?;
        Ok(Outcome {
            text,
            results: json!({
                "uncompressed": {
                    "queries": run.queries,
                    "elapsed_s": run.elapsed.as_secs_f64(),
                    "qps": run.qps(),
                    "latency": p,
                    "distribution": run.distribution(),
                    "timeline": run.timeline,
                    "pool_pages_read_during_run": after.pages_read - before.pages_read,
                    "pool_page_requests_during_run": after.page_requests - before.page_requests,
                },
                "variants": variants.iter().map(|(name, status)| json!({"variant": name, "status": status})).collect::<Vec<_>>(),
            }),
            settings: json!({
                "table_bytes": table_bytes,
                "buffer_pool_bytes": pool_bytes,
                "key_bytes": 8,
                "value_bytes": workload::VALUE_BYTES,
            }),
            svg: Some(svg),
        })
    }
}

/// Asks the engine for each compressed variant; reports what it answers.
fn compressed_variants(db: &Engine) -> LabResult<Vec<(String, String)>> {
    let variants = [
        (
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
            "zip8",
            TableOptions::default().row_format(RowFormat::Compressed { key_block_size: 8 }),
        ),
        (
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4",
            "zip4",
            TableOptions::default().row_format(RowFormat::Compressed { key_block_size: 4 }),
        ),
        (
            "PAGE_COMPRESSED lz4",
            "pc_lz4",
            TableOptions::default().page_compression(Some(PageCompression::Lz4)),
        ),
        (
            "PAGE_COMPRESSED zlib",
            "pc_zlib",
            TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 6 })),
        ),
    ];
    let mut out = Vec::new();
    for (label, suffix, options) in variants {
        let name = format!("{}_{suffix}", workload::TABLE);
        let status = match db.create_table(&name, options) {
            Err(Error::Unsupported(_)) => "not available yet".to_owned(),
            Err(e) => return Err(e.into()),
            Ok(_) => {
                db.drop_table(&name)?;
                "available in the engine, not measured by this experiment yet".to_owned()
            }
        };
        out.push((label.to_owned(), status));
    }
    Ok(out)
}
