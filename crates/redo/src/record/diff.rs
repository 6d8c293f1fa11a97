//! [`MtrWriter::log_page_diff`]: the records that turn one page image into another.
//!
//! This is how the engine logs a change without instrumenting every page mutator: it keeps a
//! before-image of each page an mtr touches and diffs at commit. Two passes:
//! 1. every changed range long enough to hide a shifted run (a slot directory insert moves
//!    `n × 2` bytes by 2) is searched for the longest run equal to the current image shifted by
//!    a small distance; a long enough run becomes one MEMMOVE, applied to a working copy;
//! 2. what still differs between the working copy and `after` becomes WRITEs (MEMSET for a long
//!    run of one byte), nearby ranges coalesced when the gap costs less than a new record.
//!
//! When that comes to a sixteenth of a page or more and `before` is an index page, the same two
//! passes are run from the compacted `before`, behind an INDEX_REORGANIZE record, and the shorter
//! result is kept: a split compacts the page it keeps, which moves every record by a different
//! distance, while the compacted image differs from the result only where records left it.
//!
//! Replay is exact by construction: pass 1 searches the image that replay will have at that
//! point, and pass 2 diffs against it.

use std::ops::Range;

use barracuda_page::PageId;

use super::decode::reorganize;
use super::{MtrWriter, RecordError};

/// Changed ranges separated by at most this many equal bytes are logged as one: a new
/// same-page record costs a header byte and a relative-offset byte, so a gap of 2 costs the
/// same either way.
const MERGE_GAP: usize = 2;

/// Shift distances tried (both directions): slot directories shift by 2 per slot, heaps by
/// small record headers; larger shifts are left to WRITEs.
const MAX_SHIFT: usize = 16;

/// A changed range shorter than this is not searched for a shifted run.
const MIN_SEARCH: usize = 24;

/// A shifted run shorter than this is written instead: a MEMMOVE costs up to ~10 bytes and
/// usually splits a WRITE in two.
const MIN_RUN: usize = 16;

/// A run of one byte inside a changed range at least this long is logged as MEMSET: the
/// MEMSET (about 6 bytes) and the WRITE header after it (about 4) cost less than the run.
const MIN_INNER_MEMSET: usize = 16;

/// A byte diff of at least `page size / this` is tried against the compacted page too: smaller
/// ones are an insert or an update in place, and compacting to find out would cost more than
/// it can save.
const REORGANIZE_WORTH_DIVISOR: usize = 16;

/// A run of one byte at least this long is logged as MEMSET rather than WRITE.
const MIN_MEMSET: usize = 8;

impl MtrWriter {
    /// Appends the records that turn page `page` from `before` into `after` (both one page
    /// long): nothing if they are equal, MEMMOVEs for shifted runs, WRITE/MEMSET for the rest —
    /// or, when `before` is an index page and that is shorter, INDEX_REORGANIZE and the
    /// difference between the compacted `before` and `after`.
    ///
    /// Fails with [`RecordError::Invalid`] (appending nothing) if either image is not exactly
    /// the writer's page size long.
    pub fn log_page_diff(
        &mut self,
        page: PageId,
        before: &[u8],
        after: &[u8],
    ) -> Result<(), RecordError> {
        let (mark, cursor) = (self.len(), self.cursor());
        self.log_byte_diff(page, before, after)?;
        let plain = self.len() - mark;
        if plain < self.page_size().bytes() / REORGANIZE_WORTH_DIVISOR {
            return Ok(());
        }
        // A compaction moves most records, which no small shift explains: diff against the
        // compacted image instead, if `before` is an index page (else keep the bytes).
        let mut compacted = before.to_vec();
        if reorganize(page, &mut compacted).is_err() {
            return Ok(());
        }
        let mut alt = MtrWriter::new(self.page_size());
        alt.index_reorganize(page)?;
        alt.log_byte_diff(page, &compacted, after)?;
        if alt.len() < plain {
            self.truncate(mark, cursor);
            self.append(&alt);
        }
        Ok(())
    }

    /// Appends the records of page `page` created by the mtr (it started as zeros, whatever it
    /// held before): INIT_PAGE, then the page's bytes as at most two WRITEs around its longest
    /// run of zero words — an index page's free space between heap and directory, the unused
    /// tail of an overflow or undo page. One pass over the page a word at a time; a diff
    /// against zeros instead cut the page at every zero byte of its records, a range per few
    /// bytes, and was a quarter of a sorted load's time. The WRITEs carry the zero bytes inside
    /// the records (a record field of zeros costs its bytes, not a new record).
    ///
    /// Fails with [`RecordError::Invalid`] (appending nothing) if `after` is not exactly the
    /// writer's page size long.
    pub fn log_created_page(&mut self, page: PageId, after: &[u8]) -> Result<(), RecordError> {
        let p = self.page_size().bytes();
        if after.len() != p {
            return Err(RecordError::Invalid {
                page,
                what: format!(
                    "a created page image of {} bytes, expected {p}",
                    after.len()
                ),
            });
        }
        self.init_page(page);
        let gap = longest_zero_run(after);
        self.write(page, 0, after.get(..gap.start).unwrap_or_default())?;
        self.write(page, gap.end, after.get(gap.end..).unwrap_or_default())
    }

    /// [`log_created_page`](Self::log_created_page) for a page whose bytes `zero` its builder
    /// knows are zeros (an index page built from zeros by inserts: the gap between its heap
    /// and its directory): the two WRITEs go around `zero`, which is not read — the search
    /// for the longest zero run reads all of a page that is mostly cold, never-touched
    /// memory. An empty `zero` searches as `log_created_page` does.
    ///
    /// The caller answers for the zeros (debug builds check them): bytes in `zero` that are
    /// not zero would replay as zeros. Fails with [`RecordError::Invalid`] (appending
    /// nothing) if `after` is not the writer's page size long or `zero` is not inside it.
    pub fn log_created_page_known_zero(
        &mut self,
        page: PageId,
        after: &[u8],
        zero: Range<usize>,
    ) -> Result<(), RecordError> {
        if zero.is_empty() {
            return self.log_created_page(page, after);
        }
        let p = self.page_size().bytes();
        if after.len() != p || zero.end > p {
            return Err(RecordError::Invalid {
                page,
                what: format!(
                    "a created page image of {} bytes with known zeros at {zero:?}, expected \
                     {p} bytes",
                    after.len()
                ),
            });
        }
        debug_assert!(
            after
                .get(zero.clone())
                .is_some_and(|z| z.iter().all(|&b| b == 0)),
            "{page}: bytes {zero:?} said to be zeros are not"
        );
        self.init_page(page);
        self.write(page, 0, after.get(..zero.start).unwrap_or_default())?;
        self.write(page, zero.end, after.get(zero.end..).unwrap_or_default())
    }

    /// [`log_page_diff`](Self::log_page_diff) without the INDEX_REORGANIZE alternative.
    fn log_byte_diff(
        &mut self,
        page: PageId,
        before: &[u8],
        after: &[u8],
    ) -> Result<(), RecordError> {
        let p = self.page_size().bytes();
        if before.len() != p || after.len() != p {
            return Err(RecordError::Invalid {
                page,
                what: format!(
                    "page images of {} and {} bytes, expected {p}",
                    before.len(),
                    after.len()
                ),
            });
        }
        let ranges = changed_ranges(before, after);
        if ranges.is_empty() {
            return Ok(());
        }
        let mut work: Option<Vec<u8>> = None;
        for r in ranges.iter().filter(|r| r.len() >= MIN_SEARCH) {
            let cur = work.as_deref().unwrap_or(before);
            // Bytes written into zeroed space (a record appended to the heap) have nothing to
            // move from: a run copied out of zeros is zeros, which MEMSET logs as cheaply. (A
            // run could still start in the up to `MAX_SHIFT` bytes before the range; giving
            // that up costs at most a few bytes of log.)
            if cur
                .get(r.clone())
                .is_some_and(|w| w.iter().all(|&b| b == 0))
            {
                continue;
            }
            if let Some((dest, source, len)) = longest_shifted_run(cur, after, r.clone()) {
                self.memmove(page, dest, source, len)?;
                work.get_or_insert_with(|| before.to_vec())
                    .copy_within(source..source + len, dest);
            }
        }
        // Without a MEMMOVE the working copy is `before`: its ranges are the ones found above.
        let ranges = match work.as_deref() {
            Some(base) => changed_ranges(base, after),
            None => ranges,
        };
        for r in ranges {
            let bytes = after.get(r.clone()).unwrap_or(&[]);
            match bytes.split_first() {
                Some((&b, tail)) if bytes.len() >= MIN_MEMSET && tail.iter().all(|&x| x == b) => {
                    self.memset(page, r.start, r.len(), &[b])?;
                }
                _ => self.write_with_fills(page, r.start, bytes)?,
            }
        }
        Ok(())
    }

    /// WRITEs `bytes` at `offset`, except that a run of one byte at least [`MIN_INNER_MEMSET`]
    /// long inside them becomes a MEMSET (records that left a page, followed by its zeroed
    /// space, change as one range).
    fn write_with_fills(
        &mut self,
        page: PageId,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), RecordError> {
        let mut written = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes.get(i).copied().unwrap_or(0);
            let run = bytes
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&x| x == b)
                .count();
            if run >= MIN_INNER_MEMSET {
                self.write(page, offset + written, bytes.get(written..i).unwrap_or(&[]))?;
                self.memset(page, offset + i, run, &[b])?;
                written = i + run;
            }
            i += run;
        }
        self.write(page, offset + written, bytes.get(written..).unwrap_or(&[]))
    }
}

/// The longest run of whole zero words (8 bytes, aligned) of `page`; empty if it has none (the
/// first of equally long runs).
///
/// A created page is mostly one zero run (a page a split has just started holds a header, a
/// record or a few and the end of its slot directory), so once a run reaches a block boundary
/// it is extended a block of [`ZERO_BLOCK`] bytes at a time, each tested with one OR of its
/// words; only the run's ends are walked word by word. (An earlier version classified every
/// block of the page, zero, mixed or not, through a closure: twice the time on such a page.)
fn longest_zero_run(page: &[u8]) -> Range<usize> {
    const WORDS_PER_BLOCK: usize = ZERO_BLOCK / 8;
    let words = page.len() / 8;
    let zero_word = |w: usize| word(page, w * 8) == 0;
    let zero_block = |w: usize| {
        page.get(w * 8..w * 8 + ZERO_BLOCK).is_some_and(|block| {
            block
                .chunks_exact(8)
                .fold(0, |acc, chunk| acc | as_word(chunk))
                == 0
        })
    };
    let mut best = 0..0;
    let mut w = 0;
    while w < words {
        if !zero_word(w) {
            w += 1;
            continue;
        }
        let start = w;
        while w < words && w % WORDS_PER_BLOCK != 0 && zero_word(w) {
            w += 1;
        }
        if w % WORDS_PER_BLOCK == 0 {
            while zero_block(w) {
                w += WORDS_PER_BLOCK;
            }
            while w < words && zero_word(w) {
                w += 1;
            }
        }
        if (w - start) * 8 > best.len() {
            best = start * 8..w * 8;
        }
    }
    best
}

/// The ranges where `a` and `b` (same length) differ, ascending, merged across gaps of at most
/// [`MERGE_GAP`] equal bytes.
///
/// Most of a page is unchanged, so equal stretches are skipped a block at a time (one vectorised
/// comparison per [`SKIP_BLOCK`] bytes) and the ends of a difference are found a word at a time.
fn changed_ranges(a: &[u8], b: &[u8]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let n = a.len().min(b.len());
    let mut i = 0;
    while let Some(start) = first_difference(a, b, i, n) {
        let end = first_equal(a, b, start, n);
        match out.last_mut() {
            Some(last) if start - last.end <= MERGE_GAP => last.end = end,
            _ => out.push(start..end),
        }
        i = end;
    }
    out
}

/// Bytes compared at once when skipping equal stretches: first in big blocks (few calls over
/// a mostly unchanged page), then in small ones near a difference.
const BIG_SKIP_BLOCK: usize = 1024;
/// See [`BIG_SKIP_BLOCK`].
const SKIP_BLOCK: usize = 64;
/// Bytes a zero run is extended by at once in [`longest_zero_run`].
const ZERO_BLOCK: usize = 64;

/// The first `k` in `from..n` with `a[k] != b[k]`.
fn first_difference(a: &[u8], b: &[u8], from: usize, n: usize) -> Option<usize> {
    let mut i = from;
    while i + BIG_SKIP_BLOCK <= n && a.get(i..i + BIG_SKIP_BLOCK) == b.get(i..i + BIG_SKIP_BLOCK) {
        i += BIG_SKIP_BLOCK;
    }
    while i + SKIP_BLOCK <= n && a.get(i..i + SKIP_BLOCK) == b.get(i..i + SKIP_BLOCK) {
        i += SKIP_BLOCK;
    }
    while i + 8 <= n && word(a, i) == word(b, i) {
        i += 8;
    }
    (i..n).find(|&k| a.get(k) != b.get(k))
}

/// The first `k` in `from..n` with `a[k] == b[k]` (`n` if none).
fn first_equal(a: &[u8], b: &[u8], from: usize, n: usize) -> usize {
    let mut i = from;
    // A word with no equal byte: XOR has no zero byte.
    while i + 8 <= n && !has_zero_byte(word(a, i) ^ word(b, i)) {
        i += 8;
    }
    (i..n).find(|&k| a.get(k) == b.get(k)).unwrap_or(n)
}

/// The 8 bytes of `s` at `i` as a word (0 past the end: callers stay inside).
fn word(s: &[u8], i: usize) -> u64 {
    s.get(i..i + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// An 8-byte chunk (from `chunks_exact(8)`) as a word, compared inline rather than by a
/// `memcmp` call.
fn as_word(chunk: &[u8]) -> u64 {
    <[u8; 8]>::try_from(chunk).map_or(0, u64::from_ne_bytes)
}

/// Whether one of the 8 bytes of `v` is zero (the classic bit trick).
fn has_zero_byte(v: u64) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    v.wrapping_sub(LOW) & !v & HIGH != 0
}

/// Within `r`, the longest run `[d, d + len)` with `after[d + k] == cur[d + k - shift]` for a
/// shift in `±1..=MAX_SHIFT`, as `(dest, source, len)`, if at least [`MIN_RUN`] long.
///
/// A run of [`MIN_RUN`] (16) bytes contains a whole 8-aligned word, so a shift whose aligned
/// words never match has no run worth a MEMMOVE and is rejected by word comparisons alone; the
/// byte-exact search runs only for shifts that pass (usually the one a slot insert made).
fn longest_shifted_run(cur: &[u8], after: &[u8], r: Range<usize>) -> Option<(usize, usize, usize)> {
    let n = cur.len();
    let mut best: Option<(usize, usize, usize)> = None;
    for shift in 1..=MAX_SHIFT {
        for forward in [true, false] {
            // Source range inside the page for destination `r`.
            let (lo, hi) = if forward {
                (r.start.max(shift), r.end)
            } else {
                (r.start, r.end.min(n.saturating_sub(shift)))
            };
            if hi <= lo || hi - lo < MIN_RUN {
                continue;
            }
            let src_lo = if forward { lo - shift } else { lo + shift };
            let d0 = lo.next_multiple_of(8);
            let words = hi.saturating_sub(d0) / 8;
            let s0 = if forward { d0 - shift } else { d0 + shift };
            let (Some(a), Some(c)) = (after.get(d0..d0 + 8 * words), cur.get(s0..s0 + 8 * words))
            else {
                continue;
            };
            let any_word = a
                .chunks_exact(8)
                .zip(c.chunks_exact(8))
                .any(|(x, y)| as_word(x) == as_word(y));
            if !any_word {
                continue;
            }
            let (Some(dst), Some(src)) = (after.get(lo..hi), cur.get(src_lo..src_lo + (hi - lo)))
            else {
                continue;
            };
            let mut run_start = 0;
            for (k, same) in dst
                .iter()
                .zip(src)
                .map(|(x, y)| x == y)
                .chain([false])
                .enumerate()
            {
                if same {
                    continue;
                }
                let len = k - run_start;
                if len >= MIN_RUN && best.is_none_or(|(_, _, l)| len > l) {
                    best = Some((lo + run_start, src_lo + run_start, len));
                }
                run_start = k + 1;
            }
        }
    }
    best
}

#[cfg(test)]
#[expect(
    clippy::indexing_slicing,
    reason = "the byte-at-a-time references index inside the slices they loop over"
)]
mod tests {
    use std::ops::Range;

    use proptest::prelude::*;

    use super::{
        changed_ranges, longest_shifted_run, longest_zero_run, MAX_SHIFT, MERGE_GAP, MIN_RUN,
    };

    /// The byte-at-a-time definition the fast versions must match.
    fn changed_ranges_reference(a: &[u8], b: &[u8]) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        let mut i = 0;
        let n = a.len().min(b.len());
        while let Some(start) = (i..n).find(|&k| a[k] != b[k]) {
            let end = (start..n).find(|&k| a[k] == b[k]).unwrap_or(n);
            match out.last_mut() {
                Some(last) if start - last.end <= MERGE_GAP => last.end = end,
                _ => out.push(start..end),
            }
            i = end;
        }
        out
    }

    fn longest_shifted_run_reference(
        cur: &[u8],
        after: &[u8],
        r: Range<usize>,
    ) -> Option<(usize, usize, usize)> {
        let n = cur.len();
        let mut best: Option<(usize, usize, usize)> = None;
        for shift in 1..=MAX_SHIFT {
            for forward in [true, false] {
                let (lo, hi) = if forward {
                    (r.start.max(shift), r.end)
                } else {
                    (r.start, r.end.min(n.saturating_sub(shift)))
                };
                if hi <= lo {
                    continue;
                }
                let src_lo = if forward { lo - shift } else { lo + shift };
                let mut run_start = 0;
                for k in 0..=(hi - lo) {
                    if k < hi - lo && after[lo + k] == cur[src_lo + k] {
                        continue;
                    }
                    let len = k - run_start;
                    if len >= MIN_RUN && best.is_none_or(|(_, _, l)| len > l) {
                        best = Some((lo + run_start, src_lo + run_start, len));
                    }
                    run_start = k + 1;
                }
            }
        }
        best
    }

    /// A page and an edited copy: byte flips, zeroed and copied stretches, shifted runs.
    fn page_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            prop::collection::vec(0u8..4, 512),
            prop::collection::vec((0usize..512, 1usize..80, 0u8..4, -20i32..20), 0..12),
        )
            .prop_map(|(before, edits)| {
                let mut after = before.clone();
                for (at, len, kind, shift) in edits {
                    let end = (at + len).min(after.len());
                    match kind {
                        0 => after[at..end].iter_mut().for_each(|b| *b ^= 0x5A),
                        1 => after[at..end].fill(0),
                        _ => {
                            let src = usize::try_from(at as i32 + shift)
                                .unwrap_or(0)
                                .min(after.len());
                            let len = (end - at).min(after.len().saturating_sub(src));
                            after.copy_within(src..src + len, at);
                        }
                    }
                }
                (before, after)
            })
    }

    /// The word-at-a-time definition of `longest_zero_run` (the first of equally long runs).
    fn longest_zero_run_reference(page: &[u8]) -> Range<usize> {
        let mut best = 0..0;
        let mut i = 0;
        while i + 8 <= page.len() {
            if page[i..i + 8].iter().all(|&b| b == 0) {
                let start = i;
                while i + 8 <= page.len() && page[i..i + 8].iter().all(|&b| b == 0) {
                    i += 8;
                }
                if i - start > best.len() {
                    best = start..i;
                }
            } else {
                i += 8;
            }
        }
        best
    }

    proptest! {
        #[test]
        fn the_blocked_zero_run_search_matches_the_word_at_a_time_one((_, page) in page_pair()) {
            prop_assert_eq!(longest_zero_run(&page), longest_zero_run_reference(&page));
            let mut sparse = page.clone();
            sparse.iter_mut().enumerate().for_each(|(i, b)| if i % 97 > 40 { *b = 0 });
            prop_assert_eq!(longest_zero_run(&sparse), longest_zero_run_reference(&sparse));
        }

        /// Long runs, as a created page has: zeros over many blocks, starting and ending at
        /// any byte, around a few non-zero bytes that may fall inside them.
        #[test]
        fn long_zero_runs_are_found_whole(
            (_, page) in page_pair(),
            runs in proptest::collection::vec((0usize..4096, 0usize..4096), 1..4),
            stray in proptest::collection::vec(0usize..4096, 0..3),
        ) {
            let mut page = page;
            let n = page.len();
            for (start, len) in runs {
                let start = start % n;
                page[start..(start + len).min(n)].fill(0);
            }
            for at in stray {
                page[at % n] = 1;
            }
            prop_assert_eq!(longest_zero_run(&page), longest_zero_run_reference(&page));
        }

        #[test]
        fn fast_scans_match_the_byte_at_a_time_definitions((before, after) in page_pair()) {
            let ranges = changed_ranges(&before, &after);
            prop_assert_eq!(&ranges, &changed_ranges_reference(&before, &after));
            for r in ranges {
                prop_assert_eq!(
                    longest_shifted_run(&before, &after, r.clone()),
                    longest_shifted_run_reference(&before, &after, r)
                );
            }
        }
    }
}
