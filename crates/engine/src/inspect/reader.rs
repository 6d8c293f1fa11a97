//! Reading the pages of a closed database's files with plain positioned reads (no buffer pool).

use std::cell::RefCell;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use barracuda_page::{PageId, PageNo, PageSize, SpaceId};

use super::Problem;

/// A file of pages read with plain positioned reads.
pub(super) struct PageReader {
    path: PathBuf,
    file: RefCell<File>,
    /// The tablespace id its pages carry (compressed images are checked against it).
    space_id: SpaceId,
    pub(super) page_size: PageSize,
    /// Whole pages in the file.
    pub(super) pages: u32,
    /// Bytes past the last whole page (a torn extension).
    tail_bytes: u64,
}

impl PageReader {
    /// Opens `path` read-only; the problem names the file when it cannot be opened.
    pub(super) fn open(
        path: &Path,
        page_size: PageSize,
        space_id: SpaceId,
    ) -> std::result::Result<Self, Problem> {
        let problem = |e: std::io::Error| Problem {
            file: path.to_owned(),
            page_no: None,
            reason: e.to_string(),
        };
        let file = File::open(path).map_err(problem)?;
        let len = file.metadata().map_err(problem)?.len();
        let ps = page_size.bytes() as u64;
        let pages = u32::try_from(len / ps).unwrap_or(u32::MAX);
        Ok(Self {
            path: path.to_owned(),
            file: RefCell::new(file),
            space_id,
            page_size,
            pages,
            tail_bytes: len % ps,
        })
    }

    /// Reads page `page_no` into a new buffer, decompressed if it was stored compressed (a
    /// compressed image that fails its checks is an `InvalidData` error saying why).
    pub(super) fn read(&self, page_no: PageNo) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.page_size.bytes()];
        self.read_into(page_no, &mut buf)?;
        let id = PageId::new(self.space_id, page_no);
        if crate::row_compression::decode_slot(&mut buf, id, self.page_size, None).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("row-compressed block: {e}"),
            )
        })? {
            return Ok(buf);
        }
        crate::compression::decode_stored_page(&mut buf, id, self.page_size, None).map_err(
            |e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("page-compressed image: {e}"),
                )
            },
        )?;
        Ok(buf)
    }

    /// Reads page `page_no` into `buf` (one page long).
    pub(super) fn read_into(&self, page_no: PageNo, buf: &mut [u8]) -> std::io::Result<()> {
        let mut file = self.file.borrow_mut();
        file.seek(SeekFrom::Start(
            u64::from(page_no) * self.page_size.bytes() as u64,
        ))?;
        file.read_exact(buf)
    }

    /// The problem of a file whose length is not a whole number of pages, if it is one.
    pub(super) fn tail_problem(&self) -> Option<Problem> {
        (self.tail_bytes != 0).then(|| {
            self.problem(
                None,
                format!("{} bytes past the last whole page", self.tail_bytes),
            )
        })
    }

    /// A problem with this file (and page, if given).
    pub(super) fn problem(&self, page_no: Option<PageNo>, reason: impl Into<String>) -> Problem {
        Problem {
            file: self.path.clone(),
            page_no,
            reason: reason.into(),
        }
    }
}
