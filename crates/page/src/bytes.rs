//! Little-endian field access that never panics (the crate denies `indexing_slicing`); public
//! for the crates that decode formats built on these pages (row compression).
//!
//! Readers return `None` when the field would run past the buffer. Writers do nothing when it
//! would (a debug assertion catches that in tests): callers only write into buffers whose size
//! they have checked.

#[inline]
pub(crate) fn get_array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    b.get(off..end)?.try_into().ok()
}

/// The byte at `off`.
#[inline]
pub fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

/// The little-endian `u16` at `off`.
#[inline]
pub fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    get_array(b, off).map(u16::from_le_bytes)
}

/// The little-endian `u32` at `off`.
#[inline]
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    get_array(b, off).map(u32::from_le_bytes)
}

/// The little-endian `u64` at `off`.
#[inline]
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    get_array(b, off).map(u64::from_le_bytes)
}

/// `b[off..off + len]`, or `None` when out of bounds.
#[inline]
pub fn slice_at(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

/// Copies `src` to `b[off..]`; nothing if it would run past the buffer.
#[inline]
pub fn put(b: &mut [u8], off: usize, src: &[u8]) {
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

/// Writes the byte `v` at `off`.
#[inline]
pub fn put_u8(b: &mut [u8], off: usize, v: u8) {
    put(b, off, &[v]);
}

/// Writes `v` little-endian at `off`.
#[inline]
pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    put(b, off, &v.to_le_bytes());
}

/// Writes `v` little-endian at `off`.
#[inline]
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    put(b, off, &v.to_le_bytes());
}

/// Writes `v` little-endian at `off`.
#[inline]
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    put(b, off, &v.to_le_bytes());
}

/// Zeroes `b[from..to]` (clamped to the buffer).
#[inline]
pub fn zero(b: &mut [u8], from: usize, to: usize) {
    if let Some(s) = b.get_mut(from..to.min(b.len())) {
        s.fill(0);
    }
}

/// The little-endian integer of `N` ≤ 8 bytes at `off` (the 6-byte transaction ids and 7-byte
/// roll pointers of records and undo).
#[inline]
pub fn uint_at<const N: usize>(b: &[u8], off: usize) -> Option<u64> {
    let raw: [u8; N] = get_array(b, off)?;
    let mut wide = [0u8; 8];
    wide.get_mut(..N)?.copy_from_slice(&raw);
    Some(u64::from_le_bytes(wide))
}

/// Writes the low `N` bytes of `v`, little-endian, at `off`.
#[inline]
pub fn put_uint<const N: usize>(b: &mut [u8], off: usize, v: u64) {
    put(b, off, v.to_le_bytes().get(..N).unwrap_or_default());
}
