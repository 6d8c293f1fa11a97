//! Little-endian field access that never panics (the crate denies `indexing_slicing`): readers
//! return `None` past the buffer, writers do nothing there (callers size their buffers first;
//! a debug assertion catches a mistake in tests).

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

/// A little-endian integer of `N` ≤ 8 bytes at `off`.
#[inline]
pub(crate) fn uint_at<const N: usize>(b: &[u8], off: usize) -> Option<u64> {
    let raw: [u8; N] = get_array(b, off)?;
    let mut wide = [0u8; 8];
    wide.get_mut(..N)?.copy_from_slice(&raw);
    Some(u64::from_le_bytes(wide))
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

/// Writes the low `N` bytes of `v`, little-endian.
#[inline]
pub(crate) fn put_uint<const N: usize>(b: &mut [u8], off: usize, v: u64) {
    put(b, off, v.to_le_bytes().get(..N).unwrap_or_default());
}

/// Zeroes `b[from..to]` (nothing when the range is empty or out of bounds).
#[inline]
pub(crate) fn zero(b: &mut [u8], from: usize, to: usize) {
    if let Some(r) = b.get_mut(from..to) {
        r.fill(0);
    }
}
