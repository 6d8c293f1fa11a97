//! The prefault thread backs the frames the free list hands out next, as far ahead as the pool
//! has used so far (4 MiB at least, 64 MiB at most), and changes no byte of a frame in use
//! while it does. What would break: pages read into frames the thread is populating coming
//! back altered, or a pool that uses a few frames being backed whole.
mod common;

use barracuda_buffer_pool::{PoolConfig, ReadAhead};
use barracuda_page::PageSize;
use common::{pid, setup, wait_for};

/// Whether this kernel has `MADV_POPULATE_WRITE` (Linux 5.14); without it the thread stops at
/// once and frames are backed on first touch.
fn kernel_populates() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = release.trim().split(['.', '-']);
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (5, 14)
}

#[test]
fn frames_ahead_of_use_are_backed_and_pages_in_use_are_untouched() {
    const PAGE: usize = 16 << 10;
    const FRAMES: usize = 8192; // 128 MiB
    const READ: u32 = 2000; // 31.25 MiB: the lead becomes as much again
    let config = PoolConfig::new(PageSize::K16)
        .capacity_pages(FRAMES)
        .read_ahead(ReadAhead::OFF);
    let (store, pool) = setup(config, READ);
    assert_eq!(
        pool.stats().frames_prefaulted,
        0,
        "nothing before the first use"
    );

    // Every read takes the next never-used frame while the thread populates those after it.
    for n in 0..READ {
        let page = pool.get_shared(pid(n)).unwrap();
        assert_eq!(&page[..], &store.stamp(pid(n))[..], "page {n} as read");
    }
    for n in 0..READ {
        let page = pool.get_shared(pid(n)).unwrap();
        assert_eq!(&page[..], &store.stamp(pid(n))[..], "page {n} read again");
    }
    assert_eq!(
        pool.stats().pages_read,
        u64::from(READ),
        "every page stayed cached"
    );
    if !kernel_populates() {
        return;
    }
    // With the frontier at frame 2000, the frames up to 4000 are the lead.
    let lead = READ as usize;
    let stats = wait_for(&pool, "the lead to be backed", |s| {
        s.frames_prefaulted >= lead as u64
    });
    let bound = 2 * READ as usize;
    assert!(
        stats.frames_prefaulted <= bound as u64,
        "backed {} frames ahead, more than the {bound} up to the lead's end",
        stats.frames_prefaulted
    );
    assert!(bound * PAGE < FRAMES * PAGE, "the pool is not backed whole");
}

#[test]
fn a_pool_that_uses_one_frame_is_backed_only_the_minimum_lead_ahead() {
    let config = PoolConfig::new(PageSize::K16)
        .capacity_pages(65_536) // 1 GiB
        .read_ahead(ReadAhead::OFF);
    let (_store, pool) = setup(config, 4);
    drop(pool.get_shared(pid(0)).unwrap());
    if !kernel_populates() {
        return;
    }
    let min_lead = (4 << 20) / (16 << 10);
    let stats = wait_for(&pool, "the minimum lead to be backed", |s| {
        s.frames_prefaulted >= min_lead
    });
    assert_eq!(
        stats.frames_prefaulted, min_lead,
        "one frame used: 4 MiB backed ahead, no more"
    );
}
