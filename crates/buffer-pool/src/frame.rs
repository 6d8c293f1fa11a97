//! Frames: page-size buffers, each aligned to the page size (so O_DIRECT I/O can use them
//! directly), each behind its own page latch, all carved out of one anonymous mapping.
//!
//! InnoDB: `buf_chunk_init` carves a large allocation into frames. We reserve every frame in a
//! single `mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)`: the kernel backs a page with
//! zeroed memory only when it is first touched, and each frame's latch and descriptor are built
//! a chunk at a time when first used, so creating and dropping a pool costs the same at 64 MiB
//! as at 32 GiB (allocating and zeroing every frame up front took 18 s at 8 GiB,
//! `benches/benches/open_close.rs`), and frames never used never cost memory.
#![expect(
    unsafe_code,
    reason = "frames live in one mmap()ed reservation (measured: Engine::open at 8 GiB 18 s -> ms)"
)]

use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::OnceLock;

use barracuda_page::PageSize;
use parking_lot::RwLock;

use crate::descriptor::Descriptor;
use crate::PoolError;

/// The address range every frame lives in: an anonymous private mapping, unmapped on drop.
struct Reservation {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Reservation` is an address range owned by one pool; it hands out no access of its
// own (the bytes are reached only through `FrameBuf`s, each behind its frame's latch), and
// `munmap` may be called from any thread.
unsafe impl Send for Reservation {}
// SAFETY: as above; `&Reservation` gives no access to the bytes.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves `len` bytes (`len > 0`) of zero-filled, lazily backed memory.
    fn new(len: usize) -> io::Result<Self> {
        // SAFETY: an anonymous mapping at an address of the kernel's choosing aliases no Rust
        // object; the arguments are valid for mmap(2) and the result is checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(addr.cast::<u8>()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::OutOfMemory, "mmap returned a null address")
        })?;
        // Transparent huge pages: fewer TLB misses when hits range over a large pool (random
        // `get_shared` hits over 50,000 16 KiB pages: 1.07-1.36 us without, 0.55-0.88 us with;
        // no difference over 1,000 pages). Advice only: without THP the frames work the same.
        // SAFETY: advice about the mapping just made; it changes no byte of it.
        if unsafe { libc::madvise(addr, len, libc::MADV_HUGEPAGE) } != 0 {
            tracing::debug!(
                error = %io::Error::last_os_error(),
                "buffer pool frames: no transparent huge pages"
            );
        }
        Ok(Self { base, len })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `new`, and every `FrameBuf`
        // pointing into it has been dropped (`Frames` declares its frames before its
        // reservation). munmap does not touch the pages, so pages never used are never backed.
        let rc = unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        if rc != 0 {
            // Nothing to recover: the address range stays reserved until the process exits.
            tracing::error!(
                error = %io::Error::last_os_error(),
                bytes = self.len,
                "cannot unmap the buffer pool frames"
            );
        }
    }
}

/// The bytes of one frame: `len` (= the page size) bytes at a page-size aligned address inside
/// the pool's reservation, disjoint from every other frame's.
///
/// Created only by [`Frames::new`] and not `Clone`, so each range has exactly one `FrameBuf`,
/// and it is reached only through its frame's latch: a shared latch gives `&[u8]`, the exclusive
/// latch `&mut [u8]`, which is what makes the two `Deref`s below sound.
pub(crate) struct FrameBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `FrameBuf` is the unique handle to its byte range (see the type's doc); moving it to
// another thread moves that access with it.
unsafe impl Send for FrameBuf {}
// SAFETY: through `&FrameBuf` only `&[u8]` is reachable, and `u8` is `Sync`.
unsafe impl Sync for FrameBuf {}

impl Deref for FrameBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` lies inside the live reservation (it outlives every
        // `FrameBuf`), is readable, initialised (anonymous memory reads as zeros) and, while
        // this `&self` lives, nobody holds the `&mut self` that alone could write it.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for FrameBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` is exclusive and no other `FrameBuf` overlaps
        // this range, so the slice is the only access to these bytes while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// A frame: its page latch (guarding the bytes) and its descriptor (InnoDB: `buf_block_t`).
///
/// Aligned to two cache lines (128 bytes; it is about 100), so that no two frames share one:
/// every access writes its frame's pin count and latch, and a commit its dirty state and LSNs.
/// Packed, two threads writing pages that sit in neighbouring frames — the rollback segment
/// pages, undo header pages allocated one after the other — write one line from two cores
/// (false sharing). The gain was within this machine's noise when measured (EXPERIMENTS §13);
/// the cost is 28 bytes per frame.
#[repr(align(128))]
pub(crate) struct Frame {
    /// The page latch (InnoDB: `buf_block_t::lock`). Only taken by a thread holding a pin.
    pub(crate) latch: RwLock<FrameBuf>,
    /// State, page id, pin count, LSNs, access time.
    pub(crate) desc: Descriptor,
}

/// log2 of the frames per chunk of [`Frames`]: 1024 frames' metadata (128 KiB) are built at once.
const CHUNK_SHIFT: u32 = 10;
const CHUNK_FRAMES: usize = 1 << CHUNK_SHIFT;

/// Every frame of a pool and the memory they live in, numbered `0..count`.
///
/// The frames' metadata (latch, descriptor: 128 bytes each, aligned) is built a chunk of
/// [`CHUNK_FRAMES`] at a time when a frame of the chunk is first asked for, as InnoDB's
/// `buf_chunk_t` groups blocks; building it all up front cost 200 ms at 32 GiB. The free list
/// hands frames out in ascending order, so chunks come into use one after the other.
pub(crate) struct Frames {
    // Field order matters: the frames (holding pointers into `memory`) are dropped before
    // `memory` is unmapped.
    chunks: Box<[OnceLock<Box<[Frame]>>]>,
    count: usize,
    page: usize,
    /// Offset of frame 0 in `memory` (the first page-aligned address).
    start: usize,
    memory: Reservation,
}

impl Frames {
    /// `count` zeroed frames of `page_size`, each aligned to the page size, reserved but not
    /// yet backed by memory: the kernel supplies each page on first touch.
    ///
    /// Errors: [`PoolError::FrameMemory`] if `count` pages do not fit in the address space or
    /// the kernel refuses the reservation.
    pub(crate) fn new(page_size: PageSize, count: usize) -> Result<Self, PoolError> {
        let page = page_size.bytes();
        let error = |source| PoolError::FrameMemory {
            frames: count,
            page_size,
            source,
        };
        // mmap aligns to the OS page (4 KiB on x86-64), which may be smaller than a database
        // page: reserve one page more and start the frames at the first page-aligned address.
        let bytes = count
            .checked_mul(page)
            .and_then(|b| b.checked_add(page))
            .ok_or_else(|| {
                error(io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    "larger than the address space",
                ))
            })?;
        let memory = Reservation::new(bytes).map_err(error)?;
        let start = memory.base.as_ptr().align_offset(page);
        Ok(Self {
            chunks: (0..count.div_ceil(CHUNK_FRAMES))
                .map(|_| OnceLock::new())
                .collect(),
            count,
            page,
            start,
            memory,
        })
    }

    /// Chunk `c`'s frames, built on first use.
    fn chunk(&self, c: usize) -> Option<&[Frame]> {
        let cell = self.chunks.get(c)?;
        Some(cell.get_or_init(|| {
            let first = c * CHUNK_FRAMES;
            let end = (first + CHUNK_FRAMES).min(self.count);
            (first..end)
                .map(|i| Frame {
                    latch: RwLock::new(FrameBuf {
                        // SAFETY: `start < page` and the reservation is `(count + 1) * page`
                        // bytes, so frame `i < count` lies inside it. `OnceLock` runs this at
                        // most once to completion per chunk (a panicking run drops what it
                        // built), so each frame's range gets exactly one `FrameBuf`.
                        ptr: unsafe { self.memory.base.add(self.start + i * self.page) },
                        len: self.page,
                    }),
                    desc: Descriptor::new(),
                })
                .collect()
        }))
    }

    /// Has the kernel back the memory of `frames` now, as a write to each would, without
    /// changing a byte (`MADV_POPULATE_WRITE`), so that their first use does not fault. Safe
    /// beside frames of the range in use: no content changes. Frames out of range are ignored.
    ///
    /// Errors: the kernel's (`EINVAL` before Linux 5.14, `ENOMEM`/`EFAULT` when memory runs out).
    pub(crate) fn populate(&self, frames: std::ops::Range<usize>) -> io::Result<()> {
        let end = frames.end.min(self.count);
        if frames.start >= end {
            return Ok(());
        }
        let addr = self
            .memory
            .base
            .as_ptr()
            .wrapping_add(self.start + frames.start * self.page);
        // SAFETY: `[addr, addr + len)` lies inside the reservation (`end <= count`, as in
        // `chunk`) and starts at a frame, which is page-size aligned and so OS-page aligned.
        // MADV_POPULATE_WRITE only faults pages in (zero-filled if never touched, unchanged
        // otherwise): no byte any `FrameBuf` exposes changes, so it races with nothing.
        let rc = unsafe {
            libc::madvise(
                addr.cast(),
                (end - frames.start) * self.page,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Frame `f`, or `None` if `f` is not below the frame count.
    pub(crate) fn get(&self, f: usize) -> Option<&Frame> {
        self.chunk(f >> CHUNK_SHIFT)?.get(f & (CHUNK_FRAMES - 1))
    }

    /// Frame `f`.
    ///
    /// Panics if `f` is not below the frame count. Every frame number the pool handles comes
    /// from its own free list, LRU list, flush list or page hash, which hold only numbers of
    /// this pool's frames, so this is an internal invariant, not a reachable error.
    pub(crate) fn frame(&self, f: u32) -> &Frame {
        self.get(f as usize)
            .expect("frame numbers come from the pool's own lists and are below its capacity")
    }

    /// Asks the CPU to start loading frame `f`'s latch and descriptor and the first eight and
    /// the last two cache lines of its bytes (the headers, the first records of an index page
    /// written in key order, the end of its slot directory): for a page about to be latched
    /// through a frame hint while other work goes on (a scan's next leaf). A hint that reads
    /// nothing and builds nothing; nothing happens for a frame out of range or in a chunk not
    /// built yet.
    pub(crate) fn prefetch_frame(&self, f: u32) {
        let f = f as usize;
        // `OnceLock::get`, not `chunk`: a hint must not build a chunk's frames.
        let Some(frame) = self
            .chunks
            .get(f >> CHUNK_SHIFT)
            .and_then(OnceLock::get)
            .and_then(|chunk| chunk.get(f & (CHUNK_FRAMES - 1)))
        else {
            return;
        };
        let frame_addr = std::ptr::from_ref(frame).cast::<u8>();
        prefetch(frame_addr);
        prefetch(frame_addr.wrapping_add(64));
        let page = self.page_addr(f);
        for off in (0..8).map(|line| line * 64) {
            prefetch(page.wrapping_add(off));
        }
        prefetch(page.wrapping_add(self.page - 128));
        prefetch(page.wrapping_add(self.page - 64));
    }

    /// Asks the CPU to start loading the first two and the last two cache lines of frame
    /// `f`'s bytes (a page's headers, and the end of an index page's slot directory, where a
    /// binary search starts). A hint that reads nothing; nothing happens for `f` out of range.
    ///
    /// Why: a page access is a chain of misses — hash bucket, the frame's pin and latch, the
    /// page header, a slot, a record. Issued as soon as the frame number is known, this load
    /// runs beside the pin's and the latch's instead of after them.
    pub(crate) fn prefetch_page(&self, f: u32) {
        let f = f as usize;
        if f >= self.count {
            return;
        }
        let page = self.page_addr(f);
        for off in [0, 64, self.page - 128, self.page - 64] {
            prefetch(page.wrapping_add(off));
        }
    }

    /// Where frame `f`'s bytes start, for prefetch hints (computed with wrapping arithmetic:
    /// never dereferenced here).
    fn page_addr(&self, f: usize) -> *const u8 {
        self.memory
            .base
            .as_ptr()
            .wrapping_add(self.start + f * self.page)
            .cast_const()
    }

    /// Where block `slot` starts: inside frame `slot.frame`'s bytes.
    ///
    /// Panics if the slot is not inside a frame of this pool: slots come from the pool's own
    /// buddy allocator, which is lent only this pool's frames (an internal invariant).
    pub(crate) fn block_ptr(&self, slot: crate::buddy::ZipSlot) -> NonNull<u8> {
        let offset = slot.offset as usize;
        assert!(
            (slot.frame as usize) < self.count && offset + slot.bytes() <= self.page,
            "a block slot outside the pool's frames"
        );
        // SAFETY: frame `slot.frame < count` lies inside the reservation (see `chunk`), and
        // the block's range ends inside that frame (checked above).
        unsafe {
            self.memory
                .base
                .add(self.start + slot.frame as usize * self.page + offset)
        }
    }

    /// The frames whose metadata exists, with their numbers, in ascending order. A frame not
    /// listed was never handed out: it is `Free` and holds no page.
    pub(crate) fn in_use(&self) -> impl Iterator<Item = (u32, &Frame)> {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(c, cell)| Some((c * CHUNK_FRAMES, cell.get()?)))
            .flat_map(|(first, frames)| {
                frames
                    .iter()
                    .enumerate()
                    .map(move |(i, frame)| ((first + i) as u32, frame))
            })
    }
}

/// Asks the CPU to start loading the cache line of `addr` (a no-op off x86-64). Any address
/// is accepted: a prefetch never faults and reads nothing the program can see.
#[inline]
fn prefetch(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint that never dereferences its argument in the language's
    // sense and never faults, whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of `frames`' reservation the kernel has backed with memory (mincore(2)).
    fn resident_bytes(frames: &Frames) -> usize {
        let os_page = 4096;
        let mut vec = vec![0u8; frames.memory.len.div_ceil(os_page)];
        // SAFETY: the range is the live mapping made by `Reservation::new`; `vec` has one byte
        // per 4 KiB page of it (x86-64 and aarch64 with 4 KiB pages; more bytes than needed
        // if the OS page is larger).
        let rc = unsafe {
            libc::mincore(
                frames.memory.base.as_ptr().cast(),
                frames.memory.len,
                vec.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "mincore: {}", io::Error::last_os_error());
        vec.iter().filter(|&&b| b & 1 == 1).count() * os_page
    }

    #[test]
    fn frames_are_page_aligned_sized_disjoint_and_zeroed() {
        // Two chunks; the frames checked include both sides of the chunk boundary and the last.
        let count = CHUNK_FRAMES + 8;
        let checked: Vec<u32> = (0..8)
            .chain(CHUNK_FRAMES - 8..count)
            .map(|f| f as u32)
            .collect();
        let stamp = |f: u32| (f % 251) as u8 + 1;
        for size in PageSize::ALL {
            let frames = Frames::new(size, count).expect("reserve frames");
            for &f in &checked {
                let mut buf = frames.frame(f).latch.write();
                assert_eq!(buf.len(), size.bytes(), "{size}");
                assert_eq!(buf.as_ptr() as usize % size.bytes(), 0, "{size} frame {f}");
                assert!(buf.iter().all(|&b| b == 0), "{size} frame {f} not zeroed");
                // Stamp each frame; the check below proves no frame overlaps another.
                buf.fill(stamp(f));
            }
            for &f in &checked {
                let buf = frames.frame(f).latch.read();
                assert!(buf.iter().all(|&b| b == stamp(f)), "{size} frame {f}");
            }
            assert_eq!(frames.in_use().count(), count, "both chunks built");
            assert!(frames.get(count).is_none());
        }
    }

    #[test]
    fn frame_metadata_is_built_a_chunk_at_a_time_on_first_use() {
        // 64 GiB of 64 KiB frames: nothing but the chunk table exists until a frame is used.
        let frames = Frames::new(PageSize::K64, 1 << 20).expect("reserve 64 GiB");
        assert_eq!(frames.in_use().count(), 0);
        let f = 3 * CHUNK_FRAMES as u32 + 17;
        assert!(std::ptr::eq(
            frames.frame(f),
            frames.get(f as usize).expect("in range")
        ));
        let in_use: Vec<u32> = frames.in_use().map(|(f, _)| f).collect();
        let chunk = 3 * CHUNK_FRAMES as u32..4 * CHUNK_FRAMES as u32;
        assert_eq!(in_use, chunk.collect::<Vec<_>>());
    }

    #[test]
    fn memory_is_backed_only_when_touched() {
        // 1 GiB of 16 KiB frames: reserving it must not make any of it resident.
        let frames = Frames::new(PageSize::K16, 65_536).expect("reserve 1 GiB");
        // Building a chunk's metadata does not touch the chunk's memory either.
        assert_eq!(frames.frame(40_001).desc.pins(), 0);
        assert_eq!(resident_bytes(&frames), 0);
        frames.frame(40_000).latch.write().fill(1);
        let resident = resident_bytes(&frames);
        // One frame, or the transparent huge pages around it if the kernel uses them here. A
        // frame may straddle two 2 MiB regions, and the kernel may back one side with a huge
        // page and the other with small ones (CI once saw 2 MiB + 16 KiB), so the bound is two
        // huge pages: what this proves is that the rest of the GiB stayed unbacked.
        assert!(
            (PageSize::K16.bytes()..=4 << 20).contains(&resident),
            "{resident} bytes resident after touching one frame"
        );
    }

    #[test]
    fn a_pool_larger_than_the_address_space_is_an_error() {
        // The first overflows `usize`; the second fits in it but not in the 47-bit (or 56-bit)
        // user address space, so mmap itself refuses.
        for frames in [usize::MAX / 1024, (1 << 60) / PageSize::K64.bytes()] {
            let Err(e) = Frames::new(PageSize::K64, frames) else {
                panic!("reserved {frames} frames of 64 KiB");
            };
            assert!(
                matches!(e, PoolError::FrameMemory { frames: f, page_size: PageSize::K64, .. } if f == frames),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("{frames} frames")), "{e}");
        }
    }
}
