//! The compressed half of `lab free-list-stalls` (issue 12; J.-F. Gagné's part 2, "Free Page
//! Consumption by InnoDB Table Compression"): the same rows in a `ROW_FORMAT=COMPRESSED
//! KEY_BLOCK_SIZE=4` table, with a pool that holds every compressed block but only some of the
//! uncompressed frames. A select on a compressed-only page needs a free frame to decompress
//! into and no I/O at all; how a thread gets that frame is again the free-page policy's
//! business, and with `Backoff` the seed saw 0.76 s stalls without any I/O.

use barracuda::{Engine, EngineOptions, FreePagePolicy, RowFormat, TableOptions};

use super::Context;
use crate::workload::{self, SelectRun};
use crate::LabResult;

/// The compressed table's name.
pub(super) const TABLE: &str = "sbtest1_zip4";
/// Its key block size (KiB).
const KEY_BLOCK_SIZE: u8 = 4;

/// One policy's run on the compressed table.
pub(super) struct ZipRun {
    pub(super) policy: FreePagePolicy,
    pub(super) run: SelectRun,
    pub(super) status: barracuda::EngineStatus,
    /// Decompressions during the run (INNODB_CMP's `uncompress_ops`).
    pub(super) uncompress_ops: u64,
}

/// What the compressed runs were set up with.
pub(super) struct ZipSetup {
    /// Bytes of the compressed table's blocks (its index pages × the key block size).
    pub(super) block_bytes: u64,
    /// The pool: the blocks, and frames for about a quarter of the pages.
    pub(super) pool_bytes: usize,
}

/// Loads the rows into the compressed table (same database), then runs the point selects on
/// it once per policy, each on a freshly opened engine whose pool was first warmed by a scan
/// (the blocks of every page in the pool).
pub(super) fn run(ctx: &Context) -> LabResult<(ZipSetup, Vec<ZipRun>)> {
    let (pages, block_bytes) = load(ctx)?;
    let page_bytes = barracuda::PageSize::K16.bytes() as u64;
    // Every block, plus frames for a quarter of the pages: the selects keep decompressing.
    let pool_bytes =
        usize::try_from(block_bytes + (pages / 4).max(64) * page_bytes).unwrap_or(usize::MAX);
    let setup = ZipSetup {
        block_bytes,
        pool_bytes,
    };
    let mut runs = Vec::new();
    for policy in [
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
        FreePagePolicy::Eager,
    ] {
        let options = EngineOptions::default()
            .buffer_pool_bytes(pool_bytes)
            .free_page_policy(policy);
        let db = Engine::open(&ctx.dir, options)?;
        let table = db.table(TABLE)?;
        for row in db.range(&table, ..)? {
            row?;
        }
        let before = uncompress_ops(&db.status());
        let run = workload::point_selects(
            &db,
            &table,
            ctx.rows,
            ctx.threads,
            ctx.phase,
            &format!("point selects, KEY_BLOCK_SIZE=4, {policy}"),
        )?;
        let status = db.status();
        let uncompress_ops = uncompress_ops(&status) - before;
        db.close()?;
        runs.push(ZipRun {
            policy,
            run,
            status,
            uncompress_ops,
        });
    }
    Ok((setup, runs))
}

/// Decompressions so far, every block size.
fn uncompress_ops(status: &barracuda::EngineStatus) -> u64 {
    status
        .row_compression
        .cmp
        .iter()
        .map(|r| r.uncompress_ops)
        .sum()
}

/// Loads the rows into [`TABLE`]; returns its index pages and their blocks' bytes.
fn load(ctx: &Context) -> LabResult<(u64, u64)> {
    let db = Engine::open(
        &ctx.dir,
        EngineOptions::default().buffer_pool_bytes(128 << 20),
    )?;
    let table = db.create_table(
        TABLE,
        TableOptions::default().row_format(RowFormat::compressed(KEY_BLOCK_SIZE)),
    )?;
    let mut id = 0;
    while id < ctx.rows {
        let end = (id + 1000).min(ctx.rows);
        let mut tx = db.begin();
        for k in id..end {
            tx.put(&table, &workload::key(k), &workload::value(k))?;
        }
        tx.commit()?;
        id = end;
    }
    let tree = db.check_table(&table)?;
    if tree.records != ctx.rows {
        return Err(format!(
            "engine bug: {} records in the compressed tree after loading {}",
            tree.records, ctx.rows
        )
        .into());
    }
    let pages = tree.leaf_pages + tree.internal_pages;
    db.close()?;
    Ok((pages, pages * (u64::from(KEY_BLOCK_SIZE) << 10)))
}
