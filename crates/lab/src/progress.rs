//! Progress of long phases: an `indicatif` bar on a terminal, a few plain lines otherwise (logs,
//! CI, tests), always on stderr so that stdout carries only the result tables.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A phase with a known amount of work.
pub enum Progress {
    /// On a terminal.
    Bar(ProgressBar),
    /// Elsewhere: a line at the start, at each quarter and at the end.
    Plain {
        /// What is being done.
        label: String,
        /// Units of work in all.
        total: u64,
        /// Units done.
        done: u64,
        /// Quarters already reported.
        quarters: u64,
        /// When the phase started.
        start: Instant,
    },
}

impl Progress {
    /// Starts a phase of `total` units (`unit` names them: "rows", "s").
    pub fn new(label: &str, total: u64, unit: &str) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            let template = format!("{{msg:>28}} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{elapsed}})");
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_owned());
            Self::Bar(bar)
        } else {
            eprintln!("{label}: 0/{total} {unit}");
            Self::Plain {
                label: label.to_owned(),
                total,
                done: 0,
                quarters: 0,
                start: Instant::now(),
            }
        }
    }

    /// Sets the units done so far.
    pub fn set(&mut self, pos: u64) {
        match self {
            Self::Bar(bar) => bar.set_position(pos),
            Self::Plain {
                label,
                total,
                done,
                quarters,
                start,
            } => {
                *done = pos;
                let q = pos.saturating_mul(4).checked_div(*total).unwrap_or(4);
                if q > *quarters && q < 4 {
                    *quarters = q;
                    eprintln!(
                        "{label}: {pos}/{total} ({:.1} s)",
                        start.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }

    /// Ends the phase.
    pub fn finish(self) {
        match self {
            Self::Bar(bar) => bar.finish(),
            Self::Plain {
                label,
                done,
                total,
                start,
                ..
            } => {
                eprintln!(
                    "{label}: done {done}/{total} in {:.1} s",
                    start.elapsed().as_secs_f64()
                );
            }
        }
    }
}

/// Sleeps in 100 ms steps for `duration`, ticking a progress bar in tenths of a second, until
/// `duration` has passed.
pub fn timed(label: &str, duration: Duration) {
    let tenths = (duration.as_millis() / 100) as u64;
    let mut progress = Progress::new(label, tenths, "x 0.1 s");
    let start = Instant::now();
    loop {
        let elapsed = start.elapsed();
        let Some(left) = duration.checked_sub(elapsed).filter(|d| !d.is_zero()) else {
            break;
        };
        progress.set((elapsed.as_millis() / 100) as u64);
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    progress.set(tenths);
    progress.finish();
}
