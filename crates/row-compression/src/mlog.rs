//! The modification log: the changes made to the page since its stream was compressed,
//! appended uncompressed after the stream and replayed, in order, on the decompressed base.
//!
//! Each entry names the same operation the uncompressed page went through — the
//! [`IndexPage`] insert, replace, remove, truncate of FORMATS §5.4, or a byte write — so
//! replaying the log with the same functions gives the same page, byte for byte in every
//! live record (the redo log replays index pages the same way, §10.1). InnoDB's log has two
//! entry kinds (write record, clear record) because its records are found by heap number;
//! ours carries positions, since the page's slot directory is dense and ordered.
//!
//! Entry (FORMATS §14.3): a tag byte (never 0), then varints and bytes. 0 ends the log.

use barracuda_page::{IndexPage, PageError, PageSize, Record};

use crate::error::{Result, RowCompressionError};
use barracuda_page::PageId;

/// Tag: `record` inserted at `pos` (varint pos, varint len, the record's heap encoding).
pub(crate) const TAG_INSERT: u8 = 1;
/// Tag: record `pos` replaced (varint pos, varint len, the new record's encoding).
pub(crate) const TAG_REPLACE: u8 = 2;
/// Tag: record `pos` removed (varint pos).
pub(crate) const TAG_REMOVE: u8 = 3;
/// Tag: records `at..` removed and the page compacted (varint at).
pub(crate) const TAG_TRUNCATE: u8 = 4;
/// Tag: bytes written at an offset of the page (varint offset, varint len, the bytes).
pub(crate) const TAG_WRITE: u8 = 5;

/// The largest value a varint carries: three bytes of 7 bits (enough for any offset of a
/// 64 KiB page, any position, any record).
const VARINT_MAX: u32 = (1 << 21) - 1;

/// Appends `v` as a varint (LEB128, at most 3 bytes).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    debug_assert!(v <= VARINT_MAX);
    loop {
        let low = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// Reads a varint at `*at`, advancing it; `None` if it runs past `buf` or past 3 bytes.
pub(crate) fn get_varint(buf: &[u8], at: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for i in 0..3 {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u32::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// One decoded log entry, borrowing its bytes from the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    Insert { pos: usize, record: &'a [u8] },
    Replace { pos: usize, record: &'a [u8] },
    Remove { pos: usize },
    Truncate { at: usize },
    Write { offset: usize, bytes: &'a [u8] },
}

impl Entry<'_> {
    /// Appends the entry's encoding to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Insert { pos, record } | Self::Replace { pos, record } => {
                out.push(if matches!(self, Self::Insert { .. }) {
                    TAG_INSERT
                } else {
                    TAG_REPLACE
                });
                put_varint(out, pos as u32);
                put_varint(out, record.len() as u32);
                out.extend_from_slice(record);
            }
            Self::Remove { pos } => {
                out.push(TAG_REMOVE);
                put_varint(out, pos as u32);
            }
            Self::Truncate { at } => {
                out.push(TAG_TRUNCATE);
                put_varint(out, at as u32);
            }
            Self::Write { offset, bytes } => {
                out.push(TAG_WRITE);
                put_varint(out, offset as u32);
                put_varint(out, bytes.len() as u32);
                out.extend_from_slice(bytes);
            }
        }
    }
}

/// Decodes the entries of `log` (the bytes from the end of the stream to the end marker,
/// exclusive). Every length is bounded by `log`; an unknown tag is an error.
pub(crate) fn entries(log: &[u8], page: PageId) -> Result<Vec<Entry<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    let bad = |at: usize, what: &str| {
        RowCompressionError::corrupt(page, format!("modification log entry at byte {at}: {what}"))
    };
    while at < log.len() {
        let start = at;
        let tag = log.get(at).copied().unwrap_or(0);
        at += 1;
        let mut varint = |what: &str| get_varint(log, &mut at).ok_or_else(|| bad(start, what));
        let entry = match tag {
            TAG_INSERT | TAG_REPLACE | TAG_WRITE => {
                let first = varint("its first field runs past the log")? as usize;
                let len = varint("its length runs past the log")? as usize;
                let bytes = at
                    .checked_add(len)
                    .and_then(|end| log.get(at..end))
                    .ok_or_else(|| bad(start, &format!("{len} bytes run past the log's end")))?;
                at += len;
                match tag {
                    TAG_INSERT => Entry::Insert {
                        pos: first,
                        record: bytes,
                    },
                    TAG_REPLACE => Entry::Replace {
                        pos: first,
                        record: bytes,
                    },
                    _ => Entry::Write {
                        offset: first,
                        bytes,
                    },
                }
            }
            TAG_REMOVE => Entry::Remove {
                pos: varint("its position runs past the log")? as usize,
            },
            TAG_TRUNCATE => Entry::Truncate {
                at: varint("its position runs past the log")? as usize,
            },
            other => {
                return Err(bad(
                    start,
                    &format!("unknown tag {other:#04x} (expected 1 to 5)"),
                ))
            }
        };
        out.push(entry);
    }
    Ok(out)
}

/// Replays `entry` on `page` with the function that made the change.
pub(crate) fn replay(
    entry: &Entry<'_>,
    buf: &mut [u8],
    page_size: PageSize,
    page: PageId,
) -> Result<()> {
    let page_err = |source: PageError| RowCompressionError::Page { page, source };
    let record = |bytes| {
        Record::decode_exact(bytes).map_err(|what| {
            RowCompressionError::corrupt(page, format!("a logged record does not decode: {what}"))
        })
    };
    if let Entry::Write { offset, bytes } = *entry {
        let end = offset
            .checked_add(bytes.len())
            .filter(|&e| e <= page_size.bytes() - barracuda_page::FIL_TRAILER_SIZE);
        let dst = end
            .filter(|_| offset >= barracuda_page::FIL_HEADER_SIZE)
            .and_then(|end| buf.get_mut(offset..end))
            .ok_or_else(|| {
                RowCompressionError::corrupt(
                    page,
                    format!(
                        "a logged write of {} bytes at offset {offset} outside the page body",
                        bytes.len()
                    ),
                )
            })?;
        dst.copy_from_slice(bytes);
        return Ok(());
    }
    let mut index = IndexPage::open_trusted(buf, page_size).map_err(page_err)?;
    match *entry {
        Entry::Insert { pos, record: bytes } => index.insert(pos, &record(bytes)?),
        Entry::Replace { pos, record: bytes } => index.replace(pos, &record(bytes)?),
        Entry::Remove { pos } => index.remove(pos),
        Entry::Truncate { at } => {
            let n = index.len();
            if at > n {
                return Err(page_err(PageError::OutOfRange { index: at, len: n }));
            }
            index.remove_range(at..n).map(|()| index.compact())
        }
        Entry::Write { .. } => Ok(()),
    }
    .map_err(page_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_overlong_encodings() {
        for v in [0, 1, 127, 128, 16_383, 16_384, 65_535, VARINT_MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut at = 0;
            assert_eq!(get_varint(&out, &mut at), Some(v));
            assert_eq!(at, out.len());
        }
        let mut at = 0;
        assert_eq!(get_varint(&[0x80, 0x80, 0x80, 0x01], &mut at), None);
        let mut at = 0;
        assert_eq!(get_varint(&[0x80], &mut at), None);
    }

    #[test]
    fn entries_decode_what_encode_wrote_and_refuse_damage() {
        let all = [
            Entry::Insert {
                pos: 3,
                record: b"abc",
            },
            Entry::Replace {
                pos: 300,
                record: b"",
            },
            Entry::Remove { pos: 7 },
            Entry::Truncate { at: 0 },
            Entry::Write {
                offset: 40_000,
                bytes: b"xy",
            },
        ];
        let mut log = Vec::new();
        for e in &all {
            e.encode(&mut log);
        }
        let page = PageId::new(1, 2);
        assert_eq!(entries(&log, page).unwrap(), all);
        assert!(entries(&log[..log.len() - 1], page).is_err(), "cut short");
        let mut bad = log.clone();
        bad[0] = 9;
        assert!(entries(&bad, page).is_err(), "unknown tag");
    }
}
