//! [`MemFile`]: a page file in memory that models block allocation, so hole punching and
//! sparse growth show up in [`PageFile::allocated_bytes`] as on a real file system.

use std::path::{Path, PathBuf};

use parking_lot::RwLock;

use crate::error::{IoError, Result};
use crate::file::{PageFile, PunchOutcome};

/// Allocation unit of a [`MemFile`], like a 4 KiB file-system block.
pub const MEM_BLOCK_BYTES: u64 = 4096;

/// Contents and allocation map of a memory file.
#[derive(Debug, Default, Clone)]
struct Image {
    data: Vec<u8>,
    /// One flag per [`MEM_BLOCK_BYTES`] block of `data`: written since the last punch/truncate.
    allocated: Vec<bool>,
}

impl Image {
    fn blocks_for(len: u64) -> usize {
        len.div_ceil(MEM_BLOCK_BYTES) as usize
    }

    fn resize(&mut self, len: u64) {
        self.data.resize(len as usize, 0);
        self.allocated.resize(Self::blocks_for(len), false);
    }
}

/// An in-memory page file (`Vec<u8>` behind a lock). Writes allocate the 4 KiB blocks they
/// touch, `set_len` growth is sparse, `punch_hole` zeroes its range and frees the blocks it
/// covers entirely. Sync is a no-op. Thread-safe; reads share the lock. The whole length is
/// held in memory, so a write at a huge offset allocates that much.
#[derive(Debug, Default)]
pub struct MemFile {
    path: PathBuf,
    image: RwLock<Image>,
}

impl MemFile {
    /// An empty memory file; `name` appears as its path in errors (`mem:{name}`).
    pub fn new(name: &str) -> Self {
        MemFile {
            path: PathBuf::from(format!("mem:{name}")),
            image: RwLock::new(Image::default()),
        }
    }

    /// A memory file holding `data`, every block allocated.
    pub fn with_contents(name: &str, data: &[u8]) -> Self {
        let f = Self::new(name);
        {
            let mut img = f.image.write();
            img.data = data.to_vec();
            img.allocated = vec![true; Image::blocks_for(data.len() as u64)];
        }
        f
    }

    /// A copy of the whole contents.
    pub fn contents(&self) -> Vec<u8> {
        self.image.read().data.clone()
    }
}

impl PageFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let img = self.image.read();
        let size = img.data.len() as u64;
        let avail = size.saturating_sub(offset).min(buf.len() as u64) as usize;
        let (head, tail) = buf.split_at_mut(avail);
        if avail > 0 {
            let start = offset as usize;
            head.copy_from_slice(&img.data[start..start + avail]);
        }
        if tail.is_empty() {
            Ok(())
        } else {
            tail.fill(0);
            Err(IoError::past_eof(
                &self.path,
                offset,
                buf.len() as u64,
                size,
            ))
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let mut img = self.image.write();
        let end = offset + buf.len() as u64;
        if end > img.data.len() as u64 {
            img.resize(end);
        }
        let start = offset as usize;
        img.data[start..start + buf.len()].copy_from_slice(buf);
        let first = (offset / MEM_BLOCK_BYTES) as usize;
        let last = Image::blocks_for(end);
        img.allocated[first..last].fill(true);
        Ok(())
    }

    fn sync_data(&self) -> Result<()> {
        Ok(())
    }

    fn sync_all(&self) -> Result<()> {
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<()> {
        // Growth is sparse (new blocks unallocated); shrinking frees the blocks past the end.
        self.image.write().resize(len);
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        Ok(self.image.read().data.len() as u64)
    }

    fn allocated_bytes(&self) -> Result<u64> {
        let n = self.image.read().allocated.iter().filter(|&&a| a).count() as u64;
        Ok(n * MEM_BLOCK_BYTES)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<PunchOutcome> {
        let mut img = self.image.write();
        let size = img.data.len() as u64;
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(PunchOutcome::Punched);
        }
        img.data[offset as usize..end as usize].fill(0);
        // Free the blocks entirely inside [offset, offset + len); the block holding EOF counts
        // as entirely inside when the hole reaches EOF.
        let first = offset.div_ceil(MEM_BLOCK_BYTES) as usize;
        let last = if offset.saturating_add(len) >= size {
            Image::blocks_for(size)
        } else {
            (end / MEM_BLOCK_BYTES) as usize
        };
        if first < last {
            img.allocated[first..last].fill(false);
        }
        Ok(PunchOutcome::Punched)
    }

    fn atomic_write_unit(&self) -> Option<u32> {
        None
    }

    fn block_size(&self) -> u32 {
        // The unit `punch_hole` and `allocated_bytes` count in.
        MEM_BLOCK_BYTES as u32
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn backend_name(&self) -> &'static str {
        "memory"
    }
}
