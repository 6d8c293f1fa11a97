//! The B-tree describes its leaf inserts, replaces and removes to the log as logical index
//! changes (`Mtr::describe`) instead of leaving them to a before/after diff. Replaying a page's
//! described changes with `IndexPage` onto the page as the mtr found it must give the page
//! after them: `after` when the mtr captured no before-image, the before-image when a later
//! raw change (a merge, a root raise) captured one. Checked for every mtr of a random workload with
//! splits and merges.
//!
//! What would break it: a description with the wrong position or record, a change made through
//! `described_change_mut` and not described (or described twice), or a description kept
//! although a before-image already covered the change.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use barracuda_btree::testing::MemAllocator;
use barracuda_btree::{
    BTree, BTreeError, DescribedChange, LogSink, LsnRange, MtrSummary, TreeContext,
};
use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
use barracuda_page::{IndexPage, Lsn, PageSize, Record};
use parking_lot::Mutex;

const P: PageSize = PageSize::K4;

/// Checks every described page as it is committed; counts what it saw.
#[derive(Default)]
struct CheckingLog {
    next: AtomicU64,
    failures: Mutex<Vec<String>>,
    described_only: AtomicU64,
    described_then_diffed: AtomicU64,
    /// Pages with several described changes in one mtr (a split's kept page).
    described_several: AtomicU64,
    diffed_only: AtomicU64,
}

impl LogSink for CheckingLog {
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> Result<LsnRange, BTreeError> {
        for page in mtr.pages {
            if page.described.is_empty() {
                if page.before.is_some() {
                    self.diffed_only.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            if page.described.len() > 1 {
                self.described_several.fetch_add(1, Ordering::Relaxed);
            }
            let Some(from) = page.described_from else {
                self.failures.lock().push(format!(
                    "{}: described but the page before was not kept",
                    page.id
                ));
                continue;
            };
            let mut replayed = from.to_vec();
            let mut index = IndexPage::open(replayed.as_mut_slice(), P).unwrap();
            for change in page.described {
                let done = match *change {
                    DescribedChange::Insert { pos, encoded } => {
                        index.insert(pos, &Record::decode_exact(encoded).unwrap())
                    }
                    DescribedChange::Replace { pos, encoded } => {
                        index.replace(pos, &Record::decode_exact(encoded).unwrap())
                    }
                    DescribedChange::Remove { pos } => index.remove(pos),
                    DescribedChange::Truncate { at } => {
                        let n = index.len();
                        index.remove_range(at..n).map(|()| index.compact())
                    }
                    DescribedChange::Written { offset, bytes } => {
                        replayed[offset..offset + bytes.len()].copy_from_slice(bytes);
                        index = IndexPage::open(replayed.as_mut_slice(), P).unwrap();
                        Ok(())
                    }
                };
                if let Err(e) = done {
                    self.failures
                        .lock()
                        .push(format!("{}: {change:?} does not replay: {e}", page.id));
                }
            }
            let expected = if let Some(before) = page.before {
                self.described_then_diffed.fetch_add(1, Ordering::Relaxed);
                before
            } else {
                self.described_only.fetch_add(1, Ordering::Relaxed);
                page.after
            };
            if replayed != expected {
                self.failures.lock().push(format!(
                    "{}: {:?} replayed differs from the page",
                    page.id, page.described
                ));
            }
        }
        let step = mtr.pages.len().max(1) as u64;
        let start = self.next.fetch_add(step, Ordering::Relaxed) + 1;
        Ok(LsnRange {
            start,
            end: start + step,
        })
    }

    fn current_lsn(&self) -> Lsn {
        self.next.load(Ordering::Relaxed)
    }
}

#[test]
fn described_changes_replay_to_the_page_through_splits_and_merges() {
    let store = Arc::new(MemStore::new(P));
    store.create_space(1, u32::MAX);
    let config = PoolConfig::new(P)
        .capacity_pages(256)
        .capture_before_images(true)
        .keep_described_from(true);
    let pool = BufferPool::new(config, store).unwrap();
    let log = Arc::new(CheckingLog::default());
    let ctx = TreeContext::new(pool, Arc::new(MemAllocator::new()), log.clone());
    let tree = BTree::create(ctx, 1, 7).unwrap();
    // xorshift: inserts, replaces with values of other lengths, and deletes, over 3,000 keys.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = (x % 3_000).to_be_bytes();
        if x.is_multiple_of(5) {
            tree.delete(&key).unwrap();
        } else {
            let value = vec![(x >> 8) as u8; (x >> 16) as usize % 300];
            tree.put(&key, &value).unwrap();
        }
    }
    let failures = log.failures.lock();
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let only = log.described_only.load(Ordering::Relaxed);
    let several = log.described_several.load(Ordering::Relaxed);
    let diffed = log.diffed_only.load(Ordering::Relaxed);
    // Most changes are described alone; a split describes its kept page in several steps;
    // what is neither (root raises, merges, allocation) is diffed.
    assert!(only > 10_000, "{only} pages described alone");
    assert!(
        several > 100,
        "{several} pages described in several steps (splits)"
    );
    assert!(diffed > 0, "no change was diffed");
}
