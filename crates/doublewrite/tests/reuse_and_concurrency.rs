//! An area is overwritten only after the data files its previous batch wrote in place are
//! synced (counted through each faulty file's operation counter), each file once; and several
//! threads protecting batches at once never share an area.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

use barracuda_doublewrite::{read_copies, AreaKind, Doublewrite};
use barracuda_io::{FaultyFileSystem, OpKind, PageFile};
use barracuda_page::{PageId, PageSize};
use common::{batch, config, data_file, data_path, dir, flush, fs, page, protect, write_in_place};

const PS: PageSize = PageSize::K4;

fn syncs(fs: &FaultyFileSystem, space: u32) -> u64 {
    fs.file(&data_path(space)).unwrap().op_count(OpKind::Sync)
}

fn unsynced(fs: &FaultyFileSystem, space: u32) -> usize {
    fs.file(&data_path(space)).unwrap().unsynced_ops()
}

#[test]
fn reusing_an_area_syncs_the_files_its_batch_wrote_first_each_once() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(1, 4, 1)).unwrap();
    let (a, b, c) = (data_file(&fs, 1), data_file(&fs, 2), data_file(&fs, 3));
    let in_a = batch(PS, &[PageId::new(1, 0), PageId::new(1, 1)], 10);
    let in_b = batch(PS, &[PageId::new(2, 0)], 10);
    let mut pages = in_a.clone();
    pages.extend(in_b.clone());
    let protected = protect(&dw, &pages, AreaKind::Batch).unwrap();
    write_in_place(&*a, PS, &in_a);
    write_in_place(&*b, PS, &in_b);
    protected.written_in_place(vec![a.clone(), b.clone(), a.clone()]);
    assert_eq!(
        (syncs(&fs, 1), syncs(&fs, 2)),
        (0, 0),
        "nothing synced before reuse"
    );

    // Reuse of the only batch area: a and b synced once each, c (not written) not at all,
    // and that before the new copy could overwrite the old one.
    let next = batch(PS, &[PageId::new(3, 0)], 20);
    let protected = protect(&dw, &next, AreaKind::Batch).unwrap();
    assert_eq!((syncs(&fs, 1), syncs(&fs, 2), syncs(&fs, 3)), (1, 1, 0));
    assert_eq!((unsynced(&fs, 1), unsynced(&fs, 2)), (0, 0));
    assert_eq!(dw.stats().data_syncs_before_reuse, 2);
    write_in_place(&*c, PS, &next);
    protected.written_in_place(vec![c.clone()]);

    // A single-page slot has its own bookkeeping: batch areas' files are not its business.
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 5)], 30),
        AreaKind::SinglePage,
    );
    assert_eq!(syncs(&fs, 3), 0);
    flush(
        &dw,
        &b,
        &batch(PS, &[PageId::new(2, 5)], 40),
        AreaKind::SinglePage,
    );
    assert_eq!(
        (syncs(&fs, 1), syncs(&fs, 3)),
        (2, 0),
        "the slot's previous file, a, synced"
    );
}

#[test]
fn sync_pending_syncs_each_waiting_file_once_and_spares_the_next_reuse() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(2, 4, 1)).unwrap();
    let (a, b) = (data_file(&fs, 1), data_file(&fs, 2));
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 0)], 10),
        AreaKind::Batch,
    );
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 1)], 11),
        AreaKind::Batch,
    );
    flush(
        &dw,
        &b,
        &batch(PS, &[PageId::new(2, 0)], 12),
        AreaKind::SinglePage,
    );
    dw.sync_pending().unwrap();
    assert_eq!(
        (syncs(&fs, 1), syncs(&fs, 2)),
        (1, 1),
        "a waited on by two areas, synced once"
    );
    assert_eq!(dw.stats().pending_syncs, 2);
    dw.sync_pending().unwrap();
    assert_eq!(dw.stats().pending_syncs, 2, "nothing left to sync");
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 2)], 13),
        AreaKind::Batch,
    );
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 3)], 14),
        AreaKind::Batch,
    );
    assert_eq!(dw.stats().data_syncs_before_reuse, 0);
    // The third batch reuses an area whose batch (1:2) is not synced.
    flush(
        &dw,
        &a,
        &batch(PS, &[PageId::new(1, 4)], 15),
        AreaKind::Batch,
    );
    assert_eq!(dw.stats().data_syncs_before_reuse, 1);
}

const THREADS: u32 = 4;
const BATCHES_PER_THREAD: u64 = 30;

#[test]
fn concurrent_batches_each_get_an_area_of_their_own() {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(2, 4, 2)).unwrap();
    let files: Vec<Arc<dyn PageFile>> = (0..THREADS).map(|t| data_file(&fs, t)).collect();
    // Who holds each area between `protect` and `written_in_place` (0: nobody).
    let holders: Vec<AtomicU32> = (0..6).map(|_| AtomicU32::new(0)).collect();
    std::thread::scope(|s| {
        for (t, file) in files.iter().enumerate() {
            let (dw, holders) = (&dw, &holders);
            s.spawn(move || {
                let me = t as u32 + 1;
                for n in 0..BATCHES_PER_THREAD {
                    let lsn = 1000 * t as u64 + n + 1;
                    let single = n % 5 == 4;
                    let count = if single { 1 } else { 1 + (n % 4) as u32 };
                    let ids: Vec<PageId> = (0..count)
                        .map(|i| PageId::new(t as u32, (n as u32 + i) % 6))
                        .collect();
                    let kind = if single {
                        AreaKind::SinglePage
                    } else {
                        AreaKind::Batch
                    };
                    let pages = batch(PS, &ids, lsn);
                    let protected = protect(dw, &pages, kind).unwrap();
                    let area = protected.area() as usize;
                    assert_eq!(holders[area].swap(me, SeqCst), 0, "area {area} shared");
                    write_in_place(&**file, PS, &pages);
                    std::thread::yield_now();
                    assert_eq!(holders[area].swap(0, SeqCst), me);
                    protected.written_in_place(vec![file.clone()]);
                    if n % 7 == 0 {
                        dw.sync_pending().unwrap();
                    }
                }
            });
        }
    });
    let stats = dw.stats();
    let total = u64::from(THREADS) * BATCHES_PER_THREAD;
    assert_eq!(stats.batches + stats.single_page_writes, total);
    assert_eq!(stats.file_syncs, total);
    let copies = read_copies(&fs, dir(), PS).unwrap().unwrap();
    let summary = copies.summary();
    assert_eq!(
        (summary.damaged_areas, summary.invalid_images),
        (0, 0),
        "{summary:?}"
    );
    assert_eq!(summary.descriptors, 4, "every area holds its last batch");
    // Every copy is exactly the version its thread wrote.
    let mut per_thread: HashMap<u32, usize> = HashMap::new();
    for c in copies.copies() {
        assert_eq!(c.image, page(PS, c.id, c.lsn));
        assert_eq!(c.lsn / 1000, u64::from(c.id.space_id));
        *per_thread.entry(c.id.space_id).or_default() += 1;
    }
    assert!(!per_thread.is_empty());
}
