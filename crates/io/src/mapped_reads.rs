//! Page reads served from a read-only shared mapping of the file instead of `pread`.
//!
//! A buffered `pread` of a page the page cache holds is a system call plus a copy; a copy from a
//! `MAP_SHARED` mapping of the same file is the copy alone (the page cache is the same memory,
//! so the mapping sees every write made through the file descriptor). For a pool miss served
//! from the page cache that is ~1.2 µs of ~3.3 µs for a 16 KiB page (EXPERIMENTS §16, tenth
//! pass). LMDB reads its whole database this way; here only the copy into a frame is, and
//! writes, syncs and every large read keep their system calls.
//!
//! **Safety of the mapping.** Touching a mapped page past the end of the file raises `SIGBUS`.
//! A read is served from the mapping only inside the file length this handle knows
//! (`known_len`): its length at open, raised by this handle's writes and `set_len`s and by reads
//! `pread` served past it. The only shrink this handle can make, `set_len` to less, first lowers
//! `known_len`, takes the mapping out and waits until no read still copies from it, then
//! truncates. The engine never shrinks its files; a file truncated behind the engine's back by
//! another process while a read copies from it would still raise `SIGBUS` — as for every
//! database that maps its files (LMDB), the engine's `LOCK` file is what keeps others away.
//!
//! The mapping is a window of address space (`MAP_NORESERVE`, no memory of its own) larger than
//! the file, replaced by one twice as large when the file outgrows it; a reader keeps the
//! window it started with alive through its `arc_swap` guard.

#![allow(
    unsafe_code,
    reason = "mmap/munmap and copying out of the mapping (each block says why it is sound)"
)]

use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;

/// Reads longer than this keep `pread`: a mapping's first touch of each 4 KiB page is a
/// page fault, which only pays back for pages read again (a recovery's log reads are read once).
pub(crate) const MAX_MAPPED_READ: usize = 64 * 1024;

/// The smallest window mapped (address space only).
const MIN_WINDOW: u64 = 256 << 20;

/// One `mmap` of `[0, len)` of the file, unmapped when the last reader lets go of it.
struct Window {
    base: NonNull<u8>,
    len: u64,
}

// SAFETY: the window is a read-only mapping: any thread may copy out of it, and only `Drop`
// (once, by the last owner) unmaps it.
unsafe impl Send for Window {}
// SAFETY: as above; `&Window` only allows copying out of the mapping.
unsafe impl Sync for Window {}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what `mmap` returned and was asked for, and no
        // reader holds the window any more (this is the last `Arc`).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len as usize);
        }
    }
}

/// The mapped-read state of one file handle.
pub(crate) struct MappedReads {
    fd: RawFd,
    window: ArcSwapOption<Window>,
    /// The file length this handle knows: reads below it may use the window.
    known_len: AtomicU64,
    /// Bumped before and after every `set_len`: a length learnt from an I/O that overlapped
    /// one is not trusted.
    epoch: AtomicU64,
    /// Serialises window replacement, `set_len` and raising the known length.
    remap: Mutex<()>,
    /// `mmap` refused once (address space exhausted, a file system without mmap): `pread` only.
    refused: AtomicBool,
}

impl std::fmt::Debug for MappedReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedReads")
            .field("known_len", &self.known_len.load(Ordering::Relaxed))
            .field("window", &self.window.load().as_ref().map_or(0, |w| w.len))
            .finish_non_exhaustive()
    }
}

impl MappedReads {
    /// Mapped reads of `fd`, whose length is now `len`; the window is mapped on the first read.
    pub(crate) fn new(fd: RawFd, len: u64) -> Self {
        Self {
            fd,
            window: ArcSwapOption::empty(),
            known_len: AtomicU64::new(len),
            epoch: AtomicU64::new(0),
            remap: Mutex::new(()),
            refused: AtomicBool::new(false),
        }
    }

    /// Copies `[offset, offset + buf.len())` out of the mapping; `false` when the read must
    /// go through `pread` (past the known length, too long, or no mapping to be had).
    pub(crate) fn read(&self, buf: &mut [u8], offset: u64) -> bool {
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return false;
        };
        if buf.len() > MAX_MAPPED_READ {
            return false;
        }
        // The guard first, then the length: a shrink lowers the length before it takes the
        // window out and waits for the guards taken before (see `shrink`).
        let mut guard = self.window.load();
        if end > self.known_len.load(Ordering::Acquire) {
            return false;
        }
        if guard.as_ref().is_none_or(|w| end > w.len) {
            // Let go of the old window before waiting for `remap`: a shrink holding it waits
            // for every guard of the window it took out.
            drop(guard);
            if !self.grow(end) {
                return false;
            }
            guard = self.window.load();
            if end > self.known_len.load(Ordering::Acquire) {
                return false;
            }
        }
        let Some(window) = guard.as_ref() else {
            return false;
        };
        if end > window.len {
            return false;
        }
        // SAFETY: `[offset, end)` lies inside the window (checked above) and inside the file as
        // this handle knows it, which only a shrink through `shrink` lowers — and that waits
        // for this guard to be dropped before truncating — so every page copied is backed by
        // the file and cannot fault with SIGBUS. `buf` is a distinct, writable buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                window.base.as_ptr().add(offset as usize),
                buf.as_mut_ptr(),
                buf.len(),
            );
        }
        true
    }

    /// The current length epoch: take it before an I/O whose outcome will be reported to
    /// [`note_len`](Self::note_len).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// A write or a `pread` that started at `epoch` reached `end`: the file is at least that
    /// long — unless a `set_len` ran meanwhile, which may have cut it (the I/O and the
    /// truncate are not ordered), so then nothing is learnt.
    pub(crate) fn note_len(&self, end: u64, epoch: u64) {
        if end <= self.known_len.load(Ordering::Acquire) {
            return;
        }
        let _remap = self.remap.lock();
        if self.epoch.load(Ordering::Acquire) == epoch {
            self.known_len.fetch_max(end, Ordering::AcqRel);
        }
    }

    /// Runs `truncate`, which makes the file `len` long, so that no read copies from the
    /// mapping past `len` while or after it runs, and no I/O that overlapped it raises the
    /// known length past what it left.
    pub(crate) fn set_len<T, E>(
        &self,
        len: u64,
        truncate: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let _remap = self.remap.lock();
        // An I/O that started before this point notes nothing (its epoch is older), nor does
        // one that starts before the truncate ends (the second bump, below, comes first: notes
        // take this lock).
        self.epoch.fetch_add(1, Ordering::AcqRel);
        if len < self.known_len.load(Ordering::Acquire) {
            self.known_len.store(len, Ordering::Release);
            // Readers that loaded the window before this swap hold it (arc-swap pays their
            // debts on `swap`, so each counts in the `Arc`); wait until they have copied.
            if let Some(old) = self.window.swap(None) {
                while Arc::strong_count(&old) > 1 {
                    std::thread::yield_now();
                }
            }
        }
        let out = truncate();
        if out.is_ok() {
            // Exactly `len` now; writes that extend it from here on say so themselves.
            self.known_len.store(len, Ordering::Release);
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
        out
    }

    /// Makes the window cover `end`; `false` if no mapping can be had.
    fn grow(&self, end: u64) -> bool {
        if self.refused.load(Ordering::Relaxed) {
            return false;
        }
        let _remap = self.remap.lock();
        if self.window.load().as_ref().is_some_and(|w| end <= w.len) {
            return true;
        }
        let len = end
            .max(self.known_len.load(Ordering::Acquire))
            .saturating_mul(2)
            .max(MIN_WINDOW)
            .next_power_of_two();
        let Ok(len_usize) = usize::try_from(len) else {
            self.refused.store(true, Ordering::Relaxed);
            return false;
        };
        // SAFETY: a fresh read-only shared mapping of our own descriptor at a kernel-chosen
        // address; nothing else is affected. MAP_NORESERVE: the window reserves no memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len_usize,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                self.fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "mmap refused: reads of this file stay on pread"
            );
            self.refused.store(true, Ordering::Relaxed);
            return false;
        }
        let Some(base) = NonNull::new(base.cast::<u8>()) else {
            return false;
        };
        self.window.store(Some(Arc::new(Window { base, len })));
        true
    }

    /// Whether reads are served from a mapping now.
    pub(crate) fn is_mapped(&self) -> bool {
        self.window.load().is_some()
    }
}
