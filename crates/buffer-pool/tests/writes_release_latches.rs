//! A page being written is latched only until the store has copied its image: a writer of the
//! page goes on while the store's I/O is still in progress, and a page changed meanwhile stays
//! dirty, so that its newer image is written by the next flush. What would break: writers
//! waiting for whole batches of I/O (a doublewrite sync, then the writes in place), or a page
//! changed during its write marked clean, its change then lost at eviction.
mod common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use barracuda_buffer_pool::testing::MemStore;
use barracuda_buffer_pool::{BufferPool, ImageList, PageImages, PageStore, StoreError};
use barracuda_page::{page_lsn, Lsn, PageId, SpaceId};
use common::{commit_change, pid, read_u64, small_config};
use parking_lot::Mutex;

/// Longest wait for something that happens at once unless the pool is wrong (a hang detector,
/// not a timing assertion).
const HANG: Duration = Duration::from_secs(30);

/// A store whose writes copy the images, release the frames, report it, and then wait to be
/// told to finish — an I/O in progress for as long as the test wants.
struct GatedStore {
    inner: Arc<MemStore>,
    copied: Mutex<Sender<()>>,
    finish: Mutex<Receiver<()>>,
}

impl PageStore for GatedStore {
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError> {
        self.inner.read_page(id, buf)
    }

    fn write_pages(&self, pages: &mut dyn PageImages) -> Result<(), StoreError> {
        let copies: Vec<(PageId, Vec<u8>)> = pages
            .iter()
            .map(|(id, image)| (id, image.to_vec()))
            .collect();
        pages.release();
        self.copied.lock().send(()).expect("the test listens");
        self.finish
            .lock()
            .recv_timeout(HANG)
            .expect("the test lets the write finish");
        let list: Vec<(PageId, &[u8])> = copies.iter().map(|(id, b)| (*id, &b[..])).collect();
        self.inner.write_pages(&mut ImageList::new(&list))
    }

    fn flush_log_up_to(&self, lsn: Lsn) -> Result<(), StoreError> {
        self.inner.flush_log_up_to(lsn)
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.inner.space_size_pages(space)
    }
}

fn put(pool: &BufferPool, value: u64, lsn: Lsn) {
    let mut page = pool.get_exclusive(pid(3)).expect("page 3");
    page[100..108].copy_from_slice(&value.to_le_bytes());
    commit_change(&mut page, lsn);
}

#[test]
fn a_page_is_changed_while_its_write_is_in_progress_and_stays_dirty() {
    let config = small_config(16);
    let mem = Arc::new(MemStore::new(config.configured_page_size()));
    mem.create_space(1, 16);
    let (copied_tx, copied) = channel();
    let (finish, finish_rx) = channel();
    let store = Arc::new(GatedStore {
        inner: mem.clone(),
        copied: Mutex::new(copied_tx),
        finish: Mutex::new(finish_rx),
    });
    let pool = BufferPool::new(config, store).unwrap();
    put(&pool, 0xAAAA, 10);

    std::thread::scope(|s| {
        let flusher = s.spawn(|| pool.flush_list_batch(16));
        copied
            .recv_timeout(HANG)
            .expect("the store copied the page");

        // The write is in progress (the store waits for `finish`): a writer latches the page
        // and changes it. Were the page latched until the write ended, this would wait for it.
        let (changed_tx, changed) = channel();
        let pool = &pool;
        s.spawn(move || {
            put(pool, 0xBBBB, 20);
            changed_tx.send(()).unwrap();
        });
        changed
            .recv_timeout(HANG)
            .expect("a writer of the page waits for the copy, not for the write");

        finish.send(()).unwrap();
        assert_eq!(flusher.join().unwrap().unwrap(), 1, "one page written");
    });

    let written = mem.page(pid(3)).unwrap();
    assert_eq!(read_u64(&written, 100), 0xAAAA, "the image as copied");
    assert_eq!(page_lsn(&written), Some(10));
    assert_eq!(
        pool.oldest_modification(),
        Some(10),
        "changed during its write: still dirty, from its first change"
    );

    // The next flush writes the newer image and leaves the page clean.
    finish.send(()).unwrap();
    assert_eq!(pool.flush_list_batch(16).unwrap(), 1);
    copied.recv_timeout(HANG).unwrap();
    let written = mem.page(pid(3)).unwrap();
    assert_eq!(read_u64(&written, 100), 0xBBBB);
    assert_eq!(page_lsn(&written), Some(20));
    assert_eq!(pool.oldest_modification(), None, "unchanged since: clean");
    assert_eq!(read_u64(&pool.get_shared(pid(3)).unwrap(), 100), 0xBBBB);
}
