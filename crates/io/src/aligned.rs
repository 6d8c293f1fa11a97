//! [`AlignedBuf`]: a heap buffer aligned for O_DIRECT.
#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Default alignment of [`AlignedBuf`]: 4096 bytes, enough for O_DIRECT on every common device.
pub const DIRECT_IO_ALIGN: usize = 4096;

/// A zero-initialised byte buffer whose start is aligned to [`DIRECT_IO_ALIGN`] (or a chosen
/// power of two), as O_DIRECT requires. Derefs to `[u8]`; freed on drop.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>); &AlignedBuf only gives
// &[u8], so sharing and sending it between threads is as safe as for Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: see above; no interior mutability.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes aligned to 4096.
    pub fn zeroed(len: usize) -> Self {
        Self::with_alignment(len, DIRECT_IO_ALIGN)
    }

    /// `len` zero bytes aligned to `align`.
    ///
    /// # Panics
    /// If `align` is not a power of two, or `len` rounded up to `align` overflows `isize`.
    pub fn with_alignment(len: usize, align: usize) -> Self {
        // Allocate at least one byte: zero-size layouts may not be passed to the allocator.
        let layout = match Layout::from_size_align(len.max(1), align) {
            Ok(l) => l,
            Err(e) => panic!("AlignedBuf: bad size {len} / alignment {align}: {e}"),
        };
        // SAFETY: layout has non-zero size (len.max(1)).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, len, layout }
    }

    /// A copy of `data` in an aligned buffer.
    pub fn from_slice(data: &[u8]) -> Self {
        let mut b = Self::zeroed(data.len());
        b.copy_from_slice(data);
        b
    }

    /// The alignment of the start of the buffer.
    pub fn alignment(&self) -> usize {
        self.layout.align()
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points to an allocation of at least len initialised (zeroed) bytes that
        // lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref; &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated by alloc_zeroed with exactly this layout and is freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> Self {
        let mut b = Self::with_alignment(self.len, self.layout.align());
        b.copy_from_slice(self);
        b
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("align", &self.layout.align())
            .finish_non_exhaustive()
    }
}

impl PartialEq for AlignedBuf {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for AlignedBuf {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0, 1, 512, 4096, 65536 + 3] {
            let b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % DIRECT_IO_ALIGN, 0);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn write_clone_compare() {
        let mut b = AlignedBuf::with_alignment(8192, 8192);
        b[100] = 7;
        let c = b.clone();
        assert_eq!(c.as_ptr() as usize % 8192, 0);
        assert_eq!(b, c);
        assert_eq!(AlignedBuf::from_slice(&[1, 2, 3])[..], [1, 2, 3]);
    }
}
