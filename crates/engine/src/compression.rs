//! Page compression in the engine (issue 10, MariaDB's `PAGE_COMPRESSED`): the pool holds
//! only uncompressed pages; a page of a page-compressed table is compressed just before it is
//! written, and decompressed as it is read, before it enters the pool.
//!
//! - [`PageEncoder`] turns a batch of frames into the images that go to disk: each page is
//!   copied, its unused bytes zeroed (garbage compresses badly), sealed and, for a compressed
//!   table, enveloped (`barracuda-page-compression`). The pages of a batch are compressed in
//!   parallel on `flush_threads` workers (MariaDB 10.1's multi-threaded flush). The doublewrite
//!   copy and the in-place write both take these exact bytes; the rest of the page's slot is
//!   punched out by the writer ([`PageWrites`](crate::torn_writes::PageWrites)).
//! - [`decode_stored_page`] is the read side, used by every path that reads a page from a
//!   table's file: the tablespace (pool misses, open), recovery, and the offline tools.
// MariaDB: fil_page_compress / fil_page_decompress (fil0pagecompress.cc), buf_page_encrypt,
// buf_mtflu (10.1's multi-threaded flush).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use barracuda_io::AlignedBuf;
use barracuda_page::{seal_page, zero_unused_space, PageId, PageSize, SpaceId};
use barracuda_page_compression::{
    is_page_compressed, Algorithm, Compressed, PageCompressionError, PageCompressor,
};
use parking_lot::Mutex;
use rayon::prelude::*;

use crate::options::PageCompression;

/// How one tablespace's pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpaceCompression {
    /// The table's algorithm.
    pub algorithm: Algorithm,
    /// The file system block the image is rounded up to (what hole punching frees).
    pub block_size: u32,
}

impl PageCompression {
    /// The codec's own description of this choice.
    pub(crate) fn algorithm(self) -> Algorithm {
        match self {
            PageCompression::Zlib { level } => Algorithm::Zlib { level },
            PageCompression::Lz4 => Algorithm::Lz4,
        }
    }
}

/// The counters of `status()` (MariaDB's names; see [`PageCompressionStatus`]).
#[derive(Debug, Default)]
pub(crate) struct CompressionCounters {
    /// Row compression's counters (INNODB_CMP), shared with the compressed trees.
    pub(crate) row: Arc<barracuda_row_compression::CompressionStats>,
    saved: AtomicU64,
    compressed: AtomicU64,
    written_plain: AtomicU64,
    decompressed: AtomicU64,
    errors: AtomicU64,
}

/// What page compression did since the engine opened (MariaDB's status variable names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageCompressionStatus {
    /// Bytes of page slots not written because their page was compressed
    /// (`Innodb_page_compression_saved`): page size − written size, summed over writes.
    pub page_compression_saved: u64,
    /// Page writes that went out compressed (`Innodb_num_pages_page_compressed`).
    pub num_pages_page_compressed: u64,
    /// Page writes of compressed tables that went out plain because compression would not
    /// have saved a file-system block.
    pub num_pages_written_plain: u64,
    /// Holes punched after a compressed write (`Innodb_num_page_compressed_trim_op`).
    pub num_page_compressed_trim_op: u64,
    /// Hole punches the file system refused or failed; the page itself was written.
    pub num_punch_hole_failures: u64,
    /// Compressed pages read and decompressed (`Innodb_num_pages_page_decompressed`).
    pub num_pages_page_decompressed: u64,
    /// Pages the codec failed to compress, written plain instead
    /// (`Innodb_num_pages_page_compression_error`).
    pub num_pages_page_compression_error: u64,
    /// Threads that compress a flush batch (`EngineOptions::flush_threads`).
    pub flush_threads: usize,
}

impl CompressionCounters {
    /// The counters as `status()` shows them; the punch counts come from the writer.
    pub(crate) fn status(
        &self,
        trim_ops: u64,
        punch_failures: u64,
        flush_threads: usize,
    ) -> PageCompressionStatus {
        PageCompressionStatus {
            page_compression_saved: self.saved.load(Ordering::Relaxed),
            num_pages_page_compressed: self.compressed.load(Ordering::Relaxed),
            num_pages_written_plain: self.written_plain.load(Ordering::Relaxed),
            num_page_compressed_trim_op: trim_ops,
            num_punch_hole_failures: punch_failures,
            num_pages_page_decompressed: self.decompressed.load(Ordering::Relaxed),
            num_pages_page_compression_error: self.errors.load(Ordering::Relaxed),
            flush_threads,
        }
    }
}

thread_local! {
    /// Each thread's codec state and a page of scratch: compression runs on the flush
    /// workers and the flushing thread, decompression on whichever thread reads.
    static CODEC: RefCell<(PageCompressor, Vec<u8>)> = RefCell::new((PageCompressor::new(), Vec::new()));
}

/// One page of a batch to encode: its slot in the batch buffer, the page, its image length.
type EncodeTask<'s, 'p> = ((&'s mut [u8], &'p (PageId, &'p [u8])), &'s mut usize);

/// Turns frames into the images written to disk, compressing on a pool of workers.
pub(crate) struct PageEncoder {
    page_size: PageSize,
    threads: usize,
    /// The workers, started at the first batch with pages to compress (a database without a
    /// compressed table never starts them); `None` with one flush thread, when they could not
    /// be started (the flushing thread then compresses its own batch), and after shutdown.
    pool_slot: Mutex<Option<Arc<rayon::ThreadPool>>>,
    /// Whether starting the workers was tried (it is tried once).
    started: AtomicBool,
    /// Set by [`shutdown`](Self::shutdown): no worker starts again.
    shut_down: AtomicBool,
    /// The workers' threads: shutdown joins them, so that closing the engine leaves no thread
    /// of it behind (a rayon pool's threads otherwise finish on their own after the pool is
    /// dropped, with their thread-local codec state).
    handles: Mutex<Vec<std::thread::JoinHandle<()>>>,
    counters: Arc<CompressionCounters>,
    /// Buffers of finished batches, for the next ones: a batch is up to a few MiB, and a fresh
    /// one was zeroed (or faulted in) by the allocator for every batch the page cleaner wrote
    /// — a third of its time during a load, on a machine whose other core is the loader's.
    spare: Mutex<Vec<AlignedBuf>>,
    /// Held by a thread compressing a batch itself (no workers): batches written at once (a
    /// checkpoint's two writers, the page cleaner beside an LRU batch) compress one after the
    /// other, so that one flush thread means one core compressing.
    compressing_alone: Mutex<()>,
}

/// Spare batch buffers kept at most (the page cleaner's, a user thread's single-page
/// flush, recovery's).
const SPARE_BUFFERS: usize = 2;

impl std::fmt::Debug for PageEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageEncoder")
            .field("page_size", &self.page_size)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Drop for PageEncoder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl PageEncoder {
    /// An encoder compressing on `threads` threads (1 = on the caller's thread).
    pub(crate) fn new(
        page_size: PageSize,
        threads: usize,
        counters: Arc<CompressionCounters>,
    ) -> Self {
        Self {
            page_size,
            threads: threads.max(1),
            pool_slot: Mutex::new(None),
            compressing_alone: Mutex::new(()),
            started: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            handles: Mutex::new(Vec::new()),
            counters,
            spare: Mutex::new(Vec::new()),
        }
    }

    /// Stops the workers and waits for their threads (idempotent). Batches encoded afterwards
    /// — none, once the engine is closed — are compressed on the calling thread.
    pub(crate) fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Release);
        // Dropping the pool (its last handle, once a batch in flight is done with it) tells its
        // threads to stop; joining waits for that.
        drop(self.pool_slot.lock().take());
        for handle in self.handles.lock().drain(..) {
            if handle.join().is_err() {
                tracing::warn!("a compression worker panicked");
            }
        }
    }

    /// The worker pool, started on first use; `None` after [`shutdown`](Self::shutdown).
    fn workers(&self) -> Option<Arc<rayon::ThreadPool>> {
        if self.shut_down.load(Ordering::Acquire) {
            return None;
        }
        let mut slot = self.pool_slot.lock();
        if slot.is_none() && !self.started.swap(true, Ordering::AcqRel) {
            *slot = self.start_workers().map(Arc::new);
        }
        slot.clone()
    }

    /// Starts the worker threads (not for one thread: it compresses on the caller).
    fn start_workers(&self) -> Option<rayon::ThreadPool> {
        if self.threads < 2 {
            return None;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .spawn_handler(|worker| {
                let handle = std::thread::Builder::new()
                    .name(format!("barracuda-compress-{}", worker.index()))
                    .spawn(|| worker.run())?;
                self.handles.lock().push(handle);
                Ok(())
            })
            .build();
        match pool {
            Ok(pool) => Some(pool),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    threads = self.threads,
                    "cannot start the compression workers; flushing threads compress their \
                     own batches"
                );
                None
            }
        }
    }

    /// Threads compressing a batch.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// The counters this encoder (and the read path) update.
    pub(crate) fn counters(&self) -> &CompressionCounters {
        &self.counters
    }

    /// Copies, seals and (for compressed tables, as `compression_of` says) compresses
    /// `pages`, each one page of this database's size.
    pub(crate) fn encode(
        &self,
        pages: &[(PageId, &[u8])],
        compression_of: &(dyn Fn(SpaceId) -> Option<SpaceCompression> + Sync),
    ) -> EncodedBatch<'_> {
        let page_bytes = self.page_size.bytes();
        // Every slot is overwritten with its image, and only an image's own bytes are written
        // out: a reused buffer's old contents never reach the disk.
        let mut bytes = self.buffer(page_bytes * pages.len());
        let mut lens = vec![page_bytes; pages.len()];
        let encode_one = |((slot, page), len): EncodeTask<'_, '_>| {
            let (id, frame) = *page;
            *len = self.encode_page(frame, compression_of(id.space_id), slot);
        };
        // Copying and sealing alone is not worth a hand-off to the workers (nor is one page, a
        // single-page flush): only a batch with pages to compress goes to them.
        let compresses = pages
            .iter()
            .any(|(id, _)| compression_of(id.space_id).is_some());
        let workers = if pages.len() > 1 && compresses {
            self.workers()
        } else {
            None
        };
        if let Some(workers) = workers {
            workers.install(|| {
                bytes
                    .par_chunks_exact_mut(page_bytes)
                    .zip(pages.par_iter())
                    .zip(lens.par_iter_mut())
                    .for_each(encode_one);
            });
        } else {
            let _alone = compresses.then(|| self.compressing_alone.lock());
            bytes
                .chunks_exact_mut(page_bytes)
                .zip(pages.iter())
                .zip(lens.iter_mut())
                .for_each(encode_one);
        }
        EncodedBatch {
            ids: pages.iter().map(|(id, _)| *id).collect(),
            lens,
            page_bytes,
            bytes: Some(bytes),
            home: self,
        }
    }

    /// A buffer of at least `len` bytes: a spare one if one is large enough, else a new one.
    fn buffer(&self, len: usize) -> AlignedBuf {
        let mut spare = self.spare.lock();
        if let Some(i) = spare.iter().position(|b| b.len() >= len) {
            return spare.swap_remove(i);
        }
        drop(spare);
        AlignedBuf::zeroed(len)
    }

    /// Keeps a finished batch's buffer for a later batch (the smallest goes when there are
    /// too many).
    fn give_back(&self, buffer: AlignedBuf) {
        let mut spare = self.spare.lock();
        spare.push(buffer);
        spare.sort_by_key(|b| std::cmp::Reverse(b.len()));
        spare.truncate(SPARE_BUFFERS);
    }

    /// Writes the disk image of `frame` into `slot` (one page); returns its length.
    fn encode_page(
        &self,
        frame: &[u8],
        compression: Option<SpaceCompression>,
        slot: &mut [u8],
    ) -> usize {
        if barracuda_row_compression::is_compressed_block(frame) {
            // A row-compressed page's block: written as it is (sealed), never page-compressed.
            return crate::row_compression::encode_block(frame, slot);
        }
        slot.copy_from_slice(frame);
        let Some(compression) = compression else {
            seal_page(slot);
            return slot.len();
        };
        // A page whose structure does not decode keeps its bytes: it is written as it is (the
        // reader's verification names it), only less compactly.
        if let Err(e) = zero_unused_space(slot, self.page_size) {
            tracing::debug!(error = %e, "page left as it is before compression");
        }
        seal_page(slot);
        let outcome = CODEC.with(|codec| {
            let (compressor, scratch) = &mut *codec.borrow_mut();
            scratch.resize(slot.len(), 0);
            let outcome = compressor.compress(
                slot,
                self.page_size,
                compression.algorithm,
                compression.block_size,
                scratch,
            );
            if let Ok(Compressed::Envelope { written_len, .. }) = outcome {
                match (slot.get_mut(..written_len), scratch.get(..written_len)) {
                    (Some(dst), Some(src)) => dst.copy_from_slice(src),
                    // The codec promised an image shorter than a page: write it plain.
                    _ => return Ok(Compressed::Plain),
                }
            }
            outcome
        });
        let c = &self.counters;
        match outcome {
            Ok(Compressed::Envelope { written_len, .. }) => {
                c.compressed.fetch_add(1, Ordering::Relaxed);
                c.saved
                    .fetch_add((slot.len() - written_len) as u64, Ordering::Relaxed);
                written_len
            }
            Ok(Compressed::Plain) => {
                c.written_plain.fetch_add(1, Ordering::Relaxed);
                slot.len()
            }
            Err(e) => {
                // The sealed page is still in `slot` (the envelope went to the scratch).
                tracing::warn!(error = %e, "page compression failed; the page is written plain");
                c.errors.fetch_add(1, Ordering::Relaxed);
                slot.len()
            }
        }
    }
}

/// A batch of page images exactly as they will reach the disk, in one aligned buffer: each
/// page's slot holds its sealed page, or its compressed envelope (shorter, rounded to the file
/// system block) at the start of the slot.
///
/// The images are made where the batch is assembled, not in the tablespace, because whatever
/// protects the write against tearing (a doublewrite copy) must hold the very bytes that go in
/// place.
pub(crate) struct EncodedBatch<'e> {
    ids: Vec<PageId>,
    lens: Vec<usize>,
    page_bytes: usize,
    /// The images, a page-sized slot each (the buffer may be longer than the batch); `None`
    /// only once dropped.
    bytes: Option<AlignedBuf>,
    /// Where the buffer goes back when the batch is dropped.
    home: &'e PageEncoder,
}

impl EncodedBatch<'_> {
    /// The images with their page ids, in the order given to [`PageEncoder::encode`].
    pub(crate) fn images(&self) -> impl Iterator<Item = (PageId, &[u8])> {
        let bytes = self.bytes.as_deref().unwrap_or_default();
        self.ids
            .iter()
            .copied()
            .zip(self.lens.iter())
            .zip(bytes.chunks_exact(self.page_bytes.max(1)))
            .map(|((id, &len), slot)| (id, slot.get(..len).unwrap_or(slot)))
    }
}

impl Drop for EncodedBatch<'_> {
    fn drop(&mut self) {
        if let Some(bytes) = self.bytes.take() {
            self.home.give_back(bytes);
        }
    }
}

/// Turns a page as read from disk into the page the pool holds: a compressed envelope is
/// verified (its checksum covers the stored bytes) and decompressed in place; any other page
/// is left for the caller's verification. Returns whether the page was compressed.
pub(crate) fn decode_stored_page(
    buf: &mut [u8],
    id: PageId,
    page_size: PageSize,
    counters: Option<&CompressionCounters>,
) -> std::result::Result<bool, PageCompressionError> {
    if !is_page_compressed(buf) {
        return Ok(false);
    }
    CODEC.with(|codec| {
        let (compressor, scratch) = &mut *codec.borrow_mut();
        scratch.resize(buf.len(), 0);
        compressor.decompress(buf, id, page_size, scratch)?;
        buf.copy_from_slice(scratch);
        Ok::<(), PageCompressionError>(())
    })?;
    if let Some(c) = counters {
        c.decompressed.fetch_add(1, Ordering::Relaxed);
    }
    Ok(true)
}

/// Frees the rest of a page's slot after a compressed image, shorter than the page, was
/// written at its start (`fallocate(PUNCH_HOLE | KEEP_SIZE)`), and counts what it did.
///
/// A punch that fails never fails the write: the image is in place and self-delimiting (its
/// header gives its length), so the stale bytes behind it only cost space. A file system that
/// refuses (EOPNOTSUPP) is logged once by the file, which then stops trying.
#[derive(Debug, Default)]
pub(crate) struct HolePuncher {
    trims: AtomicU64,
    failures: AtomicU64,
}

impl HolePuncher {
    /// After `image_len` bytes were written at `offset`, the start of a slot of `slot_len`.
    pub(crate) fn after_write(
        &self,
        file: &dyn barracuda_io::PageFile,
        offset: u64,
        image_len: usize,
        slot_len: usize,
    ) {
        if image_len >= slot_len {
            return;
        }
        match file.punch_hole(offset + image_len as u64, (slot_len - image_len) as u64) {
            Ok(barracuda_io::PunchOutcome::Punched) => {
                self.trims.fetch_add(1, Ordering::Relaxed);
            }
            Ok(barracuda_io::PunchOutcome::Unsupported) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::warn!(
                    file = %file.path().display(),
                    offset,
                    error = %e,
                    "punching the rest of a compressed page's slot failed; the page is written"
                );
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Holes punched, and punches refused or failed.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.trims.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::PageEncoder;
    use barracuda_page::{verify_page, FileHeader, PageId, PageSize, PageType};
    use std::sync::Arc;

    /// A page of `id` filled with `fill` past its header.
    fn page(id: PageId, fill: u8) -> Vec<u8> {
        let mut p = vec![fill; PageSize::K4.bytes()];
        FileHeader::new(id, PageType::Index).write(&mut p);
        p
    }

    /// `ids` paired with `pages`, as many as the shorter has.
    fn batch_of<'p>(ids: &[PageId], pages: &'p [Vec<u8>]) -> Vec<(PageId, &'p [u8])> {
        ids.iter()
            .copied()
            .zip(pages.iter().map(Vec::as_slice))
            .collect()
    }

    #[test]
    fn a_batch_buffer_is_reused_and_every_image_is_its_own_page() {
        let encoder = PageEncoder::new(PageSize::K4, 1, Arc::default());
        let ids: Vec<PageId> = (1..=4).map(|n| PageId::new(7, n)).collect();
        let pages: Vec<Vec<u8>> = ids.iter().map(|&id| page(id, 0xAA)).collect();
        let first = encoder.encode(&batch_of(&ids, &pages), &|_| None);
        let first_at = first.images().next().map(|(_, image)| image.as_ptr());
        drop(first);

        // A smaller batch after it writes into the same buffer, and reads back its own bytes.
        let small: Vec<Vec<u8>> = ids.iter().take(2).map(|&id| page(id, 0x55)).collect();
        let second = encoder.encode(&batch_of(&ids, &small), &|_| None);
        let images: Vec<(PageId, &[u8])> = second.images().collect();
        assert_eq!(images.len(), 2, "as many images as pages given");
        assert_eq!(
            images.first().map(|(_, image)| image.as_ptr()),
            first_at,
            "the buffer was reused"
        );
        for ((id, image), original) in images.iter().zip(&small) {
            verify_page(image, *id, PageSize::K4).expect("a sealed image of the page");
            assert_eq!(
                image.get(40..4000),
                original.get(40..4000),
                "{id}: its own bytes"
            );
        }
    }
}
