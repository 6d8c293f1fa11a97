//! The experiments of `barracuda lab`. Each is one file implementing [`Experiment`]; adding one
//! means writing that file and naming it in [`registry`].

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::report::{self, MachineInfo};
use crate::LabResult;

mod adaptive_flushing;
mod compression_footprint;
mod concurrent_writers;
mod deadlock_detect;
mod doublewrite;
mod free_list_stalls;
mod free_list_stalls_zip;
mod group_commit;
mod history_growth;
mod point_select;
mod point_select_seed;
mod read_ahead;
pub(crate) mod recovery;
mod snapshot_reads;

/// Sizes and places every experiment is run with (from the command line).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Parent of the database directories; each experiment uses `dir/<name>`, recreated.
    pub dir: PathBuf,
    /// Rows to load; `None` = the experiment's default for the mode.
    pub rows: Option<u64>,
    /// Seconds per measured phase; `None` = the experiment's default for the mode.
    pub seconds: Option<f64>,
    /// Client threads.
    pub threads: usize,
    /// Where `<name>.json` and `<name>.svg` go.
    pub out: PathBuf,
    /// Small sizes, for a first look and for `lab all --quick`.
    pub quick: bool,
    /// MiB of redo for experiments that write a volume of it; `None` = their default.
    pub redo_mib: Option<u64>,
}

/// Default sizes of an experiment: `(rows, seconds)` for a full run and for `--quick`.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Full run.
    pub full: (u64, f64),
    /// `--quick`.
    pub quick: (u64, f64),
}

/// What one experiment hands back to the runner.
pub struct Outcome {
    /// The human table(s), printed on stdout.
    pub text: String,
    /// Every raw figure (goes under `"results"` in the JSON file).
    pub results: serde_json::Value,
    /// Experiment-specific settings (sizes derived from the table, pool size …).
    pub settings: serde_json::Value,
    /// The figure, if a picture says more.
    pub svg: Option<String>,
}

/// The context an experiment runs in: resolved sizes and its own database directory.
pub struct Context {
    /// Rows to load.
    pub rows: u64,
    /// Length of each measured phase.
    pub phase: Duration,
    /// Client threads.
    pub threads: usize,
    /// The experiment's database directory (to be recreated by the experiment).
    pub dir: PathBuf,
    /// Whether `--quick` was given.
    pub quick: bool,
    /// `--redo-mib`: MiB of redo to write, for experiments that write a volume of it.
    pub redo_mib: Option<u64>,
    /// The output directory (`--out`), for files an experiment writes besides its JSON and SVG.
    pub out: PathBuf,
}

/// One experiment of `barracuda lab`.
pub trait Experiment {
    /// Its name on the command line (`barracuda lab <name>`).
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str;
    /// Default sizes.
    fn sizes(&self) -> Sizes;
    /// Runs it.
    fn run(&self, ctx: &Context) -> LabResult<Outcome>;
}

/// Every experiment, in the order `lab all` runs them.
pub fn registry() -> Vec<Box<dyn Experiment>> {
    vec![
        Box::new(point_select::PointSelect),
        Box::new(free_list_stalls::FreeListStalls),
        Box::new(read_ahead::ReadAhead),
        Box::new(adaptive_flushing::AdaptiveFlushing),
        Box::new(group_commit::GroupCommit),
        Box::new(recovery::Recovery),
        Box::new(doublewrite::Doublewrite),
        Box::new(compression_footprint::CompressionFootprint),
        Box::new(deadlock_detect::DeadlockDetect),
        Box::new(snapshot_reads::SnapshotReads),
        Box::new(history_growth::HistoryGrowth),
        Box::new(concurrent_writers::ConcurrentWriters),
    ]
}

/// Runs `experiment` with `settings`: prints its table, writes `OUT/<name>.json` and `.svg`.
pub fn run(experiment: &dyn Experiment, settings: &Settings) -> LabResult<()> {
    let sizes = experiment.sizes();
    let (rows, seconds) = if settings.quick {
        sizes.quick
    } else {
        sizes.full
    };
    let rows = settings.rows.unwrap_or(rows).max(1);
    let seconds = settings.seconds.unwrap_or(seconds);
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("--seconds must be positive, got {seconds}").into());
    }
    let ctx = Context {
        rows,
        phase: Duration::from_secs_f64(seconds),
        threads: settings.threads.max(1),
        dir: settings.dir.join(experiment.name()),
        quick: settings.quick,
        redo_mib: settings.redo_mib,
        out: settings.out.clone(),
    };
    let machine = MachineInfo::collect();
    println!("=== barracuda lab {} ===", experiment.name());
    println!("{}", experiment.about());
    println!("machine: {}", machine.summary());
    println!(
        "rows {rows}, {seconds} s per phase, {} threads, database in {}\n",
        ctx.threads,
        ctx.dir.display()
    );
    let outcome = experiment.run(&ctx)?;
    print!("{}", outcome.text);
    std::fs::create_dir_all(&settings.out)?;
    let json_path = settings.out.join(format!("{}.json", experiment.name()));
    let doc = json!({
        "experiment": experiment.name(),
        "description": experiment.about(),
        "machine": machine,
        "settings": {
            "rows": rows,
            "seconds": seconds,
            "threads": ctx.threads,
            "quick": settings.quick,
            "dir": ctx.dir,
            "experiment": outcome.settings,
        },
        "results": outcome.results,
    });
    report::write_json(&json_path, &doc)?;
    println!("\nwrote {}", json_path.display());
    if let Some(svg) = outcome.svg {
        let svg_path = settings.out.join(format!("{}.svg", experiment.name()));
        std::fs::write(&svg_path, svg).map_err(|e| format!("{}: {e}", svg_path.display()))?;
        println!("wrote {}", svg_path.display());
    }
    println!();
    Ok(())
}
