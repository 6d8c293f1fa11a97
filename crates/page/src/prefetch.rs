//! A cache prefetch hint, and the key comparison of the binary searches.

use std::cmp::Ordering;

/// Asks the CPU to start loading the cache line of `bytes[off]`, if `off` is inside `bytes`.
/// A hint only: nothing is read into the program, and it cannot fault.
///
/// Why: a binary search over a page is a chain of dependent cache misses (slot, then record).
/// Prefetching both possible next probes while the current key is compared overlaps the next
/// miss with this one (Khuong and Morin, "Array layouts for comparison-based searching").
#[inline]
pub(crate) fn prefetch(bytes: &[u8], off: usize) {
    let Some(byte) = bytes.get(off) else {
        return;
    };
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `_mm_prefetch` is a hint that never dereferences its argument in the language's
    // sense and never faults, whatever the address; here it is besides a valid reference into
    // `bytes`. SSE (which provides it) is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(byte).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = byte;
}

/// `a.cmp(b)` in memcmp order, with keys of eight bytes or more compared a word at a time
/// first: the common key (a big-endian integer) then costs one comparison instead of a call
/// to `memcmp`.
#[inline]
#[expect(
    clippy::big_endian_bytes,
    reason = "a comparison in memory order, not an on-disk integer: big-endian words order as \
              their bytes do"
)]
pub(crate) fn compare_keys(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some((a8, a_rest)), Some((b8, b_rest))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        // Big-endian words order as their bytes do under memcmp.
        return match u64::from_be_bytes(*a8).cmp(&u64::from_be_bytes(*b8)) {
            // Keys of exactly eight bytes end here without calling `memcmp` on empty rests.
            Ordering::Equal if a_rest.is_empty() || b_rest.is_empty() => {
                a_rest.len().cmp(&b_rest.len())
            }
            Ordering::Equal => a_rest.cmp(b_rest),
            unequal => unequal,
        };
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_keys_agrees_with_memcmp_order() {
        let keys: [&[u8]; 10] = [
            b"",
            b"a",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghij",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x00\x00\x00\x00\x00\x00\x00\x01",
            b"\x00\x00\x00\x00\x00\x00\x00\x01\x00",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(compare_keys(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn prefetch_outside_the_slice_is_ignored() {
        let bytes = [1u8; 4];
        prefetch(&bytes, 3);
        prefetch(&bytes, 4);
        prefetch(&bytes, usize::MAX);
        assert_eq!(bytes, [1u8; 4]);
    }
}
