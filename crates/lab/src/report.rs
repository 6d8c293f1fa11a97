//! What every experiment writes besides its own figures: the machine, the settings, a text
//! table, and the files `OUT/<experiment>.json` / `.svg`.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::LabResult;

/// The machine the figures were measured on (from `/proc` where it exists).
#[derive(Clone, Debug, Serialize)]
pub struct MachineInfo {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Total memory in KiB (`/proc/meminfo` MemTotal).
    pub mem_total_kib: u64,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// `std::env::consts::OS` / `ARCH`.
    pub os: String,
    /// Whether this binary was built with optimisations (`--release`).
    pub release_build: bool,
}

impl MachineInfo {
    /// Reads what the platform tells.
    pub fn collect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_kib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
        Self {
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            cpu_model,
            mem_total_kib,
            kernel,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            release_build: !cfg!(debug_assertions),
        }
    }

    /// One line for the head of a table.
    pub fn summary(&self) -> String {
        format!(
            "{} cores ({}), {:.1} GiB RAM, kernel {}, {} build",
            self.cores,
            self.cpu_model,
            self.mem_total_kib as f64 / (1024.0 * 1024.0),
            self.kernel,
            if self.release_build {
                "release"
            } else {
                "DEBUG (figures not representative)"
            }
        )
    }
}

/// A plain-text table: a header row and rows of cells, columns right-aligned except the first.
#[derive(Clone, Debug, Default)]
pub struct TextTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders the table.
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(String::len).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            for (i, cell) in cells.iter().enumerate() {
                let w = widths.get(i).copied().unwrap_or(0);
                if i == 0 {
                    let _ = write!(out, "{cell:<w$}");
                } else {
                    let _ = write!(out, "  {cell:>w$}");
                }
            }
            out.push('\n');
        };
        line(&mut out, &self.header);
        let total: usize = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &serde_json::Value) -> LabResult<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Microseconds from nanoseconds, for display.
pub fn us(ns: u64) -> String {
    let us = ns as f64 / 1000.0;
    if us >= 100.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.1}")
    }
}

/// Milliseconds from nanoseconds, for display.
pub fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

/// The median of `values` (the upper middle one of an even count; 0 when empty).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
