//! Thin `libc` wrappers for what `std::fs` lacks: hole punching and `statx` with the
//! atomic-write and direct-I/O alignment fields. Everything unsafe about syscalls lives here.
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
    if raw.stx_mask & STATX_DIOALIGN != 0 && raw.stx_dio_mem_align > 0 {
        info.dio_align = Some(raw.stx_dio_mem_align.max(raw.stx_dio_offset_align));
    }
    Ok(info)
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
