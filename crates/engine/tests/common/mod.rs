//! Helpers shared by the engine's integration tests.

use std::error::Error as _;
use std::time::{Duration, Instant};

use barracuda::{Engine, Error, FlushSettings};

/// The error and all its sources, one message each, joined by ` <- `: what a test searches for
/// a file name, a page or an OS error that a wrapper may hold deeper down.
#[allow(dead_code, reason = "not every test uses it")]
pub fn chain(err: &Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(" <- ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The committed ~1 MB excerpt of the GCIDE dictionary (see `tests/data/README.md`).
#[allow(dead_code, reason = "used by the compression tests only")]
pub fn gcide_excerpt() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/gcide-excerpt.txt"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Polls until `n` transactions wait for a lock (a row's, or a transaction's for a row it
/// changed); fails the test after 10 s.
#[allow(dead_code, reason = "used by the lock tests only")]
pub fn until_waiting(db: &Engine, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while db.status().locks.waiting_now != n {
        assert!(Instant::now() < deadline, "{n} waiters never showed up");
        std::thread::yield_now();
    }
}

/// A page cleaner that writes no page by its own choice (no redo-age term below the async
/// point, no dirty-page term below 99.999 % dirty, nothing when idle): pages reach the disk
/// only when evicted or at a checkpoint, so a test knows which writes and syncs happened.
#[allow(dead_code, reason = "used by the crash and fault tests only")]
pub fn quiet_cleaner() -> FlushSettings {
    let mut s = FlushSettings::default();
    s.set_adaptive_flushing(false);
    s.set_max_dirty_pages_pct(99.999)
        .expect("a valid max dirty pct");
    s.set_max_dirty_pages_pct_lwm(0.0).expect("a valid lwm");
    s.set_idle_flush_pct(0).expect("a valid idle pct");
    s
}
