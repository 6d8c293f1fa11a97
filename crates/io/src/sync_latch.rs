//! [`SyncLatch`]: a page file that remembers a failed sync and fails every later one.
//!
//! After a failed `fsync` the kernel may have dropped the dirty pages it could not write and
//! marked them clean, so a retried `fsync` reports success for data that is gone (PostgreSQL's
//! "fsyncgate", 2018). A caller that retries — a page flush left dirty for the next round, a
//! doublewrite area waiting for its data files — would then go on as if the writes were
//! durable. Behind this wrapper the first failure sticks: every later `sync_data` / `sync_all`
//! fails too, naming the file, and the engine's next checkpoint turns it read-only instead of
//! moving past writes that may be lost. Reads and writes are passed through unchanged.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{IoError, Op, Result};
use crate::file::{PageFile, PunchOutcome};

/// A [`PageFile`] whose syncs fail for good after the first one that fails (see the module
/// documentation). Every other call goes to the file it wraps.
#[derive(Debug)]
pub struct SyncLatch {
    inner: Arc<dyn PageFile>,
    failed: AtomicBool,
}

impl SyncLatch {
    /// Wraps `inner`; no sync has failed yet.
    pub fn new(inner: Arc<dyn PageFile>) -> Self {
        Self {
            inner,
            failed: AtomicBool::new(false),
        }
    }

    /// Whether a sync of this file has failed (every later one fails too).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    fn sync(&self, op: Op, call: impl FnOnce(&dyn PageFile) -> Result<()>) -> Result<()> {
        if self.has_failed() {
            return Err(IoError::from_errno(op, self.path(), 0, 0, libc::EIO));
        }
        let result = call(&*self.inner);
        if result.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        result
    }
}

impl PageFile for SyncLatch {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.inner.read_at(buf, offset)
    }

    fn read_vectored_at(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        self.inner.read_vectored_at(reads)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.inner.write_at(buf, offset)
    }

    fn write_vectored_at(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        self.inner.write_vectored_at(writes)
    }

    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.inner.write_atomic_at(buf, offset)
    }

    fn sync_data(&self) -> Result<()> {
        self.sync(Op::SyncData, |f| f.sync_data())
    }

    fn sync_all(&self) -> Result<()> {
        self.sync(Op::SyncAll, |f| f.sync_all())
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.inner.set_len(len)
    }

    fn len(&self) -> Result<u64> {
        self.inner.len()
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.inner.allocated_bytes()
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        self.inner.punch_hole(offset, len)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        self.inner.atomic_write_unit()
    }

    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn alignment(&self) -> usize {
        self.inner.alignment()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn backend_name(&self) -> &'static str {
        self.inner.backend_name()
    }
}

#[cfg(test)]
mod tests {
    use super::SyncLatch;
    use crate::faulty::{ErrorKind, FaultyFile, OpKind};
    use crate::{MemFile, PageFile};
    use std::sync::Arc;

    #[test]
    fn a_failed_sync_fails_every_later_one_and_nothing_else() {
        let inner = Arc::new(FaultyFile::new(MemFile::new("latched")).unwrap());
        let file = SyncLatch::new(inner.clone());
        file.write_at(&[1; 512], 0).unwrap();
        file.sync_data().unwrap();
        assert!(!file.has_failed());

        inner.fail_nth(OpKind::Sync, 1, ErrorKind::Eio);
        file.write_at(&[2; 512], 512).unwrap();
        assert!(file.sync_data().unwrap_err().is_eio());
        assert!(file.has_failed());
        let syncs = inner.op_count(OpKind::Sync);
        // The failpoint fired once: the file itself would sync now. The latch does not ask it.
        let again = file.sync_all().unwrap_err();
        assert!(again.is_eio(), "{again}");
        assert!(file.sync_data().is_err());
        assert_eq!(
            inner.op_count(OpKind::Sync),
            syncs,
            "no sync reached the file"
        );
        inner.sync_data().unwrap();

        // Reads and writes still go through.
        file.write_at(&[3; 512], 1024).unwrap();
        let mut back = [0u8; 512];
        file.read_at(&mut back, 1024).unwrap();
        assert_eq!(back, [3; 512]);
    }
}
