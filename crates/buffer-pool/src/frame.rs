//! Frames: page-size buffers allocated once at pool creation, each aligned to the page size
//! (so O_DIRECT I/O can use them directly), each behind its own page latch.
//!
//! InnoDB carves one large aligned chunk into frames; we allocate each frame separately with an
//! alignment-carrying type, which keeps the crate free of `unsafe` at no measured cost.

use std::ops::{Deref, DerefMut};

use barracuda_page::PageSize;
use parking_lot::RwLock;

use crate::descriptor::Descriptor;

macro_rules! aligned_page {
    ($name:ident, $bytes:literal) => {
        /// One page buffer aligned to its own size.
        #[repr(C, align($bytes))]
        pub(crate) struct $name([u8; $bytes]);
    };
}

aligned_page!(Page4, 4096);
aligned_page!(Page8, 8192);
aligned_page!(Page16, 16384);
aligned_page!(Page32, 32768);
aligned_page!(Page64, 65536);

/// The bytes of one frame, page-size aligned.
pub(crate) enum FrameBuf {
    K4(Box<Page4>),
    K8(Box<Page8>),
    K16(Box<Page16>),
    K32(Box<Page32>),
    K64(Box<Page64>),
}

impl FrameBuf {
    /// A zeroed frame of `size`.
    #[expect(
        clippy::large_stack_arrays,
        reason = "built in place on the heap in release builds; a 64 KiB temporary in debug builds"
    )]
    pub(crate) fn new(size: PageSize) -> Self {
        match size {
            PageSize::K4 => Self::K4(Box::new(Page4([0; 4096]))),
            PageSize::K8 => Self::K8(Box::new(Page8([0; 8192]))),
            PageSize::K16 => Self::K16(Box::new(Page16([0; 16384]))),
            PageSize::K32 => Self::K32(Box::new(Page32([0; 32768]))),
            PageSize::K64 => Self::K64(Box::new(Page64([0; 65536]))),
        }
    }
}

impl Deref for FrameBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::K4(p) => &p.0,
            Self::K8(p) => &p.0,
            Self::K16(p) => &p.0,
            Self::K32(p) => &p.0,
            Self::K64(p) => &p.0,
        }
    }
}

impl DerefMut for FrameBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Self::K4(p) => &mut p.0,
            Self::K8(p) => &mut p.0,
            Self::K16(p) => &mut p.0,
            Self::K32(p) => &mut p.0,
            Self::K64(p) => &mut p.0,
        }
    }
}

/// A frame: its page latch (guarding the bytes) and its descriptor (InnoDB: `buf_block_t`).
pub(crate) struct Frame {
    /// The page latch (InnoDB: `buf_block_t::lock`). Only taken by a thread holding a pin.
    pub(crate) latch: RwLock<FrameBuf>,
    /// State, page id, pin count, LSNs, access time.
    pub(crate) desc: Descriptor,
}

impl Frame {
    pub(crate) fn new(size: PageSize) -> Self {
        Self {
            latch: RwLock::new(FrameBuf::new(size)),
            desc: Descriptor::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_page_aligned_and_sized() {
        for size in PageSize::ALL {
            let buf = FrameBuf::new(size);
            assert_eq!(buf.len(), size.bytes());
            assert_eq!(buf.as_ptr() as usize % size.bytes(), 0, "{size}");
            assert!(buf.iter().all(|&b| b == 0));
        }
    }
}
