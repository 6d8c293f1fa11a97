//! `lab point-select`: sysbench `oltp_point_select` against a table that fits in the buffer pool:
//! queries per second and the latency distribution. The seed's figure: 33,056 qps single-threaded
//! uncompressed vs 10,528 qps with `KEY_BLOCK_SIZE=4` (Percona Server 8.0.29). Page-compressed
//! tables (lz4, zlib) are measured the same way: the pool holds their pages uncompressed, so
//! once warm they should read like the plain table (their cost is on writes and on misses).

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
         percentiles, uncompressed, ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE 8, 4) and \
         page-compressed (lz4, zlib); then the seed's padded rows, 1 thread: plain vs \
         KEY_BLOCK_SIZE=4 with every frame, and with every block but a quarter of the frames"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (400_000, 10.0),
            quick: (100_000, 3.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        workload::fresh_dir(&ctx.dir)?;
        // Room for the whole table (≈ 80 rows per 16 KiB page at the load's fill) and then some,
        // three times: the page-compressed variants load the same rows into tables of their own.
        let pool_bytes = (64usize << 20).max(ctx.rows as usize * 450 * 3);
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
        let variants = compressed_variants(&db, ctx)?;
        db.close()?;
        let small = small_pool_runs(ctx, table_bytes, &variants)?;
        let (seed_text, seed_results) = super::point_select_seed::run(ctx)?;

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
        for (name, status, run) in &variants {
            match run {
                Some(v) => {
                    let p = Percentiles::of(&v.run.hist);
                    t.row(vec![
                        name.clone(),
                        format!("{:.0}", v.run.qps()),
                        us(p.p50_ns),
                        us(p.p99_ns),
                        us(p.p999_ns),
                        ms(p.max_ns),
                        v.pool_misses.to_string(),
                    ]);
                }
                None => t.row(vec![
                    name.clone(),
                    status.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]),
            }
        }
        let mut small_t = TextTable::new(&[
            "table, pool = table / 4",
            "qps",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "pool misses",
            "decompressed",
        ]);
        for (name, r) in &small {
            let p = Percentiles::of(&r.run.hist);
            small_t.row(vec![
                name.clone(),
                format!("{:.0}", r.run.qps()),
                us(p.p50_ns),
                us(p.p99_ns),
                us(p.p999_ns),
                r.pool_misses.to_string(),
                r.decompressed.to_string(),
            ]);
        }
        let mut text = format!(
            "table {:.1} MiB, buffer pool {:.1} MiB, {} threads, {:.1} s\n{}\nthe same tables \
             through a pool of a quarter of one table ({:.1} MiB): every miss reads the page \
             (from the OS page cache) and, for a page-compressed table, decompresses it\n{}",
            table_bytes as f64 / f64::from(1u32 << 20),
            pool_bytes as f64 / f64::from(1u32 << 20),
            ctx.threads,
            run.elapsed.as_secs_f64(),
            t.render(),
            small_pool_bytes(table_bytes) as f64 / f64::from(1u32 << 20),
            small_t.render()
        );
        text.push_str(&seed_text);

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
                "small_pool": small.iter().map(|(name, r)| json!({
                    "table": name,
                    "pool_bytes": small_pool_bytes(table_bytes),
                    "queries": r.run.queries,
                    "qps": r.run.qps(),
                    "latency": Percentiles::of(&r.run.hist),
                    "pool_pages_read_during_run": r.pool_misses,
                    "pages_decompressed_during_run": r.decompressed,
                    "uncompress_ops_per_query": r.decompressed as f64 / r.run.queries.max(1) as f64,
                })).collect::<Vec<_>>(),
                "seed": seed_results,
                "variants": variants.iter().map(|(name, status, run)| match run {
                    Some(v) => json!({
                        "variant": name,
                        "status": status,
                        "queries": v.run.queries,
                        "qps": v.run.qps(),
                        "latency": Percentiles::of(&v.run.hist),
                        "pool_pages_read_during_run": v.pool_misses,
                        "pages_decompressed_during_run": v.decompressed,
                        "uncompress_ops_per_query": v.decompressed as f64 / v.run.queries.max(1) as f64,
                    }),
                    None => json!({"variant": name, "status": status}),
                }).collect::<Vec<_>>(),
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

/// Each compressed variant: measured like the uncompressed table when the engine has it (the
/// same rows loaded into a table of that format in the same database, the pool warmed, the same
/// point selects), else what the engine answers. Returns `(label, status, run)`.
fn compressed_variants(
    db: &Engine,
    ctx: &Context,
) -> LabResult<Vec<(String, String, Option<VariantRun>)>> {
    let variants = [
        (
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
            "zip8",
            TableOptions::default().row_format(RowFormat::compressed(8)),
        ),
        (
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4",
            "zip4",
            TableOptions::default().row_format(RowFormat::compressed(4)),
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
        match db.create_table(&name, options) {
            Err(Error::Unsupported(_)) => {
                out.push((label.to_owned(), "not available yet".to_owned(), None));
            }
            Err(e) => return Err(e.into()),
            Ok(table) => {
                let run = measure_variant(db, &table, ctx, label)?;
                out.push((label.to_owned(), "measured".to_owned(), Some(run)));
            }
        }
    }
    Ok(out)
}

/// One measured variant.
struct VariantRun {
    run: workload::SelectRun,
    decompressed: u64,
    pool_misses: u64,
}

/// Loads the rows into `table`, writes every page (compressed, for a page-compressed table),
/// warms the pool with a scan and runs the point selects.
fn measure_variant(
    db: &Engine,
    table: &barracuda::Table,
    ctx: &Context,
    label: &str,
) -> LabResult<VariantRun> {
    let mut id = 0;
    while id < ctx.rows {
        let end = (id + 1000).min(ctx.rows);
        let mut tx = db.begin();
        for k in id..end {
            tx.put(table, &workload::key(k), &workload::value(k))?;
        }
        tx.commit()?;
        id = end;
    }
    db.checkpoint()?;
    let mut warm = 0u64;
    for row in db.range(table, ..)? {
        row?;
        warm += 1;
    }
    if warm != ctx.rows {
        return Err(format!(
            "engine bug: {label}: scan returned {warm} of {} rows",
            ctx.rows
        )
        .into());
    }
    let before = db.status();
    let run = workload::point_selects(db, table, ctx.rows, ctx.threads, ctx.phase, label)?;
    let after = db.status();
    Ok(VariantRun {
        run,
        decompressed: decompressions(&after) - decompressions(&before),
        pool_misses: after.pool.pages_read - before.pool.pages_read,
    })
}

/// Pages decompressed so far: page-compressed images read, and row-compressed blocks
/// decompressed (INNODB_CMP's `uncompress_ops`, every block size).
fn decompressions(status: &barracuda::EngineStatus) -> u64 {
    status.page_compression.num_pages_page_decompressed
        + status
            .row_compression
            .cmp
            .iter()
            .map(|r| r.uncompress_ops)
            .sum::<u64>()
}

/// A pool of a quarter of one table (at least 16 pages of 16 KiB).
fn small_pool_bytes(table_bytes: u64) -> usize {
    usize::try_from(table_bytes / 4)
        .unwrap_or(usize::MAX)
        .max(16 << 14)
}

/// Reopens the database with a pool of a quarter of one table and runs the point selects on
/// the plain table and on each measured page-compressed one: the cost of a miss, and of a
/// decompression per miss.
fn small_pool_runs(
    ctx: &Context,
    table_bytes: u64,
    variants: &[(String, String, Option<VariantRun>)],
) -> LabResult<Vec<(String, VariantRun)>> {
    let db = Engine::open(
        &ctx.dir,
        EngineOptions::default().buffer_pool_bytes(small_pool_bytes(table_bytes)),
    )?;
    let mut names = vec![(
        "uncompressed (DYNAMIC)".to_owned(),
        workload::TABLE.to_owned(),
    )];
    for (label, suffix) in [
        ("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", "zip8"),
        ("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4", "zip4"),
        ("PAGE_COMPRESSED lz4", "pc_lz4"),
        ("PAGE_COMPRESSED zlib", "pc_zlib"),
    ] {
        if variants
            .iter()
            .any(|(l, _, run)| l == label && run.is_some())
        {
            names.push((label.to_owned(), format!("{}_{suffix}", workload::TABLE)));
        }
    }
    let mut out = Vec::new();
    for (label, name) in names {
        let table = db.table(&name)?;
        let before = db.status();
        let run = workload::point_selects(
            &db,
            &table,
            ctx.rows,
            ctx.threads,
            ctx.phase,
            &format!("{label}, small pool"),
        )?;
        let after = db.status();
        out.push((
            label,
            VariantRun {
                run,
                decompressed: decompressions(&after) - decompressions(&before),
                pool_misses: after.pool.pages_read - before.pool.pages_read,
            },
        ));
    }
    db.close()?;
    Ok(out)
}
