//! The redo log's file layer on a real file (issue 8 §1): durable one-mtr commits per second
//! with 1, 4 and 16 committing threads (`Durability::Sync`, group commit), `append` throughput
//! with `Durability::None`, and the `fdatasync` rate of a preallocated, overwritten file against
//! an appended one (why the log preallocates).
//!
//! `cargo bench -p barracuda-benches --bench redo`. The files live in a temporary directory
//! under `$TMPDIR` (default `/tmp`): put it on the disk to measure. Each Sync group prints its
//! fsyncs per commit on stderr.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark that fails should stop loudly"
)]
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use barracuda_io::{Backend, OsFileSystem};
use barracuda_redo::{Durability, RedoError, RedoLog, RedoOptions};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The mtr every commit appends: about one small row change.
const MTR: [u8; 100] = [0x5a; 100];

fn open_log(dir: &std::path::Path, durability: Durability) -> RedoLog {
    let opts = RedoOptions {
        capacity: 64 << 20,
        durability,
        ..RedoOptions::default()
    };
    RedoLog::create(&OsFileSystem::new(Backend::Std), dir, &opts).unwrap()
}

/// Commits `MTR`, first moving the checkpoint to the end when the log is nearly full (the bench
/// has no pages to flush).
fn commit(log: &RedoLog) {
    if log.free_space() < 1 << 20 {
        log.sync().unwrap();
        // Another thread may have moved it further meanwhile; that one is as good.
        match log.write_checkpoint(log.flushed_lsn()) {
            Ok(()) | Err(RedoError::BadCheckpoint { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    log.commit(&MTR).unwrap();
}

fn sync_commits(c: &mut Criterion) {
    let mut group = c.benchmark_group("redo_sync_commit");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(1));
    for threads in [1usize, 4, 16] {
        let dir = tempfile::tempdir().unwrap();
        let log = open_log(dir.path(), Durability::Sync);
        let before = log.stats();
        group.bench_function(format!("{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads as u64);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| (0..per_thread).for_each(|_| commit(&log)));
                    }
                });
                // Time per commit actually done, reported per iteration asked for.
                start
                    .elapsed()
                    .mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
            });
        });
        let after = log.stats();
        let commits = after.appends - before.appends;
        eprintln!(
            "redo_sync_commit/{threads}_threads: {commits} commits, {} fsyncs, {:.3} fsyncs/commit",
            after.fsyncs - before.fsyncs,
            (after.fsyncs - before.fsyncs) as f64 / commits as f64
        );
    }
    group.finish();
}

fn append_none(c: &mut Criterion) {
    let mut group = c.benchmark_group("redo_append_none");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(MTR.len() as u64));
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path(), Durability::None);
    group.bench_function("100_byte_mtr", |b| b.iter(|| commit(&log)));
    group.finish();
}

/// `pwrite` of 512 bytes then `fdatasync`, into a file preallocated by writing (overwrite) or
/// at its end (append: every sync also commits a size change to the journal).
fn fdatasync_rate(c: &mut Criterion) {
    let mut group = c.benchmark_group("fdatasync_512B");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir().unwrap();
    let block = [0xa5u8; 512];
    let prealloc_len: u64 = 64 << 20;
    let path = dir.path().join("prealloc");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for at in (0..prealloc_len).step_by(zeros.len()) {
        file.write_all_at(&zeros, at).unwrap();
    }
    file.sync_all().unwrap();
    let mut at = 0u64;
    group.bench_function("overwrite_preallocated", |b| {
        b.iter(|| {
            file.write_all_at(&block, at).unwrap();
            file.sync_data().unwrap();
            at = (at + 512) % prealloc_len;
        });
    });
    let path = dir.path().join("append");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut end = 0u64;
    group.bench_function("append", |b| {
        b.iter(|| {
            file.write_all_at(&block, end).unwrap();
            file.sync_data().unwrap();
            end += 512;
        });
    });
    group.finish();
}

criterion_group!(benches, fdatasync_rate, sync_commits, append_none);
criterion_main!(benches);
