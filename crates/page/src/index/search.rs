//! Searching a page's records for a key: interpolation where the keys are spread evenly,
//! binary search otherwise.
//!
//! A search in a leaf that is not in the CPU cache pays a cache miss per probe, each waiting
//! for the one before: ~7 for the ~80 records of a 16 KiB leaf, 35–40 % of a warm point get.
//! Keys are often spread evenly over a page's range (integers from a sequence, timestamps), and
//! then the key's position between two known keys, read as big-endian numbers, points at or
//! next to its record. The first, middle and last records are loaded together (one miss's
//! wait); the middle one picks the half, as a bisection's first probe would, and tells whether
//! the keys are even. If they are, the position is interpolated inside the half and a short
//! gallop ([`GALLOP_STEPS`]) and a bisection of the bracket finish: about three waits instead
//! of seven. If not, the bisection simply goes on in the half, having paid two extra loads
//! that overlapped the middle one's (Van Sandt et al., "Efficiently Searching In-Memory Sorted
//! Arrays: Revenge of the Interpolation Search?", SIGMOD 2019, weigh the same trade).

use std::cmp::Ordering;

use super::record::Record;
use super::IndexPage;
use crate::prefetch::{compare_keys, prefetch};

/// Pages with fewer records are searched by bisection alone (a few probes either way).
const INTERPOLATE_FROM: usize = 16;

/// Probes of the gallop away from a wrong guess before bisecting what is left.
const GALLOP_STEPS: u32 = 2;

/// Keys count as evenly spread when the middle record's head is within this fraction of the
/// heads' span (1/8) from the span's midpoint.
const EVEN_TOLERANCE: u64 = 8;

/// A key's first eight bytes as a big-endian number, zero-padded: order-preserving, so
/// `key_head(a) < key_head(b)` implies `a < b` in memcmp order (equal heads decide nothing).
/// What the search interpolates on, and what a B-tree's routing copies compare first.
#[expect(
    clippy::big_endian_bytes,
    reason = "a comparison in memory order: big-endian words order as their bytes do"
)]
#[inline]
pub fn key_head(key: &[u8]) -> u64 {
    // The common key of eight bytes or more is one load; the byte loop below compiled to a
    // call to `memcpy`.
    if let Some(word) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*word);
    }
    let mut word = [0u8; 8];
    for (w, k) in word.iter_mut().zip(key) {
        *w = *k;
    }
    u64::from_be_bytes(word)
}

impl<B: AsRef<[u8]>> IndexPage<B> {
    /// Search for `key` in memcmp order, like [`slice::binary_search`]: `Ok(i)` if record `i`
    /// has this key, else `Err(i)` where it would be inserted. On a page whose records do not
    /// decode (possible only after [`open_trusted`](Self::open_trusted)) a record reads as the
    /// empty key: the answer is then unspecified, but the search ends and nothing panics.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let n = self.len();
        if n >= INTERPOLATE_FROM {
            if let Some(found) = self.search_interpolated(key, n) {
                return found;
            }
        }
        self.bisect(key, 0, n)
    }

    /// The key of record `i` (the empty key if it does not decode). Hot path of every descent:
    /// only slot and key bytes are read, with the heap top loaded once (decoding whole records
    /// here cost ~3x; measured with `cargo bench --bench page`).
    fn probe_key(&self, i: usize, heap_top: usize) -> &[u8] {
        Record::decode_key(self.as_bytes(), self.slot(i), heap_top).unwrap_or(&[])
    }

    fn prefetch_probe(&self, i: usize) {
        prefetch(self.as_bytes(), self.slot(i));
    }

    /// Binary search of records `lo..hi`, knowing every record below `lo` is less than `key`
    /// and every record from `hi` on is greater.
    fn bisect(&self, key: &[u8], mut lo: usize, mut hi: usize) -> Result<usize, usize> {
        let heap_top = self.heap_top();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // The records of both possible next probes start loading while this one's key is
            // read and compared (each probe is otherwise a cache miss waiting on the last).
            let (left, right) = (lo + (mid - lo) / 2, mid + 1 + (hi - mid - 1) / 2);
            if left < mid {
                self.prefetch_probe(left);
            }
            if right < hi {
                self.prefetch_probe(right);
            }
            match compare_keys(self.probe_key(mid, heap_top), key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The interpolation search of `n` records; `None` where the keys' heads give nothing to
    /// interpolate on (the first and last heads equal: long common prefixes).
    ///
    /// The middle record is probed first, as a bisection would, together with the first and
    /// the last (their loads overlap): it answers which half holds the key, and whether the
    /// keys are spread evenly — its head near the midpoint of the first's and the last's.
    /// Only then is the position interpolated, inside that half; otherwise the bisection
    /// goes on in the half, having lost nothing but the two end loads.
    fn search_interpolated(&self, key: &[u8], n: usize) -> Option<Result<usize, usize>> {
        let heap_top = self.heap_top();
        let (last, mid) = (n - 1, n / 2);
        self.prefetch_probe(last);
        self.prefetch_probe(mid);
        let first_head = key_head(self.probe_key(0, heap_top));
        let last_head = key_head(self.probe_key(last, heap_top));
        if first_head >= last_head {
            return None;
        }
        let wanted = key_head(key);
        // Strictly outside the heads' range, the key is outside the records' range.
        if wanted < first_head {
            return Some(Err(0));
        }
        if wanted > last_head {
            return Some(Err(n));
        }
        let mid_key = self.probe_key(mid, heap_top);
        let order = compare_keys(mid_key, key);
        if order == Ordering::Equal {
            return Some(Ok(mid));
        }
        let mid_head = key_head(mid_key);
        let span = last_head - first_head;
        let linear_mid = first_head + span / 2;
        let even = mid_head.abs_diff(linear_mid) <= span / EVEN_TOLERANCE;
        // The half that holds the key, with the heads of the records bounding it.
        let (lo, hi, lo_head, hi_head) = match order {
            Ordering::Less => (mid + 1, n, mid_head, last_head),
            _ => (0, mid, first_head, mid_head),
        };
        if !even || lo >= hi || hi_head <= lo_head {
            return Some(self.bisect(key, lo, hi));
        }
        // Interpolate inside the half: between `lo - 1` (or 0) and `hi` (or `last`).
        let (base, top) = (lo.saturating_sub(1), hi.min(last));
        let offset = u128::from(wanted.saturating_sub(lo_head)) * ((top - base) as u128)
            / u128::from(hi_head - lo_head);
        let guess = (base + usize::try_from(offset).unwrap_or(top - base)).clamp(lo, hi - 1);
        if guess > lo {
            self.prefetch_probe(guess - 1);
        }
        if guess + 1 < hi {
            self.prefetch_probe(guess + 1);
        }
        Some(match compare_keys(self.probe_key(guess, heap_top), key) {
            Ordering::Equal => Ok(guess),
            Ordering::Less => self.gallop_up(key, guess, hi, heap_top),
            Ordering::Greater => self.gallop_down(key, guess, lo, heap_top),
        })
    }

    /// Record `below` is less than `key`, and every record from `n` on is greater: probes
    /// `below + 1, + 2, + 4, …` (below `n`) until one is not less, then bisects the bracket.
    fn gallop_up(
        &self,
        key: &[u8],
        below: usize,
        n: usize,
        heap_top: usize,
    ) -> Result<usize, usize> {
        let mut lo = below + 1;
        let mut step = 1;
        for _ in 0..GALLOP_STEPS {
            let probe = below + step;
            if probe >= n {
                return self.bisect(key, lo, n);
            }
            match compare_keys(self.probe_key(probe, heap_top), key) {
                Ordering::Less => lo = probe + 1,
                Ordering::Equal => return Ok(probe),
                Ordering::Greater => return self.bisect(key, lo, probe),
            }
            step *= 2;
        }
        self.bisect(key, lo, n)
    }

    /// Record `above` is greater than `key`, and every record below `lo` is less: probes
    /// `above - 1, - 2, - 4, …` (not below `lo`) until one is not greater, then bisects the
    /// bracket.
    fn gallop_down(
        &self,
        key: &[u8],
        above: usize,
        lo: usize,
        heap_top: usize,
    ) -> Result<usize, usize> {
        let mut hi = above;
        let mut step = 1;
        for _ in 0..GALLOP_STEPS {
            let Some(probe) = above.checked_sub(step).filter(|&p| p >= lo) else {
                return self.bisect(key, lo, hi);
            };
            match compare_keys(self.probe_key(probe, heap_top), key) {
                Ordering::Greater => hi = probe,
                Ordering::Equal => return Ok(probe),
                Ordering::Less => return self.bisect(key, probe + 1, hi),
            }
            step *= 2;
        }
        self.bisect(key, lo, hi)
    }
}
