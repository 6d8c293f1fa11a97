//! Configuration: [`PoolConfig`] (a by-value builder), [`FreePagePolicy`] and [`ReadAhead`].

use std::time::Duration;

use barracuda_page::PageSize;

/// How a thread gets a frame when the free list is empty. Switchable at run time with
/// [`BufferPool::set_free_page_policy`](crate::BufferPool::set_free_page_policy).
///
/// Default = [`Eager`](Self::Eager). InnoDB equivalent: Percona's
/// `innodb_empty_free_list_algorithm` (`legacy` | `backoff`); `Eager` is ours.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum FreePagePolicy {
    /// MySQL 5.6–8.0 `buf_LRU_get_free_block`: the requesting thread scans the LRU tail (≤100
    /// pages, then the whole list) for a clean victim, else flushes one dirty page itself
    /// (single-page flush); from the third iteration on it sleeps 10 ms per loop.
    Legacy,
    /// Percona `backoff`: the requesting thread never scans, evicts or flushes; it yields three
    /// times, then sleeps 1, 2, 4, 16, 32, 64 µs … doubling up to 10 ms while the background LRU
    /// manager (which wakes at most once a second when idle) refills the free list.
    /// Reproduces the ~1 s stalls measured by J.-F. Gagné (2022).
    Backoff,
    /// Ours: the LRU manager keeps the free list above a watermark sized from the measured
    /// consumption rate and is woken at once when it drops below the low watermark; if the list
    /// still runs dry the requesting thread evicts a clean page (or flushes a dirty one) itself at
    /// once, never sleeping unless every frame is pinned.
    #[default]
    Eager,
}

impl FreePagePolicy {
    pub(crate) fn to_u8(self) -> u8 {
        match self {
            Self::Legacy => 0,
            Self::Backoff => 1,
            Self::Eager => 2,
        }
    }

    pub(crate) fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Legacy,
            1 => Self::Backoff,
            _ => Self::Eager,
        }
    }
}

impl std::fmt::Display for FreePagePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Legacy => "legacy",
            Self::Backoff => "backoff",
            Self::Eager => "eager",
        })
    }
}

/// Read-ahead settings, switchable at run time with
/// [`BufferPool::set_read_ahead`](crate::BufferPool::set_read_ahead).
///
/// The read-ahead area is one extent ([`PageSize::pages_per_extent`]). Read-ahead is skipped in
/// pools smaller than four extents and while more than half the pool is pending read-ahead.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ReadAhead {
    /// Linear read-ahead threshold, counted in pages of a 64-page extent (scaled for larger
    /// extents): when the boundary page of an extent is accessed and at least this many of its
    /// pages were accessed in ascending (descending) order, the whole next (previous) extent is
    /// read in the background. `None` = off. Default = `Some(56)`, range 0..=64 (clamped).
    /// InnoDB: `innodb_read_ahead_threshold`.
    pub linear_threshold: Option<u32>,
    /// Random read-ahead: when at least `5 + area/8` pages of an extent are in the pool and were
    /// recently accessed, the rest of the extent is read. Default = `false`.
    /// InnoDB: `innodb_random_read_ahead`.
    pub random: bool,
}

impl Default for ReadAhead {
    fn default() -> Self {
        Self {
            linear_threshold: Some(56),
            random: false,
        }
    }
}

impl ReadAhead {
    /// Both kinds of read-ahead off.
    pub const OFF: Self = Self {
        linear_threshold: None,
        random: false,
    };
}

/// Configuration of a [`BufferPool`](crate::BufferPool): a by-value builder.
///
/// ```
/// # use std::time::Duration;
/// # use barracuda_buffer_pool::{PoolConfig, FreePagePolicy};
/// # use barracuda_page::PageSize;
/// let config = PoolConfig::new(PageSize::K16)
///     .capacity_bytes(64 << 20)
///     .policy(FreePagePolicy::Eager)
///     .old_blocks_time(Duration::from_millis(1000));
/// assert_eq!(config.capacity_in_pages(), 4096);
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct PoolConfig {
    pub(crate) page_size: PageSize,
    pub(crate) capacity_pages: usize,
    pub(crate) lru_scan_depth: usize,
    pub(crate) old_blocks_pct: u32,
    pub(crate) old_blocks_time: Duration,
    pub(crate) policy: FreePagePolicy,
    pub(crate) read_ahead: ReadAhead,
    pub(crate) page_hash_shards: usize,
    pub(crate) all_pinned_timeout: Duration,
    pub(crate) capture_before_images: bool,
    pub(crate) keep_described_from: bool,
    pub(crate) flush_all_writers: usize,
}

/// Smallest pool accepted, in pages.
pub const MIN_CAPACITY_PAGES: usize = 16;

impl Default for PoolConfig {
    fn default() -> Self {
        Self::new(PageSize::default())
    }
}

impl PoolConfig {
    /// A configuration with the defaults below and `page_size` pages.
    pub fn new(page_size: PageSize) -> Self {
        Self {
            page_size,
            capacity_pages: (128 << 20) / page_size.bytes(),
            lru_scan_depth: 1024,
            old_blocks_pct: 37,
            old_blocks_time: Duration::from_secs(1),
            policy: FreePagePolicy::default(),
            read_ahead: ReadAhead::default(),
            page_hash_shards: 16,
            all_pinned_timeout: Duration::from_secs(2),
            capture_before_images: false,
            keep_described_from: false,
            flush_all_writers: 2,
        }
    }

    /// Threads that write the batches of [`BufferPool::flush_all`](crate::BufferPool::flush_all)
    /// (a sharp checkpoint) at once: the calling thread and `writers - 1` helpers, so that one
    /// prepares a batch (copies, checksums, compression) while another waits for its I/O.
    /// Default = 2; at least 1 (clamped). With 1, the batches are written one after the other in
    /// flush-list order, which makes the file operations of a checkpoint repeatable (fault
    /// injection counting them).
    pub fn flush_all_writers(mut self, writers: usize) -> Self {
        self.flush_all_writers = writers.max(1);
        self
    }

    /// Whether an [`ExclusiveGuard`](crate::ExclusiveGuard) keeps a copy of its page as it was
    /// before the guard's first change ([`ExclusiveGuard::before_image`]), for a redo log that
    /// logs a change as the difference between the two. Costs one page copy per page changed
    /// per mini-transaction. Default = off.
    ///
    /// [`ExclusiveGuard::before_image`]: crate::ExclusiveGuard::before_image
    pub fn capture_before_images(mut self, on: bool) -> Self {
        self.capture_before_images = on;
        self
    }

    /// Whether an [`ExclusiveGuard`](crate::ExclusiveGuard) that captures before-images also
    /// keeps a copy of its page before the first change made through
    /// [`described_change_mut`](crate::ExclusiveGuard::described_change_mut)
    /// ([`described_from`](crate::ExclusiveGuard::described_from)), so that a log can check
    /// that its description of the change reproduces the page. A page copy per such change:
    /// for tests and debug builds. Default = off.
    pub fn keep_described_from(mut self, on: bool) -> Self {
        self.keep_described_from = on;
        self
    }

    /// Page size of every frame. Default = 16 KiB. InnoDB: `innodb_page_size`.
    pub fn page_size(mut self, page_size: PageSize) -> Self {
        self.page_size = page_size;
        self
    }

    /// Pool size in pages. Default = 128 MiB worth of pages; minimum 16 pages (smaller is a
    /// configuration error). InnoDB: `innodb_buffer_pool_size` / page size.
    pub fn capacity_pages(mut self, pages: usize) -> Self {
        self.capacity_pages = pages;
        self
    }

    /// Pool size in bytes, rounded down to whole pages of the page size set *before* this call.
    /// Default = 128 MiB. InnoDB: `innodb_buffer_pool_size`.
    pub fn capacity_bytes(mut self, bytes: usize) -> Self {
        self.capacity_pages = bytes / self.page_size.bytes();
        self
    }

    /// How deep the LRU manager scans the LRU tail per round, which is also how many free pages it
    /// tries to keep. Default = 1024, minimum 100 (smaller values are raised); the pool uses at most
    /// a quarter of its capacity (so tiny test pools still work). InnoDB: `innodb_lru_scan_depth`.
    pub fn lru_scan_depth(mut self, pages: usize) -> Self {
        self.lru_scan_depth = pages;
        self
    }

    /// Share of the LRU list kept as the "old" sublist, where pages read from disk enter.
    /// Default = 37, range 5..=95 (clamped). InnoDB: `innodb_old_blocks_pct`.
    pub fn old_blocks_pct(mut self, pct: u32) -> Self {
        self.old_blocks_pct = pct;
        self
    }

    /// How long after its first access a page in the old sublist must be accessed again to be
    /// made young. Default = 1000 ms; 0 = make young on the next access. InnoDB:
    /// `innodb_old_blocks_time`.
    pub fn old_blocks_time(mut self, time: Duration) -> Self {
        self.old_blocks_time = time;
        self
    }

    /// Free-page policy at start. Default = [`FreePagePolicy::Eager`]. InnoDB (Percona):
    /// `innodb_empty_free_list_algorithm`.
    pub fn policy(mut self, policy: FreePagePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Read-ahead settings at start. Default = linear 56, random off. InnoDB:
    /// `innodb_read_ahead_threshold`, `innodb_random_read_ahead`.
    pub fn read_ahead(mut self, read_ahead: ReadAhead) -> Self {
        self.read_ahead = read_ahead;
        self
    }

    /// Number of independently locked shards of the page hash. Default = 16, range 1..=1024
    /// (clamped). InnoDB: `innodb_page_hash_locks` (5.6) / the page hash latches.
    pub fn page_hash_shards(mut self, shards: usize) -> Self {
        self.page_hash_shards = shards;
        self
    }

    /// How long a request for a free frame may wait while every frame is pinned before it returns
    /// [`PoolError::AllPagesPinned`](crate::PoolError::AllPagesPinned). Default = 2 s. No InnoDB
    /// equivalent (InnoDB waits forever, warning every 20 iterations).
    pub fn all_pinned_timeout(mut self, timeout: Duration) -> Self {
        self.all_pinned_timeout = timeout;
        self
    }

    /// The configured capacity in pages.
    pub fn capacity_in_pages(&self) -> usize {
        self.capacity_pages
    }

    /// The configured page size.
    pub fn configured_page_size(&self) -> PageSize {
        self.page_size
    }
}

/// `innodb_old_blocks_pct` → InnoDB's `old_ratio` (out of 1024), clamped to 5..=95 %.
pub(crate) fn old_ratio_of_pct(pct: u32) -> u32 {
    pct.clamp(5, 95) * 1024 / 100
}

/// The LRU scan depth the pool really uses: at least 100 (InnoDB's minimum), at most a quarter of
/// the pool (at least 4), so that tiny test pools keep most of their pages.
pub(crate) fn effective_scan_depth(configured: usize, capacity: usize) -> usize {
    configured.max(100).min((capacity / 4).max(4))
}
