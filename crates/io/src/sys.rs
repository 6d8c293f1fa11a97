//! Thin `libc` wrappers for what `std::fs` lacks: hole punching, untorn writes
//! (`pwritev2(RWF_ATOMIC)`) and `statx` with the atomic-write and direct-I/O alignment fields.
//! Everything unsafe about syscalls lives here.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// `STATX_DIOALIGN` (Linux 6.1): ask for `stx_dio_mem_align` / `stx_dio_offset_align`.
const STATX_DIOALIGN: u32 = 0x0000_2000;
/// `STATX_WRITE_ATOMIC` (Linux 6.11): ask for the atomic-write unit fields.
const STATX_WRITE_ATOMIC: u32 = 0x0001_0000;
/// `STATX_ATTR_WRITE_ATOMIC`: the file supports untorn (RWF_ATOMIC) writes.
const STATX_ATTR_WRITE_ATOMIC: u64 = 0x0040_0000;

/// `struct statx_timestamp` of `<linux/stat.h>`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct StatxTimestamp {
    tv_sec: i64,
    tv_nsec: u32,
    pad: i32,
}

/// `struct statx` of `<linux/stat.h>` as of Linux 6.16, 256 bytes. Declared locally because the
/// `libc` crate's copy depends on its version and libc flavour; the kernel fills only the fields
/// it knows and reports which in `stx_mask`, and never writes past 256 bytes.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RawStatx {
    stx_mask: u32,
    stx_blksize: u32,
    stx_attributes: u64,
    stx_nlink: u32,
    stx_uid: u32,
    stx_gid: u32,
    stx_mode: u16,
    pad1: u16,
    stx_ino: u64,
    stx_size: u64,
    stx_blocks: u64,
    stx_attributes_mask: u64,
    stx_atime: StatxTimestamp,
    stx_btime: StatxTimestamp,
    stx_ctime: StatxTimestamp,
    stx_mtime: StatxTimestamp,
    stx_rdev_major: u32,
    stx_rdev_minor: u32,
    stx_dev_major: u32,
    stx_dev_minor: u32,
    stx_mnt_id: u64,
    stx_dio_mem_align: u32,
    stx_dio_offset_align: u32,
    stx_subvol: u64,
    stx_atomic_write_unit_min: u32,
    stx_atomic_write_unit_max: u32,
    stx_atomic_write_segments_max: u32,
    stx_dio_read_offset_align: u32,
    stx_atomic_write_unit_max_opt: u32,
    pad2: u32,
    spare: [u64; 8],
}

const _: () = assert!(std::mem::size_of::<RawStatx>() == 256);

/// What `statx` tells about a file beyond `fstat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StatxInfo {
    /// `stx_atomic_write_unit_max` when the kernel answered STATX_WRITE_ATOMIC and the file has
    /// STATX_ATTR_WRITE_ATOMIC.
    pub atomic_write_unit_max: Option<u32>,
    /// `stx_atomic_write_unit_min` under the same condition.
    pub atomic_write_unit_min: Option<u32>,
    /// `max(stx_dio_mem_align, stx_dio_offset_align)` when the kernel answered STATX_DIOALIGN
    /// and direct I/O is supported (non-zero).
    pub dio_align: Option<u32>,
    /// `stx_blksize`, the file system's preferred I/O and allocation block (0 = not reported).
    pub block_size: Option<u32>,
}

/// `statx(fd, "", AT_EMPTY_PATH, STATX_WRITE_ATOMIC | STATX_DIOALIGN)`.
pub(crate) fn statx_info(fd: RawFd) -> io::Result<StatxInfo> {
    let mut raw = RawStatx::default();
    let empty = c"";
    // SAFETY: `empty` is a valid NUL-terminated string, `raw` is a writable, properly aligned
    // 256-byte `struct statx` that outlives the call; the kernel writes at most that much.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_statx,
            fd,
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_WRITE_ATOMIC | STATX_DIOALIGN,
            std::ptr::from_mut(&mut raw),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut info = StatxInfo::default();
    if raw.stx_mask & STATX_WRITE_ATOMIC != 0
        && raw.stx_attributes & STATX_ATTR_WRITE_ATOMIC != 0
        && raw.stx_atomic_write_unit_max > 0
        && raw.stx_atomic_write_segments_max >= 1
    {
        info.atomic_write_unit_max = Some(raw.stx_atomic_write_unit_max);
        info.atomic_write_unit_min = Some(raw.stx_atomic_write_unit_min);
    }
    // stx_blksize is filled whatever the mask: it is part of every statx answer.
    info.block_size = (raw.stx_blksize > 0).then_some(raw.stx_blksize);
    if raw.stx_mask & STATX_DIOALIGN != 0 && raw.stx_dio_mem_align > 0 {
        info.dio_align = Some(raw.stx_dio_mem_align.max(raw.stx_dio_offset_align));
    }
    Ok(info)
}

/// One `pwritev2(fd, [buf], offset, RWF_ATOMIC)`: an untorn write of `buf` (Linux 6.11+).
/// Returns the bytes written, which the kernel promises to be all of `buf` or an error; the
/// caller treats anything short as an error rather than writing the rest (the rest would not
/// be untorn with the first part). EINTR (nothing written) is retried.
pub(crate) fn pwrite_atomic(fd: RawFd, buf: &[u8], offset: u64) -> io::Result<usize> {
    let Ok(off) = libc::off_t::try_from(offset) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    // One iovec: the kernel accepts only a single user buffer for RWF_ATOMIC.
    let iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: `iov` describes `buf`, which is borrowed for the whole call and only read by
        // the kernel (a write copies from it, never into it); iovcnt is 1, matching the one
        // iovec; `fd` is a descriptor owned by the caller.
        let rc = unsafe { libc::pwritev2(fd, &raw const iov, 1, off, libc::RWF_ATOMIC) };
        if let Ok(n) = usize::try_from(rc) {
            return Ok(n);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// `fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len)`.
pub(crate) fn punch_hole(fd: RawFd, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    loop {
        // SAFETY: plain syscall on a file descriptor owned by the caller; no memory is passed.
        let rc = unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                l,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// The system call itself, past the rule checks of `StdFile`: on a file that cannot do
    /// untorn writes the kernel must refuse with EOPNOTSUPP or EINVAL (which the crate reports
    /// as `Unsupported`); where it can, the whole page lands.
    #[test]
    fn pwrite_atomic_writes_whole_or_is_refused() {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .custom_flags(libc::O_DIRECT)
            .open(dir.path().join("atomic"))
            .unwrap();
        let page = crate::AlignedBuf::from_slice(&[0x5A; 4096]);
        let supported = statx_info(f.as_raw_fd()).unwrap().atomic_write_unit_max;
        match pwrite_atomic(f.as_raw_fd(), &page, 0) {
            Ok(n) => {
                assert_eq!(n, page.len());
                let mut back = crate::AlignedBuf::zeroed(4096);
                f.read_exact_at(&mut back, 0).unwrap();
                assert_eq!(back, page);
            }
            Err(e) => {
                eprintln!("the kernel refused RWF_ATOMIC here (statx unit {supported:?}): {e}");
                let errno = e.raw_os_error();
                assert!(
                    matches!(errno, Some(libc::EOPNOTSUPP | libc::EINVAL)),
                    "refused with {e} (statx unit {supported:?})"
                );
                assert_eq!(
                    f.metadata().unwrap().len(),
                    0,
                    "a refused write changed nothing"
                );
            }
        }
    }

    #[test]
    fn statx_answers_on_a_tempfile() {
        let f = tempfile::tempfile().unwrap();
        // Must not fail on any kernel with statx (4.11+); fields may well be None.
        let info = statx_info(f.as_raw_fd()).unwrap();
        if let Some(a) = info.dio_align {
            assert!(a.is_power_of_two());
        }
    }
}
