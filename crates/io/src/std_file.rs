//! [`StdFile`]: the default back end, `pread`/`pwrite` through `std::os::unix::fs::FileExt`,
//! optionally with O_DIRECT.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::aligned::DIRECT_IO_ALIGN;
use crate::atomic::{AtomicTarget, AtomicUnits};
use crate::error::{IoError, Op, Result};
use crate::file::{PageFile, PunchOutcome};
use crate::mapped_reads::MappedReads;
use crate::options::OpenOptions;
use crate::punch::HoleSwitch;
use crate::sys;

/// A page file on `pread`/`pwrite`. With [`OpenOptions::direct`] the page cache is bypassed
/// and every request must be aligned to [`PageFile::alignment`].
#[derive(Debug)]
pub struct StdFile {
    file: File,
    path: PathBuf,
    /// 1 for buffered I/O; the O_DIRECT alignment otherwise.
    align: usize,
    /// Untorn-write lengths from `statx`, `None` when the file cannot do them.
    atomic_units: Option<AtomicUnits>,
    /// `stx_blksize`, or 512 when unknown.
    block_size: u32,
    holes: HoleSwitch,
    /// Reads served from a mapping (`mapped_reads.rs`); `None` with O_DIRECT or when not
    /// asked for.
    mapped: Option<MappedReads>,
}

impl StdFile {
    /// Opens `path` as `opts` say.
    ///
    /// With `direct(true)` on a file system that refuses O_DIRECT (tmpfs answers EINVAL), the
    /// error kind is [`IoErrorKind::Unsupported`](crate::IoErrorKind::Unsupported).
    pub fn open(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Self> {
        let path = path.as_ref();
        let file = opts.to_std().open(path).map_err(|e| {
            let e = if opts.direct && e.raw_os_error() == Some(libc::EINVAL) {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the file system refuses O_DIRECT (EINVAL at open)",
                )
            } else {
                e
            };
            IoError::new(Op::Open, path, 0, 0, e)
        })?;
        // statx is advisory: an old kernel without it just means "nothing known".
        let info = sys::statx_info(file.as_raw_fd()).unwrap_or_default();
        let align = if opts.direct {
            // Never below 512, and 4096 when the kernel does not say (pre-6.1).
            info.dio_align
                .map_or(DIRECT_IO_ALIGN, |a| (a as usize).max(512))
        } else {
            1
        };
        let mapped = if opts.direct || opts.no_mapped_reads {
            None
        } else {
            let len = file
                .metadata()
                .map_err(|e| IoError::new(Op::Stat, path, 0, 0, e))?
                .len();
            Some(MappedReads::new(file.as_raw_fd(), len))
        };
        Ok(StdFile {
            file,
            path: path.to_path_buf(),
            align,
            atomic_units: info.atomic_write_unit_max.map(|max| AtomicUnits {
                min: info.atomic_write_unit_min.unwrap_or(max),
                max,
            }),
            block_size: info.block_size.unwrap_or(crate::file::UNKNOWN_BLOCK_SIZE),
            holes: HoleSwitch::default(),
            mapped,
        })
    }

    /// Whether the file was opened with O_DIRECT.
    pub fn is_direct(&self) -> bool {
        self.align > 1
    }

    /// The shortest untorn write the file accepts (`stx_atomic_write_unit_min`), or `None`
    /// when it has no untorn writes; the longest is [`PageFile::atomic_write_unit`].
    pub fn atomic_write_unit_min(&self) -> Option<u32> {
        self.atomic_units.map(|u| u.min)
    }

    /// Whether page-sized reads are being served from a mapping of the file
    /// ([`OpenOptions::mapped_reads`]); false until the first such read maps it.
    pub fn reads_mapped(&self) -> bool {
        self.mapped.as_ref().is_some_and(MappedReads::is_mapped)
    }

    /// The underlying `std::fs::File`.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Fails with [`IoErrorKind::Unaligned`](crate::IoErrorKind::Unaligned) when an O_DIRECT
    /// request `(ptr, len, offset)` is misaligned.
    pub(crate) fn check_aligned(
        &self,
        op: Op,
        ptr: *const u8,
        len: usize,
        offset: u64,
    ) -> Result<()> {
        let a = self.align;
        if a <= 1 {
            return Ok(());
        }
        let what = if !(ptr as usize).is_multiple_of(a) {
            "the buffer address"
        } else if !offset.is_multiple_of(a as u64) {
            "the file offset"
        } else if !len.is_multiple_of(a) {
            "the length"
        } else {
            return Ok(());
        };
        Err(IoError::unaligned(
            op, &self.path, offset, len as u64, what, a,
        ))
    }

    /// The error for a read of `[offset, +len)` that hit EOF after `got` bytes.
    pub(crate) fn past_eof_error(&self, offset: u64, len: usize) -> IoError {
        let file_len = self.len().unwrap_or(0);
        IoError::past_eof(&self.path, offset, len as u64, file_len)
    }
}

impl AsRawFd for StdFile {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for StdFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl PageFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check_aligned(Op::Read, buf.as_ptr(), buf.len(), offset)?;
        if let Some(mapped) = &self.mapped {
            if mapped.read(buf, offset) {
                return Ok(());
            }
        }
        let epoch = self.mapped.as_ref().map(MappedReads::epoch);
        let mut done = 0;
        while done < buf.len() {
            let Some(rest) = buf.get_mut(done..) else {
                break;
            };
            match self.file.read_at(rest, offset + done as u64) {
                Ok(0) => {
                    rest.fill(0);
                    return Err(self.past_eof_error(offset, buf.len()));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(IoError::new(
                        Op::Read,
                        &self.path,
                        offset,
                        buf.len() as u64,
                        e,
                    ))
                }
            }
        }
        if let (Some(mapped), Some(epoch)) = (&self.mapped, epoch) {
            mapped.note_len(offset + buf.len() as u64, epoch);
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_aligned(Op::Write, buf.as_ptr(), buf.len(), offset)?;
        let epoch = self.mapped.as_ref().map(MappedReads::epoch);
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| IoError::new(Op::Write, &self.path, offset, buf.len() as u64, e))?;
        if let (Some(mapped), Some(epoch)) = (&self.mapped, epoch) {
            mapped.note_len(offset + buf.len() as u64, epoch);
        }
        Ok(())
    }

    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let target = AtomicTarget {
            path: &self.path,
            units: self.atomic_units,
            direct: self.is_direct(),
            mem_align: self.align,
        };
        target.check(buf, offset)?;
        let len = buf.len() as u64;
        let wrote = sys::pwrite_atomic(self.file.as_raw_fd(), buf, offset)
            .map_err(|e| IoError::new(Op::AtomicWrite, &self.path, offset, len, e))?;
        if wrote != buf.len() {
            return Err(IoError::new(
                Op::AtomicWrite,
                &self.path,
                offset,
                len,
                io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!(
                        "short untorn write: {wrote} of {len} bytes (RWF_ATOMIC is all or nothing)"
                    ),
                ),
            ));
        }
        Ok(())
    }

    fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| IoError::new(Op::SyncData, &self.path, 0, 0, e))
    }

    fn sync_all(&self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| IoError::new(Op::SyncAll, &self.path, 0, 0, e))
    }

    fn set_len(&self, len: u64) -> Result<()> {
        let truncate = || {
            self.file
                .set_len(len)
                .map_err(|e| IoError::new(Op::SetLen, &self.path, len, 0, e))
        };
        match &self.mapped {
            // Shorter than reads may copy from: the mapping is taken out first.
            Some(mapped) => mapped.set_len(len, truncate),
            None => truncate(),
        }
    }

    fn len(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| IoError::new(Op::Stat, &self.path, 0, 0, e))
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.blocks() * 512)
            .map_err(|e| IoError::new(Op::Stat, &self.path, 0, 0, e))
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        self.holes
            .punch(self.file.as_raw_fd(), &self.path, offset, len)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        self.atomic_units.map(|u| u.max)
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn alignment(&self) -> usize {
        self.align
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn backend_name(&self) -> &'static str {
        if self.is_direct() {
            "std+direct"
        } else {
            "std"
        }
    }
}
