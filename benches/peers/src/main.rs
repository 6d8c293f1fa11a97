//! `barracuda-peers`: the same workloads run against Barracuda and, behind cargo features, LMDB
//! (heed), redb and RocksDB; one table of figures per run (median over rounds), Barracuda's
//! ratios against its targets, and optionally a JSON file of every figure.
//!
//! Rounds are interleaved: in each round every engine runs all its phases, each engine in fresh
//! directories, so that a slow spell of the machine lands on every engine alike.
//!
//! ```sh
//! cargo run --release -p barracuda-peers --features all -- --quick
//! ```

mod engines;
mod report;
mod workload;

use report::{judge, loadavg, median_figures, table, thousands, EngineReport, PhaseReport, Report};

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, ValueEnum};
use rand::Rng;
use serde::Serialize;

use engines::{BoxError, EngineKind, OpenSpec, PeerDb, Result};
use workload::{Figures, ROW_LEN, SCAN_ROWS, VALUE_LEN};

/// Barracuda beside LMDB, redb and RocksDB: loads, point gets, short scans and durable commits.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Rows to load (8-byte keys, 180-byte values). Default 1,000,000 (--quick: 100,000).
    #[arg(long)]
    rows: Option<u64>,
    /// Reader threads of the timed read phases (the commit phases have their own: 1 and 16).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seconds of each timed read phase. Default 10 (--quick: 2).
    #[arg(long)]
    seconds: Option<f64>,
    /// Rounds; every figure is the median over them. Default 3 (--quick: 1).
    #[arg(long)]
    rounds: Option<usize>,
    /// Engines, comma-separated. Default: every engine compiled into this build.
    #[arg(long, value_delimiter = ',')]
    engines: Option<Vec<EngineKind>>,
    /// Phases, comma-separated. Default: all.
    #[arg(long, value_delimiter = ',')]
    phases: Option<Vec<Phase>>,
    /// A smoke run: 100,000 rows, 2 s phases, 1 round (explicit options still win).
    #[arg(long)]
    quick: bool,
    /// Also write every figure (each round and the medians) to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where to make the databases (a fresh subdirectory, removed at the end). Default: the
    /// system's temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the random load order and the readers' random keys.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// A workload phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum, Serialize)]
enum Phase {
    /// Rows loaded in key order, 1,000 a transaction, no sync per transaction: rows/s.
    #[value(name = "seq_load")]
    #[serde(rename = "seq_load")]
    SeqLoad,
    /// The same rows in a random order (fixed seed) into a fresh database: rows/s.
    #[value(name = "random_load")]
    #[serde(rename = "random_load")]
    RandomLoad,
    /// The rows in key order into a fresh database by each engine's own bulk path
    /// (`PeerDb::bulk_load`): rows/s.
    #[value(name = "bulk_load")]
    #[serde(rename = "bulk_load")]
    BulkLoad,
    /// Uniformly random point gets, cache ≥ data (warmed by one full scan): ops/s, latencies.
    #[value(name = "get_warm")]
    #[serde(rename = "get_warm")]
    GetWarm,
    /// Uniformly random point gets after reopening with cache = data / 4 (the data in the OS
    /// page cache): ops/s, latencies.
    #[value(name = "get_quarter")]
    #[serde(rename = "get_quarter")]
    GetQuarter,
    /// Forward scans of 100 rows from a random key, cache ≥ data: scans/s, latencies.
    #[value(name = "scan_100")]
    #[serde(rename = "scan_100")]
    Scan100,
    /// One-row transactions, each durable before its commit returns, from one thread into a
    /// fresh database (random keys of the load's range): commits/s, latencies.
    #[value(name = "commit_1")]
    #[serde(rename = "commit_1")]
    Commit1,
    /// The same from 16 threads at once: what group commit makes of one sync for many.
    #[value(name = "commit_16")]
    #[serde(rename = "commit_16")]
    Commit16,
}

impl Phase {
    /// Every phase, in running order.
    const ALL: [Phase; 8] = [
        Self::SeqLoad,
        Self::RandomLoad,
        Self::BulkLoad,
        Self::GetWarm,
        Self::GetQuarter,
        Self::Scan100,
        Self::Commit1,
        Self::Commit16,
    ];

    /// Its name on the command line, in the table and in the JSON file.
    fn name(self) -> &'static str {
        match self {
            Self::SeqLoad => "seq_load",
            Self::RandomLoad => "random_load",
            Self::BulkLoad => "bulk_load",
            Self::GetWarm => "get_warm",
            Self::GetQuarter => "get_quarter",
            Self::Scan100 => "scan_100",
            Self::Commit1 => "commit_1",
            Self::Commit16 => "commit_16",
        }
    }

    /// What its rate counts.
    fn unit(self) -> &'static str {
        match self {
            Self::SeqLoad | Self::RandomLoad | Self::BulkLoad => "rows/s",
            Self::GetWarm | Self::GetQuarter => "ops/s",
            Self::Scan100 => "scans/s",
            Self::Commit1 | Self::Commit16 => "commits/s",
        }
    }

    /// The committing threads of a durable-commit phase; `None` for the others.
    fn committers(self) -> Option<usize> {
        match self {
            Self::Commit1 => Some(1),
            Self::Commit16 => Some(16),
            _ => None,
        }
    }

    /// Whether it reads the sequentially loaded database.
    fn reads(self) -> bool {
        matches!(self, Self::GetWarm | Self::GetQuarter | Self::Scan100)
    }
}

/// The run's settings, after `--quick` and the defaults.
#[derive(Clone, Debug, Serialize)]
struct Config {
    rows: u64,
    threads: usize,
    seconds: f64,
    rounds: usize,
    engines: Vec<EngineKind>,
    phases: Vec<Phase>,
    seed: u64,
    /// Bytes of the rows' keys and values.
    data_bytes: usize,
    /// Cache of the load phases, `get_warm` and `scan_100`: 2 × data, rounded up to a MiB.
    cache_bytes_large: usize,
    /// Cache of `get_quarter`: data / 4 (at least 1 MiB: engines have minimums).
    cache_bytes_quarter: usize,
}

impl Config {
    /// Resolves `args`, refusing engines this build lacks.
    fn from_args(args: &Args) -> Result<Self> {
        let rows = args
            .rows
            .unwrap_or(if args.quick { 100_000 } else { 1_000_000 });
        let seconds = args.seconds.unwrap_or(if args.quick { 2.0 } else { 10.0 });
        let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 });
        if rows == 0 || rounds == 0 || seconds.is_nan() || seconds <= 0.0 {
            return Err("--rows, --rounds and --seconds must be positive".into());
        }
        let engines = match &args.engines {
            Some(list) => {
                if let Some(missing) = list.iter().find(|e| !e.compiled_in()) {
                    return Err(engines::not_compiled_in(*missing).into());
                }
                dedup(list)
            }
            None => EngineKind::value_variants()
                .iter()
                .copied()
                .filter(|e| e.compiled_in())
                .collect(),
        };
        let phases = match &args.phases {
            Some(list) => {
                let mut list = dedup(list);
                list.sort_unstable();
                list
            }
            None => Phase::ALL.to_vec(),
        };
        let data_bytes = usize::try_from(rows)?.saturating_mul(ROW_LEN);
        Ok(Self {
            rows,
            threads: args.threads.max(1),
            seconds,
            rounds,
            engines,
            phases,
            seed: args.seed,
            data_bytes,
            cache_bytes_large: data_bytes.saturating_mul(2).next_multiple_of(1 << 20),
            cache_bytes_quarter: (data_bytes / 4).max(1 << 20),
        })
    }

    /// How to open a database in `dir` with `cache_bytes` of cache, without a sync per commit.
    fn spec<'p>(&self, dir: &'p Path, cache_bytes: usize) -> OpenSpec<'p> {
        OpenSpec {
            dir,
            cache_bytes,
            data_bytes: self.data_bytes,
            durable: false,
        }
    }

    /// Whether `phase` is selected.
    fn has(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }

    /// A timed phase's length.
    fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.seconds)
    }
}

/// `list` without repeats, in its order.
fn dedup<T: PartialEq + Copy>(list: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for x in list {
        if !out.contains(x) {
            out.push(*x);
        }
    }
    out
}

/// A directory removed (with everything in it) when this goes out of scope, errors or not.
struct TempDir(PathBuf);

impl TempDir {
    /// Creates `path`, which must not exist yet.
    fn create(path: PathBuf) -> Result<Self> {
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new("/")))?;
        std::fs::create_dir(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("warning: could not remove {}: {e}", self.0.display());
        }
    }
}

/// One engine's figures of one round, by phase.
type RoundFigures = BTreeMap<Phase, Figures>;

/// Runs every selected phase of `kind` once, in fresh directories under `base`.
fn run_engine(kind: EngineKind, cfg: &Config, round: usize, base: &Path) -> Result<RoundFigures> {
    let mut out = RoundFigures::new();
    let seed = cfg.seed ^ (round as u64).wrapping_mul(0x0100_0000_01b3);
    let report = |phase: Phase, f: &Figures| {
        let lat = match (f.p50_us, f.p99_us, f.p999_us) {
            (Some(a), Some(b), Some(c)) => {
                format!("  p50 {a:.1} µs  p99 {b:.1} µs  p99.9 {c:.1} µs")
            }
            _ => String::new(),
        };
        eprintln!(
            "  round {} {:<9} {:<11} {:>12} {}{lat}",
            round + 1,
            kind.name(),
            phase.name(),
            thousands(f.per_s),
            phase.unit()
        );
    };

    // The read phases read the sequentially loaded database (loaded untimed when seq_load itself
    // is not selected).
    let needs_seq = cfg.has(Phase::SeqLoad) || cfg.phases.iter().any(|p| p.reads());
    let seq_dir = TempDir::create(base.join(format!("r{}-{}-seq", round + 1, kind.name())))?;
    if needs_seq {
        let db = engines::open(kind, cfg.spec(&seq_dir.0, cfg.cache_bytes_large))?;
        let figures = workload::load(db.as_ref(), 0..cfg.rows)?;
        if cfg.has(Phase::SeqLoad) {
            report(Phase::SeqLoad, &figures);
            out.insert(Phase::SeqLoad, figures);
        }
        db.settle()?;
        db.close()?;
    }

    if cfg.has(Phase::RandomLoad) {
        let dir = TempDir::create(base.join(format!("r{}-{}-random", round + 1, kind.name())))?;
        let order = workload::permutation(cfg.rows, cfg.seed);
        let db = engines::open(kind, cfg.spec(&dir.0, cfg.cache_bytes_large))?;
        let figures = workload::load(db.as_ref(), order.into_iter())?;
        report(Phase::RandomLoad, &figures);
        out.insert(Phase::RandomLoad, figures);
        db.close()?;
    }

    if cfg.has(Phase::BulkLoad) {
        let dir = TempDir::create(base.join(format!("r{}-{}-bulk", round + 1, kind.name())))?;
        let db = engines::open(kind, cfg.spec(&dir.0, cfg.cache_bytes_large))?;
        let figures = workload::bulk_load(db.as_ref(), cfg.rows)?;
        report(Phase::BulkLoad, &figures);
        out.insert(Phase::BulkLoad, figures);
        db.close()?;
    }

    for phase in [Phase::Commit1, Phase::Commit16] {
        let Some(threads) = phase.committers().filter(|_| cfg.has(phase)) else {
            continue;
        };
        let dir =
            TempDir::create(base.join(format!("r{}-{}-{}", round + 1, kind.name(), phase.name())))?;
        let spec = OpenSpec {
            durable: true,
            ..cfg.spec(&dir.0, cfg.cache_bytes_large)
        };
        let db = engines::open(kind, spec)?;
        let figures = durable_commits(db.as_ref(), cfg, threads, seed)?;
        report(phase, &figures);
        out.insert(phase, figures);
        db.close()?;
    }

    if cfg.has(Phase::GetWarm) || cfg.has(Phase::Scan100) {
        let db = engines::open(kind, cfg.spec(&seq_dir.0, cfg.cache_bytes_large))?;
        warm_by_scan(db.as_ref(), cfg.rows)?;
        if cfg.has(Phase::GetWarm) {
            let figures = gets(db.as_ref(), cfg, seed)?;
            report(Phase::GetWarm, &figures);
            out.insert(Phase::GetWarm, figures);
        }
        if cfg.has(Phase::Scan100) {
            let figures = scans(db.as_ref(), cfg, seed)?;
            report(Phase::Scan100, &figures);
            out.insert(Phase::Scan100, figures);
        }
        db.close()?;
    }

    if cfg.has(Phase::GetQuarter) {
        let db = engines::open(kind, cfg.spec(&seq_dir.0, cfg.cache_bytes_quarter))?;
        // Untimed: random gets until the cache holds its steady-state share of the data.
        let warm = cfg
            .duration()
            .mul_f64(0.2)
            .clamp(Duration::from_millis(500), Duration::from_secs(2));
        timed_gets(
            db.as_ref(),
            cfg.rows,
            cfg.threads,
            warm,
            seed.wrapping_add(1),
        )?;
        let figures = gets(db.as_ref(), cfg, seed)?;
        report(Phase::GetQuarter, &figures);
        out.insert(Phase::GetQuarter, figures);
        db.close()?;
    }
    drop(seq_dir);
    Ok(out)
}

/// Reads every row once in key order (untimed), checking the count.
fn warm_by_scan(db: &dyn PeerDb, rows: u64) -> Result<()> {
    let mut bytes = 0_usize;
    let seen = db.scan(&workload::key(0), usize::MAX, &mut |k, v| {
        bytes += k.len() + v.len();
    })?;
    black_box(bytes);
    if seen as u64 != rows {
        return Err(format!("a full scan saw {seen} rows of {rows}").into());
    }
    Ok(())
}

/// The timed point-get phase.
fn gets(db: &dyn PeerDb, cfg: &Config, seed: u64) -> Result<Figures> {
    timed_gets(db, cfg.rows, cfg.threads, cfg.duration(), seed)
}

/// `threads` threads of uniformly random point gets for `duration`, each checked.
fn timed_gets(
    db: &dyn PeerDb,
    rows: u64,
    threads: usize,
    duration: Duration,
    seed: u64,
) -> Result<Figures> {
    workload::timed(threads, duration, seed, |rng| {
        let n = rng.gen_range(0..rows);
        let mut len = 0;
        let found = db.get(&workload::key(n), &mut |v| len = black_box(v).len())?;
        if !found || len != VALUE_LEN {
            return Err(format!("row {n}: found {found}, value of {len} bytes").into());
        }
        Ok(())
    })
}

/// The timed scan phase: forward scans of [`SCAN_ROWS`] rows from uniformly random keys, each
/// checked for its row count.
fn scans(db: &dyn PeerDb, cfg: &Config, seed: u64) -> Result<Figures> {
    let rows = cfg.rows;
    let starts = rows.saturating_sub(SCAN_ROWS as u64).max(1);
    workload::timed(cfg.threads, cfg.duration(), seed, |rng| {
        let n = rng.gen_range(0..starts);
        let mut bytes = 0_usize;
        let seen = db.scan(&workload::key(n), SCAN_ROWS, &mut |k, v| {
            bytes += black_box(k).len() + black_box(v).len();
        })?;
        let want = SCAN_ROWS.min((rows - n) as usize);
        if seen != want {
            return Err(format!("a scan from row {n} saw {seen} rows, not {want}").into());
        }
        Ok(())
    })
}

/// A durable-commit phase: `threads` threads each committing one-row transactions (uniformly
/// random keys of the load's range, so inserts at first and some updates later) for the
/// phase's duration, every commit durable before it returns.
fn durable_commits(db: &dyn PeerDb, cfg: &Config, threads: usize, seed: u64) -> Result<Figures> {
    workload::timed(threads, cfg.duration(), seed, |rng| {
        let n = rng.gen_range(0..cfg.rows);
        db.commit_row(&workload::key(n), &workload::value(n))
    })
}

fn main() -> std::result::Result<(), BoxError> {
    let args = Args::parse();
    let cfg = Config::from_args(&args)?;
    let load_start = loadavg();
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    println!("barracuda-peers: load average at start {load_start} (1, 5, 15 min)");
    if cfg!(debug_assertions) {
        println!("WARNING: a debug build; run with --release for figures worth reading");
    }
    println!(
        "{} rows of {} + {} bytes ({:.1} MiB), {} reader thread(s), {} s per timed phase, {} \
         round(s), seed {}",
        thousands(cfg.rows as f64),
        workload::KEY_LEN,
        VALUE_LEN,
        mib(cfg.data_bytes),
        cfg.threads,
        cfg.seconds,
        cfg.rounds,
        cfg.seed
    );
    println!(
        "cache: {:.1} MiB in the loads, get_warm and scan_100; {:.1} MiB in get_quarter",
        mib(cfg.cache_bytes_large),
        mib(cfg.cache_bytes_quarter)
    );
    for e in &cfg.engines {
        println!("  {:<9} cache = {}", e.name(), e.cache_note());
    }
    println!(
        "phases: {}",
        cfg.phases
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(",")
    );

    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let base = TempDir::create(parent.join(format!("barracuda-peers-{}", std::process::id())))?;
    let mut all: BTreeMap<EngineKind, BTreeMap<Phase, Vec<Figures>>> = BTreeMap::new();
    for round in 0..cfg.rounds {
        eprintln!(
            "round {}/{} (load average {})",
            round + 1,
            cfg.rounds,
            loadavg()
        );
        for &kind in &cfg.engines {
            let figures = run_engine(kind, &cfg, round, &base.0)
                .map_err(|e| format!("{} round {}: {e}", kind.name(), round + 1))?;
            for (phase, f) in figures {
                all.entry(kind)
                    .or_default()
                    .entry(phase)
                    .or_default()
                    .push(f);
            }
        }
    }
    drop(base);
    let load_end = loadavg();

    let medians: BTreeMap<EngineKind, BTreeMap<Phase, Figures>> = all
        .iter()
        .map(|(&e, phases)| {
            let m = phases
                .iter()
                .map(|(&p, rounds)| (p, median_figures(rounds)))
                .collect();
            (e, m)
        })
        .collect();
    println!();
    print!("{}", table(&cfg, &medians));
    let outcomes = judge(&medians);
    println!("targets (Barracuda against its peers, medians of this run):");
    for t in &outcomes {
        let verdict = match t.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "-",
        };
        let value = t.value.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        println!("  {:<50} {value:>8}  {verdict:<8} ({})", t.target, t.detail);
    }
    println!("load average at end {load_end}");

    if let Some(path) = &args.json {
        let report = Report {
            config: &cfg,
            loadavg_start: load_start,
            loadavg_end: load_end,
            engines: all
                .iter()
                .map(|(&e, phases)| {
                    let phases = phases
                        .iter()
                        .map(|(&p, rounds)| {
                            (
                                p.name(),
                                PhaseReport {
                                    median: medians[&e][&p],
                                    rounds: rounds.clone(),
                                },
                            )
                        })
                        .collect();
                    (
                        e.name(),
                        EngineReport {
                            cache: e.cache_note(),
                            phases,
                        },
                    )
                })
                .collect(),
            targets: outcomes,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase of Barracuda (both page sizes) on a small database, end to end (the others'
    /// are the same code with their feature on).
    #[test]
    fn barracuda_smoke() {
        let dir = std::env::temp_dir().join(format!("barracuda-peers-test-{}", std::process::id()));
        let base = TempDir::create(dir).expect("a fresh temporary directory");
        let args = Args::parse_from([
            "barracuda-peers",
            "--rows",
            "3000",
            "--seconds",
            "0.05",
            "--rounds",
            "1",
            "--engines",
            "barracuda,barracuda-4k",
        ]);
        let cfg = Config::from_args(&args).expect("valid options");
        for kind in [EngineKind::Barracuda, EngineKind::Barracuda4k] {
            let figures = run_engine(kind, &cfg, 0, &base.0).expect("every phase runs");
            assert_eq!(figures.len(), Phase::ALL.len(), "{}", kind.name());
            assert!(figures.values().all(|f| f.per_s > 0.0), "{}", kind.name());
        }
    }
}
