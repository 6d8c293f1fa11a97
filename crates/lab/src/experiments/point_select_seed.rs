//! The seed's own point-select comparison (J.-F. Gagné 2022, issue 12): sysbench rows padded
//! so that 16 fit a 16 KiB page (Annex #1: `id`, `k`, `c CHAR(120)`, `pad CHAR(60)`, then
//! `c0 CHAR(60)` and `c1..c3 CHAR(240)`, all empty, i.e. spaces), one thread, uniform random
//! ids. The seed measured 33,056 queries/s uncompressed and 10,528 with `KEY_BLOCK_SIZE=4`
//! (3.1x slower, ~95 µs a query). Measured here, in one database:
//! - uncompressed, the pool holding the whole table;
//! - `KEY_BLOCK_SIZE=4` (zlib 6, and LZ4), the pool holding every uncompressed frame too
//!   (target: ≤ 1.3x the plain table's cost);
//! - `KEY_BLOCK_SIZE=4`, the pool holding every block but frames for only a quarter of the
//!   pages, so most selects decompress (target: ≤ 1/3 of the seed's 95 µs, ≥ 30 k q/s with zlib).

use std::time::Duration;

use barracuda::{Codec, Engine, EngineOptions, RowFormat, TableOptions};
use serde_json::json;

use super::Context;
use crate::report::{us, TextTable};
use crate::workload::{self, Percentiles, Rng, SelectRun};
use crate::LabResult;

/// The seed's figures: queries/s uncompressed and with `KEY_BLOCK_SIZE=4`.
const SEED_QPS: (f64, f64) = (33_056.0, 10_528.0);

/// The tables: name, options.
fn tables() -> [(&'static str, TableOptions); 3] {
    let zip = |algorithm| {
        TableOptions::default().row_format(RowFormat::Compressed {
            key_block_size: 4,
            algorithm,
        })
    };
    [
        ("seed_plain", TableOptions::default()),
        ("seed_zip4", zip(Codec::Zlib { level: 6 })),
        ("seed_zip4_lz4", zip(Codec::Lz4)),
    ]
}

/// Row `id`'s value: `k` (4 bytes), `c` (120: groups of 11 digits and `-`, as sysbench), `pad`
/// (60, likewise), then 780 spaces (`c0` and `c1..c3`, empty CHARs): 964 bytes, 16 a page.
pub(super) fn value(id: u64) -> Vec<u8> {
    let mut rng = Rng::new(id ^ 0x5EED_5EED);
    let mut v = Vec::with_capacity(964);
    v.extend_from_slice(&(rng.below(u64::from(u32::MAX)) as u32).to_le_bytes());
    for len in [120, 60] {
        v.extend((0..len).map(|i| {
            if i % 12 == 11 {
                b'-'
            } else {
                b'0' + (rng.below(10) as u8)
            }
        }));
    }
    v.resize(964, b' ');
    v
}

/// One measured configuration.
struct Measured {
    label: String,
    key: String,
    run: SelectRun,
    uncompress_ops: u64,
    pool_reads: u64,
}

/// Runs the scenario in `<dir>/seed`; returns its text table and JSON.
pub(super) fn run(ctx: &Context) -> LabResult<(String, serde_json::Value)> {
    let dir = ctx.dir.join("seed");
    workload::fresh_dir(&dir)?;
    // A tenth of the main experiment's rows: ~1 KB each.
    let rows = (ctx.rows / 10).max(5_000);
    let phase = ctx.phase.min(Duration::from_secs(10));
    let big_pool = usize::try_from(rows * 1100 * 4)
        .unwrap_or(usize::MAX)
        .max(64 << 20);
    let mut pages = Vec::new();
    {
        let db = Engine::open(&dir, EngineOptions::default().buffer_pool_bytes(big_pool))?;
        for (name, options) in tables() {
            let table = db.create_table(name, options)?;
            let mut id = 0;
            while id < rows {
                let end = (id + 1000).min(rows);
                let mut tx = db.begin();
                for k in id..end {
                    tx.put(&table, &workload::key(k), &value(k))?;
                }
                tx.commit()?;
                id = end;
            }
            let tree = db.check_table(&table)?;
            pages.push(tree.leaf_pages + tree.internal_pages);
        }
        db.close()?;
    }
    let mut measured = Vec::new();
    // Everything in the pool, frames included.
    for (name, _) in tables() {
        measured.push(measure(
            &dir,
            name,
            big_pool,
            rows,
            phase,
            &format!("{name}, every frame in the pool"),
            format!("{name}-all-frames"),
        )?);
    }
    // Every block, frames for a quarter of the pages.
    let zip_pages = pages.get(1).copied().unwrap_or(0);
    let small_pool =
        usize::try_from(zip_pages * 4096 + (zip_pages / 4).max(64) * 16384).unwrap_or(usize::MAX);
    for name in ["seed_zip4", "seed_zip4_lz4"] {
        measured.push(measure(
            &dir,
            name,
            small_pool,
            rows,
            phase,
            &format!("{name}, every block, frames for a quarter"),
            format!("{name}-blocks-only"),
        )?);
    }
    let plain_qps = measured.first().map_or(1.0, |m| m.run.qps()).max(1.0);
    let mut t = TextTable::new(&[
        "seed rows (16 a page), 1 thread",
        "qps",
        "us/query",
        "p99 us",
        "vs plain",
        "uncompress/query",
        "pool reads",
    ]);
    let mut results = serde_json::Map::new();
    for m in &measured {
        let p = Percentiles::of(&m.run.hist);
        let qps = m.run.qps();
        let per_query = m.uncompress_ops as f64 / m.run.queries.max(1) as f64;
        t.row(vec![
            m.label.clone(),
            format!("{qps:.0}"),
            format!("{:.1}", 1e6 / qps.max(1.0)),
            us(p.p99_ns),
            format!("{:.2}x", plain_qps / qps.max(1.0)),
            format!("{per_query:.2}"),
            m.pool_reads.to_string(),
        ]);
        results.insert(
            m.key.clone(),
            json!({
                "qps": qps,
                "us_per_query": 1e6 / qps.max(1.0),
                "cost_vs_plain": plain_qps / qps.max(1.0),
                "latency": p,
                "uncompress_ops_per_query": per_query,
                "pool_reads": m.pool_reads,
            }),
        );
    }
    let text = format!(
        "\nthe seed's rows (964 bytes: sysbench c and pad, then 780 bytes of empty CHAR columns; \
         16 a 16 KiB page), {rows} rows, 1 thread, {:.0} s each; pool {:.1} MiB, then {:.1} MiB \
         (every KEY_BLOCK_SIZE=4 block, frames for a quarter of the pages); the seed: {:.0} qps \
         plain, {:.0} KEY_BLOCK_SIZE=4 (3.1x, ~95 us a query)\n{}",
        phase.as_secs_f64(),
        big_pool as f64 / f64::from(1u32 << 20),
        small_pool as f64 / f64::from(1u32 << 20),
        SEED_QPS.0,
        SEED_QPS.1,
        t.render()
    );
    results.insert(
        "settings".into(),
        json!({
            "rows": rows,
            "pages": pages,
            "pool_bytes_all_frames": big_pool,
            "pool_bytes_blocks": small_pool,
            "seed_qps": [SEED_QPS.0, SEED_QPS.1],
        }),
    );
    Ok((text, serde_json::Value::Object(results)))
}

/// Opens the database with `pool_bytes`, warms the pool with two scans of `name`, and runs one
/// thread of point selects on it.
fn measure(
    dir: &std::path::Path,
    name: &str,
    pool_bytes: usize,
    rows: u64,
    phase: Duration,
    label: &str,
    key: String,
) -> LabResult<Measured> {
    let db = Engine::open(dir, EngineOptions::default().buffer_pool_bytes(pool_bytes))?;
    let table = db.table(name)?;
    for _ in 0..2 {
        for row in db.range(&table, ..)? {
            row?;
        }
    }
    let before = db.status();
    let run = workload::point_selects(&db, &table, rows, 1, phase, label)?;
    let after = db.status();
    let ops = |s: &barracuda::EngineStatus| -> u64 {
        s.row_compression.cmp.iter().map(|r| r.uncompress_ops).sum()
    };
    db.close()?;
    Ok(Measured {
        label: label.to_owned(),
        key,
        run,
        uncompress_ops: ops(&after) - ops(&before),
        pool_reads: after.pool.pages_read - before.pool.pages_read,
    })
}
