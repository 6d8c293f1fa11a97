//! `check`, `inspect` and `status`: thin front ends of `barracuda::inspect` and
//! `Engine::status`.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use barracuda::{inspect, Engine, EngineOptions};

use crate::LabResult;

/// `barracuda check <dir>`: exit 0 when sound, 1 naming each bad page.
pub fn check(dir: &Path) -> LabResult<ExitCode> {
    let report = inspect::check_database(dir)?;
    emit(&report.to_string())?;
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `barracuda inspect <dir> [table] [--page N]`.
pub fn inspect(dir: &Path, table: Option<&str>, page: Option<u32>) -> LabResult<ExitCode> {
    if let Some(page_no) = page {
        let Some(table) = table else {
            return Err("--page needs a table name (or system.ibs)".into());
        };
        emit(&inspect::decode_page(dir, table, page_no)?.to_string())?;
        return Ok(ExitCode::SUCCESS);
    }
    let reports = inspect::inspect_database(dir, table)?;
    for r in &reports {
        emit(&r.to_string())?;
    }
    if reports.is_empty() {
        emit("no tables\n")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `barracuda status <dir>`.
pub fn status(dir: &Path) -> LabResult<()> {
    let db = Engine::open(dir, EngineOptions::default().create_if_missing(false))?;
    emit(&db.status().to_string())?;
    db.close()?;
    Ok(())
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn emit(text: &str) -> LabResult<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
