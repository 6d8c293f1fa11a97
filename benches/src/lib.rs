//! Shared fixtures for Barracuda's criterion benchmarks (the bench targets are in `benches/`,
//! one file and one `[[bench]]` section each).
//!
//! Benchmarks live in this crate of their own so that ordinary builds do not compile
//! criterion. Run one with `cargo bench -p barracuda-benches --bench page`; add
//! `-- --warm-up-time 1 --measurement-time 3` for a quick pass.
//!
//! Fixtures build their inputs with the public API of the crates under test and panic on
//! failure: a benchmark with a broken fixture must not report numbers.

use barracuda_page::{
    seal_page, FileHeader, IndexPage, PageError, PageId, PageSize, PageType, Record,
};

/// Deterministic xorshift64 for probe sequences (no dependency, no per-call overhead worth
/// measuring).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator with a fixed non-zero seed.
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The 8-byte key of row `i`: big-endian, so that memcmp order is numeric order (a key, not
/// an on-disk integer field, hence the exception to the little-endian policy).
#[expect(
    clippy::big_endian_bytes,
    reason = "keys compare as byte strings: big-endian makes that numeric order"
)]
pub fn be_key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A page of `page_size` with a valid file header (an index page type, LSN set) and a
/// patterned body, sealed: input for checksum and verification benchmarks.
pub fn sealed_page(page_size: PageSize, page_id: PageId) -> Vec<u8> {
    let mut buf = vec![0u8; page_size.bytes()];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i.wrapping_mul(31) >> 3) as u8;
    }
    let mut h = FileHeader::new(page_id, PageType::Index);
    h.lsn = 0x0123_4567_89AB_CDEF;
    h.write(&mut buf);
    seal_page(&mut buf);
    buf
}

/// A leaf page whose records have keys [`be_key`]`(i * step)` for `i = 0..count` and
/// `value_len`-byte values, inserted in key order; `count = usize::MAX` fills the page.
/// Returns the page and the number of records.
pub fn leaf_page(
    page_size: PageSize,
    count: usize,
    step: u64,
    value_len: usize,
) -> Result<(IndexPage<Vec<u8>>, usize), PageError> {
    let mut page = IndexPage::init(
        vec![0u8; page_size.bytes()],
        page_size,
        PageId::new(1, 3),
        0,
        7,
    )?;
    let value = vec![0xA5u8; value_len];
    let mut i = 0u64;
    while (i as usize) < count {
        let key = be_key(i * step);
        match page.insert(page.len(), &Record::inline(&key, &value)) {
            Ok(()) => i += 1,
            Err(PageError::PageFull { .. }) => break,
            Err(e) => return Err(e),
        }
    }
    Ok((page, i as usize))
}

/// User + system CPU seconds of this process so far, every thread included (from
/// `/proc/self/stat`): what a run costs, which stays comparable between two builds while wall
/// time measures the machine's other work. Panics where `/proc` cannot be read (a benchmark
/// that cannot measure must not report).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let after = stat.rsplit_once(") ").expect("a stat line").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let ticks = |i: usize| -> u64 {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .expect("utime and stime in /proc/self/stat")
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}
