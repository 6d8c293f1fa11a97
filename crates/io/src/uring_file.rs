//! [`UringFile`]: the io_uring back end. Reads and writes go through one ring per file
//! (behind a mutex), batches are submitted in one `io_uring_enter`, short transfers are
//! resubmitted for the remainder; length, punch hole and statx go through the plain fd.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use io_uring::{opcode, types, IoUring};
use parking_lot::Mutex;

use crate::error::{IoError, Op, Result};
use crate::file::{PageFile, PunchOutcome};
use crate::options::OpenOptions;
use crate::std_file::StdFile;

/// Submission-queue entries per ring: the largest batch in flight at once. Larger batches are
/// streamed through the ring.
const RING_ENTRIES: u32 = 64;

/// Largest transfer in one request (the SQE length field is 32 bits); longer buffers are split.
const MAX_REQUEST_BYTES: usize = 1 << 30;

/// Direction of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
}

/// One buffer of a batch, and how much of it is done.
struct Job {
    ptr: *mut u8,
    len: usize,
    offset: u64,
    done: usize,
    /// A read hit end of file before `len` bytes.
    eof: bool,
}

/// A page file driven by io_uring. Create it with [`UringFile::open`]; to fall back to
/// [`StdFile`] when the kernel refuses io_uring, use [`open_best`](crate::open_best).
pub struct UringFile {
    std: StdFile,
    ring: Mutex<IoUring>,
}

impl std::fmt::Debug for UringFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringFile")
            .field("std", &self.std)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("len", &self.len)
            .field("offset", &self.offset)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl UringFile {
    /// Opens `path` and sets up its ring. Fails with the `io_uring_setup` error (op
    /// [`Op::Uring`], typically ENOSYS, or EPERM under seccomp / `kernel.io_uring_disabled`)
    /// when the kernel refuses io_uring.
    pub fn open(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Self> {
        let std = StdFile::open(path, opts)?;
        Self::from_std(std)
    }

    /// Drives an already open [`StdFile`] through a new ring.
    pub fn from_std(std: StdFile) -> Result<Self> {
        let ring =
            IoUring::new(RING_ENTRIES).map_err(|e| IoError::new(Op::Uring, std.path(), 0, 0, e))?;
        Ok(UringFile {
            std,
            ring: Mutex::new(ring),
        })
    }

    /// Runs every job to completion (or to its first error / EOF), streaming them through the
    /// ring. Returns only when the kernel holds no pointer into any job's buffer.
    fn run(&self, dir: Dir, jobs: &mut [Job]) -> Result<()> {
        let op = match dir {
            Dir::Read => Op::Read,
            Dir::Write => Op::Write,
        };
        for job in jobs.iter() {
            self.std.check_aligned(op, job.ptr, job.len, job.offset)?;
        }
        let fd = types::Fd(self.std.as_raw_fd());
        let mut ring = self.ring.lock();
        let capacity = ring.params().sq_entries() as usize;
        let mut pending: VecDeque<usize> = (0..jobs.len()).collect();
        let mut in_flight = 0usize;
        let mut first_err: Option<IoError> = None;
        loop {
            if first_err.is_none() {
                let mut sq = ring.submission();
                while in_flight < capacity {
                    let Some(i) = pending.pop_front() else { break };
                    let Some(job) = jobs.get(i) else { continue };
                    if job.done >= job.len {
                        continue;
                    }
                    let chunk = (job.len - job.done).min(MAX_REQUEST_BYTES) as u32;
                    // SAFETY: done < len, so the pointer stays inside the job's buffer.
                    let ptr = unsafe { job.ptr.add(job.done) };
                    let at = job.offset + job.done as u64;
                    let entry = match dir {
                        Dir::Read => opcode::Read::new(fd, ptr, chunk).offset(at).build(),
                        Dir::Write => opcode::Write::new(fd, ptr.cast_const(), chunk)
                            .offset(at)
                            .build(),
                    }
                    .user_data(i as u64);
                    // SAFETY: the entry points into a buffer borrowed by our caller for the
                    // whole call (reads: exclusively), and this function does not return
                    // before every submitted entry has completed (see the loop's exit
                    // condition and `wait`), so the buffer outlives the kernel's use of it.
                    if unsafe { sq.push(&entry) }.is_err() {
                        pending.push_front(i);
                        break;
                    }
                    in_flight += 1;
                }
            }
            if in_flight == 0 {
                break;
            }
            wait(&ring, self.std.path());
            for cqe in ring.completion() {
                in_flight = in_flight.saturating_sub(1);
                let i = cqe.user_data() as usize;
                let res = cqe.result();
                let Some(job) = jobs.get_mut(i) else { continue };
                match usize::try_from(res) {
                    Err(_) => {
                        if first_err.is_none() {
                            first_err = Some(IoError::from_errno(
                                op,
                                self.std.path(),
                                job.offset,
                                job.len as u64,
                                -res,
                            ));
                        }
                    }
                    Ok(0) if dir == Dir::Read => job.eof = true,
                    Ok(0) => {
                        if first_err.is_none() {
                            first_err = Some(IoError::new(
                                op,
                                self.std.path(),
                                job.offset,
                                job.len as u64,
                                io::Error::from(io::ErrorKind::WriteZero),
                            ));
                        }
                    }
                    Ok(n) => {
                        job.done += n;
                        if job.done < job.len {
                            // Short transfer: resubmit the rest.
                            pending.push_back(i);
                        }
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One `IORING_OP_FSYNC`, with `DATASYNC` when `datasync`.
    fn fsync(&self, datasync: bool) -> Result<()> {
        let op = if datasync { Op::SyncData } else { Op::SyncAll };
        let flags = if datasync {
            types::FsyncFlags::DATASYNC
        } else {
            types::FsyncFlags::empty()
        };
        let entry = opcode::Fsync::new(types::Fd(self.std.as_raw_fd()))
            .flags(flags)
            .build()
            .user_data(u64::MAX);
        let mut ring = self.ring.lock();
        // SAFETY: FSYNC carries no buffer pointer; the ring was drained by the previous user.
        if unsafe { ring.submission().push(&entry) }.is_err() {
            return Err(IoError::from_errno(op, self.std.path(), 0, 0, libc::EBUSY));
        }
        loop {
            wait(&ring, self.std.path());
            if let Some(cqe) = ring.completion().next() {
                let res = cqe.result();
                return if res < 0 {
                    Err(IoError::from_errno(op, self.std.path(), 0, 0, -res))
                } else {
                    Ok(())
                };
            }
        }
    }

    /// Reads `reads` as one batch, zero-filling and reporting past-EOF tails.
    fn read_jobs(&self, mut jobs: Vec<Job>) -> Result<()> {
        self.run(Dir::Read, &mut jobs)?;
        let mut eof_err = None;
        for job in &jobs {
            if job.eof {
                // SAFETY: ptr..ptr+len is the caller's exclusively borrowed read buffer, no
                // request is in flight any more, and done <= len.
                let rest = unsafe {
                    std::slice::from_raw_parts_mut(job.ptr.add(job.done), job.len - job.done)
                };
                rest.fill(0);
                if eof_err.is_none() {
                    eof_err = Some(self.std.past_eof_error(job.offset, job.len));
                }
            }
        }
        match eof_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Submits queued entries and waits for at least one completion. Interrupted or busy waits are
/// simply retried by the caller's loop. Any other failure of `io_uring_enter` leaves requests
/// that point into borrowed buffers in an unknown state, so returning would be unsound: abort.
fn wait(ring: &IoUring, path: &Path) {
    match ring.submit_and_wait(1) {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
            ) => {}
        Err(e) => {
            tracing::error!(path = %path.display(), error = %e, "io_uring_enter failed with requests in flight; aborting");
            std::process::abort();
        }
    }
}

impl PageFile for UringFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let job = Job {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
            offset,
            done: 0,
            eof: false,
        };
        self.read_jobs(vec![job])
    }

    fn read_vectored_at(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        let jobs = reads
            .iter_mut()
            .map(|(offset, buf)| Job {
                ptr: buf.as_mut_ptr(),
                len: buf.len(),
                offset: *offset,
                done: 0,
                eof: false,
            })
            .collect();
        self.read_jobs(jobs)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.write_vectored_at(&[(offset, buf)])
    }

    fn write_vectored_at(&self, writes: &[(u64, &[u8])]) -> Result<()> {
        let mut jobs: Vec<Job> = writes
            .iter()
            .map(|(offset, buf)| Job {
                // Only ever passed to IORING_OP_WRITE, which reads through it.
                ptr: buf.as_ptr().cast_mut(),
                len: buf.len(),
                offset: *offset,
                done: 0,
                eof: false,
            })
            .collect();
        self.run(Dir::Write, &mut jobs)
    }

    fn write_atomic_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        // Through the plain descriptor, not the ring: an untorn write is one buffer written
        // synchronously, which a ring submission of a single request does not make faster, and
        // one implementation keeps the rule checks and the errno mapping in one place. The
        // descriptor is the ring's own, so ordering against ring writes is the caller's, as for
        // any two writes to the same range.
        self.std.write_atomic_at(buf, offset)
    }

    fn sync_data(&self) -> Result<()> {
        self.fsync(true)
    }

    fn sync_all(&self) -> Result<()> {
        self.fsync(false)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.std.set_len(len)
    }

    fn len(&self) -> Result<u64> {
        self.std.len()
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.std.allocated_bytes()
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        self.std.punch_hole(offset, len)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        self.std.atomic_write_unit()
    }

    fn block_size(&self) -> u32 {
        self.std.block_size()
    }

    fn alignment(&self) -> usize {
        self.std.alignment()
    }

    fn path(&self) -> &Path {
        self.std.path()
    }

    fn backend_name(&self) -> &'static str {
        if self.std.is_direct() {
            "io_uring+direct"
        } else {
            "io_uring"
        }
    }
}
