//! `lab free-list-stalls`: J.-F. Gagné's repro of empty-free-list stalls (Percona `backoff`,
//! 2022). A table several times larger than the buffer pool but in the OS page cache, random point
//! selects: every miss needs a free frame, so the free list is drained all the time, and how a
//! thread gets a frame when it is empty decides the tail latency. Run once per policy, each on a
//! freshly opened engine (like the seed's runs after a restart: the free list starts full, empties,
//! and the first empty-list episode is where Backoff's LRU manager is asleep for up to a second).

use std::fmt::Write as _;

use barracuda::{Engine, EngineOptions, FreePagePolicy, PoolStats};
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::plot::{self, Panel, PanelKind, Series};
use crate::report::{ms, us, TextTable};
use crate::workload::{self, Percentiles, SelectRun};
use crate::LabResult;

/// The experiment.
pub struct FreeListStalls;

/// Table size / pool size.
const TABLE_TO_POOL: u64 = 8;

impl Experiment for FreeListStalls {
    fn name(&self) -> &'static str {
        "free-list-stalls"
    }

    fn about(&self) -> &'static str {
        "random point selects on a table 8x the buffer pool (data in the OS page cache), once per \
         free-page policy (legacy, backoff, eager): tail latency, stalls, wait_free; then on a \
         KEY_BLOCK_SIZE=4 copy with every block in the pool but not every frame (misses with no \
         I/O)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            full: (400_000, 10.0),
            quick: (100_000, 4.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        workload::fresh_dir(&ctx.dir)?;
        let table_bytes = workload::load(&ctx.dir, ctx.rows, 128 << 20)?;
        let page_bytes = barracuda::PageSize::K16.bytes() as u64;
        let pool_bytes = (table_bytes / TABLE_TO_POOL).max(16 * page_bytes) as usize;

        let policies = [
            FreePagePolicy::Legacy,
            FreePagePolicy::Backoff,
            FreePagePolicy::Eager,
        ];
        let mut runs: Vec<(FreePagePolicy, SelectRun, PoolStats)> = Vec::new();
        for policy in policies {
            let options = EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .free_page_policy(policy);
            let db = Engine::open(&ctx.dir, options)?;
            let table = db.table(workload::TABLE)?;
            let run = workload::point_selects(
                &db,
                &table,
                ctx.rows,
                ctx.threads,
                ctx.phase,
                &format!("point selects, {policy}"),
            )?;
            let stats = db.status().pool;
            db.close()?;
            runs.push((policy, run, stats));
        }

        let mut t = TextTable::new(&[
            "policy",
            "qps",
            "p50 us",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "100ms buckets > 50 ms",
            "wait_free",
            "free waits",
            "wait p99.9 us",
            "wait max ms",
            "pages read",
        ]);
        let mut results = serde_json::Map::new();
        for (policy, run, stats) in &runs {
            let p = Percentiles::of(&run.hist);
            let slow_buckets = run
                .timeline
                .iter()
                .filter(|b| b.max_ns > 50_000_000)
                .count();
            t.row(vec![
                policy.to_string(),
                format!("{:.0}", run.qps()),
                us(p.p50_ns),
                ms(p.p99_ns),
                ms(p.p999_ns),
                ms(p.max_ns),
                slow_buckets.to_string(),
                stats.wait_free.to_string(),
                stats.free_wait.count.to_string(),
                stats.free_wait.p999_us.to_string(),
                format!("{:.2}", stats.free_wait.max_us as f64 / 1000.0),
                stats.pages_read.to_string(),
            ]);
            results.insert(
                policy.to_string(),
                json!({
                    "queries": run.queries,
                    "elapsed_s": run.elapsed.as_secs_f64(),
                    "qps": run.qps(),
                    "latency": p,
                    "buckets_over_50ms": slow_buckets,
                    "distribution": run.distribution(),
                    "timeline": run.timeline,
                    "buffer_pool_wait_free": stats.wait_free,
                    "free_list_empty": stats.free_list_empty,
                    "lru_get_free_waits": stats.lru_get_free_waits,
                    "free_wait": {
                        "count": stats.free_wait.count,
                        "mean_us": stats.free_wait.mean_us,
                        "p99_us": stats.free_wait.p99_us,
                        "p999_us": stats.free_wait.p999_us,
                        "max_us": stats.free_wait.max_us,
                    },
                    "pages_read": stats.pages_read,
                    "page_requests": stats.page_requests,
                    "evicted_by_user": stats.evicted_by_user,
                    "evicted_by_manager": stats.evicted_by_manager,
                    "lru_manager_rounds": stats.manager_rounds,
                    "single_page_flush_failures": stats.single_page_flush_failures,
                }),
            );
        }
        let mut text = format!(
            "table {:.1} MiB, buffer pool {:.2} MiB ({} pages), {} threads, {:.1} s per policy\n{}",
            table_bytes as f64 / f64::from(1u32 << 20),
            pool_bytes as f64 / f64::from(1u32 << 20),
            pool_bytes as u64 / page_bytes,
            ctx.threads,
            ctx.phase.as_secs_f64(),
            t.render()
        );
        let (zip_setup, zip_runs) = super::free_list_stalls_zip::run(ctx)?;
        let mut zt = TextTable::new(&[
            "KEY_BLOCK_SIZE=4",
            "qps",
            "p50 us",
            "p99.9 ms",
            "max ms",
            "queries > 50 ms",
            "100ms buckets > 50 ms",
            "wait_free",
            "pages read",
            "uncompress/query",
            "compressed-only hits",
        ]);
        for z in &zip_runs {
            let p = Percentiles::of(&z.run.hist);
            let slow_queries = z
                .run
                .hist
                .iter_recorded()
                .filter(|v| v.value_iterated_to() > 50_000_000)
                .map(|v| v.count_at_value())
                .sum::<u64>();
            let slow_buckets = z
                .run
                .timeline
                .iter()
                .filter(|b| b.max_ns > 50_000_000)
                .count();
            let pool = &z.status.pool;
            let per_query = z.uncompress_ops as f64 / z.run.queries.max(1) as f64;
            zt.row(vec![
                z.policy.to_string(),
                format!("{:.0}", z.run.qps()),
                us(p.p50_ns),
                ms(p.p999_ns),
                ms(p.max_ns),
                slow_queries.to_string(),
                slow_buckets.to_string(),
                pool.wait_free.to_string(),
                pool.pages_read.to_string(),
                format!("{per_query:.2}"),
                pool.zip_only_hits.to_string(),
            ]);
            results.insert(
                format!("compressed-{}", z.policy),
                json!({
                    "queries": z.run.queries,
                    "qps": z.run.qps(),
                    "latency": p,
                    "queries_over_50ms": slow_queries,
                    "buckets_over_50ms": slow_buckets,
                    "timeline": z.run.timeline,
                    "buffer_pool_wait_free": pool.wait_free,
                    "pages_read": pool.pages_read,
                    "uncompress_ops": z.uncompress_ops,
                    "uncompress_ops_per_query": per_query,
                    "zip_only_hits": pool.zip_only_hits,
                    "frames_dropped_keeping_block": pool.frames_dropped_keeping_block,
                    "free_wait": {
                        "count": pool.free_wait.count,
                        "p999_us": pool.free_wait.p999_us,
                        "max_us": pool.free_wait.max_us,
                    },
                }),
            );
        }
        let _ = write!(
            text,
            "\nROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4, same rows: blocks {:.1} MiB, buffer pool {:.1} MiB (every block, frames for a quarter of the pages); pages read = store reads (0: no I/O)\n{}",
            zip_setup.block_bytes as f64 / f64::from(1u32 << 20),
            zip_setup.pool_bytes as f64 / f64::from(1u32 << 20),
            zt.render()
        );

        let timeline = runs
            .iter()
            .map(|(policy, run, _)| Series {
                name: policy.to_string(),
                points: run
                    .timeline
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.queries > 0)
                    .map(|(i, b)| (i as f64 * 0.1, b.max_ns as f64 / 1e6))
                    .collect(),
            })
            .collect();
        let throughput = runs
            .iter()
            .map(|(policy, run, _)| Series {
                name: policy.to_string(),
                points: run
                    .timeline
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (i as f64 * 0.1, b.queries as f64))
                    .collect(),
            })
            .collect();
        let dist = runs
            .iter()
            .map(|(policy, run, _)| Series {
                name: policy.to_string(),
                points: run
                    .distribution()
                    .into_iter()
                    .filter(|(q, _)| *q < 100.0)
                    .map(|(q, ns)| (plot::nines(q), ns as f64 / 1e6))
                    .collect(),
            })
            .collect();
        let svg = plot::render(
            &format!(
                "free-list-stalls: table {:.0} MiB, pool {:.1} MiB, {} threads",
                table_bytes as f64 / f64::from(1u32 << 20),
                pool_bytes as f64 / f64::from(1u32 << 20),
                ctx.threads
            ),
            &[
                Panel {
                    title: "max latency per 100 ms bucket, per free-page policy".into(),
                    x_desc: "time since open (s)".into(),
                    y_desc: "max latency (ms, log)".into(),
                    kind: PanelKind::Lines {
                        series: timeline,
                        y_log: true,
                        x_nines: false,
                    },
                },
                Panel {
                    title: "queries started per 100 ms bucket (0 = every thread stalled)".into(),
                    x_desc: "time since open (s)".into(),
                    y_desc: "queries".into(),
                    kind: PanelKind::Lines {
                        series: throughput,
                        y_log: false,
                        x_nines: false,
                    },
                },
                Panel {
                    title: "latency distribution".into(),
                    x_desc: "percentile".into(),
                    y_desc: "latency (ms, log)".into(),
                    kind: PanelKind::Lines {
                        series: dist,
                        y_log: true,
                        x_nines: true,
                    },
                },
            ],
        )?;
        Ok(Outcome {
            text,
            results: serde_json::Value::Object(results),
            settings: json!({
                "table_bytes": table_bytes,
                "buffer_pool_bytes": pool_bytes,
                "table_to_pool": TABLE_TO_POOL,
                "compressed_table": super::free_list_stalls_zip::TABLE,
                "compressed_block_bytes": zip_setup.block_bytes,
                "compressed_buffer_pool_bytes": zip_setup.pool_bytes,
                "policies": ["legacy", "backoff", "eager"],
                "bucket_ms": workload::BUCKET.as_millis() as u64,
            }),
            svg: Some(svg),
        })
    }
}
