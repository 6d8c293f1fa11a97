//! Counters (named as InnoDB names them) and the [`PoolStats`] snapshot.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use barracuda_page::PageSize;
use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::FreePagePolicy;

/// Live counters, bumped with relaxed atomics.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) page_requests: AtomicU64,
    pub(crate) pages_read: AtomicU64,
    pub(crate) pages_created: AtomicU64,
    pub(crate) pages_written_lru: AtomicU64,
    pub(crate) pages_written_flush_list: AtomicU64,
    pub(crate) pages_written_single_page: AtomicU64,
    pub(crate) pages_written_write_behind: AtomicU64,
    pub(crate) write_behind_hints: AtomicU64,
    pub(crate) write_behind_dropped: AtomicU64,
    pub(crate) single_page_flush_failures: AtomicU64,
    pub(crate) wait_free: AtomicU64,
    pub(crate) free_list_empty: AtomicU64,
    pub(crate) lru_get_free_waits: AtomicU64,
    pub(crate) lru_scans: AtomicU64,
    pub(crate) lru_pages_scanned: AtomicU64,
    pub(crate) pages_made_young: AtomicU64,
    pub(crate) pages_not_made_young: AtomicU64,
    pub(crate) lru_ops_deferred: AtomicU64,
    pub(crate) evicted_by_user: AtomicU64,
    pub(crate) evicted_by_manager: AtomicU64,
    pub(crate) read_ahead_linear: AtomicU64,
    pub(crate) read_ahead_random: AtomicU64,
    pub(crate) read_ahead_evicted: AtomicU64,
    pub(crate) manager_rounds: AtomicU64,
    pub(crate) frames_dropped_keeping_block: AtomicU64,
    pub(crate) zip_only_freed: AtomicU64,
    pub(crate) zip_only_hits: AtomicU64,
}

/// Bumps a counter by one.
pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// Bumps a counter by `n`.
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Relaxed)
}

/// Histogram of free-page wait times in µs (1 µs .. 1 h, 3 significant digits).
pub(crate) struct WaitHistogram {
    hist: Mutex<Histogram<u64>>,
}

impl WaitHistogram {
    pub(crate) fn new() -> Self {
        let hist = match Histogram::new_with_bounds(1, 3_600_000_000, 3) {
            Ok(h) => h,
            Err(e) => unreachable!("constant histogram bounds are valid: {e:?}"),
        };
        Self {
            hist: Mutex::new(hist),
        }
    }

    pub(crate) fn record(&self, waited: Duration) {
        let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX).max(1);
        self.hist.lock().saturating_record(us);
    }

    fn snapshot(&self) -> WaitSummary {
        let h = self.hist.lock();
        WaitSummary {
            count: h.len(),
            max_us: h.max(),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            mean_us: h.mean(),
        }
    }
}

/// Summary of the free-page wait histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct WaitSummary {
    /// Number of requests that found the free list empty and waited (any policy).
    pub count: u64,
    /// Longest wait, µs.
    pub max_us: u64,
    /// 99th percentile wait, µs.
    pub p99_us: u64,
    /// 99.9th percentile wait, µs.
    pub p999_us: u64,
    /// Mean wait, µs.
    pub mean_us: f64,
}

/// A snapshot of the pool's state and counters ([`BufferPool::stats`](crate::BufferPool::stats)).
///
/// `Display` prints it like the BUFFER POOL AND MEMORY section of `SHOW ENGINE INNODB STATUS`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PoolStats {
    /// Page size of the pool.
    pub page_size: PageSize,
    /// Pool size in pages (InnoDB: "Buffer pool size").
    pub capacity_pages: usize,
    /// Free-page policy in force.
    pub policy: FreePagePolicy,
    /// LRU scan depth in use: the configured depth clamped to at least 100 and at most a quarter
    /// of the pool (InnoDB: `innodb_lru_scan_depth`).
    pub lru_scan_depth: usize,
    /// Share of the LRU kept as the old sublist, percent (InnoDB: `innodb_old_blocks_pct`).
    pub old_blocks_pct: u32,
    /// How long after its first access an old page must be touched again to be made young, at
    /// the pool's millisecond resolution (InnoDB: `innodb_old_blocks_time`).
    pub old_blocks_time: Duration,
    /// Linear read-ahead threshold in pages of an extent, `None` = off
    /// (InnoDB: `innodb_read_ahead_threshold`).
    pub read_ahead_threshold: Option<u32>,
    /// Whether random read-ahead is on (InnoDB: `innodb_random_read_ahead`).
    pub random_read_ahead: bool,
    /// Frames on the free list (InnoDB: "Free buffers", `Innodb_buffer_pool_pages_free`).
    pub free_pages: usize,
    /// Pages in the LRU list (InnoDB: "Database pages" / "LRU len").
    pub lru_len: usize,
    /// Pages in the old sublist (InnoDB: "Old database pages").
    pub old_lru_len: usize,
    /// Dirty pages (InnoDB: "Modified db pages", `Innodb_buffer_pool_pages_dirty`).
    pub dirty_pages: usize,
    /// Read-ahead reads queued or running (InnoDB: "Pending reads").
    pub pending_read_ahead: usize,
    /// Page requests (InnoDB: `Innodb_buffer_pool_read_requests`).
    pub page_requests: u64,
    /// Pages read from the store on a miss (InnoDB: `Innodb_buffer_pool_reads`, "Pages read").
    pub pages_read: u64,
    /// Pages created without a read (InnoDB: `Innodb_pages_created`).
    pub pages_created: u64,
    /// Pages written by LRU batches of the LRU manager (InnoDB: `buffer_flush_batch_total_pages`
    /// of LRU type, `Innodb_buffer_pool_pages_LRU_flushed`).
    pub pages_written_lru: u64,
    /// Pages written by flush-list batches (page cleaner, checkpoints, `flush_all`).
    pub pages_written_flush_list: u64,
    /// Pages written by single-page flushes in user threads (InnoDB:
    /// `buffer_LRU_single_flush_num_scan` family / `Innodb_buffer_pool_pages_flushed` share).
    pub pages_written_single_page: u64,
    /// Pages written by write-behind batches ([`BufferPool::write_behind`](crate::BufferPool::write_behind)).
    pub pages_written_write_behind: u64,
    /// Pages queued for write-behind by their writers' hints.
    pub write_behind_hints: u64,
    /// Hints dropped because the write-behind queue was full (those pages wait for a checkpoint).
    pub write_behind_dropped: u64,
    /// Pages in the write-behind queue now.
    pub write_behind_queued: u64,
    /// Single-page flush attempts that found nothing to flush (InnoDB:
    /// `buffer_LRU_single_flush_failure_count`).
    pub single_page_flush_failures: u64,
    /// InnoDB `Innodb_buffer_pool_wait_free`: Legacy counts every get-free loop that ended in a
    /// single-page flush attempt; Backoff and Eager count each request that found the free list
    /// empty. Each increment may be a stall.
    pub wait_free: u64,
    /// Requests that found the free list empty (any policy).
    pub free_list_empty: u64,
    /// Sleeps in the get-free loop (InnoDB: `buffer_LRU_get_free_waits`).
    pub lru_get_free_waits: u64,
    /// Free-page wait times (µs) of requests that found the free list empty.
    pub free_wait: WaitSummary,
    /// LRU scans for a victim (InnoDB: `buffer_LRU_search_scanned` calls).
    pub lru_scans: u64,
    /// Pages looked at by those scans (InnoDB: `buffer_LRU_search_num_scan` pages).
    pub lru_pages_scanned: u64,
    /// Pages made young (InnoDB: `Innodb_buffer_pool_pages_made_young`).
    pub pages_made_young: u64,
    /// Accesses to old pages that did not make them young (InnoDB:
    /// `Innodb_buffer_pool_pages_made_not_young`).
    pub pages_not_made_young: u64,
    /// LRU changes (a page read in joining it, a page made young) that found the LRU mutex
    /// busy and were left for its next holder to apply rather than waited for.
    pub lru_ops_deferred: u64,
    /// Pages evicted by user threads (Legacy, Eager).
    pub evicted_by_user: u64,
    /// Pages evicted by the LRU manager.
    pub evicted_by_manager: u64,
    /// Pages read by linear read-ahead (InnoDB: `Innodb_buffer_pool_read_ahead`).
    pub read_ahead_linear: u64,
    /// Pages read by random read-ahead (InnoDB: `Innodb_buffer_pool_read_ahead_rnd`).
    pub read_ahead_random: u64,
    /// Read-ahead pages evicted without being accessed (InnoDB:
    /// `Innodb_buffer_pool_read_ahead_evicted`).
    pub read_ahead_evicted: u64,
    /// Rounds of the LRU manager thread.
    pub manager_rounds: u64,
    /// Frames whose memory the prefault thread had the kernel back before their first use
    /// (0 where the kernel lacks `MADV_POPULATE_WRITE`).
    pub frames_prefaulted: u64,
    /// Frames lent to the compressed blocks of row-compressed pages (InnoDB: the
    /// `BUF_BLOCK_MEMORY` frames of the buddy allocator): frames the LRU does not have.
    pub zip_frames: usize,
    /// Pages held with a compressed block beside their frame (InnoDB's unzip LRU length).
    pub zip_pages: usize,
    /// Compressed-only pages: blocks kept after their page's frame was dropped.
    pub zip_only_pages: usize,
    /// Frames dropped while their page's block stayed (InnoDB: evictions from the unzip LRU).
    pub frames_dropped_keeping_block: u64,
    /// Compressed-only pages freed to make room.
    pub zip_only_freed: u64,
    /// Reads served by decompressing a compressed-only page: a miss with no I/O.
    pub zip_only_hits: u64,
    /// The compressed blocks, per block size from 1 KiB (INFORMATION_SCHEMA.INNODB_CMPMEM's
    /// `pages_used` and `pages_free`); a block of a whole page is a frame and not listed.
    pub zip_blocks: Vec<crate::buddy::BuddyClassStats>,
}

impl PoolStats {
    /// Total pages written, by every path (InnoDB: `Innodb_buffer_pool_pages_flushed`).
    pub fn pages_written(&self) -> u64 {
        self.pages_written_lru
            + self.pages_written_flush_list
            + self.pages_written_single_page
            + self.pages_written_write_behind
    }

    /// Total evictions.
    pub fn evictions(&self) -> u64 {
        self.evicted_by_user + self.evicted_by_manager
    }

    /// Requests served without a store read, out of all requests: 1.0 for an empty history.
    pub fn hit_ratio(&self) -> f64 {
        if self.page_requests == 0 {
            return 1.0;
        }
        1.0 - (self.pages_read.min(self.page_requests) as f64 / self.page_requests as f64)
    }

    pub(crate) fn from_counters(c: &Counters, hist: &WaitHistogram) -> Self {
        Self {
            page_size: PageSize::default(),
            capacity_pages: 0,
            policy: FreePagePolicy::default(),
            lru_scan_depth: 0,
            old_blocks_pct: 0,
            old_blocks_time: Duration::ZERO,
            read_ahead_threshold: None,
            random_read_ahead: false,
            free_pages: 0,
            lru_len: 0,
            old_lru_len: 0,
            dirty_pages: 0,
            pending_read_ahead: 0,
            page_requests: get(&c.page_requests),
            pages_read: get(&c.pages_read),
            pages_created: get(&c.pages_created),
            pages_written_lru: get(&c.pages_written_lru),
            pages_written_flush_list: get(&c.pages_written_flush_list),
            pages_written_single_page: get(&c.pages_written_single_page),
            pages_written_write_behind: get(&c.pages_written_write_behind),
            write_behind_hints: get(&c.write_behind_hints),
            write_behind_dropped: get(&c.write_behind_dropped),
            write_behind_queued: 0,
            single_page_flush_failures: get(&c.single_page_flush_failures),
            wait_free: get(&c.wait_free),
            free_list_empty: get(&c.free_list_empty),
            lru_get_free_waits: get(&c.lru_get_free_waits),
            free_wait: hist.snapshot(),
            lru_scans: get(&c.lru_scans),
            lru_pages_scanned: get(&c.lru_pages_scanned),
            pages_made_young: get(&c.pages_made_young),
            pages_not_made_young: get(&c.pages_not_made_young),
            lru_ops_deferred: get(&c.lru_ops_deferred),
            evicted_by_user: get(&c.evicted_by_user),
            evicted_by_manager: get(&c.evicted_by_manager),
            read_ahead_linear: get(&c.read_ahead_linear),
            read_ahead_random: get(&c.read_ahead_random),
            read_ahead_evicted: get(&c.read_ahead_evicted),
            manager_rounds: get(&c.manager_rounds),
            frames_prefaulted: 0,
            zip_frames: 0,
            zip_pages: 0,
            zip_only_pages: 0,
            frames_dropped_keeping_block: get(&c.frames_dropped_keeping_block),
            zip_only_freed: get(&c.zip_only_freed),
            zip_only_hits: get(&c.zip_only_hits),
            zip_blocks: Vec::new(),
        }
    }
}

impl fmt::Display for PoolStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hits = self.page_requests.saturating_sub(self.pages_read);
        writeln!(f, "----------------------")?;
        writeln!(f, "BUFFER POOL AND MEMORY")?;
        writeln!(f, "----------------------")?;
        writeln!(
            f,
            "Total large memory allocated {}",
            self.capacity_pages * self.page_size.bytes()
        )?;
        writeln!(f, "Buffer pool size   {}", self.capacity_pages)?;
        writeln!(f, "Free buffers       {}", self.free_pages)?;
        writeln!(f, "Database pages     {}", self.lru_len)?;
        writeln!(f, "Old database pages {}", self.old_lru_len)?;
        writeln!(f, "Modified db pages  {}", self.dirty_pages)?;
        writeln!(f, "Pending reads      {}", self.pending_read_ahead)?;
        writeln!(
            f,
            "Pages written: LRU {}, flush list {}, single page {}, write-behind {}",
            self.pages_written_lru,
            self.pages_written_flush_list,
            self.pages_written_single_page,
            self.pages_written_write_behind
        )?;
        writeln!(
            f,
            "Write-behind: hints {}, dropped {}, queued {}",
            self.write_behind_hints, self.write_behind_dropped, self.write_behind_queued
        )?;
        writeln!(
            f,
            "Pages made young {}, not young {}; LRU changes deferred while it was busy {}",
            self.pages_made_young, self.pages_not_made_young, self.lru_ops_deferred
        )?;
        writeln!(
            f,
            "Pages read {}, created {}, written {}",
            self.pages_read,
            self.pages_created,
            self.pages_written()
        )?;
        match hits.saturating_mul(1000).checked_div(self.page_requests) {
            None => writeln!(f, "No buffer pool page gets since the pool was created")?,
            Some(rate) => writeln!(f, "Buffer pool hit rate {rate} / 1000")?,
        }
        writeln!(
            f,
            "Pages read ahead {}, evicted without access {}, Random read ahead {}",
            self.read_ahead_linear, self.read_ahead_evicted, self.read_ahead_random
        )?;
        writeln!(f, "LRU len: {}, unzip_LRU len: 0", self.lru_len)?;
        writeln!(f, "Frames backed ahead of use {}", self.frames_prefaulted)?;
        writeln!(
            f,
            "LRU scans {}, pages scanned {}, evicted by user threads {}, by LRU manager {}",
            self.lru_scans, self.lru_pages_scanned, self.evicted_by_user, self.evicted_by_manager
        )?;
        writeln!(
            f,
            "Free page policy {}: wait_free {}, free list empty {}, get_free sleeps {}, single page flush failures {}",
            self.policy,
            self.wait_free,
            self.free_list_empty,
            self.lru_get_free_waits,
            self.single_page_flush_failures
        )?;
        writeln!(
            f,
            "Free page wait (us): count {}, mean {:.1}, p99 {}, p99.9 {}, max {}",
            self.free_wait.count,
            self.free_wait.mean_us,
            self.free_wait.p99_us,
            self.free_wait.p999_us,
            self.free_wait.max_us
        )?;
        let threshold = self
            .read_ahead_threshold
            .map_or_else(|| "off".to_owned(), |t| t.to_string());
        writeln!(
            f,
            "Settings: lru_scan_depth {}, old_blocks_pct {}, old_blocks_time {} ms, \
             read_ahead_threshold {threshold}, random_read_ahead {}",
            self.lru_scan_depth,
            self.old_blocks_pct,
            self.old_blocks_time.as_millis(),
            if self.random_read_ahead { "on" } else { "off" }
        )
    }
}
