//! `lab recovery`: how fast crash recovery replays the redo log.
//!
//! A child process (this binary, hidden subcommand `recovery-writer`) updates random rows of a
//! loaded table until about `--redo-mib` of redo (1 GiB; 64 MiB with `--quick`) separates the
//! newest change from the checkpoint, says so on stdout, and keeps writing; the parent SIGKILLs
//! it there, mid-write, reopens the database and reads what recovery did from
//! `status().recovery`. The figure is the redo actually replayed (checkpoint to the end of the
//! last complete commit) over recovery's own wall time.
//!
//! For the checkpoint to stay ~1 GiB behind, the log is created at twice the target (its async
//! flush point, ~70 % of the capacity, is then well above the target), the buffer pool holds the
//! whole table (no page is evicted, so none is written), and the writer's page cleaner is held
//! back: adaptive flushing off (no redo-age term below the async point),
//! `max_dirty_pages_pct_lwm` 0 (no dirty-page term below 99.999 %), `io_capacity` and its max at
//! the minimum, and `flushing_avg_loops` 1000, so InnoDB's page-rate and LSN-rate averages stay 0
//! for the run and its recommendation rounds to 0 pages. The checkpoint then stays where the
//! first update left it.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, FlushSettings, RecoveryReport};
use serde_json::json;

use super::{Context, Experiment, Outcome, Sizes};
use crate::progress::Progress;
use crate::report::TextTable;
use crate::workload;
use crate::LabResult;

mod child;

pub use child::{writer, WriterArgs, WRITER_SUBCOMMAND};

/// The experiment.
pub struct Recovery;

/// Redo to write before the kill, full run.
const TARGET_FULL: u64 = 1 << 30;
/// Redo to write before the kill, `--quick`.
const TARGET_QUICK: u64 = 64 << 20;
/// The largest `--redo-mib`: the log, twice as large, must stay within the format's 1 TiB.
const MAX_TARGET_MIB: u64 = 1 << 19;
/// Rows per writer transaction.
const ROWS_PER_TX: u64 = 10;
/// The shared data set (GCIDE dictionary text), relative to the project root.
const TEXT_PATH: &str = "../shared/data/gcide.txt.gz";

impl Experiment for Recovery {
    fn name(&self) -> &'static str {
        "recovery"
    }

    fn about(&self) -> &'static str {
        "a child process updates random rows until ~1 GiB of redo (--quick 64 MiB, --redo-mib) \
         lies past the checkpoint, is SIGKILLed mid-write, and the database is reopened: redo \
         bytes replayed, recovery time and MB/s (--seconds is not used)"
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            // No timed phase: the writer runs until the redo target, the parent until recovered.
            full: (400_000, 1.0),
            quick: (100_000, 1.0),
        }
    }

    fn run(&self, ctx: &Context) -> LabResult<Outcome> {
        let target = match ctx.redo_mib {
            None if ctx.quick => TARGET_QUICK,
            None => TARGET_FULL,
            Some(mib @ 1..=MAX_TARGET_MIB) => mib << 20,
            Some(mib) => {
                return Err(format!(
                    "--redo-mib {mib}: expected 1 to {MAX_TARGET_MIB} (the log is twice the \
                     target, and a redo log holds at most 1 TiB)"
                )
                .into())
            }
        };
        // The async flush point is ~70 % of the capacity: at twice the target (and 16 MiB more,
        // for the log's fixed reserve, which dominates small logs) the cleaner stays idle.
        let capacity = (target * 2)
            .max(target + (16 << 20))
            .next_multiple_of(1 << 20);
        // Room for the whole table (≈ 190 bytes a row of B-tree) three times over: no eviction.
        let pool_bytes = (64usize << 20).max(ctx.rows as usize * 600);
        let text = text_path();
        let values = Values::load(text.as_deref())?;

        workload::fresh_dir(&ctx.dir)?;
        let table_bytes = load(&ctx.dir, ctx.rows, pool_bytes, capacity, &values)?;

        let mut writer = Writer::spawn(ctx, target, pool_bytes, text.as_deref())?;
        let ready = writer.wait_ready(target)?;
        let killed_after = writer.kill()?;

        let opened = Instant::now();
        let db = Engine::open(
            &ctx.dir,
            EngineOptions::default()
                .buffer_pool_bytes(pool_bytes)
                .create_if_missing(false),
        )?;
        let open_s = opened.elapsed().as_secs_f64();
        let report = db
            .status()
            .recovery
            .ok_or("engine bug: no recovery report after reopening a killed writer's database")?;
        let table = db.table(workload::TABLE)?;
        let tree = db.check_table(&table)?;
        if tree.records != ctx.rows {
            return Err(format!(
                "after recovery the table holds {} records; {} were loaded and only updated",
                tree.records, ctx.rows
            )
            .into());
        }
        db.close()?;

        Ok(outcome(
            ctx,
            &Figures {
                target,
                capacity,
                pool_bytes,
                table_bytes,
                values: values.describe(text.as_deref()),
                ready,
                killed_after,
                report,
                open_s,
                flush: holding_flush_settings()?,
            },
        ))
    }
}

/// Everything the report is made of.
struct Figures {
    target: u64,
    capacity: u64,
    pool_bytes: usize,
    table_bytes: u64,
    values: String,
    ready: Ready,
    killed_after: Duration,
    report: RecoveryReport,
    open_s: f64,
    /// The writer's flush settings.
    flush: FlushSettings,
}

fn outcome(ctx: &Context, f: &Figures) -> Outcome {
    let r = &f.report;
    let recovery_s = r.duration.as_secs_f64();
    let mb_per_s = r.redo_bytes as f64 / 1e6 / recovery_s.max(1e-9);
    let mut t = TextTable::new(&[
        "redo MB",
        "mtrs",
        "pages read",
        "pages written",
        "batches",
        "threads",
        "discarded B",
        "recovery s",
        "MB/s",
        "open s",
    ]);
    t.row(vec![
        format!("{:.1}", r.redo_bytes as f64 / 1e6),
        r.mtrs.to_string(),
        r.pages_read.to_string(),
        r.pages_written.to_string(),
        r.batches.to_string(),
        r.apply_threads.to_string(),
        r.discarded_bytes.to_string(),
        format!("{recovery_s:.3}"),
        format!("{mb_per_s:.0}"),
        format!("{:.3}", f.open_s),
    ]);
    let settings = &f.flush;
    let text = format!(
        "table {:.1} MiB ({} rows), buffer pool {:.0} MiB (recovery: two batches of an eighth, \
         pages in the rest), redo log {:.0} MiB; values: {}\n\
         writer: {} threads of {ROWS_PER_TX}-row updates, SyncEverySecond, page cleaner held \
         back; checkpoint age {:.1} MiB (target {:.0} MiB) after {} commits in {:.1} s, then \
         SIGKILL {:.1} ms later\n{}\
         MB = 10^6 bytes of redo (checkpoint LSN to the end of the last complete commit); \
         threads: apply threads beside the one reading the log.\n",
        mib(f.table_bytes),
        ctx.rows,
        mib(f.pool_bytes as u64),
        mib(f.capacity),
        f.values,
        ctx.threads,
        mib(f.ready.checkpoint_age),
        mib(f.target),
        f.ready.commits,
        f.ready.after.as_secs_f64(),
        f.killed_after.as_secs_f64() * 1e3,
        t.render()
    );
    Outcome {
        text,
        results: json!({
            "redo_bytes": r.redo_bytes,
            "recovery_s": recovery_s,
            "mb_per_s": mb_per_s,
            "mtrs": r.mtrs,
            "pages_read": r.pages_read,
            "pages_written": r.pages_written,
            "batches": r.batches,
            "apply_threads": r.apply_threads,
            "discarded_bytes": r.discarded_bytes,
            "checkpoint_lsn": r.checkpoint_lsn,
            "end_lsn": r.end_lsn,
            "open_s": f.open_s,
            "writer": {
                "checkpoint_age_at_ready": f.ready.checkpoint_age,
                "checkpoint_lsn_at_ready": f.ready.checkpoint_lsn,
                "current_lsn_at_ready": f.ready.current_lsn,
                "commits_at_ready": f.ready.commits,
                "seconds_to_ready": f.ready.after.as_secs_f64(),
                "ms_from_ready_to_kill": f.killed_after.as_secs_f64() * 1e3,
            },
        }),
        settings: json!({
            "redo_target_bytes": f.target,
            "redo_log_capacity": f.capacity,
            "buffer_pool_bytes": f.pool_bytes,
            "table_bytes": f.table_bytes,
            "values": f.values,
            "writer_threads": ctx.threads,
            "rows_per_transaction": ROWS_PER_TX,
            "writer_durability": "SyncEverySecond",
            "writer_flush_settings": {
                "adaptive_flushing": settings.adaptive_flushing(),
                "io_capacity": settings.io_capacity(),
                "io_capacity_max": settings.io_capacity_max(),
                "flushing_avg_loops": settings.flushing_avg_loops(),
                "max_dirty_pages_pct": settings.max_dirty_pages_pct(),
                "max_dirty_pages_pct_lwm": settings.max_dirty_pages_pct_lwm(),
                "idle_flush_pct": settings.idle_flush_pct(),
            },
        }),
        svg: None,
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// The writer's flush settings: the page cleaner writes nothing below the async point (see the
/// module comment).
fn holding_flush_settings() -> LabResult<FlushSettings> {
    let mut s = FlushSettings::default();
    s.set_adaptive_flushing(false);
    s.set_max_dirty_pages_pct(99.999)?;
    s.set_max_dirty_pages_pct_lwm(0.0)?;
    s.set_io_capacity(100)?;
    s.set_io_capacity_max(100)?;
    s.set_flushing_avg_loops(1000)?;
    s.set_idle_flush_pct(0)?;
    Ok(s)
}

/// Where the GCIDE text is: beside the working directory's project, or beside this crate's.
fn text_path() -> Option<PathBuf> {
    let from_crate = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(TEXT_PATH);
    [PathBuf::from(TEXT_PATH), from_crate]
        .into_iter()
        .find(|p| p.is_file())
}

/// The 180-byte values: consecutive windows of real text when the data set is there, else
/// sysbench-like random digits.
enum Values {
    Text(Vec<u8>),
    Digits,
}

impl Values {
    fn load(path: Option<&Path>) -> LabResult<Self> {
        let Some(path) = path else {
            return Ok(Self::Digits);
        };
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut text)
            .map_err(|e| format!("{}: not a readable gzip file: {e}", path.display()))?;
        if text.len() < 2 * workload::VALUE_BYTES {
            return Err(format!(
                "{}: {} bytes of text, too short for {}-byte values",
                path.display(),
                text.len(),
                workload::VALUE_BYTES
            )
            .into());
        }
        Ok(Self::Text(text))
    }

    /// Value number `n`. Text windows wrap around the text at a different alignment each
    /// time, so values do not repeat in step with the rows.
    fn get(&self, n: u64) -> Vec<u8> {
        match self {
            Self::Text(text) => {
                let span = (text.len() - workload::VALUE_BYTES) as u64;
                let at = (n.wrapping_mul(workload::VALUE_BYTES as u64) % span) as usize;
                text.get(at..at + workload::VALUE_BYTES)
                    .map_or_else(|| workload::value(n), <[u8]>::to_vec)
            }
            Self::Digits => workload::value(n),
        }
    }

    fn describe(&self, path: Option<&Path>) -> String {
        match (self, path) {
            (Self::Text(text), Some(path)) => format!(
                "{}-byte windows of {} ({:.1} MB of GCIDE dictionary text)",
                workload::VALUE_BYTES,
                path.display(),
                text.len() as f64 / 1e6
            ),
            _ => format!(
                "sysbench-like random digits ({TEXT_PATH} not found from {})",
                std::env::current_dir().map_or_else(|_| "?".into(), |d| d.display().to_string())
            ),
        }
    }
}

/// Creates the database with a redo log of `capacity` bytes, loads `rows` rows in key order
/// and closes it (a clean shutdown: the checkpoint is at the end of the log). Returns the
/// table's B-tree size in bytes.
fn load(
    dir: &Path,
    rows: u64,
    pool_bytes: usize,
    capacity: u64,
    values: &Values,
) -> LabResult<u64> {
    let options = EngineOptions::default()
        .buffer_pool_bytes(pool_bytes)
        .redo_log_capacity(capacity)
        .durability(Durability::SyncEverySecond);
    workload::load_with(dir, rows, options, |k| values.get(k))
}

/// What the writer reported when the target was reached.
#[derive(Clone, Copy, Debug)]
struct Ready {
    checkpoint_age: u64,
    checkpoint_lsn: u64,
    current_lsn: u64,
    commits: u64,
    /// From the spawn to the `ready` line.
    after: Duration,
}

/// The writer process. Killed (SIGKILL) and reaped when dropped, so that no error path of the
/// parent leaves it running.
struct Writer {
    child: Child,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    started: Instant,
    ready_at: Option<Instant>,
}

impl Writer {
    fn spawn(
        ctx: &Context,
        target: u64,
        pool_bytes: usize,
        text: Option<&Path>,
    ) -> LabResult<Self> {
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(&exe);
        cmd.arg(WRITER_SUBCOMMAND)
            .arg("--dir")
            .arg(&ctx.dir)
            .arg("--rows")
            .arg(ctx.rows.to_string())
            .arg("--redo-bytes")
            .arg(target.to_string())
            .arg("--pool-bytes")
            .arg(pool_bytes.to_string())
            .arg("--threads")
            .arg(ctx.threads.to_string());
        if let Some(text) = text {
            cmd.arg("--text").arg(text);
        }
        // stdin stays open and unused: the writer exits when it closes (the parent is gone).
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: cannot start the writer: {e}", exe.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the writer's stdout was not captured")?;
        Ok(Self {
            child,
            lines: BufReader::new(stdout).lines(),
            started: Instant::now(),
            ready_at: None,
        })
    }

    /// Reads the writer's lines until `ready`, showing its progress.
    fn wait_ready(&mut self, target: u64) -> LabResult<Ready> {
        let mut progress = Progress::new("writing redo", target >> 20, "MiB");
        loop {
            let Some(line) = self.lines.next() else {
                let status = self.child.wait()?;
                return Err(format!(
                    "the recovery writer exited ({status}) before reaching {target} bytes of \
                     redo past the checkpoint (its error is above)"
                )
                .into());
            };
            let line = line?;
            let fields: Vec<&str> = line.split_whitespace().collect();
            let number = |i: usize| -> LabResult<u64> {
                fields
                    .get(i)
                    .and_then(|f| f.parse().ok())
                    .ok_or_else(|| format!("unexpected line from the writer: {line:?}").into())
            };
            match fields.first() {
                Some(&"progress") => progress.set(number(1)? >> 20),
                Some(&"ready") => {
                    progress.set(target >> 20);
                    progress.finish();
                    self.ready_at = Some(Instant::now());
                    return Ok(Ready {
                        checkpoint_age: number(1)?,
                        checkpoint_lsn: number(2)?,
                        current_lsn: number(3)?,
                        commits: number(4)?,
                        after: self.started.elapsed(),
                    });
                }
                _ => return Err(format!("unexpected line from the writer: {line:?}").into()),
            }
        }
    }

    /// SIGKILLs the writer (std's `Child::kill` sends SIGKILL) and checks that the signal is what
    /// ended it, so that the crash happened while it was writing. Returns the time from `ready`.
    fn kill(&mut self) -> LabResult<Duration> {
        use std::os::unix::process::ExitStatusExt as _;
        self.child.kill()?;
        let killed_after = self.ready_at.map_or(Duration::ZERO, |t| t.elapsed());
        let status = self.child.wait()?;
        if status.signal() != Some(9) {
            return Err(format!(
                "the recovery writer ended by itself ({status}) instead of by SIGKILL: the crash \
                 did not happen mid-write (its error is above)"
            )
            .into());
        }
        Ok(killed_after)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Already reaped after `kill`; otherwise an error path: stop it. Nothing to report.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
