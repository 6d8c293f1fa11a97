//! The [`PageFile`] trait: the one I/O seam between the engine and the storage, so the same
//! engine runs on `pread`/`pwrite`, io_uring, memory, or a fault-injecting file.

use std::path::Path;

use crate::error::{IoError, Op, Result};

/// What [`PageFile::punch_hole`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PunchOutcome {
    /// The range now reads as zeros and its whole file-system blocks are deallocated.
    Punched,
    /// The file system refuses hole punching (EOPNOTSUPP). Nothing changed; the file remembers
    /// and later calls return this without trying again.
    // InnoDB: DB_IO_NO_PUNCH_HOLE clears fil_node_t::punch_hole and the write counts as done.
    Unsupported,
}

/// The block size assumed for a file whose file system does not report one: the sector size
/// every block device supports.
pub const UNKNOWN_BLOCK_SIZE: u32 = 512;

/// A file of pages addressed by byte offset.
///
/// All methods take `&self`: implementations are internally synchronised and may be called from
/// several threads at once (`Arc<dyn PageFile>`). Writes to disjoint ranges never interfere;
/// overlapping concurrent writes leave one of the two images per byte, as with `pwrite`.
///
/// Durability: a write is durable only after a later [`sync_data`](Self::sync_data) or
/// [`sync_all`](Self::sync_all) returned `Ok`. Until then a crash may lose it or tear it at
/// sector granularity (see `FaultyFile`).
pub trait PageFile: Send + Sync + std::fmt::Debug {
    /// Reads exactly `buf.len()` bytes at `offset`.
    ///
    /// **Beyond end of file** the call fails with [`IoErrorKind::PastEof`]
    /// (`err.is_past_eof()`), so "page beyond EOF" is distinguishable from a page of zeros; in
    /// that case the part of `buf` below EOF holds the file's bytes and the rest is zeroed.
    /// Holes (sparse ranges, punched ranges) below EOF read as zeros and are not an error.
    ///
    /// [`IoErrorKind::PastEof`]: crate::IoErrorKind::PastEof
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;

    /// Reads several ranges; back ends that can (io_uring) submit them together. Same
    /// end-of-file rule as [`read_at`](Self::read_at); on error, which buffers are filled is
    /// unspecified.
    fn read_vectored_at(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        for (offset, buf) in reads.iter_mut() {
            self.read_at(buf, *offset)?;
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()>;

    /// A batch of positioned writes (the flusher's batch); io_uring submits them in one go.
    /// On error some of the writes may have happened; none is durable before a sync.
    fn write_vectored_at(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        for (offset, buf) in writes {
            self.write_at(buf, *offset)?;
        }
        Ok(())
    }

    /// One untorn write of all of `buf` at `offset`: after a crash the range holds either all
    /// of its old bytes or all of `buf`, never a mix (Linux `pwritev2` with `RWF_ATOMIC`, 6.11+).
    /// Durability is as for [`write_at`](Self::write_at): only after a later sync.
    ///
    /// The kernel's rules, checked before the system call: the file was opened O_DIRECT; the
    /// data is this one buffer (aligned as O_DIRECT requires); its length is a power of two
    /// within the file's atomic-write unit range (`stx_atomic_write_unit_min ..=`
    /// [`atomic_write_unit`](Self::atomic_write_unit)); `offset` is a multiple of the length.
    /// A page of a power-of-two page size at `page_no × page_size` keeps the last two.
    ///
    /// A refusal — a broken rule, a file or device without untorn writes, or the kernel's
    /// EINVAL / EOPNOTSUPP / ENOTSUP — is an [`IoErrorKind::Unsupported`] error
    /// ([`IoError::is_unsupported`]) and writes nothing: the caller's cue to protect this file
    /// another way (doublewrite). Any other error is a real I/O error, after which the range's
    /// contents are unspecified, as after a failed [`write_at`](Self::write_at). A short write
    /// is an error, never continued: its remainder would not be untorn with the rest.
    ///
    /// The default implementation refuses every request (`Unsupported`).
    ///
    /// [`IoErrorKind::Unsupported`]: crate::IoErrorKind::Unsupported
    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        Err(IoError::unsupported(
            Op::AtomicWrite,
            self.path(),
            offset,
            buf.len() as u64,
            format!("the {} back end has no untorn writes", self.backend_name()),
        ))
    }

    /// Makes the written data durable (`fdatasync`).
    fn sync_data(&self) -> Result<()>;

    /// Makes data and metadata durable (`fsync`).
    fn sync_all(&self) -> Result<()>;

    /// Truncates or extends (sparsely, reading as zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> Result<()>;

    /// The file's length in bytes.
    fn len(&self) -> Result<u64>;

    /// True when the file has length 0.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Bytes the file system really allocated (`st_blocks * 512`); lower than `len()` for
    /// sparse or hole-punched files.
    fn allocated_bytes(&self) -> Result<u64>;

    /// Deallocates `[offset, offset + len)` keeping the file length
    /// (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`): the range reads back as zeros, whole
    /// blocks inside it stop counting in [`allocated_bytes`](Self::allocated_bytes).
    ///
    /// A file system that refuses (EOPNOTSUPP) gives `Ok(PunchOutcome::Unsupported)`, logged
    /// once; the file then stops trying. Other failures are errors.
    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome>;

    /// The largest write the device guarantees never to tear (`statx` STATX_WRITE_ATOMIC,
    /// `stx_atomic_write_unit_max`), or `None` when unsupported or unknown. Only writes made
    /// through [`write_atomic_at`](Self::write_atomic_at) get that guarantee; a plain
    /// [`write_at`](Self::write_at) of the same size may tear.
    fn atomic_write_unit(&self) -> Option<u32>;

    /// The file system's allocation block in bytes (`statx` `stx_blksize`): the unit in which
    /// [`punch_hole`](Self::punch_hole) frees space, so a page-compressed image is rounded up
    /// to it. 512 when the back end does not know.
    fn block_size(&self) -> u32 {
        UNKNOWN_BLOCK_SIZE
    }

    /// Alignment in bytes that buffers, offsets and lengths must have (O_DIRECT); 1 when any.
    fn alignment(&self) -> usize {
        1
    }

    /// The file's path (for messages; memory files carry a synthetic one).
    fn path(&self) -> &Path;

    /// Short name of the back end: `"std"`, `"std+direct"`, `"io_uring"`, `"memory"`, `"faulty"`.
    fn backend_name(&self) -> &'static str;
}
