//! Closing the engine leaves none of its compression workers behind: they start with the
//! first batch that has pages to compress, and `close` (dropping the engine) waits until every
//! one has exited. What would break: a worker pool dropped without waiting (its threads then
//! outlive the engine, and their thread-local codec state is never freed).
//!
//! Alone in its binary: it counts the process's threads by name.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use barracuda::{Engine, EngineOptions, PageCompression, TableOptions};

/// Threads of this process named like a compression worker (`/proc/self/task/*/comm` holds at
/// most 15 bytes of the name).
fn compression_workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("barracuda-compr"))
        .count()
}

#[test]
fn close_waits_for_every_compression_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Engine::open(tmp.path(), EngineOptions::default().flush_threads(3)).unwrap();
    let t = db
        .create_table(
            "t",
            TableOptions::default().page_compression(Some(PageCompression::Lz4)),
        )
        .unwrap();
    assert_eq!(
        compression_workers(),
        0,
        "no worker before a compressed batch"
    );
    let mut tx = db.begin();
    for i in 0..400u32 {
        tx.put(&t, format!("k{i:06}").as_bytes(), &[b'x'; 300])
            .unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.status().page_compression.flush_threads, 3);
    assert!(db.status().page_compression.num_pages_page_compressed > 0);
    assert_eq!(
        compression_workers(),
        3,
        "the workers run once a batch was compressed"
    );
    db.close().unwrap();
    // `close` has joined every worker, but a joined thread can still be listed for a moment:
    // `pthread_join` returns when the exiting thread clears its id, before the kernel releases
    // its task (seen once in CI: one listed right after close). A worker that was not joined
    // keeps running and stays listed, so a bounded wait still fails on it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while compression_workers() > 0 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(compression_workers(), 0, "close left workers behind");
}
