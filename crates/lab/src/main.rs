//! `barracuda`: the lab and the tools of the Barracuda storage engine.
//!
//! - `barracuda lab <experiment>|all`: reproduces the experiments of the InnoDB posts this engine
//!   learns from, against Barracuda, with tables, JSON and SVG plots;
//! - `barracuda check <dir>`: verifies every page of a closed database (like `innochecksum`);
//! - `barracuda inspect <dir> [table] [--page N]`: page-type summary, fill, B-tree height, or one
//!   page decoded;
//! - `barracuda status <dir>`: opens the database and prints its status.

mod experiments;
mod plot;
mod progress;
mod report;
mod tools;
mod workload;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Result type of the lab: any error, printed by `main`.
pub type LabResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derive(Parser, Debug)]
#[command(
    name = "barracuda",
    version,
    about = "Lab experiments, checks and inspection for the Barracuda storage engine",
    long_about = "Lab experiments, checks and inspection for the Barracuda storage engine.\n\n\
                  Start with `barracuda lab all --quick` (a few minutes; build with --release)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run an experiment (or `all`): prints a table, writes OUT/<experiment>.json and .svg.
    #[command(
        long_about = "Run an experiment of the seeds against Barracuda, or `all` of them.\n\n\
        Each prints a human table on stdout, writes OUT/<experiment>.json (every raw figure, the \
        machine and the settings) and OUT/<experiment>.svg (plots). Progress goes to stderr. \
        Build with --release for meaningful figures."
    )]
    Lab(LabArgs),
    /// Verify every page of a closed database; exit 1 naming each bad page (like innochecksum).
    #[command(
        long_about = "Verify every page of every tablespace of a database that is not open \
        (files are read directly; the LOCK is not taken): checksum, torn-page LSN check, page \
        number and space id, page structure by type, the B-tree (levels, key order, fences, \
        sibling links, overflow chains) and the allocation bitmaps against the pages the B-tree \
        reaches. Exits 0 when sound, 1 when a problem is found (each one printed as \
        `file: page N: reason`), 2 when the directory holds no database."
    )]
    Check {
        /// The database directory.
        dir: PathBuf,
    },
    /// Page-type summary, fill factor and B-tree height per table, or one page decoded.
    #[command(
        long_about = "Read a closed database's files and print, per table: page counts by \
        type (index leaf / internal, overflow, free, space header and bitmaps, never written), \
        pages in use per the allocation bitmap, leaf and internal fill factor, B-tree height and \
        records. With --page N, decode page N of TABLE (or of system.ibs when TABLE is \
        `system.ibs`): header fields and records, keys shown as hex and escaped ASCII."
    )]
    Inspect {
        /// The database directory.
        dir: PathBuf,
        /// Only this table (`system.ibs` for the system tablespace with --page).
        table: Option<String>,
        /// Decode this page of TABLE.
        #[arg(long)]
        page: Option<u32>,
    },
    /// Open the database, print its status (like SHOW ENGINE INNODB STATUS), close it.
    Status {
        /// The database directory (must hold a database: nothing is created).
        dir: PathBuf,
    },
    /// The writer process of `lab recovery`, which starts it and kills it (not for users).
    #[command(name = experiments::recovery::WRITER_SUBCOMMAND, hide = true)]
    RecoveryWriter(experiments::recovery::WriterArgs),
}

#[derive(clap::Args, Debug)]
struct LabArgs {
    /// Experiment name, or `all`.
    experiment: String,
    /// Parent directory of the experiments' databases (default: OUT/db); each experiment
    /// recreates DIR/<experiment>.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Rows to load (default: per experiment, smaller with --quick).
    #[arg(long)]
    rows: Option<u64>,
    /// Seconds per measured phase (default: per experiment, smaller with --quick).
    #[arg(long)]
    seconds: Option<f64>,
    /// Client threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Output directory for <experiment>.json and <experiment>.svg.
    #[arg(long, default_value = "lab-out")]
    out: PathBuf,
    /// Small sizes: `lab all --quick` runs everything in a few minutes.
    #[arg(long)]
    quick: bool,
    /// MiB of redo to write before the crash (`recovery`; default 1024, 64 with --quick).
    #[arg(long)]
    redo_mib: Option<u64>,
}

fn experiments_help() -> String {
    let mut text = String::from("Experiments:\n");
    for e in experiments::registry() {
        let _ = writeln!(text, "  {:<18} {}", e.name(), e.about());
    }
    let _ = writeln!(
        text,
        "  {:<18} every experiment above, in this order",
        "all"
    );
    text
}

fn main() -> ExitCode {
    let command = Cli::command().mut_subcommand("lab", |lab| lab.after_help(experiments_help()));
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Lab(args) => lab(&args).map(|()| ExitCode::SUCCESS),
        Command::Check { dir } => tools::check(&dir),
        Command::Inspect { dir, table, page } => tools::inspect(&dir, table.as_deref(), page),
        Command::Status { dir } => tools::status(&dir).map(|()| ExitCode::SUCCESS),
        Command::RecoveryWriter(args) => {
            experiments::recovery::writer(&args).map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("barracuda: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn lab(args: &LabArgs) -> LabResult<()> {
    let settings = experiments::Settings {
        dir: args.dir.clone().unwrap_or_else(|| args.out.join("db")),
        rows: args.rows,
        seconds: args.seconds,
        threads: args.threads,
        out: args.out.clone(),
        quick: args.quick,
        redo_mib: args.redo_mib,
    };
    let all = experiments::registry();
    if args.experiment == "all" {
        for e in &all {
            experiments::run(e.as_ref(), &settings)?;
        }
        return Ok(());
    }
    let Some(e) = all.iter().find(|e| e.name() == args.experiment) else {
        return Err(format!(
            "unknown experiment {:?}\n{}",
            args.experiment,
            experiments_help()
        )
        .into());
    };
    experiments::run(e.as_ref(), &settings)
}
