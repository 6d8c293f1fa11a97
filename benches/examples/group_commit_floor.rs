//! The machine's own ceiling for group commit, with no storage engine in the loop: `THREADS`
//! threads each append a 200-byte "commit" to one shared buffer and wait until it is synced;
//! whoever finds nobody writing becomes the leader, takes the whole buffer, `pwrite`s it into a
//! preallocated log file (circularly, as a redo log is) and `fdatasync`s it, then wakes every
//! committer that sync covered. That is the least work any write-ahead log with group commit
//! does per commit (InnoDB's `log_write_up_to`, RocksDB's write group), so the ratio of its
//! 16-thread rate to its 1-thread rate bounds what an engine can reach on this machine's cores
//! and disk (issue 8's "16 threads ≥ 10 × one thread"; EXPERIMENTS §4).
//!
//! Each thread count runs twice: `plain` as above, and `gathering`, where a leader first holds
//! the write until every other thread has appended (or half the last sync's time has passed),
//! so that committers the last sync released are not left for the sync after next — the
//! idea of Barracuda's own leader (redo `log.rs`) and MySQL's
//! `binlog_group_commit_sync_no_delay_count`, here with the thread count known in advance.
//!
//! `cargo run --release -p barracuda-benches --example group_commit_floor [SECONDS] [THREADS…]`
//! (default 5 s, threads 1 4 16). Writes a 64 MiB file in a temporary directory
//! (`GROUP_COMMIT_DIR` to choose the directory: it must be on the disk under test).

#![allow(
    clippy::unwrap_used,
    reason = "a measurement that fails should stop loudly"
)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of one commit's log record (a one-row transaction's redo is about this).
const RECORD: usize = 200;
/// The log file's size, written whole before the run so that syncs never allocate blocks.
const FILE_BYTES: u64 = 64 << 20;

/// What the committers share under the mutex.
struct State {
    /// Bytes appended and not yet taken by a leader.
    buf: Vec<u8>,
    /// The log position of `buf`'s first byte.
    buf_start: u64,
    /// Everything below this is synced.
    flushed: u64,
    /// A leader is writing and syncing (or gathering).
    writing: bool,
    /// How long the last `fdatasync` took.
    last_sync: Duration,
}

struct Log {
    file: File,
    state: Mutex<State>,
    synced: Condvar,
    /// Wakes a gathering leader when a record is appended.
    appended: Condvar,
    fsyncs: AtomicU64,
    /// Gather (see `commit`).
    gather: bool,
    threads: usize,
}

impl Log {
    /// Appends one record and returns once a sync covers it.
    fn commit(&self, record: &[u8]) {
        let mut st = self.state.lock().unwrap();
        st.buf.extend_from_slice(record);
        if self.gather && st.writing {
            self.appended.notify_all();
        }
        let mine = st.buf_start + st.buf.len() as u64;
        loop {
            if st.flushed >= mine {
                return;
            }
            if st.writing {
                st = self.synced.wait(st).unwrap();
                continue;
            }
            // Lead. With gathering on, first hold the write stage until every other committer
            // has appended (the best a group can be), for at most half the last sync's time.
            st.writing = true;
            if self.gather && self.threads > 1 {
                let deadline = Instant::now() + st.last_sync / 2;
                while st.buf.len() < self.threads * RECORD {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    st = self.appended.wait_timeout(st, left).unwrap().0;
                }
            }
            let data = std::mem::take(&mut st.buf);
            let start = st.buf_start;
            let end = start + data.len() as u64;
            st.buf_start = end;
            drop(st);
            self.write_circular(start, &data);
            let began = Instant::now();
            self.file.sync_data().unwrap();
            let took = began.elapsed();
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            st = self.state.lock().unwrap();
            st.last_sync = took;
            st.flushed = end;
            st.writing = false;
            self.synced.notify_all();
        }
    }

    fn write_circular(&self, start: u64, data: &[u8]) {
        let at = start % FILE_BYTES;
        let first = data.len().min((FILE_BYTES - at) as usize);
        self.file.write_all_at(&data[..first], at).unwrap();
        if first < data.len() {
            self.file.write_all_at(&data[first..], 0).unwrap();
        }
    }
}

/// Runs `threads` committers for `seconds`; returns (commits/s, commits per fsync).
fn run(path: &PathBuf, threads: usize, seconds: f64, gather: bool) -> (f64, f64) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let log = Arc::new(Log {
        file,
        state: Mutex::new(State {
            buf: Vec::new(),
            buf_start: 0,
            flushed: 0,
            writing: false,
            last_sync: Duration::ZERO,
        }),
        synced: Condvar::new(),
        appended: Condvar::new(),
        fsyncs: AtomicU64::new(0),
        gather,
        threads,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (log, stop, commits, barrier) =
                (log.clone(), stop.clone(), commits.clone(), barrier.clone());
            std::thread::spawn(move || {
                let record = [t as u8; RECORD];
                barrier.wait();
                let mut n = 0_u64;
                while !stop.load(Ordering::Relaxed) {
                    log.commit(&record);
                    n += 1;
                }
                commits.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let commits = commits.load(Ordering::Relaxed) as f64;
    let fsyncs = log.fsyncs.load(Ordering::Relaxed).max(1) as f64;
    (commits / elapsed, commits / fsyncs)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(5.0, |s| s.parse().unwrap());
    let mut threads: Vec<usize> = args.map(|s| s.parse().unwrap()).collect();
    if threads.is_empty() {
        threads = vec![1, 4, 16];
    }
    let dir = std::env::var_os("GROUP_COMMIT_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let path = dir.join(format!("group-commit-floor-{}", std::process::id()));
    {
        let file = File::create(&path).unwrap();
        let chunk = vec![0u8; 1 << 20];
        for i in 0..FILE_BYTES / chunk.len() as u64 {
            file.write_all_at(&chunk, i * chunk.len() as u64).unwrap();
        }
        file.sync_all().unwrap();
    }
    let mut base = None;
    for gather in [false, true] {
        for &t in &threads {
            let (rate, per_sync) = run(&path, t, seconds, gather);
            let base = *base.get_or_insert(rate);
            println!(
                "{:<11} {t:>3} thread(s): {rate:>9.0} commits/s, {per_sync:>5.2} commits per \
                 fdatasync, {:.2} x the first",
                if gather { "gathering" } else { "plain" },
                rate / base
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}
