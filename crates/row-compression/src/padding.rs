//! Adaptive padding (Facebook's, in MySQL 5.6; INNODB-FACTS §2.4): each index counts its
//! compressions in rounds of 128; a round whose failure rate is above the threshold makes the
//! B-tree leave 128 more bytes of each uncompressed page empty, five good rounds in a row give
//! 128 back. A page filled only to `page size − pad` nearly always compresses, and a failed
//! compression — a wasted pass plus a split — was the main CPU cost Facebook measured.

use parking_lot::Mutex;

/// Compressions per round (InnoDB: `ZIP_PAD_ROUND_LEN`).
pub const ROUND_LEN: u32 = 128;
/// Bytes the pad grows or shrinks by (InnoDB: `ZIP_PAD_INCR`).
pub const PAD_INCREMENT: usize = 128;
/// Good rounds in a row before the pad shrinks (InnoDB: `ZIP_PAD_SUCCESSFUL_ROUND_LIMIT`).
pub const GOOD_ROUNDS_TO_SHRINK: u32 = 5;

/// The two settings, with InnoDB's names and defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaddingSettings {
    /// `innodb_compression_failure_threshold_pct` (0–100, default 5): the failure rate above
    /// which a round grows the pad; 0 turns padding off.
    pub failure_threshold_pct: u32,
    /// `innodb_compression_pad_pct_max` (0–75, default 50): the largest pad, in percent of the
    /// page.
    pub pad_pct_max: u32,
}

impl Default for PaddingSettings {
    fn default() -> Self {
        Self {
            failure_threshold_pct: 5,
            pad_pct_max: 50,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    pad: usize,
    successes: u32,
    failures: u32,
    good_rounds: u32,
    increments: u64,
    decrements: u64,
}

/// One index's padding (share it between the threads that write the index).
#[derive(Debug)]
pub struct AdaptivePadding {
    page_size: usize,
    settings: PaddingSettings,
    state: Mutex<State>,
}

impl AdaptivePadding {
    /// No pad yet, for an index of `page_size`-byte pages. Settings out of range are clamped
    /// (threshold to 100, pad maximum to 75 %).
    pub fn new(page_size: usize, settings: PaddingSettings) -> Self {
        Self {
            page_size,
            settings: PaddingSettings {
                failure_threshold_pct: settings.failure_threshold_pct.min(100),
                pad_pct_max: settings.pad_pct_max.min(75),
            },
            state: Mutex::new(State::default()),
        }
    }

    /// Counts one compression of a page of this index; at the end of a round, grows or shrinks
    /// the pad.
    pub fn record(&self, ok: bool) {
        if self.settings.failure_threshold_pct == 0 {
            return;
        }
        let mut s = self.state.lock();
        if ok {
            s.successes += 1;
        } else {
            s.failures += 1;
        }
        let total = s.successes + s.failures;
        if total < ROUND_LEN {
            return;
        }
        let fail_pct = s.failures * 100 / total;
        s.successes = 0;
        s.failures = 0;
        if fail_pct > self.settings.failure_threshold_pct {
            if s.pad + PAD_INCREMENT < self.max_pad() {
                s.pad += PAD_INCREMENT;
                s.increments += 1;
            }
            s.good_rounds = 0;
        } else {
            s.good_rounds += 1;
            if s.good_rounds >= GOOD_ROUNDS_TO_SHRINK {
                s.good_rounds = 0;
                if s.pad > 0 {
                    s.pad -= PAD_INCREMENT;
                    s.decrements += 1;
                }
            }
        }
    }

    /// The pad now, in bytes.
    pub fn pad(&self) -> usize {
        self.state.lock().pad
    }

    /// How many times the pad grew and shrank (InnoDB's `MONITOR_PAD_INCREMENTS` and
    /// `_DECREMENTS`).
    pub fn changes(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.increments, s.decrements)
    }

    /// How full (in bytes of the page) an insert may make an uncompressed page of this index
    /// before it splits instead (InnoDB: `dict_index_zip_pad_optimal_page_size`): the page
    /// size less the pad, never below `100 − pad_pct_max` percent of it; the whole page when
    /// padding is off.
    pub fn fill_limit(&self) -> usize {
        if self.settings.failure_threshold_pct == 0 {
            return self.page_size;
        }
        let floor = self.page_size * (100 - self.settings.pad_pct_max as usize) / 100;
        self.page_size.saturating_sub(self.pad()).max(floor)
    }

    fn max_pad(&self) -> usize {
        self.page_size * self.settings.pad_pct_max as usize / 100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(p: &AdaptivePadding, failures: u32) {
        for i in 0..ROUND_LEN {
            p.record(i >= failures);
        }
    }

    #[test]
    fn a_failing_round_grows_the_pad_and_five_good_rounds_shrink_it() {
        let p = AdaptivePadding::new(16384, PaddingSettings::default());
        round(&p, 8); // 6 % (integer percent, as InnoDB computes it) > 5 %
        assert_eq!(p.pad(), 128);
        round(&p, 7); // 5 %: not above the threshold, a good round
        assert_eq!(p.pad(), 128);
        for _ in 0..3 {
            round(&p, 0);
        }
        assert_eq!(p.pad(), 128, "four good rounds");
        round(&p, 0);
        assert_eq!(p.pad(), 0, "the fifth shrinks it");
        assert_eq!(p.changes(), (1, 1));
        assert_eq!(p.fill_limit(), 16384);
    }

    #[test]
    fn the_pad_stops_below_its_maximum_and_the_fill_limit_at_its_floor() {
        let p = AdaptivePadding::new(16384, PaddingSettings::default());
        for _ in 0..200 {
            round(&p, ROUND_LEN);
        }
        assert!(
            p.pad() < 8192 && p.pad() + PAD_INCREMENT >= 8192,
            "pad {}",
            p.pad()
        );
        assert!(p.fill_limit() >= 8192);
    }

    #[test]
    fn a_zero_threshold_turns_padding_off() {
        let p = AdaptivePadding::new(
            16384,
            PaddingSettings {
                failure_threshold_pct: 0,
                pad_pct_max: 50,
            },
        );
        round(&p, ROUND_LEN);
        assert_eq!((p.pad(), p.fill_limit()), (0, 16384));
    }
}
