//! The per-file hole-punching switch: punch until the file system says EOPNOTSUPP, then log
//! once and stop trying.
// InnoDB (MariaDB): fil_node_t::punch_hole, cleared on DB_IO_NO_PUNCH_HOLE.

use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{IoError, Op, Result};
use crate::file::PunchOutcome;
use crate::sys;

/// Remembers whether hole punching was refused for one file.
#[derive(Debug, Default)]
pub(crate) struct HoleSwitch {
    refused: AtomicBool,
}

impl HoleSwitch {
    /// Punches `[offset, offset + len)` of `fd`, or reports `Unsupported` if this file system
    /// refused before or refuses now.
    pub(crate) fn punch(
        &self,
        fd: RawFd,
        path: &Path,
        offset: u64,
        len: u64,
    ) -> Result<PunchOutcome> {
        if self.refused.load(Ordering::Relaxed) {
            return Ok(PunchOutcome::Unsupported);
        }
        if len == 0 {
            return Ok(PunchOutcome::Punched);
        }
        match sys::punch_hole(fd, offset, len) {
            Ok(()) => Ok(PunchOutcome::Punched),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                if !self.refused.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        path = %path.display(),
                        "file system refuses hole punching (EOPNOTSUPP); punch_hole disabled for this file"
                    );
                }
                Ok(PunchOutcome::Unsupported)
            }
            Err(e) => Err(IoError::new(Op::PunchHole, path, offset, len, e)),
        }
    }
}
