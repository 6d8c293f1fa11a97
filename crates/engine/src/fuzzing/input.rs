//! Decoding a fuzz input into the files of a database directory (the format is described in
//! the [module docs](super)), and encoding the seed corpus in the same format.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use barracuda_page::{seal_page, FileHeader, PageSize, SpaceHeader, FIL_NULL};

use super::shapes::{shape, DbFile, Rows, Shape, SHAPES};
use crate::layout::{SYSTEM_FILE, TABLES_DIR};

/// Flag of a mutation's kind byte: leave the page's checksum and trailer as the mutation left
/// them, so that the verification path itself is fuzzed.
pub(crate) const NO_RESEAL: u8 = 0x80;
/// Flag of a mutation's page selector: the page number is taken modulo the file's pages, not
/// as an index into the pages that hold data.
pub(crate) const ANY_PAGE: u16 = 0x8000;
/// Flag of the raw mode's flags byte: seal every whole page of every file after assembling it.
pub(crate) const RAW_RESEAL: u8 = 1;

/// Mutation kinds (the kind byte modulo their count, after [`NO_RESEAL`] is masked off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// XOR one byte with the operand byte (0 counts as `0xff`).
    Flip = 0,
    /// Overwrite with the operand's `len: u8` bytes.
    Overwrite = 1,
    /// Write the operand's little-endian `u32`.
    PutU32 = 2,
    /// Write one of [`interesting`]'s values as a little-endian `u32`, chosen by the operand byte.
    PutSpecial = 3,
    /// Truncate the file at this page and offset.
    Truncate = 4,
    /// Copy the page chosen by the operand's page selector over this page, keeping this page's
    /// number, so that the copy passes verification and two pages hold one page's links.
    CopyPage = 5,
}

const KINDS: u8 = 6;

impl Kind {
    fn from_byte(b: u8) -> Self {
        match (b & !NO_RESEAL) % KINDS {
            0 => Self::Flip,
            1 => Self::Overwrite,
            2 => Self::PutU32,
            3 => Self::PutSpecial,
            4 => Self::Truncate,
            _ => Self::CopyPage,
        }
    }
}

/// A database directory's worth of files decoded from one input.
pub(crate) struct Database {
    /// `system.ibs` first, then tables.
    pub(crate) files: Vec<DbFile>,
    /// The rows every table must hold, when the input left a generated database untouched.
    pub(crate) expected: Option<&'static std::collections::BTreeMap<String, Rows>>,
}

impl Database {
    /// Decodes `data`; `None` when it is empty.
    pub(crate) fn decode(data: &[u8]) -> Option<Self> {
        let (&mode, rest) = data.split_first()?;
        Some(if mode % 2 == 0 {
            mutated(shape(usize::from(mode / 2) % SHAPES), rest)
        } else {
            raw(rest)
        })
    }

    /// Writes the files under `dir` (which must exist).
    pub(crate) fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join(TABLES_DIR))?;
        for file in &self.files {
            write_sparse(&dir.join(&file.rel), file)?;
        }
        Ok(())
    }

    /// The page size `system.ibs` claims, if it claims one.
    pub(crate) fn page_size(&self) -> Option<PageSize> {
        let system = self.files.first()?;
        SpaceHeader::peek_page_size(&system.bytes).ok()
    }

    /// Total bytes of all files: no scan can yield more rows than this.
    pub(crate) fn total_bytes(&self) -> usize {
        self.files.iter().map(|f| f.bytes.len()).sum()
    }
}

/// Writes the file's data and extends it to its full length without writing the zero tail
/// (tables are a whole extent, mostly unwritten).
fn write_sparse(path: &Path, file: &DbFile) -> std::io::Result<()> {
    let bytes = &file.bytes;
    let out = std::fs::File::create(path)?;
    std::io::Write::write_all(&mut &out, bytes.get(..file.data_len).unwrap_or(bytes))?;
    out.set_len(bytes.len() as u64)
}

/// A cursor over the input that yields zeros once it runs out, so every input decodes.
struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.data.split_first().unwrap_or((&0, &[]));
        self.data = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn bytes(&mut self, len: usize) -> &[u8] {
        let (taken, rest) = self.data.split_at(len.min(self.data.len()));
        self.data = rest;
        taken
    }
}

/// Values that page-number, length and count fields treat specially.
fn interesting(selector: u8, pages: u32, page_size: PageSize) -> u32 {
    let candidates = [
        0,
        1,
        2,
        3,
        FIL_NULL,
        FIL_NULL - 1,
        i32::MAX as u32,
        pages,
        pages.saturating_sub(1),
        pages + 1,
        page_size.bytes() as u32,
        page_size.bytes() as u32 - 1,
        0xffff,
        0x1_0000,
    ];
    candidates
        .get(usize::from(selector) % candidates.len())
        .copied()
        .unwrap_or(0)
}

/// Mutating mode: the generated database `shape`, changed by the operations in `data`.
fn mutated(shape: &'static Shape, data: &[u8]) -> Database {
    let ps = shape.page_size.bytes();
    let mut files = shape.files.clone();
    let mut touched = BTreeSet::new();
    let mut reader = Reader { data };
    let untouched = reader.is_empty();
    while !reader.is_empty() {
        let kind_byte = reader.u8();
        let f = usize::from(reader.u8()) % files.len();
        let used = shape.used_pages.get(f).map_or(&[][..], Vec::as_slice);
        let page_selector = reader.u16();
        let offset = usize::from(reader.u16()) % ps;
        let Some(file) = files.get_mut(f) else {
            continue;
        };
        let pages = file.bytes.len() / ps;
        let Some(page) = choose_page(used, pages, page_selector).filter(|&p| p < pages) else {
            continue;
        };
        // Writes start in `page` and may run into the next one (at most 255 bytes).
        file.data_len = file.data_len.max((page + 2) * ps).min(file.bytes.len());
        let bytes = &mut file.bytes;
        let at = page * ps + offset;
        match Kind::from_byte(kind_byte) {
            Kind::Flip => {
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= reader.u8().max(1);
                }
            }
            Kind::Overwrite => {
                let len = usize::from(reader.u8());
                put(bytes, at, reader.bytes(len));
            }
            Kind::PutU32 => put(bytes, at, &reader.u32().to_le_bytes()),
            Kind::PutSpecial => {
                let v = interesting(reader.u8(), pages as u32, shape.page_size);
                put(bytes, at, &v.to_le_bytes());
            }
            Kind::Truncate => {
                bytes.truncate(at);
                file.data_len = file.data_len.min(at);
                continue;
            }
            Kind::CopyPage => {
                let from = choose_page(used, pages, reader.u16()).unwrap_or(0);
                if from < pages {
                    bytes.copy_within(from * ps..(from + 1) * ps, page * ps);
                    if let Some(image) = bytes.get_mut(page * ps..(page + 1) * ps) {
                        if let Ok(mut header) = FileHeader::read(image) {
                            header.page_no = page as u32;
                            header.write(image);
                        }
                    }
                }
            }
        }
        // A page is resealed at the end unless the last mutation on it asked not to be.
        if kind_byte & NO_RESEAL == 0 {
            touched.insert((f, page));
        } else {
            touched.remove(&(f, page));
        }
    }
    for (f, page) in touched {
        let image = files
            .get_mut(f)
            .and_then(|file| file.bytes.get_mut(page * ps..(page + 1) * ps));
        if let Some(image) = image {
            seal_page(image);
        }
    }
    Database {
        files,
        expected: untouched.then_some(&shape.tables),
    }
}

/// Page `selector` of a file of `pages` pages whose data pages are `used`: with [`ANY_PAGE`]
/// any page, else the selector-th data page.
fn choose_page(used: &[u32], pages: usize, selector: u16) -> Option<usize> {
    if selector & ANY_PAGE != 0 {
        (pages > 0).then(|| usize::from(selector & !ANY_PAGE) % pages)
    } else {
        let n = used.get(usize::from(selector) % used.len().max(1))?;
        Some(*n as usize)
    }
}

/// Copies as much of `src` as fits into `bytes` at `at`.
fn put(bytes: &mut [u8], at: usize, src: &[u8]) {
    if let Some(tail) = bytes.get_mut(at..) {
        for (dst, &b) in tail.iter_mut().zip(src) {
            *dst = b;
        }
    }
}

/// Letters a raw-mode file name byte outside the table-name alphabet is mapped to.
const NAME_ALPHABET: &[u8; 64] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

/// Raw mode: the files are spelled out in `data`.
fn raw(data: &[u8]) -> Database {
    let mut reader = Reader { data };
    let flags = reader.u8();
    let system = raw_file(&mut reader, PathBuf::from(SYSTEM_FILE));
    let page_size = SpaceHeader::peek_page_size(&system.bytes).unwrap_or(PageSize::K4);
    let mut files = vec![system];
    while !reader.is_empty() {
        let name_len = usize::from(reader.u8()) % (barracuda_page::catalog::MAX_NAME_LEN + 1);
        let name: String = reader
            .bytes(name_len)
            .iter()
            .map(|&b| {
                if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                    char::from(b)
                } else {
                    NAME_ALPHABET
                        .get(usize::from(b) % NAME_ALPHABET.len())
                        .map_or('_', |&c| char::from(c))
                }
            })
            .collect();
        let rel = Path::new(TABLES_DIR).join(format!("{name}.ibd"));
        let file = raw_file(&mut reader, rel);
        if !name.is_empty() && !files.iter().any(|f| f.rel == file.rel) {
            files.push(file);
        }
    }
    if flags & RAW_RESEAL != 0 {
        for file in &mut files {
            // Never-written (all-zero) pages stay so: they are legal where the bitmap says free.
            let data = file.bytes.get_mut(..file.data_len).unwrap_or_default();
            for page in data.chunks_exact_mut(page_size.bytes()) {
                if page.iter().any(|&b| b != 0) {
                    seal_page(page);
                }
            }
        }
    }
    Database {
        files,
        expected: None,
    }
}

/// The most a raw-mode file is padded to, so the harness's own memory stays bounded (a file
/// shorter than its header claims is still reachable through the header's fields).
pub(crate) const MAX_RAW_FILE: usize = 2 << 20;

/// `[len: u16][pages: u16][len bytes]`: the bytes, then zeros up to `pages` pages (of the page
/// size the file's page 0 claims, else 4 KiB), at most [`MAX_RAW_FILE`] bytes.
fn raw_file(reader: &mut Reader<'_>, rel: PathBuf) -> DbFile {
    let len = usize::from(reader.u16());
    let pages = usize::from(reader.u16());
    let mut bytes = reader.bytes(len).to_vec();
    let data_len = bytes.len();
    let page_size = SpaceHeader::peek_page_size(&bytes).map_or(4096, PageSize::bytes);
    let padded = (pages * page_size).min(MAX_RAW_FILE);
    if bytes.len() < padded {
        bytes.resize(padded, 0);
    }
    DbFile {
        rel,
        bytes,
        data_len,
    }
}
