//! Checking the undo tablespace offline: its allocation bitmaps, every page verified and
//! decoded by its type, the rollback segment pages (the first also the transaction system
//! page), every undo log they name (the active slots and the history lists) and their caches
//! of header pages walked page by page, and the bitmaps against the pages those logs reach.
//! Every walk is bounded by the file's page count, so a crafted loop ends.

use std::collections::BTreeMap;
use std::path::Path;

use barracuda_page::space::is_bitmap_page;
use barracuda_page::trx_sys::MAX_RSEGS;
use barracuda_page::{
    verify_page, FileHeader, PageError, PageId, PageNo, PageSize, PageType, TrxSysPage,
    UndoLogState, UndoPage, FIL_NULL,
};

use super::bitmap::read_bitmaps;
use super::report::UndoReport;
use super::{PageReader, Problem, TableReport};
use crate::layout::{UNDO_FILE, UNDO_SPACE_ID};

/// The transaction system page's number, the first rollback segment's (FORMATS §13.3).
const TRX_SYS_PAGE: PageNo = 1;

/// Checks `undo.ibu` in `dir`; `None` when there is none (the next open creates it). Problems
/// go to `problems`.
pub(super) fn scan_undo(
    dir: &Path,
    page_size: PageSize,
    problems: &mut Vec<Problem>,
) -> Option<UndoReport> {
    let path = dir.join(UNDO_FILE);
    if !path.is_file() {
        return None;
    }
    let mut report = UndoReport {
        file: path.clone(),
        ..UndoReport::default()
    };
    let reader = match PageReader::open(&path, page_size, UNDO_SPACE_ID) {
        Ok(reader) => reader,
        Err(problem) => {
            problems.push(problem);
            return Some(report);
        }
    };
    report.file_pages = reader.pages;
    problems.extend(reader.tail_problem());
    // The bitmap reader reports into a table report: borrow one for its problems.
    let mut scratch = TableReport::default();
    let bitmaps = read_bitmaps(&reader, UNDO_SPACE_ID, &mut scratch);
    problems.append(&mut scratch.problems);
    if reader.pages <= TRX_SYS_PAGE {
        problems.push(reader.problem(None, "no transaction system page"));
        return Some(report);
    }

    // Sequential pass: which pages are undo pages (sound ones), by number.
    let mut undo_pages = vec![false; reader.pages as usize];
    let mut rseg_pages = BTreeMap::new();
    for page_no in 0..reader.pages {
        let in_use = bitmaps.used.get(page_no as usize).copied().unwrap_or(false);
        match scan_page(&reader, page_no, in_use && bitmaps.sound) {
            Ok(Scanned::Undo) => {
                if let Some(u) = undo_pages.get_mut(page_no as usize) {
                    *u = true;
                }
            }
            Ok(Scanned::TrxSys(buf)) => {
                rseg_pages.insert(page_no, buf);
            }
            Ok(Scanned::Other) => {}
            Err(reason) => {
                report.bad_pages += 1;
                problems.push(reader.problem(Some(page_no), reason));
            }
        }
    }
    let Some(segments) = rollback_segments(&reader, &rseg_pages, problems) else {
        return Some(report);
    };
    report.rollback_segments = segments.len() as u32;
    report.max_trx_id = segments.first().map_or(0, |(_, sys)| sys.max_trx_id());

    // The logs: every page they reach is an undo page of theirs, reached once.
    let mut reached = vec![false; reader.pages as usize];
    let mut walk = LogWalk {
        reader: &reader,
        undo_pages: &undo_pages,
        reached: &mut reached,
        problems,
        max_trx_id: report.max_trx_id,
    };
    for &(page_no, ref sys) in &segments {
        report.history_list_length = report.history_list_length.saturating_add(sys.history_len());
        for (slot, first) in sys.active_logs() {
            report.active_logs += 1;
            walk.log(
                first,
                UndoLogState::Active,
                &format!("active slot {slot} of rollback segment page {page_no}"),
            );
        }
        let (mut next, mut found) = (sys.history_first(), 0u32);
        let mut last = FIL_NULL;
        while next != FIL_NULL && found <= reader.pages {
            found += 1;
            last = next;
            next = walk
                .log(next, UndoLogState::Committed, "a history list")
                .unwrap_or(FIL_NULL);
        }
        if found != sys.history_len() || last != sys.history_last() {
            walk.problems.push(walk.reader.problem(
                Some(page_no),
                format!(
                    "the history list holds {found} logs ending at page {last}, its rollback \
                     segment page says {} ending at page {}",
                    sys.history_len(),
                    sys.history_last()
                ),
            ));
        }
        report.cached_header_pages = report
            .cached_header_pages
            .saturating_add(walk.cache(sys.cache_first()));
    }
    report.log_pages = reached.iter().filter(|&&r| r).count() as u32;

    // Bitmaps against the logs: an undo page no log reaches has leaked.
    if bitmaps.sound {
        for page_no in 0..reader.pages {
            let i = page_no as usize;
            let in_use = bitmaps.used.get(i).copied().unwrap_or(false);
            let is_reached = reached.get(i).copied().unwrap_or(false);
            if is_reached && !in_use {
                problems.push(reader.problem(
                    Some(page_no),
                    "reached from an undo log but marked free in the allocation bitmap",
                ));
            } else if in_use && !is_reached && undo_pages.get(i).copied().unwrap_or(false) {
                problems.push(reader.problem(
                    Some(page_no),
                    "undo page marked in use but reached from no log (leaked page)",
                ));
            }
        }
    }
    Some(report)
}

/// What the sequential pass found on a page that verified.
enum Scanned {
    Undo,
    TrxSys(Vec<u8>),
    Other,
}

/// Verifies and decodes page `page_no`; `Err` is the reason it is bad.
fn scan_page(
    reader: &PageReader,
    page_no: PageNo,
    marked_in_use: bool,
) -> std::result::Result<Scanned, String> {
    let page_size = reader.page_size;
    let buf = reader.read(page_no).map_err(|e| e.to_string())?;
    match verify_page(&buf, PageId::new(UNDO_SPACE_ID, page_no), page_size) {
        Ok(()) => {}
        Err(PageError::AllZero { .. }) if marked_in_use && page_no != TRX_SYS_PAGE => {
            return Err("marked in use but never written (all zero)".into());
        }
        Err(PageError::AllZero { .. }) if page_no != TRX_SYS_PAGE => return Ok(Scanned::Other),
        Err(e) => return Err(e.to_string()),
    }
    let header = FileHeader::read(&buf).map_err(|e| e.to_string())?;
    let bitmap_position = is_bitmap_page(page_no, page_size);
    match header.page_type {
        PageType::SpaceHeader if bitmap_position => Ok(Scanned::Other),
        _ if bitmap_position => Err(format!(
            "page type {:?} where an allocation bitmap belongs",
            header.page_type
        )),
        PageType::TrxSys => Ok(Scanned::TrxSys(buf)),
        _ if page_no == TRX_SYS_PAGE => Err(format!(
            "page type {:?} where the transaction system page belongs",
            header.page_type
        )),
        PageType::Undo => UndoPage::open(&buf[..], page_size)
            .map(|_| Scanned::Undo)
            .map_err(|e| e.to_string()),
        PageType::Free => {
            if marked_in_use {
                Err("marked in use but of type Free".into())
            } else {
                Ok(Scanned::Other)
            }
        }
        other => Err(format!("{other:?} page in the undo tablespace")),
    }
}

/// A rollback segment page's number and the page, decoded.
type RollbackSegment<'b> = (PageNo, TrxSysPage<&'b [u8]>);

/// The rollback segment pages, in order, decoded: pages `1..=count` as page 1 counts them, each
/// of type `TrxSys`, and no other page of that type. `None` (with a problem) when page 1 is
/// unusable; a missing or broken later segment is a problem and is left out.
fn rollback_segments<'b>(
    reader: &PageReader,
    rseg_pages: &'b BTreeMap<PageNo, Vec<u8>>,
    problems: &mut Vec<Problem>,
) -> Option<Vec<RollbackSegment<'b>>> {
    let page_size = reader.page_size;
    let Some(sys_buf) = rseg_pages.get(&TRX_SYS_PAGE) else {
        problems.push(reader.problem(Some(TRX_SYS_PAGE), "not a transaction system page"));
        return None;
    };
    let sys = match TrxSysPage::open(&sys_buf[..], page_size) {
        Ok(sys) => sys,
        Err(e) => {
            problems.push(reader.problem(Some(TRX_SYS_PAGE), e.to_string()));
            return None;
        }
    };
    let count = sys.rseg_count();
    if !(1..=MAX_RSEGS).contains(&count) {
        problems.push(reader.problem(
            Some(TRX_SYS_PAGE),
            format!("{count} rollback segments, expected 1 to {MAX_RSEGS}"),
        ));
        return None;
    }
    let mut segments = vec![(TRX_SYS_PAGE, sys)];
    for page_no in (TRX_SYS_PAGE + 1)..=count {
        let Some(buf) = rseg_pages.get(&page_no) else {
            problems.push(reader.problem(
                Some(page_no),
                format!("not a rollback segment page (page 1 counts {count} segments)"),
            ));
            continue;
        };
        match TrxSysPage::open(&buf[..], page_size) {
            Ok(page) => segments.push((page_no, page)),
            Err(e) => problems.push(reader.problem(Some(page_no), e.to_string())),
        }
    }
    for &page_no in rseg_pages.keys() {
        if page_no > count {
            problems.push(reader.problem(
                Some(page_no),
                format!("a rollback segment page beyond the {count} that page 1 counts"),
            ));
        }
    }
    Some(segments)
}

/// Walks logs page by page, marking what they reach.
struct LogWalk<'a> {
    reader: &'a PageReader,
    undo_pages: &'a [bool],
    reached: &'a mut [bool],
    problems: &'a mut Vec<Problem>,
    max_trx_id: u64,
}

impl LogWalk<'_> {
    /// Walks the log whose header page is `first` (named by `by`), which must be in `state`;
    /// returns its history link, or `None` (with a problem) when it cannot be followed.
    fn log(&mut self, first: PageNo, state: UndoLogState, by: &str) -> Option<PageNo> {
        let page_size = self.reader.page_size;
        let mut history_next = None;
        let mut page_no = first;
        let mut prev = FIL_NULL;
        let mut pages = 0u32;
        while page_no != FIL_NULL {
            pages += 1;
            let i = page_no as usize;
            if pages > self.reader.pages || !self.undo_pages.get(i).copied().unwrap_or(false) {
                self.problem(
                    page_no,
                    format!("named by {by} (log at page {first}) but not a sound undo page"),
                );
                return None;
            }
            if let Some(r) = self.reached.get_mut(i) {
                if *r {
                    self.problem(page_no, format!("reached twice (log at page {first})"));
                    return None;
                }
                *r = true;
            }
            let buf = self.reader.read(page_no).ok()?;
            let page = UndoPage::open(&buf[..], page_size).ok()?;
            if page.first_page() != first || page.prev_page() != prev {
                self.problem(
                    page_no,
                    format!(
                        "links (first page {}, previous {}) do not fit the log at page {first}",
                        page.first_page(),
                        page.prev_page()
                    ),
                );
                return None;
            }
            if page_no == first {
                let Some(header) = page.log_header() else {
                    self.problem(page_no, format!("named by {by} but holds no log header"));
                    return None;
                };
                if header.state != state {
                    self.problem(
                        page_no,
                        format!("log in state {:?}, named by {by}", header.state),
                    );
                }
                if header.trx_id >= self.max_trx_id || header.trx_no >= self.max_trx_id {
                    self.problem(
                        page_no,
                        format!(
                            "transaction {} (commit number {}) at or above the persisted high \
                             water mark {}",
                            header.trx_id, header.trx_no, self.max_trx_id
                        ),
                    );
                }
                history_next = Some(header.history_next);
            }
            prev = page_no;
            page_no = page.next_page();
        }
        history_next
    }

    /// Walks the cache of header pages from `first`: each a header page in state `Cached`
    /// whose depth is one less than the page before it, down to 1 at the end. Returns how many
    /// it found.
    fn cache(&mut self, first: PageNo) -> u32 {
        let page_size = self.reader.page_size;
        let (mut next, mut found) = (first, 0u32);
        let mut depth_expected = None;
        while next != FIL_NULL && found <= self.reader.pages {
            found += 1;
            let page_no = next;
            if self
                .log(page_no, UndoLogState::Cached, "the header page cache")
                .is_none()
            {
                return found;
            }
            let header = self
                .reader
                .read(page_no)
                .ok()
                .and_then(|buf| UndoPage::open(&buf[..], page_size).ok()?.log_header());
            let Some(header) = header else {
                return found;
            };
            let expected = depth_expected.unwrap_or(header.cache_depth);
            let end = header.history_next == FIL_NULL;
            if header.cache_depth != expected || (end && header.cache_depth != 1) {
                self.problem(
                    page_no,
                    format!(
                        "cached header page at depth {}, where the cache list puts it at {}",
                        header.cache_depth,
                        if end { 1 } else { expected }
                    ),
                );
            }
            depth_expected = Some(header.cache_depth.saturating_sub(1));
            next = header.history_next;
        }
        found
    }

    fn problem(&mut self, page_no: PageNo, reason: String) {
        self.problems
            .push(self.reader.problem(Some(page_no), reason));
    }
}
