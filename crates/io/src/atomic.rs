//! The rules of an untorn write ([`PageFile::write_atomic_at`](crate::PageFile::write_atomic_at)),
//! checked before the system call so that a refusal names the broken rule instead of being the
//! kernel's bare EINVAL. Shared by the real back ends and the fault-injecting file, so both
//! refuse exactly the same requests.
//!
//! Linux (`generic_atomic_write_valid`, 6.11+): the file is open O_DIRECT, the data is one
//! buffer, its length is a power of two within `[stx_atomic_write_unit_min,
//! stx_atomic_write_unit_max]`, and the file offset is a multiple of the length.

use std::path::Path;

use crate::error::{IoError, Op, Result};

/// The lengths a file accepts for untorn writes: `stx_atomic_write_unit_min ..=
/// stx_atomic_write_unit_max` of `statx(STATX_WRITE_ATOMIC)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtomicUnits {
    /// Shortest untorn write, in bytes.
    pub(crate) min: u32,
    /// Longest untorn write, in bytes.
    pub(crate) max: u32,
}

/// What the caller knows about the file an untorn write is aimed at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AtomicTarget<'a> {
    /// The file, for the error message.
    pub(crate) path: &'a Path,
    /// Its untorn-write lengths; `None` when the file system or device has none.
    pub(crate) units: Option<AtomicUnits>,
    /// Whether it was opened O_DIRECT.
    pub(crate) direct: bool,
    /// Alignment the buffer address needs (O_DIRECT memory alignment; 1 when any).
    pub(crate) mem_align: usize,
}

impl AtomicTarget<'_> {
    /// `Ok` when an untorn write of `buf` at `offset` keeps every rule; otherwise an
    /// [`IoErrorKind::Unsupported`](crate::IoErrorKind::Unsupported) error naming the first
    /// rule broken.
    pub(crate) fn check(&self, buf: &[u8], offset: u64) -> Result<()> {
        let len = buf.len();
        let refuse = |why: String| {
            Err(IoError::unsupported(
                Op::AtomicWrite,
                self.path,
                offset,
                len as u64,
                why,
            ))
        };
        if !self.direct {
            return refuse(
                "an untorn write (RWF_ATOMIC) needs a file opened with O_DIRECT; this one is \
                 buffered"
                    .to_owned(),
            );
        }
        let Some(units) = self.units else {
            return refuse(
                "the file system or device reports no untorn-write support (statx \
                 STATX_WRITE_ATOMIC)"
                    .to_owned(),
            );
        };
        if !len.is_power_of_two() {
            return refuse(format!(
                "an untorn write's length must be a power of two, got {len} bytes"
            ));
        }
        if len < units.min as usize || len > units.max as usize {
            return refuse(format!(
                "an untorn write's length must be within the file's atomic-write unit range \
                 [{}, {}] bytes, got {len}",
                units.min, units.max
            ));
        }
        if !offset.is_multiple_of(len as u64) {
            return refuse(format!(
                "an untorn write's file offset must be a multiple of its length {len}, got \
                 {offset}"
            ));
        }
        if self.mem_align > 1 && !(buf.as_ptr() as usize).is_multiple_of(self.mem_align) {
            return refuse(format!(
                "an untorn O_DIRECT write needs its buffer address aligned to {} bytes (use \
                 AlignedBuf)",
                self.mem_align
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AlignedBuf;

    const UNITS: AtomicUnits = AtomicUnits {
        min: 4096,
        max: 16384,
    };

    fn target(units: Option<AtomicUnits>, direct: bool) -> AtomicTarget<'static> {
        AtomicTarget {
            path: Path::new("/d/t.ibd"),
            units,
            direct,
            mem_align: 4096,
        }
    }

    /// The refusal message for `len` bytes at `offset`, or `None` when accepted.
    fn refusal(t: &AtomicTarget<'_>, buf: &[u8], offset: u64) -> Option<String> {
        let err = t.check(buf, offset).err()?;
        assert!(err.is_unsupported(), "{err}");
        assert_eq!(err.op(), Op::AtomicWrite);
        assert_eq!(err.raw_os_error(), None, "refused before the system call");
        Some(err.to_string())
    }

    #[test]
    fn every_rule_is_checked_and_named() {
        let page = AlignedBuf::zeroed(16384);
        let t = target(Some(UNITS), true);
        assert_eq!(refusal(&t, &page, 0), None);
        assert_eq!(refusal(&t, &page[..4096], 3 * 4096), None);
        let cases: [(&[u8], u64, &str); 5] = [
            (&page[..12288], 0, "power of two"),
            (&page[..2048], 0, "[4096, 16384]"),
            (&AlignedBuf::zeroed(32768), 0, "[4096, 16384]"),
            (&page, 4096, "multiple of its length 16384"),
            (&page[512..4608], 0, "buffer address aligned to 4096"),
        ];
        for (buf, offset, want) in cases {
            let msg = refusal(&t, buf, offset).unwrap_or_else(|| panic!("{want}: accepted"));
            assert!(msg.contains(want), "want {want:?} in {msg}");
            assert!(msg.contains("/d/t.ibd"), "{msg}");
        }
        let buffered = refusal(&target(Some(UNITS), false), &page, 0).unwrap_or_default();
        assert!(buffered.contains("O_DIRECT"), "{buffered}");
        let none = refusal(&target(None, true), &page, 0).unwrap_or_default();
        assert!(none.contains("STATX_WRITE_ATOMIC"), "{none}");
    }
}
