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
/// The scan reads the file once, front to back, in `READ_AHEAD` steps; a frame's length is
/// checked against the header's bound before anything is allocated for it.
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
    ended: bool,
    /// The scan stopped on an I/O error, not at the end of the log.
    stopped_by_error: bool,
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
                Some(cp) if best.is_none_or(|b| cp.seq > b.seq) => best = Some(cp),
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
        Ok(Recovery {
            file,
            path,
            limit: checkpoint.lsn + header.capacity,
            next: checkpoint.lsn,
            window: Vec::new(),
            window_lsn: checkpoint.lsn,
            header,
            checkpoint,
            ended: false,
            stopped_by_error: false,
        })
    }

    /// The checkpoint the scan started from.
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.checkpoint.lsn
    }

    /// The LSN of the next frame the scan looks at (after the end: the end of the log).
    pub fn scanned_lsn(&self) -> Lsn {
        self.next
    }

    /// Scans to the end of the log (skipping what was not iterated), erases whatever a previous
    /// session may have written past that end, and opens the log for appending there.
    ///
    /// The erasure (zeros over up to two log buffers past the end, synced) is what keeps the
    /// frames of a crashed session that were written but lost their predecessor from being
    /// read as records after the new session's first appends put valid frames before them.
    pub fn finish(mut self, durability: Durability) -> Result<RedoLog> {
        if self.stopped_by_error {
            // Where the scan stopped is not the end of the log: read on from there.
            self.ended = false;
            self.stopped_by_error = false;
        }
        for mtr in self.by_ref() {
            mtr?;
        }
        let end = self.next;
        let erase = (2 * u64::from(self.header.buffer_bytes)).min(self.limit - end);
        ring::zero(&*self.file, &self.header, end, erase)?;
        self.file.sync_data()?;
        tracing::info!(path = %self.path.display(), end, "redo scan complete; appending from the end");
        Ok(RedoLog::start(
            self.file,
            self.path,
            self.header,
            self.checkpoint,
            end,
            durability,
        ))
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

    /// The frame at `self.next`, or `None` at the end of the log.
    fn next_frame(&mut self) -> Result<Option<RecoveredMtr>> {
        let lsn = self.next;
        if !self.fill(lsn, 4)? {
            return Ok(None);
        }
        let len_bytes = self.bytes(lsn, 4).try_into().unwrap_or([0; 4]);
        let Some(len) = format::frame_len(&self.header, lsn, len_bytes, self.limit) else {
            return Ok(None);
        };
        let total = len + format::FRAME_OVERHEAD;
        if !self.fill(lsn, total)? {
            return Ok(None);
        }
        let payload = self.bytes(lsn + 4, len);
        let crc = self.bytes(lsn + 4 + len, 4).try_into().unwrap_or([0; 4]);
        if !format::frame_valid(lsn, payload, crc) {
            return Ok(None);
        }
        let mtr = RecoveredMtr {
            start_lsn: lsn,
            end_lsn: lsn + total,
            payload: payload.to_vec(),
        };
        self.next = mtr.end_lsn;
        Ok(Some(mtr))
    }
}

impl Iterator for Recovery {
    type Item = Result<RecoveredMtr>;

    /// The next mtr; `None` at the end of the log. An I/O error is returned once, and ends the
    /// scan.
    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        match self.next_frame() {
            Ok(Some(mtr)) => Some(Ok(mtr)),
            Ok(None) => {
                self.ended = true;
                None
            }
            Err(e) => {
                self.ended = true;
                self.stopped_by_error = true;
                Some(Err(e))
            }
        }
    }
}
