//! Crash safety under `SIGKILL` (issue 8, "Crash tests"): a commit that returned survives a
//! kill, and a transaction is never seen in part.
//!
//! A child process (this test binary re-run on [`crash_child_process`]) opens a database with a
//! small buffer pool under `Durability::SyncEachCommit` and commits random transactions for
//! ever, from one or two writer threads (chosen by the seed). Writer `w`'s transaction `n`
//! writes 1–20 rows over three tables (keys of its own) plus its meta row holding `n`, and the
//! writer prints an ACK for it once `commit` returned. The parent kills the child at a random
//! moment (after 0–150 ACKs plus 0–20 ms: during open and recovery, inside a commit, between
//! commits), reopens the database — which recovers it — and checks, for every writer:
//! - its meta row says `k` with `last ACK <= k <= last ACK + 1`: no acknowledged commit is
//!   lost, and at most the one in flight is added;
//! - every table holds exactly what the transactions `1..=k` of each writer leave (rebuilt from
//!   the seed): no transaction partly visible, no row of a later or lost one;
//! - every B-tree is well formed (`check_table`);
//! - no row of the child's *open* transaction is left: a third thread keeps a transaction
//!   open at all times (rows written in place, some off-page, rolled back and begun again), so
//!   nearly every kill leaves one for the reopen to roll back (and the totals count them).
//!
//! Rounds continue on the same directory (the next child resumes after each writer's `k`), so
//! kills land both in a young database and in one that has outgrown the pool many times over
//! (pages are evicted and written while commits run). Several directories, each with its own
//! seed, run one after the other. With two writers one applies its transaction while the other
//! waits for its log sync, so the log file holds part of a transaction at many kills: recovery
//! must discard it.
//!
//! What breaks it: a commit acknowledged before its log is written; a page written before the
//! log that describes it (WAL); recovery that replays part of a transaction or stops short of a
//! committed one; a database that cannot be opened after a kill (`Error::UncleanShutdown`
//! included, as before the redo log). What it cannot see: a missing `fsync` — a killed
//! process's writes stay in the kernel's cache; power loss is simulated on `FaultyFileSystem`.
//!
//! Replay a failure with the seed and kill count it prints:
//! `BARRACUDA_CRASH_SEED=<seed> BARRACUDA_CRASH_KILLS=<n> cargo test -p barracuda --test
//! crash_kill -- --include-ignored --exact <test>`. `BARRACUDA_CRASH_KILLS` alone raises the
//! number of kill points.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use barracuda::{
    Codec, Durability, Engine, EngineOptions, Error, PageCompression, PageSize, RowFormat, Table,
    TableOptions,
};
use barracuda_testkit::crash::{
    self, ChildContext, ChildEnd, KillHarness, KillPlan, Round, SplitMix64, KILLS_ENV,
    REPLAY_SEED_ENV,
};
use common::chain;

/// The child test's name within this binary, for `--exact`.
const CHILD_TEST: &str = "crash_child_process";
const TABLES: [&str; 4] = ["crash_a", "crash_b", "crash_c", "crash_d"];

/// Table `i`'s options: the first plain, the next two page-compressed (zlib, then LZ4), so that
/// compressed images — shorter than a page, their slots' rest punched out — are written,
/// torn and recovered beside plain pages; the last row-compressed (`KEY_BLOCK_SIZE=2`), so
/// that blocks with modification logs, recompressions and splits forced by full blocks are
/// written and recovered too.
fn table_options(i: usize) -> TableOptions {
    let compression = match i {
        0 | 3 => None,
        1 => Some(PageCompression::Zlib { level: 1 }),
        _ => Some(PageCompression::Lz4),
    };
    let options = TableOptions::default().page_compression(compression);
    if i == 3 {
        options.row_format(RowFormat::Compressed {
            key_block_size: 2,
            algorithm: Codec::Zlib { level: 1 },
        })
    } else {
        options
    }
}
/// The table holding the meta rows.
const META: usize = 0;
/// Keys per table: bounded, so that deletes and overwrites hit existing rows; large enough that
/// the tables outgrow the pool (about 3 × 750 live rows of ~230 bytes against 128 KiB).
const KEYS_PER_TABLE: u64 = 1000;
const VALUE_LEN: (u64, u64) = (20, 400);
const ROWS_PER_TRANSACTION: (u64, u64) = (1, 20);
/// 4 KiB pages so that 400-byte rows split a leaf every ten or so rows; 32 frames (128 KiB) so
/// that pages are evicted and written while commits run from the first tens of transactions on
/// (today's engine already refuses an open as unclean after a kill at 37 commits).
const PAGE_SIZE: PageSize = PageSize::K4;
const POOL_PAGES: usize = 32;
const MAX_EXTRA_DELAY: Duration = Duration::from_millis(20);
/// A round after the first kills after `0..=b` ACKs for `b` drawn from these: a few, tens, or
/// over a hundred commits. Small enough that 60 kill points take well under a minute in a debug
/// build, where a commit costs milliseconds of CPU; the databases still reach hundreds of
/// transactions because rounds continue on them.
const MAX_ACKS: [u64; 4] = [3, 20, 20, 150];

fn options() -> EngineOptions {
    EngineOptions::default()
        .page_size(PAGE_SIZE)
        .buffer_pool_bytes(POOL_PAGES * PAGE_SIZE.bytes())
        .durability(Durability::SyncEachCommit)
}

/// Committing threads in the child of a run with `seed`: 1 or 2, from its lowest bit, so that a
/// replayed seed runs the same way. With two, one writer applies its transaction while the
/// other waits for its log sync, so the log file holds part of a transaction when the kill
/// lands: what recovery must discard.
fn writers(seed: u64) -> usize {
    1 + (seed & 1) as usize
}

/// The number an ACK carries: transaction `n` of writer `w` (so the harness's plain `ACK <n>`
/// serves any number of writers).
fn ack_number(writers: usize, w: usize, n: u64) -> u64 {
    n * writers as u64 + w as u64
}

/// The inverse of [`ack_number`]: `(writer, transaction)`.
fn split_ack(writers: usize, ack: u64) -> (usize, u64) {
    let writers = writers as u64;
    ((ack % writers) as usize, ack / writers)
}

/// Writer `w`'s meta row: the number of its last committed transaction.
fn meta_key(w: usize) -> Vec<u8> {
    format!("meta{w}").into_bytes()
}

/// One row a transaction writes: `None` deletes it.
struct Write {
    table: usize,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
}

/// Transaction `n` of writer `w` in the run with `seed`: a function of these only, so the
/// parent rebuilds what the child wrote. Writers have disjoint keys (`w<w>k<i>`), so the tables
/// do not depend on how their commits interleaved. The meta row comes last (a later write of a
/// key in one transaction wins, in the engine as in the model).
fn transaction(seed: u64, w: usize, n: u64) -> Vec<Write> {
    let mut rng = SplitMix64::stream(seed, (n << 8) | w as u64);
    let rows = rng.range_inclusive(ROWS_PER_TRANSACTION.0, ROWS_PER_TRANSACTION.1);
    let mut writes: Vec<Write> = (0..rows)
        .map(|row| {
            let table = rng.below(TABLES.len() as u64) as usize;
            let key = format!("w{w}k{:05}", rng.below(KEYS_PER_TABLE)).into_bytes();
            // One write in four deletes.
            let value = (rng.below(4) != 0).then(|| {
                let len = rng.range_inclusive(VALUE_LEN.0, VALUE_LEN.1) as usize;
                value(w, n, row, len, &mut rng)
            });
            Write { table, key, value }
        })
        .collect();
    writes.push(Write {
        table: META,
        key: meta_key(w),
        value: Some(n.to_le_bytes().to_vec()),
    });
    writes
}

/// A value that names its origin (`<w>/<n>.<row>:`, then random bytes), so that a mismatch says
/// which transaction wrote what the database holds.
fn value(w: usize, n: u64, row: u64, len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut value = format!("{w}/{n}.{row}:").into_bytes();
    let origin = value.len().min(len);
    value.resize(len, 0);
    if let Some(rest) = value.get_mut(origin..) {
        rng.fill_bytes(rest);
    }
    value
}

/// What a row's value says about where it came from, for failure messages.
fn origin(key: &[u8], value: &[u8]) -> String {
    let name = String::from_utf8_lossy(key);
    if key.starts_with(b"meta") {
        if let Ok(bytes) = <[u8; 8]>::try_from(value) {
            return format!("{name} = {}", u64::from_le_bytes(bytes));
        }
    }
    let written_by = value
        .iter()
        .position(|&b| b == b':')
        .and_then(|end| std::str::from_utf8(value.get(..end)?).ok())
        .and_then(|tag| tag.split_once('/'))
        .and_then(|(w, rest)| Some((w, rest.split_once('.')?)))
        .map_or_else(
            || "of unknown origin".to_owned(),
            |(w, (n, row))| format!("from writer {w}'s transaction {n} row {row}"),
        );
    format!("{name} = {} bytes {written_by}", value.len())
}

/// `1..=k` per writer, for messages.
fn describe(committed: &[u64]) -> String {
    let ranges: Vec<String> = committed
        .iter()
        .enumerate()
        .map(|(w, k)| format!("writer {w}: 1..={k}"))
        .collect();
    ranges.join(", ")
}

/// The tables after transactions `1..=applied[w]` of each writer `w`.
struct Model {
    seed: u64,
    applied: Vec<u64>,
    tables: Vec<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl Model {
    fn new(seed: u64) -> Self {
        Self {
            seed,
            applied: vec![0; writers(seed)],
            tables: vec![BTreeMap::new(); TABLES.len()],
        }
    }

    /// Moves the model to exactly transactions `1..=committed[w]` of each writer (from scratch
    /// if one is behind it).
    fn advance_to(&mut self, committed: &[u64]) {
        if committed.iter().zip(&self.applied).any(|(k, a)| k < a) {
            *self = Self::new(self.seed);
        }
        for (w, &k) in committed.iter().enumerate() {
            while self.applied[w] < k {
                self.applied[w] += 1;
                for write in transaction(self.seed, w, self.applied[w]) {
                    let Some(table) = self.tables.get_mut(write.table) else {
                        continue; // `transaction` draws tables below TABLES.len()
                    };
                    match write.value {
                        Some(value) => table.insert(write.key, value),
                        None => table.remove(&write.key),
                    };
                }
            }
        }
    }
}

/// The number in writer `w`'s meta row; 0 before its first commit.
fn read_meta(db: &Engine, meta: &Table, w: usize) -> Result<u64, String> {
    let value = db
        .get(meta, &meta_key(w))
        .map_err(|e| format!("reading the meta row of writer {w}: {}", chain(&e)))?;
    match value {
        None => Ok(0),
        Some(bytes) => <[u8; 8]>::try_from(bytes.as_slice())
            .map(u64::from_le_bytes)
            .map_err(|_| {
                format!(
                    "the meta row of writer {w} holds {} bytes, not 8",
                    bytes.len()
                )
            }),
    }
}

/// The child process of the crash tests, not a test by itself. The parent runs this binary
/// with `--exact crash_child_process` and the crash-test variables set; the child then commits
/// transactions in the given directory until it is killed. In a normal `cargo test` the
/// variables are absent and it returns at once, so it passes: libtest cannot hide a test from
/// the list and still run it by name.
#[test]
fn crash_child_process() {
    let Some(context) = ChildContext::from_env().expect("crash-test child environment") else {
        return;
    };
    let db = Engine::open(&context.dir, options())
        .unwrap_or_else(|e| panic!("child: opening {}: {}", context.dir.display(), chain(&e)));
    // Created on the first run; a kill between two creations leaves the rest to the next child.
    let tables: Vec<Table> = TABLES
        .iter()
        .enumerate()
        .map(|(i, name)| match db.table(name) {
            Ok(table) => table,
            Err(Error::NoSuchTable(_)) => db
                .create_table(name, table_options(i))
                .unwrap_or_else(|e| panic!("child: creating table {name}: {}", chain(&e))),
            Err(e) => panic!("child: opening table {name}: {}", chain(&e)),
        })
        .collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for w in 0..writers(context.seed) {
            let (db, tables, stop) = (&db, &tables, &stop);
            scope.spawn(move || run_writer(db, tables, context.seed, w, stop));
        }
        let (db, tables, stop) = (&db, &tables, &stop);
        scope.spawn(move || run_holdout(db, tables, stop));
    });
}

/// A transaction that is always open in the child: it writes rows of keys no writer uses
/// (`open<i>`, some off-page, some written twice, some deleted again) a little at a time and
/// rolls them back, over and over. Nearly every kill finds it open with rows written in place,
/// which the next open must roll back: a row of it found after recovery is a row the model
/// does not have.
fn run_holdout(db: &Engine, tables: &[Table], stop: &AtomicBool) {
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut tx = db.begin();
        for i in 0..40u64 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let table = &tables[(i % tables.len() as u64) as usize];
            let key = format!("open{}", i % 25).into_bytes();
            let len = if i % 7 == 0 {
                6000
            } else {
                100 + (i * 37 + round) as usize % 300
            };
            let written = if i % 11 == 10 {
                tx.delete(table, &key)
            } else {
                tx.put(table, &key, &vec![b'o'; len])
            };
            written
                .unwrap_or_else(|e| panic!("child: the open transaction's write: {}", chain(&e)));
            std::thread::sleep(Duration::from_micros(500));
        }
        tx.rollback()
            .unwrap_or_else(|e| panic!("child: rolling back the open transaction: {}", chain(&e)));
        round += 1;
    }
}

/// Writer `w` of the child: commits its transactions from where its meta row says, printing an
/// ACK after each, until the parent is gone or another writer failed.
fn run_writer(db: &Engine, tables: &[Table], seed: u64, w: usize, stop: &AtomicBool) {
    // A writer that panics stops the others, so the child exits (and the parent sees it)
    // instead of running on with one writer.
    struct StopOthersOnPanic<'a>(&'a AtomicBool);
    impl Drop for StopOthersOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.store(true, Ordering::Relaxed);
            }
        }
    }
    let _guard = StopOthersOnPanic(stop);
    let writers = writers(seed);
    let mut n = read_meta(db, &tables[META], w).unwrap_or_else(|e| panic!("child: {e}")) + 1;
    while !stop.load(Ordering::Relaxed) {
        let mut tx = db.begin();
        let writes = transaction(seed, w, n);
        if n.is_multiple_of(2) {
            // Every other transaction stages its puts with `put_many`: each table's writes in
            // their order, a run of puts at a time (a delete ends a run). Tables hold disjoint
            // rows, and the transaction commits whole, so only each table's order matters.
            for (i, table) in tables.iter().enumerate() {
                let mine: Vec<&Write> = writes.iter().filter(|x| x.table == i).collect();
                let mut at = 0;
                while let Some(write) = mine.get(at) {
                    let run = mine
                        .get(at..)
                        .unwrap_or_default()
                        .iter()
                        .take_while(|x| x.value.is_some())
                        .count();
                    let staged = if run == 0 {
                        at += 1;
                        tx.delete(table, &write.key)
                    } else {
                        let rows = mine.get(at..at + run).unwrap_or_default().iter();
                        at += run;
                        tx.put_many(
                            table,
                            rows.filter_map(|x| Some((&x.key[..], x.value.as_deref()?))),
                        )
                    };
                    staged.unwrap_or_else(|e| {
                        panic!("child: staging writer {w}'s {n}: {}", chain(&e))
                    });
                }
            }
        } else {
            for write in &writes {
                let table = &tables[write.table];
                match &write.value {
                    Some(value) => tx.put(table, &write.key, value),
                    None => tx.delete(table, &write.key),
                }
                .unwrap_or_else(|e| panic!("child: staging writer {w}'s {n}: {}", chain(&e)));
            }
        }
        tx.commit()
            .unwrap_or_else(|e| panic!("child: committing writer {w}'s {n}: {}", chain(&e)));
        if crash::ack(ack_number(writers, w, n)).is_err() {
            stop.store(true, Ordering::Relaxed); // the parent is gone: nobody will kill us
        }
        n += 1;
    }
}

/// What the parent found after one kill.
struct Checked {
    /// Committed transactions of each writer.
    committed: Vec<u64>,
    /// Writers whose unacknowledged in-flight transaction turned out committed.
    in_flight_found: usize,
    /// Transactions the reopen rolled back.
    rolled_back: u64,
}

/// The parent's checks after one kill. `before` is what the previous round found (and left
/// cleanly closed).
fn check_round(
    dir: &Path,
    round: &Round,
    before: &[u64],
    model: &mut Model,
) -> Result<Checked, String> {
    if round.end != ChildEnd::Killed {
        return Err("the child did not run until it was killed".into());
    }
    // A writer that failed just before the kill is not seen in the exit status.
    if round.stderr_tail.contains("panicked") {
        return Err("the child panicked before it was killed".into());
    }
    let mut acked = before.to_vec();
    for &ack in &round.acked {
        let (w, n) = split_ack(before.len(), ack);
        if n != acked[w] + 1 {
            return Err(format!(
                "writer {w} acknowledged {n} where {} was due: it did not resume after its \
                 last committed transaction",
                acked[w] + 1
            ));
        }
        acked[w] = n;
    }
    let db = match Engine::open(dir, options().create_if_missing(false)) {
        Ok(db) => db,
        // Killed before the database existed: nothing was committed, nothing to check.
        Err(Error::NotFound { .. }) if acked.iter().all(|&a| a == 0) => {
            return Ok(Checked {
                committed: acked,
                in_flight_found: 0,
                rolled_back: 0,
            });
        }
        Err(e) => {
            return Err(format!(
                "reopening the killed database (acknowledged {}) failed: {}",
                describe(&acked),
                chain(&e)
            ))
        }
    };
    let rolled_back = db.status().mvcc.recovered_rollbacks;
    let checked = check_database(&db, &acked, model);
    let closed = db.close();
    let committed = checked?;
    closed.map_err(|e| format!("closing after the checks failed: {}", chain(&e)))?;
    let in_flight_found = committed.iter().zip(&acked).filter(|(k, a)| k > a).count();
    Ok(Checked {
        committed,
        in_flight_found,
        rolled_back,
    })
}

fn check_database(db: &Engine, acked: &[u64], model: &mut Model) -> Result<Vec<u64>, String> {
    let mut tables = Vec::new();
    for name in TABLES {
        tables.push(match db.table(name) {
            Ok(table) => Some(table),
            // Killed while the first child created the tables.
            Err(Error::NoSuchTable(_)) => None,
            Err(e) => return Err(format!("opening table {name}: {}", chain(&e))),
        });
    }
    let mut committed = Vec::new();
    for (w, &acked) in acked.iter().enumerate() {
        let k = match &tables[META] {
            Some(meta) => read_meta(db, meta, w)?,
            None => 0,
        };
        if k < acked {
            return Err(format!(
                "writer {w}'s transaction {acked} was acknowledged, but the database holds only \
                 its transactions 1..={k}: acknowledged commits were lost"
            ));
        }
        if k > acked + 1 {
            return Err(format!(
                "the database holds writer {w}'s transactions 1..={k}, but only 1..={acked} \
                 were acknowledged and at most one more was in flight"
            ));
        }
        committed.push(k);
    }
    model.advance_to(&committed);
    for ((name, table), want) in TABLES.iter().zip(&tables).zip(&model.tables) {
        let Some(table) = table else {
            if committed.iter().all(|&k| k == 0) {
                continue;
            }
            return Err(format!(
                "table {name} is missing although transactions committed ({})",
                describe(&committed)
            ));
        };
        db.check_table(table)
            .map_err(|e| format!("check_table({name}) after recovery: {}", chain(&e)))?;
        compare(db, table, want, &committed)?;
    }
    Ok(committed)
}

/// Whether `table` holds exactly `want`; otherwise the first difference, with the origin of
/// both rows.
fn compare(
    db: &Engine,
    table: &Table,
    want: &BTreeMap<Vec<u8>, Vec<u8>>,
    committed: &[u64],
) -> Result<(), String> {
    let name = table.name();
    let mut got = db
        .range(table, ..)
        .map_err(|e| format!("scanning table {name}: {}", chain(&e)))?;
    let mut want = want.iter();
    let mut rows = 0usize;
    loop {
        let found = got
            .next()
            .transpose()
            .map_err(|e| format!("scanning table {name} after {rows} rows: {}", chain(&e)))?;
        let expected = want.next();
        let difference = match (&found, expected) {
            (None, None) => return Ok(()),
            (Some((fk, fv)), Some((wk, wv))) if fk == wk && fv == wv => {
                rows += 1;
                continue;
            }
            (Some((fk, fv)), Some((wk, wv))) if fk == wk => {
                format!("found {}, expected {}", origin(fk, fv), origin(wk, wv))
            }
            (Some((fk, fv)), Some((wk, _))) if fk < wk => {
                format!("found {}, which the model does not have", origin(fk, fv))
            }
            (Some(_) | None, Some((wk, wv))) => {
                format!("row {} is missing", origin(wk, wv))
            }
            (Some((fk, fv)), None) => {
                format!("found {}, which the model does not have", origin(fk, fv))
            }
        };
        return Err(format!(
            "table {name} is not what the committed transactions ({}) leave (row {rows}): \
             {difference}",
            describe(committed)
        ));
    }
}

#[derive(Default)]
struct Totals {
    kills: usize,
    acks: usize,
    kills_after_an_ack: usize,
    max_transactions: u64,
    in_flight_found: usize,
    rolled_back: u64,
    /// Spent running children, and reopening and checking after them.
    child_time: Duration,
    check_time: Duration,
}

/// Runs `rounds` kill points on one fresh directory with `seed`.
fn run_directory(
    harness: &KillHarness,
    seed: u64,
    rounds: usize,
    totals: &mut Totals,
) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("creating a directory: {e}"))?;
    let context = ChildContext {
        dir: tmp.path().to_owned(),
        seed,
    };
    // Transactions use streams 1.., the kill plans this one.
    let mut plans = SplitMix64::stream(seed, u64::MAX);
    let mut model = Model::new(seed);
    let mut committed = vec![0; writers(seed)];
    for round_no in 0..rounds {
        // The first round kills a young database (even during its creation); later ones pick
        // a bound from MAX_ACKS.
        let max_acks = if round_no == 0 {
            5
        } else {
            MAX_ACKS[plans.below(MAX_ACKS.len() as u64) as usize]
        };
        let plan = KillPlan::random(&mut plans, max_acks, MAX_EXTRA_DELAY);
        let round = harness.run(&context, plan).map_err(|e| {
            format!(
                "seed {seed}, round {}: the harness failed: {e}",
                round_no + 1
            )
        })?;
        let checking = Instant::now();
        let checked = check_round(&context.dir, &round, &committed, &mut model);
        totals.child_time += round.elapsed;
        totals.check_time += checking.elapsed();
        match checked {
            Ok(checked) => {
                totals.kills += 1;
                totals.acks += round.acked.len();
                totals.kills_after_an_ack += usize::from(!round.acked.is_empty());
                totals.in_flight_found += checked.in_flight_found;
                totals.rolled_back += checked.rolled_back;
                totals.max_transactions =
                    totals.max_transactions.max(checked.committed.iter().sum());
                committed = checked.committed;
            }
            Err(why) => {
                let kept = tmp.keep();
                return Err(format!(
                    "seed {seed}, round {} of {rounds}: {why}\n{}\nthe database is kept in {}",
                    round_no + 1,
                    round.describe(),
                    kept.display()
                ));
            }
        }
    }
    Ok(())
}

/// The whole test: `default_kills` kill points (or [`KILLS_ENV`]) over `directories` seeds (or
/// the one in [`REPLAY_SEED_ENV`]).
fn run_crash_test(test: &str, default_kills: usize, directories: usize) {
    let start = Instant::now();
    let kills = crash::kill_points(default_kills).expect("kill points");
    let rounds = kills.div_ceil(directories);
    let seeds: Vec<u64> = if let Some(seed) = crash::replay_seed().expect("replay seed") {
        vec![seed]
    } else {
        let base = crash::entropy_seed();
        // Alternate one and two writers (the seed's lowest bit, see `writers`).
        (0..directories as u64)
            .map(|d| (SplitMix64::stream(base, d).next_u64() & !1) | (d & 1))
            .collect()
    };
    println!("crash test {test}: {rounds} kill points on each of the seeds {seeds:?}");
    let harness = KillHarness::new(CHILD_TEST);
    let mut totals = Totals::default();
    for &seed in &seeds {
        if let Err(failure) = run_directory(&harness, seed, rounds, &mut totals) {
            panic!(
                "{failure}\nreplay: {REPLAY_SEED_ENV}={seed} {KILLS_ENV}={kills} cargo test -p \
                 barracuda --test crash_kill -- --include-ignored --exact {test}"
            );
        }
    }
    println!(
        "crash test {test}: {} kill points, {} ACKs, {} kills after at least one ACK, \
         in-flight commits found committed: {}, open transactions rolled back at reopen: {}, \
         up to {} transactions in one database, {:.1} s ({:.1} s in children, {:.1} s \
         reopening and checking)",
        totals.kills,
        totals.acks,
        totals.kills_after_an_ack,
        totals.in_flight_found,
        totals.rolled_back,
        totals.max_transactions,
        start.elapsed().as_secs_f64(),
        totals.child_time.as_secs_f64(),
        totals.check_time.as_secs_f64()
    );
    // Guards against a run that checked nothing (a child that never got to commit).
    assert!(
        totals.max_transactions > 0,
        "no transaction was ever committed: the child never got to work"
    );
    // The child always has a transaction open: reopens must have rolled some back.
    assert!(
        totals.rolled_back > 0,
        "no reopen rolled back an open transaction"
    );
}

#[test]
fn sigkill_loses_no_acknowledged_commit_and_shows_no_partial_transaction() {
    run_crash_test(
        "sigkill_loses_no_acknowledged_commit_and_shows_no_partial_transaction",
        60,
        3,
    );
}

#[test]
#[ignore = "thousands of kill points (about five minutes): run it when commit or recovery changes"]
fn sigkill_thousands_of_times() {
    run_crash_test("sigkill_thousands_of_times", 2000, 16);
}
