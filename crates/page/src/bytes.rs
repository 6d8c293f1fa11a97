//! Little-endian field access that never panics (the crate denies `indexing_slicing`).
//!
//! Readers return `None` when the field would run past the buffer. Writers do nothing when it
//! would (a debug assertion catches that in tests): callers only write into buffers whose size
//! they have checked.

#[inline]
pub(crate) fn get_array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    b.get(off..end)?.try_into().ok()
}

#[inline]
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    get_array(b, off).map(u16::from_le_bytes)
}

#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    get_array(b, off).map(u32::from_le_bytes)
}

#[inline]
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    get_array(b, off).map(u64::from_le_bytes)
}

/// `b[off..off + len]`, or `None` when out of bounds.
#[inline]
pub(crate) fn slice_at(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

#[inline]
pub(crate) fn put(b: &mut [u8], off: usize, src: &[u8]) {
    let dst = off
        .checked_add(src.len())
        .and_then(|end| b.get_mut(off..end));
    debug_assert!(
        dst.is_some(),
        "write of {} bytes at {off} out of bounds",
        src.len()
    );
    if let Some(dst) = dst {
        dst.copy_from_slice(src);
    }
}

#[inline]
pub(crate) fn put_u8(b: &mut [u8], off: usize, v: u8) {
    put(b, off, &[v]);
}

#[inline]
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    put(b, off, &v.to_le_bytes());
}

#[inline]
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    put(b, off, &v.to_le_bytes());
}

#[inline]
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    put(b, off, &v.to_le_bytes());
}

/// Zeroes `b[from..to]` (clamped to the buffer).
#[inline]
pub(crate) fn zero(b: &mut [u8], from: usize, to: usize) {
    if let Some(s) = b.get_mut(from..to.min(b.len())) {
        s.fill(0);
    }
}
