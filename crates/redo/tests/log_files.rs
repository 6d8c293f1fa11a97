//! The redo log's file layer through the fault-injecting file system: round trips across
//! wrap-around, crashes that drop or tear unsynced writes, torn checkpoint slots, a full log,
//! sticky I/O errors, group commit, and hostile bytes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use barracuda_io::faulty::ErrorKind;
use barracuda_io::{CrashMode, FaultyFileSystem, FileSystem, OpKind, OpenOptions};
use barracuda_redo::{
    log_path, Durability, Lsn, RecoveredMtr, Recovery, RedoError, RedoLog, RedoOptions,
};
use proptest::prelude::*;

const DIR: &str = "/db";

fn small() -> RedoOptions {
    RedoOptions {
        capacity: 16 << 10,
        buffer_bytes: 4096,
        start_lsn: 8192,
        durability: Durability::Sync,
    }
}

/// A deterministic mtr of `len` bytes distinct per `tag`.
fn mtr(tag: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (tag.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

fn scan(fs: &dyn FileSystem) -> (Recovery, Vec<RecoveredMtr>) {
    let mut rec = Recovery::open(fs, Path::new(DIR)).unwrap();
    let found: Vec<_> = rec.by_ref().map(Result::unwrap).collect();
    (rec, found)
}

/// Appends mtrs totalling five capacities, checkpointing so the log never fills, and checks the
/// scan after a clean close returns exactly the mtrs since the last checkpoint.
#[test]
fn round_trip_across_several_wraps() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let mut since_checkpoint: Vec<(Lsn, Vec<u8>)> = Vec::new();
    let mut tag = 0u64;
    while log.current_lsn() < 8192 + 5 * log.capacity() {
        let m = mtr(tag, 1 + (tag as usize * 37) % 1500);
        tag += 1;
        let (start, _) = log.commit(&m).unwrap();
        since_checkpoint.push((start, m));
        // With no other thread appending, the lock-free estimate is exact, across checkpoints
        // and wraps.
        assert_eq!(log.checkpoint_age_estimate(), log.checkpoint_age());
        if log.checkpoint_age() > log.capacity() / 2 {
            let keep = since_checkpoint.len() - 3;
            let cut = since_checkpoint[keep].0;
            log.write_checkpoint(cut).unwrap();
            since_checkpoint.drain(..keep);
        }
    }
    let end = log.current_lsn();
    log.close().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(rec.scanned_lsn(), end);
    let found: Vec<_> = found
        .into_iter()
        .map(|m| (m.start_lsn, m.payload))
        .collect();
    assert_eq!(found, since_checkpoint);
}

/// Frames of one size that divides the capacity: every frame boundary of this lap is also one
/// of the previous lap, so only the LSN in the CRC tells the old frames after the end from new.
#[test]
fn stale_frames_of_the_previous_lap_end_the_scan() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let frame = 1024;
    for i in 0..24 {
        if log.free_space() < frame {
            log.write_checkpoint(log.current_lsn() - 4 * frame).unwrap();
        }
        log.commit(&mtr(i, frame as usize - 8)).unwrap();
    }
    let end = log.current_lsn();
    log.write_checkpoint(end - 2 * frame).unwrap();
    drop(log);
    let (rec, found) = scan(&fs);
    assert_eq!(rec.scanned_lsn(), end, "the scan ran into the previous lap");
    assert_eq!(found.len(), 2);
}

/// A crashed session's frame that outlived its torn predecessor must not chain on to the frames
/// of the next session once they fill the gap (recovery erases past the end it found).
#[test]
fn frames_past_a_torn_one_are_not_revived_by_later_appends() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let (a, _) = log.commit(&mtr(1, 100)).unwrap();
    let (b, _) = log.commit(&mtr(2, 100)).unwrap();
    let (c, c_end) = log.commit(&mtr(3, 100)).unwrap();
    drop(log);
    // B torn (one payload byte changed), C intact behind it.
    let file = fs
        .open(&log_path(Path::new(DIR)), &OpenOptions::new())
        .unwrap();
    file.write_at(&[0xEE], 3 * 4096 + b % (16 << 10) + 10)
        .unwrap();
    file.sync_data().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(found.iter().map(|m| m.start_lsn).collect::<Vec<_>>(), [a]);
    let log = rec.finish(Durability::Sync).unwrap();
    let (b2, b2_end) = log.commit(&mtr(20, 100)).unwrap();
    assert_eq!((b2, b2_end), (b, c));
    drop(log);
    fs.crash().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(rec.scanned_lsn(), c, "C (ending at {c_end}) was revived");
    assert_eq!(found.len(), 2);
}

/// A commit unit is recovered whole or not at all: the frames of a unit whose last frame never
/// reached the log are not log. The next session appends after them (pages may carry their
/// LSNs), behind a checkpoint so that they can never be chained with its first frames.
#[test]
fn an_incomplete_commit_unit_is_discarded_whole() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let mut unit_a = Vec::new();
    for (i, continues) in [(1, true), (2, true), (3, false)] {
        unit_a.push(log.append_to_unit(&mtr(i, 200), continues).unwrap().0);
    }
    let (b_start, _) = log.append_to_unit(&mtr(4, 200), true).unwrap();
    log.append_to_unit(&mtr(5, 200), true).unwrap();
    let scan_end = log.current_lsn();
    log.sync().unwrap();
    drop(log);
    let (rec, found) = scan(&fs);
    assert_eq!(
        found.iter().map(|m| m.start_lsn).collect::<Vec<_>>(),
        unit_a
    );
    assert_eq!(rec.end_lsn(), b_start);
    assert_eq!(rec.discarded_bytes(), scan_end - b_start);
    assert_eq!(rec.resume_lsn(), scan_end);
    let log = rec.finish(Durability::Sync).unwrap();
    assert_eq!(log.checkpoint_lsn(), scan_end);
    let (c, _) = log.commit(&mtr(6, 50)).unwrap();
    assert_eq!(
        c, scan_end,
        "the next session appends past the discarded frames, never reusing their LSNs"
    );
    drop(log);
    fs.crash().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(
        found.iter().map(|m| m.start_lsn).collect::<Vec<_>>(),
        [c],
        "the discarded frames were chained with the new session's first frame"
    );
    assert_eq!(
        rec.discarded_bytes(),
        0,
        "a frame of the discarded unit was revived"
    );
}

/// `end_unit` closes a unit by clearing the flag of its last frame while that frame is still
/// in the log buffer (no bytes added), and by appending the end frame once a writer took it;
/// recovery finds both units complete.
#[test]
fn end_unit_clears_the_flag_in_the_buffer_or_appends_an_end_frame() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let end_frame = mtr(9, 10);
    // Still buffered: closed in place.
    let a1 = log.append_to_unit(&mtr(1, 200), true).unwrap();
    let a2 = log.append_to_unit(&mtr(2, 200), true).unwrap();
    let end_a = log.end_unit(a2, &end_frame).unwrap();
    assert_eq!(end_a, a2.1, "the unit's last frame ends it");
    assert_eq!(log.current_lsn(), a2.1, "closing in place added bytes");
    // Written out by a sync before the unit ends: an end frame is appended.
    let b1 = log.append_to_unit(&mtr(3, 200), true).unwrap();
    log.sync().unwrap();
    let end_b = log.end_unit(b1, &end_frame).unwrap();
    assert_eq!(
        end_b,
        b1.1 + end_frame.len() as u64 + 8,
        "a frame already written was changed in place"
    );
    // A range that is not the newest frame is not touched either.
    let c1 = log.append_to_unit(&mtr(4, 200), true).unwrap();
    let c2 = log.append_to_unit(&mtr(5, 200), true).unwrap();
    let end_c = log.end_unit(c1, &end_frame).unwrap();
    assert!(end_c > c2.1);
    log.sync().unwrap();
    drop(log);
    fs.crash().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(
        found.iter().map(|m| m.start_lsn).collect::<Vec<_>>(),
        vec![a1.0, a2.0, b1.0, b1.1, c1.0, c2.0, c2.1]
    );
    assert_eq!(rec.end_lsn(), end_c);
    assert_eq!(rec.discarded_bytes(), 0);
}

#[test]
fn a_torn_checkpoint_slot_falls_back_to_the_other() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let (first, _) = log.commit(&mtr(1, 100)).unwrap();
    let (second, _) = log.commit(&mtr(2, 100)).unwrap();
    log.write_checkpoint(first).unwrap(); // seq 1: slot 1
    log.write_checkpoint(second).unwrap(); // seq 2: slot 0
    drop(log);
    // Tear the newest slot (slot 0, at 4096): its second half keeps zeros.
    let file = fs
        .open(&log_path(Path::new(DIR)), &OpenOptions::new())
        .unwrap();
    file.write_at(&[0u8; 20], 4096 + 20).unwrap();
    file.sync_data().unwrap();
    let (rec, found) = scan(&fs);
    assert_eq!(rec.checkpoint_lsn(), first);
    assert_eq!(found.len(), 2);
    // Both slots torn: a typed error naming the file, not a panic.
    file.write_at(&[0u8; 20], 8192 + 20).unwrap();
    let err = Recovery::open(&fs, Path::new(DIR)).unwrap_err();
    assert!(matches!(err, RedoError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("ib_redo0"), "{err}");
}

#[test]
fn a_full_log_is_refused_not_overwritten() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let mut appended = Vec::new();
    let err = loop {
        let m = mtr(appended.len() as u64, 1000);
        match log.append(&m) {
            Ok((start, _)) => appended.push((start, m)),
            Err(e) => break e,
        }
    };
    let RedoError::LogFull { needed, free, .. } = err else {
        panic!("expected LogFull, got {err}");
    };
    assert!(needed > free);
    assert_eq!(log.free_space(), free);
    log.sync().unwrap();
    drop(log);
    let (rec, found) = scan(&fs);
    let found: Vec<_> = found
        .into_iter()
        .map(|m| (m.start_lsn, m.payload))
        .collect();
    assert_eq!(found, appended, "a refused append must not damage the log");
    // After a checkpoint the space behind it is reused.
    let log = rec.finish(Durability::Sync).unwrap();
    log.write_checkpoint(appended[3].0).unwrap();
    log.commit(&mtr(99, 1000)).unwrap();
}

#[test]
fn a_checkpoint_must_be_at_an_mtr_start_at_or_below_the_flushed_lsn() {
    let fs = FaultyFileSystem::new();
    let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
    let (start, end) = log.commit(&mtr(1, 300)).unwrap();
    let unsynced = log.append(&mtr(2, 300)).unwrap();
    for bad in [start + 1, unsynced.0 + 4, unsynced.1] {
        let err = log.write_checkpoint(bad).unwrap_err();
        assert!(
            matches!(err, RedoError::BadCheckpoint { .. }),
            "{bad}: {err}"
        );
    }
    log.write_checkpoint(end).unwrap();
    let err = log.write_checkpoint(start).unwrap_err();
    assert!(err.to_string().contains("behind"), "{err}");
}

#[test]
fn write_and_sync_errors_are_sticky_and_name_the_file() {
    for op in [OpKind::Write, OpKind::Sync] {
        let fs = FaultyFileSystem::new();
        let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
        log.commit(&mtr(1, 10)).unwrap();
        fs.fail_nth(op, 1, ErrorKind::Eio);
        let err = log.commit(&mtr(2, 10)).unwrap_err();
        assert!(matches!(err, RedoError::Failed { .. }), "{op:?}: {err}");
        assert!(err.to_string().contains("ib_redo0"), "{err}");
        // The failpoint fired once; a retry would succeed at the file, but the log refuses.
        for again in [
            log.append(&mtr(3, 10)).map(|_| ()),
            log.sync(),
            log.write_checkpoint(8192),
        ] {
            let e = again.unwrap_err();
            assert!(matches!(e, RedoError::Failed { .. }), "{op:?}: {e}");
        }
    }
}

/// A file system whose file syncs take a while, as a disk's do, so that committers overlap;
/// it records how many syncs were ever in flight at once.
#[derive(Debug, Default)]
struct SlowSyncFs {
    inner: FaultyFileSystem,
    gauge: Arc<SyncGauge>,
}

#[derive(Debug, Default)]
struct SyncGauge {
    in_flight: AtomicU32,
    most: AtomicU32,
}

#[derive(Debug)]
struct SlowSyncFile(Arc<dyn barracuda_io::PageFile>, Arc<SyncGauge>);

impl barracuda_io::PageFile for SlowSyncFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> barracuda_io::Result<()> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> barracuda_io::Result<()> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> barracuda_io::Result<()> {
        let now = self.1.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.1.most.fetch_max(now, Ordering::SeqCst);
        // The latency of a device cache flush; the test's assertions do not wait on it.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let result = self.0.sync_data();
        self.1.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }
    fn sync_all(&self) -> barracuda_io::Result<()> {
        self.sync_data()
    }
    fn set_len(&self, len: u64) -> barracuda_io::Result<()> {
        self.0.set_len(len)
    }
    fn len(&self) -> barracuda_io::Result<u64> {
        self.0.len()
    }
    fn allocated_bytes(&self) -> barracuda_io::Result<u64> {
        self.0.allocated_bytes()
    }
    fn punch_hole(
        &self,
        offset: u64,
        len: u64,
    ) -> barracuda_io::Result<barracuda_io::PunchOutcome> {
        self.0.punch_hole(offset, len)
    }
    fn atomic_write_unit(&self) -> Option<u32> {
        None
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
    fn backend_name(&self) -> &'static str {
        "slow-sync"
    }
}

impl FileSystem for SlowSyncFs {
    fn open(
        &self,
        path: &Path,
        opts: &OpenOptions,
    ) -> barracuda_io::Result<Arc<dyn barracuda_io::PageFile>> {
        Ok(Arc::new(SlowSyncFile(
            self.inner.open(path, opts)?,
            self.gauge.clone(),
        )))
    }
    fn exists(&self, path: &Path) -> barracuda_io::Result<bool> {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> barracuda_io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> barracuda_io::Result<()> {
        self.inner.rename(from, to)
    }
    fn create_dir_all(&self, path: &Path) -> barracuda_io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> barracuda_io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn list_dir(&self, path: &Path) -> barracuda_io::Result<Vec<PathBuf>> {
        self.inner.list_dir(path)
    }
}

/// Group commit groups: with 16 committers and syncs that take 2 ms, one sync serves at least
/// ten commits on average (a leader per committer would make it one each; a leader that does not
/// gather the committers the last sync released makes it eight, half the threads), and the log
/// never has more than one sync in flight.
#[test]
fn one_fsync_serves_many_concurrent_committers() {
    const THREADS: usize = 16;
    const EACH: usize = 20;
    let fs = SlowSyncFs::default();
    let opts = RedoOptions {
        capacity: 1 << 20,
        buffer_bytes: 64 << 10,
        ..small()
    };
    let log = RedoLog::create(&fs, Path::new(DIR), &opts).unwrap();
    let before = log.stats();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let log = &log;
            s.spawn(move || {
                for i in 0..EACH {
                    let (_, end) = log.commit(&mtr((t * EACH + i) as u64, 64)).unwrap();
                    assert!(log.flushed_lsn() >= end);
                }
            });
        }
    });
    let stats = log.stats();
    let commits = (THREADS * EACH) as u64;
    let fsyncs = stats.fsyncs - before.fsyncs;
    assert_eq!(stats.appends, commits);
    assert!(
        fsyncs * 10 <= commits,
        "{fsyncs} fsyncs for {commits} concurrent commits: group commit is not grouping"
    );
    assert_eq!(
        fs.gauge.most.load(Ordering::SeqCst),
        1,
        "syncs in flight at once"
    );
    drop(log);
    let (_, found) = scan(&fs);
    assert_eq!(found.len() as u64, commits);
}

#[test]
fn scanning_garbage_never_panics_and_a_bad_header_is_a_typed_error() {
    let fs = FaultyFileSystem::new();
    drop(RedoLog::create(&fs, Path::new(DIR), &small()).unwrap());
    let file = fs
        .open(&log_path(Path::new(DIR)), &OpenOptions::new())
        .unwrap();
    // A length field claiming 4 GiB at the checkpoint (LSN 8192, inside the first lap):
    // bounded by the header, it ends the scan.
    file.write_at(&u32::MAX.to_le_bytes(), 3 * 4096 + 8192)
        .unwrap();
    let (rec, found) = scan(&fs);
    assert!(found.is_empty());
    assert_eq!(rec.scanned_lsn(), 8192);
    file.write_at(b"XXXX", 0).unwrap();
    let err = Recovery::open(&fs, Path::new(DIR)).unwrap_err();
    assert!(err.to_string().contains("invalid redo log header"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random data area bytes behind a valid header and checkpoint: the scan ends without
    /// panicking, and whatever it returns is checksummed frames only.
    #[test]
    fn scanning_random_bytes_never_panics(seed in any::<u64>(), fill in any::<u8>()) {
        let fs = FaultyFileSystem::new();
        drop(RedoLog::create(&fs, Path::new(DIR), &small()).unwrap());
        let file = fs.open(&log_path(Path::new(DIR)), &OpenOptions::new()).unwrap();
        let mut x = seed | 1;
        let garbage: Vec<u8> = (0..16 << 10).map(|_| {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if fill % 2 == 0 { x as u8 } else { (x as u8) & 0x0f }
        }).collect();
        file.write_at(&garbage, 3 * 4096).unwrap();
        let (rec, found) = scan(&fs);
        prop_assert!(found.is_empty());
        rec.finish(Durability::Sync).unwrap().commit(&[1, 2, 3]).unwrap();
    }

    /// Sessions of random mtrs, some committed durably, some only appended, each ended by a
    /// crash that drops or tears the unsynced writes; checkpoints keep the log wrapping. After
    /// every crash the scan returns every acknowledged mtr, then possibly some unacknowledged
    /// ones, each exactly as appended at its LSN (never stale bytes), and appending goes on.
    #[test]
    fn crashes_lose_nothing_acknowledged_and_invent_nothing(
        sessions in prop::collection::vec(
            (prop::collection::vec((1usize..1200, any::<bool>()), 1..40), 0u32..3, any::<u64>()),
            1..5,
        ),
    ) {
        let fs = FaultyFileSystem::new();
        let log = RedoLog::create(&fs, Path::new(DIR), &small()).unwrap();
        // Every mtr appended, by start LSN, and the end LSN of the last acknowledged one.
        let mut model: Vec<(Lsn, Vec<u8>)> = Vec::new();
        let mut acknowledged: Lsn = 8192;
        let mut tag = 0u64;
        let mut log = Some(log);
        for (mtrs, mode, seed) in sessions {
            let current = log.take().unwrap();
            fs.set_crash_mode(match mode {
                0 => CrashMode::DropUnsynced,
                1 => CrashMode::TearUnsynced { sector: 512, seed },
                _ => CrashMode::TearUnsynced { sector: 4096, seed },
            });
            for (len, durable) in mtrs {
                if current.free_space() < 4 * 1300 {
                    current.sync().unwrap();
                    let cut = model.iter().rev().nth(2).map_or(current.flushed_lsn(), |m| m.0);
                    current.write_checkpoint(cut.max(current.checkpoint_lsn())).unwrap();
                }
                let m = mtr(tag, len);
                tag += 1;
                let (start, end) = if durable {
                    current.commit(&m).unwrap()
                } else {
                    current.append(&m).unwrap()
                };
                model.retain(|(s, _)| *s < start);
                model.push((start, m));
                if durable {
                    acknowledged = end;
                }
            }
            drop(current);
            fs.crash().unwrap();
            let (rec, found) = scan(&fs);
            let by_lsn: std::collections::HashMap<Lsn, &Vec<u8>> =
                model.iter().map(|(s, m)| (*s, m)).collect();
            for f in &found {
                prop_assert_eq!(Some(&&f.payload), by_lsn.get(&f.start_lsn),
                    "mtr at {} is not what was appended there", f.start_lsn);
            }
            prop_assert!(rec.scanned_lsn() >= acknowledged,
                "scan ended at {} before the acknowledged {}", rec.scanned_lsn(), acknowledged);
            let end = rec.scanned_lsn();
            model.retain(|(s, _)| *s < end);
            acknowledged = end;
            log = Some(rec.finish(Durability::Sync).unwrap());
        }
    }
}

/// `Async` writes at commit and `None` does not; in both the background thread makes the log
/// durable without anyone asking (about once a second).
#[test]
fn the_background_thread_syncs_async_and_none_logs() {
    for durability in [Durability::Async, Durability::None] {
        let fs = FaultyFileSystem::new();
        let opts = RedoOptions {
            durability,
            ..small()
        };
        let log = RedoLog::create(&fs, Path::new(DIR), &opts).unwrap();
        let (_, end) = log.commit(&mtr(1, 50)).unwrap();
        assert_eq!(
            log.stats().writes,
            u64::from(durability == Durability::Async)
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while log.flushed_lsn() < end {
            assert!(
                std::time::Instant::now() < deadline,
                "{durability:?}: not synced within 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(log);
        fs.crash().unwrap();
        let (_, found) = scan(&fs);
        assert_eq!(found.len(), 1, "{durability:?}");
    }
}

/// Without a committer asking, a buffer past half full is written by the background thread
/// at once (the periodic sync, about a second later, syncs it), so appenders seldom find it
/// full and write it themselves.
#[test]
fn the_background_thread_writes_a_half_full_buffer_before_its_periodic_sync() {
    let fs = FaultyFileSystem::new();
    let opts = RedoOptions {
        durability: Durability::None,
        ..small()
    };
    let log = RedoLog::create(&fs, Path::new(DIR), &opts).unwrap();
    // 3 × 800 bytes: past half of the 4096-byte buffer, far from full.
    for tag in 0..3 {
        log.append(&mtr(tag, 800)).unwrap();
    }
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    until("written", &|| log.stats().writes >= 1);
    // Appended after that write: the periodic sync has it to write. Had the periodic sync
    // been the first write, it would have synced before this append was written.
    let (_, end) = log.append(&mtr(3, 100)).unwrap();
    until("synced", &|| log.stats().fsyncs >= 1);
    assert_eq!(log.stats().writes, 2, "a write of its own, then the sync's");
    until("synced to the end", &|| log.flushed_lsn() >= end);
}
