//! [`probe_atomic_writes`]: does a directory's file system give untorn page writes? Asked once
//! per database directory, so that doublewrite can be skipped where the device makes page
//! writes atomic and kept everywhere else.
// InnoDB (MariaDB): fil_node_t::atomic_write / my_test_if_atomic_write decide per file; the
// Linux answer (statx, then one RWF_ATOMIC O_DIRECT write) follows INNODB-FACTS §5.4.

use std::fmt;
use std::path::Path;

use crate::aligned::{AlignedBuf, DIRECT_IO_ALIGN};
use crate::file::PageFile;
use crate::fs::FileSystem;
use crate::options::OpenOptions;

/// Name of the scratch file the probe creates (and removes) in the directory it asks about.
/// The leading dot and the name keep it apart from every database file.
pub const ATOMIC_WRITE_PROBE_FILE: &str = ".atomic-write-probe";

/// The answer of [`probe_atomic_writes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtomicWriteProbe {
    /// A page-sized `RWF_ATOMIC` O_DIRECT write succeeded on a scratch file of the directory:
    /// files opened there with O_DIRECT can write pages untorn.
    Supported {
        /// The file system's largest untorn write (`stx_atomic_write_unit_max`), ≥ the page
        /// size.
        unit: u32,
    },
    /// Page writes there may tear; the reason says why.
    Unsupported(AtomicWriteRefusal),
}

/// Why untorn page writes are not available in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtomicWriteRefusal {
    /// The page size is not a power of two (untorn writes need one).
    BadPageSize {
        /// The page size asked about.
        page_size: usize,
    },
    /// The file system refused O_DIRECT for the scratch file, which untorn writes require.
    DirectIoRefused {
        /// The open error.
        error: String,
    },
    /// The scratch file could not be created or written with a plain write, for a reason other
    /// than O_DIRECT.
    ScratchFile {
        /// The failed operation's error.
        error: String,
    },
    /// The file system or device reports no untorn-write support (no `statx`
    /// `STATX_WRITE_ATOMIC` answer, or a kernel before 6.11).
    NoAtomicWriteUnit,
    /// The largest untorn write is smaller than a page.
    UnitTooSmall {
        /// `stx_atomic_write_unit_max`, bytes.
        unit: u32,
        /// The page size, bytes.
        page_size: usize,
    },
    /// The untorn write of one page was refused or failed.
    WriteRefused {
        /// The errno, when the kernel refused (EINVAL, EOPNOTSUPP) rather than the rule checks.
        errno: Option<i32>,
        /// The error.
        error: String,
    },
}

impl fmt::Display for AtomicWriteRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadPageSize { page_size } => {
                write!(f, "page size {page_size} is not a power of two")
            }
            Self::DirectIoRefused { error } => write!(f, "O_DIRECT refused: {error}"),
            Self::ScratchFile { error } => write!(f, "the probe's scratch file failed: {error}"),
            Self::NoAtomicWriteUnit => f.write_str(
                "the file system reports no untorn-write support (statx STATX_WRITE_ATOMIC)",
            ),
            Self::UnitTooSmall { unit, page_size } => write!(
                f,
                "the atomic-write unit is smaller than a page ({unit} < {page_size} bytes)"
            ),
            Self::WriteRefused { errno, error } => match errno {
                Some(errno) => write!(f, "the untorn write was refused (errno {errno}): {error}"),
                None => write!(f, "the untorn write was refused: {error}"),
            },
        }
    }
}

impl AtomicWriteProbe {
    /// Whether pages can be written untorn.
    pub fn is_supported(&self) -> bool {
        matches!(self, Self::Supported { .. })
    }

    /// Why not, when not.
    pub fn refusal(&self) -> Option<&AtomicWriteRefusal> {
        match self {
            Self::Supported { .. } => None,
            Self::Unsupported(why) => Some(why),
        }
    }
}

impl fmt::Display for AtomicWriteProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Supported { unit } => write!(f, "untorn writes supported (unit {unit} bytes)"),
            Self::Unsupported(why) => write!(f, "untorn writes not supported: {why}"),
        }
    }
}

/// Asks whether files of `dir` on `fs` can write pages of `page_size` bytes untorn: creates
/// the scratch file [`ATOMIC_WRITE_PROBE_FILE`] in `dir` with O_DIRECT, checks that
/// [`PageFile::atomic_write_unit`] is at least `page_size`, writes one page plainly (so the
/// untorn write overwrites allocated blocks, as a page flush does) and then once with
/// [`PageFile::write_atomic_at`].
///
/// Never panics and never fails: every problem is a typed [`AtomicWriteRefusal`]. The scratch
/// file is removed before returning, whatever the answer (a removal that fails is logged; a
/// file left by a crash during the probe is truncated and removed by the next probe). Nothing
/// is synced, so the probe costs no flush of the device's cache.
pub fn probe_atomic_writes(fs: &dyn FileSystem, dir: &Path, page_size: usize) -> AtomicWriteProbe {
    if !page_size.is_power_of_two() {
        return AtomicWriteProbe::Unsupported(AtomicWriteRefusal::BadPageSize { page_size });
    }
    let path = dir.join(ATOMIC_WRITE_PROBE_FILE);
    let opts = OpenOptions::new().create(true).truncate(true).direct(true);
    let file = match fs.open(&path, &opts) {
        Ok(file) => file,
        Err(e) if e.is_unsupported() => {
            // The failed open may still have created the file (O_DIRECT is refused by some
            // file systems only after the inode exists).
            remove_scratch(fs, &path);
            return AtomicWriteProbe::Unsupported(AtomicWriteRefusal::DirectIoRefused {
                error: e.to_string(),
            });
        }
        Err(e) => {
            remove_scratch(fs, &path);
            return AtomicWriteProbe::Unsupported(AtomicWriteRefusal::ScratchFile {
                error: e.to_string(),
            });
        }
    };
    let answer = probe_file(&*file, page_size);
    drop(file);
    remove_scratch(fs, &path);
    tracing::debug!(dir = %dir.display(), page_size, answer = %answer, "atomic-write probe");
    answer
}

/// The probe proper, on the open scratch file.
fn probe_file(file: &dyn PageFile, page_size: usize) -> AtomicWriteProbe {
    let refused = AtomicWriteProbe::Unsupported;
    let Some(unit) = file.atomic_write_unit() else {
        return refused(AtomicWriteRefusal::NoAtomicWriteUnit);
    };
    if (unit as usize) < page_size {
        return refused(AtomicWriteRefusal::UnitTooSmall { unit, page_size });
    }
    let page = AlignedBuf::with_alignment(page_size, file.alignment().max(DIRECT_IO_ALIGN));
    if let Err(e) = file.write_at(&page, 0) {
        return refused(AtomicWriteRefusal::ScratchFile {
            error: e.to_string(),
        });
    }
    match file.write_atomic_at(&page, 0) {
        Ok(()) => AtomicWriteProbe::Supported { unit },
        Err(e) => refused(AtomicWriteRefusal::WriteRefused {
            errno: e.raw_os_error(),
            error: e.to_string(),
        }),
    }
}

/// Removes the scratch file if it exists; a failure is logged, not returned, because the
/// answer about untorn writes stands either way.
fn remove_scratch(fs: &dyn FileSystem, path: &Path) {
    match fs.exists(path) {
        Ok(false) => {}
        Ok(true) => {
            if let Err(e) = fs.remove(path) {
                tracing::warn!(path = %path.display(), error = %e, "could not remove the atomic-write probe file");
            }
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not check for the atomic-write probe file");
        }
    }
}
