//! [`Recovery`]: opening an existing log, finding the newest valid checkpoint, and scanning the
//! mtrs from it to the end of the log — the first frame that is incomplete, torn, stale (left by
//! an earlier lap of the circular file) or corrupt.
// InnoDB: recv_find_max_checkpoint, recv_scan_log_recs (MariaDB 10.8 framing, MDEV-14425).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use barracuda_io::{FileSystem, OpenOptions, PageFile};

use crate::error::{RedoError, Result};
use crate::format::{self, Checkpoint, Header, BLOCK, DATA_OFFSET, SLOT_LEN, SLOT_OFFSETS};
use crate::log::{log_path, Durability, RedoLog};
use crate::ring;
use crate::Lsn;

/// Bytes read from the file per scan step (more when one frame is larger).
const READ_AHEAD: u64 = 256 << 10;

/// Whether checkpoint number `a` is newer than `b` in serial-number arithmetic (RFC 1982): the
/// numbers wrap, so a log whose slot holds `u64::MAX` goes on with 0 rather than overflow.
pub(crate) fn newer(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// One mtr found by the scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredMtr {
    /// LSN of the first byte of its frame.
    pub start_lsn: Lsn,
    /// LSN just past its frame: the next mtr's start.
    pub end_lsn: Lsn,
    /// The mtr's bytes, as appended.
    pub payload: Vec<u8>,
}

/// A log opened for recovery. Iterate it for the mtrs from the checkpoint to the end of the log,
/// then [`finish`](Self::finish) it to append after them.
///
/// The end of the log is the end of the last *complete* commit unit (see
/// [`RedoLog::append_to_unit`]): frames of a unit whose last frame is missing are not log. It is
/// found when the log is opened, by a first scan that checks every frame's CRC and reads no
/// record; iteration then reads the frames again up to that end. Each scan reads the file front
/// to back in `READ_AHEAD` steps, and a frame's length is checked against the header's bound
/// before anything is allocated for it.
pub struct Recovery {
    file: Arc<dyn PageFile>,
    path: PathBuf,
    header: Header,
    checkpoint: Checkpoint,
    /// The next frame's LSN.
    next: Lsn,
    /// No frame may end past this: the checkpoint LSN plus the capacity.
    limit: Lsn,
    /// Log bytes from `window_lsn`, read ahead.
    window: Vec<u8>,
    window_lsn: Lsn,
    /// The end of the last complete commit unit: the end of the log as recovery sees it.
    end: Lsn,
    /// Where the first scan stopped (past `end` when the last unit is incomplete).
    scan_end: Lsn,
    ended: bool,
}

impl std::fmt::Debug for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recovery")
            .field("path", &self.path)
            .field("checkpoint", &self.checkpoint)
            .field("next", &self.next)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Recovery {
    /// Opens the log of the database in `dir`, validates its header and picks the valid
    /// checkpoint slot with the larger sequence number (a torn or stale slot is skipped).
    pub fn open(fs: &dyn FileSystem, dir: &Path) -> Result<Recovery> {
        let path = log_path(dir);
        let file = fs.open(&path, &OpenOptions::new())?;
        let len = file.len()?;
        let corrupt = |offset, what| RedoError::Corrupt {
            path: path.clone(),
            offset,
            what,
        };
        if len < DATA_OFFSET {
            return Err(corrupt(
                0,
                format!("file of {len} bytes, shorter than the {DATA_OFFSET}-byte header area"),
            ));
        }
        let mut head = vec![0u8; BLOCK as usize];
        file.read_at(&mut head, 0)?;
        let header = Header::decode(&head).map_err(|what| format::bad_header(&path, &what))?;
        if len < DATA_OFFSET + header.capacity {
            return Err(corrupt(
                0,
                format!(
                    "file of {len} bytes, the header promises {} of log",
                    DATA_OFFSET + header.capacity
                ),
            ));
        }
        let mut best: Option<Checkpoint> = None;
        for offset in SLOT_OFFSETS {
            let mut slot = [0u8; SLOT_LEN];
            file.read_at(&mut slot, offset)?;
            match Checkpoint::decode(&slot, &header) {
                Some(cp) if best.is_none_or(|b| newer(cp.seq, b.seq)) => best = Some(cp),
                Some(_) => {}
                None => {
                    tracing::warn!(path = %path.display(), offset, "checkpoint slot invalid; using the other one");
                }
            }
        }
        let checkpoint = best.ok_or_else(|| {
            corrupt(
                SLOT_OFFSETS[0],
                "neither checkpoint slot is valid (torn, zero or of another log)".into(),
            )
        })?;
        tracing::info!(path = %path.display(), lsn = checkpoint.lsn, "redo recovery starts at checkpoint");
        let mut recovery = Recovery {
            file,
            path,
            limit: checkpoint.lsn + header.capacity,
            next: checkpoint.lsn,
            window: Vec::new(),
            window_lsn: checkpoint.lsn,
            end: checkpoint.lsn,
            scan_end: checkpoint.lsn,
            header,
            checkpoint,
            ended: false,
        };
        recovery.find_end()?;
        Ok(recovery)
    }

    /// The first scan: finds where the last complete unit ends, then rewinds to the checkpoint.
    fn find_end(&mut self) -> Result<()> {
        let mut end = self.next;
        while let Some((_, frame_end, continues)) = self.next_frame()? {
            if !continues {
                end = frame_end;
            }
        }
        self.scan_end = self.next;
        self.end = end;
        if self.scan_end > end {
            tracing::warn!(
                path = %self.path.display(),
                from = end,
                bytes = self.scan_end - end,
                "redo log ends inside a commit unit; its frames are discarded"
            );
        }
        self.next = self.checkpoint.lsn;
        Ok(())
    }

    /// The checkpoint the scan started from.
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.checkpoint.lsn
    }

    /// The LSN of the next frame the iteration yields (after the last: the end of the log).
    pub fn scanned_lsn(&self) -> Lsn {
        self.next
    }

    /// The end of the log: the end of the last complete commit unit. Iteration stops here;
    /// [`finish`](Self::finish) appends after the discarded frames, at
    /// [`resume_lsn`](Self::resume_lsn).
    pub fn end_lsn(&self) -> Lsn {
        self.end
    }

    /// Bytes of valid frames past [`end_lsn`](Self::end_lsn) that belong to a commit unit whose
    /// last frame never reached the log (a transaction in flight at the crash): discarded.
    pub fn discarded_bytes(&self) -> u64 {
        self.scan_end - self.end
    }

    /// Where [`finish`](Self::finish) opens the log for appending: past every valid frame the
    /// scan found, the discarded ones included (`end_lsn + discarded_bytes`). See `finish` for
    /// why not at `end_lsn`.
    pub fn resume_lsn(&self) -> Lsn {
        self.scan_end
    }

    /// Erases whatever a previous session may have written past the frames the scan found,
    /// and opens the log for appending there, at [`resume_lsn`](Self::resume_lsn). When frames
    /// were discarded it also writes a checkpoint there: call it only once every change up to
    /// [`end_lsn`](Self::end_lsn) is durable in the pages.
    ///
    /// The erasure (zeros over up to two log buffers past the last valid frame, synced) is what
    /// keeps the frames of a crashed session that were written but lost their predecessor from
    /// being read as records after the new session's first appends put valid frames before
    /// them: a session never has more than two buffers written but unsynced, and every synced
    /// frame is valid, so the scan ends at most two buffers before the last written byte.
    ///
    /// The LSNs of a discarded unit are not handed out again. Pages the unit allocated may have
    /// reached disk before it was complete (the engine's write barrier exempts them), stamped
    /// with its LSNs — up to `resume_lsn`, as a page is written only once the log is synced to
    /// its LSN. A new session appending from `end_lsn` would give a later change of such a
    /// page an LSN at or below that stamp, and the next recovery's page-LSN check would skip
    /// the change. The discarded frames stay in the file, behind the checkpoint at
    /// `resume_lsn`, so that the unit's frames (flagged as continued) can never be chained with
    /// the new session's first frames into one complete unit; until that checkpoint is written
    /// a crash leaves them as they were, and the next recovery discards them again.
    pub fn finish(self, durability: Durability) -> Result<RedoLog> {
        let (end, resume) = (self.end, self.scan_end);
        let erase = (2 * u64::from(self.header.buffer_bytes)).min(self.limit - resume);
        ring::zero(&*self.file, &self.header, resume, erase)?;
        self.file.sync_data()?;
        tracing::info!(
            path = %self.path.display(),
            end,
            resume,
            "redo scan complete; appending after the last valid frame"
        );
        let log = RedoLog::start(
            self.file,
            self.path,
            self.header,
            self.checkpoint,
            resume,
            durability,
        );
        if resume > end {
            log.write_checkpoint(resume)?;
        }
        Ok(log)
    }

    /// Makes `[lsn, lsn + len)` readable from the window; `false` if it reaches past `limit`.
    fn fill(&mut self, lsn: Lsn, len: u64) -> Result<bool> {
        let end = lsn + len;
        if end > self.limit {
            return Ok(false);
        }
        let have = self.window_lsn + self.window.len() as u64;
        if lsn >= self.window_lsn && end <= have {
            return Ok(true);
        }
        let want = len.max(READ_AHEAD).min(self.limit - lsn);
        self.window.resize(want as usize, 0);
        ring::read(&*self.file, &self.header, lsn, &mut self.window)?;
        self.window_lsn = lsn;
        Ok(true)
    }

    /// The window's bytes `[lsn, lsn + len)` (after a successful `fill`).
    fn bytes(&self, lsn: Lsn, len: u64) -> &[u8] {
        let at = (lsn - self.window_lsn) as usize;
        self.window.get(at..at + len as usize).unwrap_or_default()
    }

    /// Checks the frame at `self.next` and steps past it: its start, end and [`CONTINUES`]
    /// flag, its payload left in the window at `start + 4`. `None` at the end of the frames.
    ///
    /// [`CONTINUES`]: format::CONTINUES
    fn next_frame(&mut self) -> Result<Option<(Lsn, Lsn, bool)>> {
        let lsn = self.next;
        if !self.fill(lsn, 4)? {
            return Ok(None);
        }
        let len_bytes = self.bytes(lsn, 4).try_into().unwrap_or([0; 4]);
        let Some((len, continues)) = format::frame_len(&self.header, lsn, len_bytes, self.limit)
        else {
            return Ok(None);
        };
        let total = len + format::FRAME_OVERHEAD;
        if !self.fill(lsn, total)? {
            return Ok(None);
        }
        let payload = self.bytes(lsn + 4, len);
        let crc = self.bytes(lsn + 4 + len, 4).try_into().unwrap_or([0; 4]);
        if !format::frame_valid(lsn, payload, continues, crc) {
            return Ok(None);
        }
        self.next = lsn + total;
        Ok(Some((lsn, lsn + total, continues)))
    }
}

impl Recovery {
    /// The next mtr up to the end of the log as `(start LSN, end LSN, payload)`, the payload
    /// borrowed from the read window until the next call (the iterator copies it). `Ok(None)`
    /// after the last. An I/O error is returned once, and ends the iteration.
    pub fn next_mtr(&mut self) -> Result<Option<(Lsn, Lsn, &[u8])>> {
        let Some(frame) = self.step(true)? else {
            return Ok(None);
        };
        Ok(Some((frame.start_lsn, frame.end_lsn, frame.payload)))
    }

    /// [`next_mtr`](Self::next_mtr) without checking the frame's CRC a second time (the scan
    /// at [`open`](Self::open) checked every frame up to the end): the caller checks it with
    /// [`UncheckedMtr::crc_matches`] before it uses the payload, possibly on another thread —
    /// recovery's reading thread hands that work to its apply threads. The frame's length is
    /// still checked against the header's bound before anything is read.
    pub fn next_mtr_unchecked(&mut self) -> Result<Option<UncheckedMtr<'_>>> {
        self.step(false)
    }

    /// Steps past the next frame up to the end, checking its CRC if `check_crc`.
    fn step(&mut self, check_crc: bool) -> Result<Option<UncheckedMtr<'_>>> {
        if self.ended || self.next >= self.end {
            return Ok(None);
        }
        let found = if check_crc {
            self.next_frame()
        } else {
            self.next_frame_unchecked()
        };
        match found {
            Ok(Some((start, end, continues))) => {
                let len = end - start - format::FRAME_OVERHEAD;
                let crc = self.bytes(start + 4 + len, 4).try_into().unwrap_or([0; 4]);
                Ok(Some(UncheckedMtr {
                    start_lsn: start,
                    end_lsn: end,
                    payload: self.bytes(start + 4, len),
                    continues,
                    crc: u32::from_le_bytes(crc),
                }))
            }
            Ok(None) => {
                // The first scan found valid frames up to `end`; the file changed under us.
                self.ended = true;
                Err(self.changed_since_scan(self.next))
            }
            Err(e) => {
                self.ended = true;
                Err(e)
            }
        }
    }

    /// The error for a frame at `lsn` that the scan at open found valid and a later read
    /// does not: the file changed under recovery.
    pub fn changed_since_scan(&self, lsn: Lsn) -> RedoError {
        RedoError::Corrupt {
            path: self.path.clone(),
            offset: self.header.offset_of(lsn),
            what: format!("the frame at LSN {lsn} was valid in the first scan and is not now"),
        }
    }

    /// [`next_frame`](Self::next_frame) without the CRC check, for frames the first scan
    /// checked.
    fn next_frame_unchecked(&mut self) -> Result<Option<(Lsn, Lsn, bool)>> {
        let lsn = self.next;
        if !self.fill(lsn, 4)? {
            return Ok(None);
        }
        let len_bytes = self.bytes(lsn, 4).try_into().unwrap_or([0; 4]);
        let Some((len, continues)) = format::frame_len(&self.header, lsn, len_bytes, self.limit)
        else {
            return Ok(None);
        };
        let total = len + format::FRAME_OVERHEAD;
        if !self.fill(lsn, total)? {
            return Ok(None);
        }
        self.next = lsn + total;
        Ok(Some((lsn, lsn + total, continues)))
    }
}

/// An mtr read by [`Recovery::next_mtr_unchecked`]: its frame's CRC is not checked yet.
#[derive(Debug, Clone, Copy)]
pub struct UncheckedMtr<'a> {
    /// LSN of the first byte of its frame.
    pub start_lsn: Lsn,
    /// LSN just past its frame.
    pub end_lsn: Lsn,
    /// The mtr's bytes, unchecked.
    pub payload: &'a [u8],
    /// The frame's CONTINUES flag (its commit unit goes on in the next frame).
    pub continues: bool,
    /// The CRC the frame carries.
    pub crc: u32,
}

impl UncheckedMtr<'_> {
    /// Whether `payload` (this mtr's bytes, maybe copied elsewhere) matches the frame's CRC.
    pub fn crc_matches(start_lsn: Lsn, payload: &[u8], continues: bool, crc: u32) -> bool {
        format::frame_valid(start_lsn, payload, continues, crc.to_le_bytes())
    }
}

impl Iterator for Recovery {
    type Item = Result<RecoveredMtr>;

    /// The next mtr up to the end of the log; `None` after the last. An I/O error is returned
    /// once, and ends the iteration.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_mtr()
            .map(|found| {
                found.map(|(start_lsn, end_lsn, payload)| RecoveredMtr {
                    start_lsn,
                    end_lsn,
                    payload: payload.to_vec(),
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use barracuda_io::FaultyFileSystem;

    use super::*;
    use crate::log::RedoOptions;

    /// Checkpoint numbers compare as serial numbers: one past `u64::MAX` is 0, and newer.
    #[test]
    fn checkpoint_numbers_wrap() {
        assert!(newer(2, 1) && !newer(1, 2) && !newer(7, 7));
        assert!(newer(0, u64::MAX) && !newer(u64::MAX, 0));
        assert!(newer(u64::MAX, u64::MAX - 1));
    }

    /// A byte of a frame changed between the scan at open and the read for replay: the checked
    /// read refuses the frame, naming its LSN and file offset, and the unchecked read yields it
    /// with a CRC that does not match (what recovery's apply threads check).
    #[test]
    fn a_frame_changed_after_the_scan_is_refused_checked_or_not() -> Result<()> {
        let fs = FaultyFileSystem::new();
        let dir = Path::new("/db");
        let options = RedoOptions {
            capacity: 16 << 10,
            buffer_bytes: 4096,
            start_lsn: 8192,
            durability: Durability::Sync,
        };
        let log = RedoLog::create(&fs, dir, &options)?;
        log.commit(&[1u8; 100])?;
        let (damaged, _) = log.commit(&[2u8; 100])?;
        fs.crash()?;
        drop(log);
        let mut checked = Recovery::open(&fs, dir)?;
        let mut unchecked = Recovery::open(&fs, dir)?;
        let offset = checked.header.offset_of(damaged) + 4 + 10;
        fs.open(&log_path(dir), &OpenOptions::new())?
            .write_at(&[9], offset)?;
        // The scan's read-ahead window holds this small log whole; a large log is read again.
        checked.window.clear();
        unchecked.window.clear();

        assert!(checked.next_mtr()?.is_some());
        match checked.next_mtr() {
            Err(RedoError::Corrupt {
                offset: at, what, ..
            }) => {
                assert_eq!(at, offset - 14, "{what}");
                assert!(what.contains(&format!("LSN {damaged}")), "{what}");
            }
            other => panic!("expected the changed frame to be refused, got {other:?}"),
        }

        let first = unchecked
            .next_mtr_unchecked()?
            .map(|m| (m.start_lsn, m.continues, m.crc, m.payload.to_vec()));
        let (lsn, continues, crc, payload) = first.ok_or(RedoError::Corrupt {
            path: PathBuf::new(),
            offset: 0,
            what: "no first mtr".into(),
        })?;
        assert!(UncheckedMtr::crc_matches(lsn, &payload, continues, crc));
        let second = unchecked
            .next_mtr_unchecked()?
            .map(|m| (m.start_lsn, m.continues, m.crc, m.payload.to_vec()));
        let (lsn, continues, crc, payload) = second.ok_or(RedoError::Corrupt {
            path: PathBuf::new(),
            offset: 0,
            what: "no second mtr".into(),
        })?;
        assert_eq!(lsn, damaged);
        assert_eq!(payload.get(10), Some(&9));
        assert!(!UncheckedMtr::crc_matches(lsn, &payload, continues, crc));
        Ok(())
    }
}
