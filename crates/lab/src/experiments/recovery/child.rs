//! The writer process of `lab recovery`: the same binary, started by the parent with the hidden
//! subcommand [`WRITER_SUBCOMMAND`], writing redo until the parent SIGKILLs it.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use barracuda::{Durability, Engine, EngineOptions, Table};

use super::{holding_flush_settings, Values, ROWS_PER_TX};
use crate::workload::{self, Rng};
use crate::LabResult;

/// The writer reads the checkpoint age every this many of its first thread's commits.
const CHECK_EVERY: u64 = 16;
/// Progress lines the writer prints on the way to the target.
const PROGRESS_STEPS: u64 = 32;

/// The writer's hidden subcommand (see `main.rs`).
pub const WRITER_SUBCOMMAND: &str = "recovery-writer";

/// Arguments of the writer process (`barracuda recovery-writer`), set by the parent.
#[derive(clap::Args, Debug)]
pub struct WriterArgs {
    /// The database, created and loaded by the parent.
    #[arg(long)]
    dir: PathBuf,
    /// Rows in the table (keys `0..rows`).
    #[arg(long)]
    rows: u64,
    /// Checkpoint age at which to print `ready`.
    #[arg(long)]
    redo_bytes: u64,
    /// Buffer pool size.
    #[arg(long)]
    pool_bytes: usize,
    /// Writer threads.
    #[arg(long)]
    threads: usize,
    /// The gzipped text the values are cut from (random digits without it).
    #[arg(long)]
    text: Option<PathBuf>,
}

/// The writer process: updates random rows, `ROWS_PER_TX` per transaction, from
/// `args.threads` threads; prints `progress <checkpoint age>` lines, then
/// `ready <checkpoint age> <checkpoint lsn> <current lsn> <commits>` once the age reaches
/// `args.redo_bytes`, and goes on writing until it is killed. Returns only on an error (or
/// exits when its stdin closes: the parent is gone).
pub fn writer(args: &WriterArgs) -> LabResult<()> {
    std::thread::spawn(|| {
        // The parent never writes; end of file (or a broken stdin) means it has exited
        // without killing us.
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(3);
    });
    if args.rows == 0 || args.threads == 0 {
        return Err("recovery-writer: --rows and --threads must be positive".into());
    }
    let values = Values::load(args.text.as_deref())?;
    let db = Engine::open(
        &args.dir,
        EngineOptions::default()
            .buffer_pool_bytes(args.pool_bytes)
            .durability(Durability::SyncEverySecond)
            .flush_settings(holding_flush_settings()?)
            .create_if_missing(false),
    )?;
    let table = db.table(workload::TABLE)?;
    let start_lsn = db.status().current_lsn;
    let shared = Shared {
        failed: AtomicBool::new(false),
        next_value: AtomicU64::new(args.rows),
    };
    let results: Vec<LabResult<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..args.threads)
            .map(|t| {
                let (db, table, values, shared) = (&db, &table, &values, &shared);
                s.spawn(move || write_rows(db, table, values, args, shared, t as u64, None))
            })
            .collect();
        let mut monitor = Monitor {
            target: args.redo_bytes,
            start_lsn,
            printed: 0,
            ready: false,
        };
        let first = write_rows(&db, &table, &values, args, &shared, 0, Some(&mut monitor));
        std::iter::once(first)
            .chain(handles.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a writer thread panicked".into()))
            }))
            .collect()
    });
    results.into_iter().collect::<LabResult<Vec<()>>>()?;
    Err("recovery-writer: the writer threads stopped".into())
}

/// What the writer threads share.
struct Shared {
    /// Set by the first thread that fails, so that the others stop.
    failed: AtomicBool,
    /// The next value number (values are handed out once each).
    next_value: AtomicU64,
}

/// The first thread's duty: watch the checkpoint age and print the protocol's lines.
struct Monitor {
    target: u64,
    /// The log's end when the writer opened the database (just checkpointed).
    start_lsn: u64,
    printed: u64,
    ready: bool,
}

/// A writer that has logged this many times its target without the checkpoint age reaching it
/// gives up: the checkpoint is moving, and would go on moving.
const GIVE_UP_FACTOR: u64 = 4;

impl Monitor {
    fn check(&mut self, db: &Engine) -> LabResult<()> {
        let status = db.status();
        let age = status.redo.checkpoint_age;
        let written = status.current_lsn.saturating_sub(self.start_lsn);
        if age >= self.target {
            println!(
                "ready {age} {} {} {}",
                status.redo.checkpoint_lsn, status.current_lsn, status.commits
            );
            self.ready = true;
        } else if written >= GIVE_UP_FACTOR.saturating_mul(self.target) {
            return Err(format!(
                "recovery-writer: {written} bytes of redo written but the checkpoint age is only \
                 {age} of the {} wanted: the checkpoint moved from LSN {} to {} (pages were \
                 flushed although the page cleaner was held back)",
                self.target, self.start_lsn, status.redo.checkpoint_lsn
            )
            .into());
        } else if age * PROGRESS_STEPS / self.target > self.printed {
            self.printed = age * PROGRESS_STEPS / self.target;
            println!("progress {age}");
        }
        Ok(())
    }
}

fn write_rows(
    db: &Engine,
    table: &Table,
    values: &Values,
    args: &WriterArgs,
    shared: &Shared,
    thread: u64,
    mut monitor: Option<&mut Monitor>,
) -> LabResult<()> {
    let result = (|| -> LabResult<()> {
        let mut rng = Rng::new(0x4EC0_7E41 ^ (thread << 32));
        let mut commits = 0u64;
        while !shared.failed.load(Ordering::Relaxed) {
            let mut tx = db.begin();
            let mut written = Ok(());
            for _ in 0..ROWS_PER_TX {
                let n = shared.next_value.fetch_add(1, Ordering::Relaxed);
                let id = rng.below(args.rows);
                written = tx.put(table, &workload::key(id), &values.get(n));
                if written.is_err() {
                    break;
                }
            }
            match written {
                // Threads writing random rows several to a transaction can deadlock (or wait
                // past the timeout): the engine rolled the victim back, and like any
                // application the writer just tries another transaction.
                Err(
                    barracuda::Error::Deadlock { .. } | barracuda::Error::LockWaitTimeout { .. },
                ) => {
                    continue;
                }
                Err(e) => return Err(e.into()),
                Ok(()) => tx.commit()?,
            }
            commits += 1;
            if let Some(m) = monitor.as_deref_mut() {
                if !m.ready && commits.is_multiple_of(CHECK_EVERY) {
                    m.check(db)?;
                }
            }
        }
        Ok(())
    })();
    if result.is_err() {
        shared.failed.store(true, Ordering::Relaxed);
    }
    result
}
