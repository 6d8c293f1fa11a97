//! Reading `system.ibs` offline: its page size, both catalog copies (through the engine's own
//! [`catalog::read_copy`]), and the verification of its other pages.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use barracuda_page::{verify_page, CatalogEntry, PageError, PageId, PageNo, PageSize, SpaceHeader};

use super::{PageReader, Problem, SYSTEM_FILE_NAME};
use crate::catalog::{self, CatalogCopy, CopyFault};
use crate::error::{Error, Result};

/// What [`read_system`] learns.
pub(super) struct SystemInfo {
    pub(super) page_size: PageSize,
    pub(super) file_pages: u32,
    /// The newest valid catalog copy, if any.
    pub(super) catalog: Option<CatalogCopy>,
    pub(super) problems: Vec<Problem>,
}

/// The page size and the catalog of the newest valid copy, for `inspect` and `decode_page`.
pub(super) fn read_catalog(dir: &Path) -> Result<(PageSize, Vec<CatalogEntry>)> {
    let path = dir.join(SYSTEM_FILE_NAME);
    if !path.is_file() {
        return Err(Error::NotFound {
            dir: dir.to_owned(),
        });
    }
    let system = read_system(&path).map_err(|p| Error::Corrupt {
        file: path.clone(),
        what: p.reason,
    })?;
    match system.catalog {
        Some(catalog) => Ok((system.page_size, catalog.entries)),
        None => Err(Error::Corrupt {
            file: path,
            what: "no valid catalog copy".into(),
        }),
    }
}

/// Reads `system.ibs`: page size, both catalog copies (the newest valid generation wins, as in
/// `Engine::open`), and verifies every other page. `Err` when even the page size is unknown.
pub(super) fn read_system(path: &Path) -> std::result::Result<SystemInfo, Problem> {
    let mut prefix = [0u8; 64];
    let read_prefix = File::open(path).and_then(|mut f| f.read_exact(&mut prefix));
    read_prefix.map_err(|e| Problem {
        file: path.to_owned(),
        page_no: Some(0),
        reason: e.to_string(),
    })?;
    let page_size = SpaceHeader::peek_page_size(&prefix).map_err(|e| Problem {
        file: path.to_owned(),
        page_no: Some(0),
        reason: e.to_string(),
    })?;
    let reader = PageReader::open(path, page_size, crate::catalog::SYSTEM_SPACE)?;
    let mut problems: Vec<Problem> = reader.tail_problem().into_iter().collect();
    let mut checked = HashSet::new();
    checked.insert(0);
    match reader.read(0) {
        Err(e) => problems.push(reader.problem(Some(0), e.to_string())),
        Ok(page0) => {
            let result = verify_page(&page0, PageId::new(0, 0), page_size)
                .and_then(|()| SpaceHeader::read(&page0, page_size).map(|_| ()));
            if let Err(e) = result {
                problems.push(reader.problem(Some(0), e.to_string()));
            }
        }
    }
    let mut copies = Vec::new();
    for copy in 0..2u32 {
        match read_catalog_copy(&reader, copy, &mut checked) {
            Ok(c) => copies.push(c),
            // Reported even when the other copy is sound: after a clean shutdown both are.
            Err(problem) => problems.push(problem),
        }
    }
    let newest = copies.into_iter().max_by_key(|c| c.generation);
    match &newest {
        None => problems.push(reader.problem(None, "no valid catalog copy")),
        // Without its redo log, an unclean shutdown cannot be recovered; with it, opening the
        // database replays the log (tables may look inconsistent here until then).
        Some(c)
            if c.flags & catalog::FLAG_PAGES_AFTER_CHECKPOINT != 0
                && !path
                    .parent()
                    .is_some_and(|dir| barracuda_redo::log_path(dir).exists()) =>
        {
            problems.push(reader.problem(
                None,
                format!(
                    "not shut down cleanly: table pages were written after the last checkpoint \
                     (LSN {}) and the redo log is missing, so tables may mix old and new pages; \
                     the engine refuses to open it",
                    c.flushed_lsn
                ),
            ));
        }
        Some(_) => {}
    }
    for page_no in 1..reader.pages {
        if checked.contains(&page_no) {
            continue;
        }
        // Pages of no current catalog chain: stale pages of a longer chain, or never written.
        match reader.read(page_no) {
            Err(e) => problems.push(reader.problem(Some(page_no), e.to_string())),
            Ok(buf) => match verify_page(&buf, PageId::new(0, page_no), page_size) {
                Ok(()) | Err(PageError::AllZero { .. }) => {}
                Err(e) => problems.push(reader.problem(Some(page_no), e.to_string())),
            },
        }
    }
    Ok(SystemInfo {
        page_size,
        file_pages: reader.pages,
        catalog: newest,
        problems,
    })
}

/// Reads catalog copy `copy` through `reader`, adding its pages to `checked`.
fn read_catalog_copy(
    reader: &PageReader,
    copy: u32,
    checked: &mut HashSet<PageNo>,
) -> std::result::Result<CatalogCopy, Problem> {
    let name = copy_name(copy);
    catalog::read_copy(reader.page_size, copy, |page_no, buf| {
        if page_no >= reader.pages {
            return Err(reader.problem(
                Some(page_no),
                format!("catalog copy {name} runs past the end of the file"),
            ));
        }
        checked.insert(page_no);
        reader
            .read_into(page_no, buf)
            .map_err(|e| reader.problem(Some(page_no), e.to_string()))
    })
    .map_err(|(page_no, fault)| match fault {
        CopyFault::Read(problem) => problem,
        CopyFault::Page(e) => reader.problem(Some(page_no), format!("catalog copy {name}: {e}")),
        CopyFault::MixedGenerations {
            generation,
            expected,
        } => reader.problem(
            Some(page_no),
            format!("catalog page of generation {generation} in a copy of generation {expected}"),
        ),
        CopyFault::BadLink { next, expected } => reader.problem(
            Some(page_no),
            format!("next catalog page is {next}, expected {expected}"),
        ),
    })
}

fn copy_name(copy: u32) -> &'static str {
    if copy == 0 {
        "A"
    } else {
        "B"
    }
}
