//! A page is read once however many threads miss on it at once, hits do not read, and a failed
//! read is an error that leaves the pool usable. What would break: double reads (lost updates
//! between two frames of one page), or a failed read poisoning the frame.
mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{pid, setup, small_config};

#[test]
fn miss_then_hit() {
    let (store, pool) = setup(small_config(64), 100);
    {
        let page = pool.get_shared(pid(3)).unwrap();
        assert_eq!(&page[..], &store.stamp(pid(3))[..]);
        assert_eq!(page.page_id(), pid(3));
    }
    let _again = pool.get_shared(pid(3)).unwrap();
    let stats = pool.stats();
    assert_eq!(stats.page_requests, 2);
    assert_eq!(stats.pages_read, 1);
    assert_eq!(store.reads(), 1);
    assert!((stats.hit_ratio() - 0.5).abs() < 1e-9);
    assert!(stats.to_string().contains("BUFFER POOL AND MEMORY"));
}

#[test]
fn concurrent_misses_read_once() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_read_delay(Duration::from_millis(30));
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let pool = Arc::clone(&pool);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                if i % 2 == 0 {
                    let g = pool.get_shared(pid(7)).unwrap();
                    assert_eq!(common::read_u64(&g, 0), 1 | (7 << 32));
                } else {
                    let g = pool.get_exclusive(pid(7)).unwrap();
                    assert_eq!(common::read_u64(&g, 0), 1 | (7 << 32));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.reads_of(pid(7)), 1);
    assert_eq!(pool.stats().pages_read, 1);
}

#[test]
fn failed_read_is_an_error_and_retry_works() {
    let (store, pool) = setup(small_config(16), 100);
    store.fail_reads_of(pid(5), true);
    let err = pool.get_shared(pid(5)).unwrap_err();
    assert!(
        matches!(err, barracuda_buffer_pool::PoolError::Store(ref e) if e.page_id() == Some(pid(5)))
    );
    // Outside the space: also an error.
    assert!(pool.get_shared(pid(1000)).is_err());
    store.fail_reads_of(pid(5), false);
    let g = pool.get_shared(pid(5)).unwrap();
    assert_eq!(&g[..], &store.stamp(pid(5))[..]);
    drop(g);
    // The stale frames are reclaimed: the pool still holds a full working set.
    for p in 0..40 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
}

#[test]
fn create_does_not_read() {
    let (store, pool) = setup(small_config(16), 100);
    {
        let mut g = pool.create(pid(50)).unwrap();
        assert!(g.iter().all(|&b| b == 0));
        g[0] = 9;
        g.mark_dirty(1);
    }
    assert_eq!(store.reads(), 0);
    assert_eq!(pool.stats().pages_created, 1);
    assert_eq!(pool.get_shared(pid(50)).unwrap()[0], 9);
    let g = pool.get_exclusive(pid(50)).unwrap();
    let shared = g.downgrade();
    assert_eq!(shared[0], 9);
}
