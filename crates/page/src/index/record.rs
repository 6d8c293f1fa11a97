//! Record encoding inside an index page.
//!
//! Format (all little-endian; `kind` low 2 bits, the other 6 bits reserved, MUST be 0):
//! - inline:   `{ kind=0 u8 | key_len u16 | value_len u16 | key | value }`
//! - overflow: `{ kind=1 u8 | key_len u16 | prefix_len u16 | total_len u64 | first_page u32 |
//!               key | prefix }`
//! - child:    `{ kind=2 u8 | key_len u16 | child u32 | key }`
//!
//! InnoDB: ROW_FORMAT=DYNAMIC stores a 20-byte external pointer; ours is 12 bytes plus an optional
//! inline prefix, since a key-value store has no column boundaries to keep prefixes of.

use crate::bytes::{put, put_u16, put_u32, put_u64, slice_at, u16_at, u32_at, u64_at, u8_at};
use crate::ids::{PageNo, FIL_NULL};

/// The longest value an overflow record may describe: 4 GiB − 1 bytes. The format could
/// address more, but readers allocate from `total_len`, so a crafted length must not ask for
/// an absurd allocation; decoding refuses anything longer.
pub const MAX_OVERFLOW_LEN: u64 = u32::MAX as u64;

/// Record kind byte: inline value.
pub(crate) const KIND_INLINE: u8 = 0;
/// Record kind byte: value stored in an overflow chain.
pub(crate) const KIND_OVERFLOW: u8 = 1;
/// Record kind byte: child pointer of an internal node.
pub(crate) const KIND_CHILD: u8 = 2;

/// Fixed bytes before the key of an inline record.
pub const INLINE_HEADER_SIZE: usize = 5;
/// Fixed bytes before the key of an overflow record.
pub const OVERFLOW_HEADER_SIZE: usize = 17;
/// Fixed bytes before the key of a child-pointer record.
pub const CHILD_HEADER_SIZE: usize = 7;

/// The value part of a record, borrowed from a page or from the caller.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ValueRef<'a> {
    /// The whole value, stored in the page (leaf pages only).
    Inline(&'a [u8]),
    /// A value stored off-page in a chain of [overflow pages](crate::OverflowPage) (leaf pages
    /// only). `prefix` is the first `prefix.len()` bytes of the value, kept inline (may be
    /// empty); the chain holds the remaining `total_len - prefix.len()` bytes.
    Overflow {
        /// Inline prefix of the value (may be empty).
        prefix: &'a [u8],
        /// Length of the whole value; MUST be greater than `prefix.len()`.
        total_len: u64,
        /// First page of the overflow chain; MUST NOT be `FIL_NULL`.
        first_page: PageNo,
    },
    /// The child page of an internal node (level > 0 only).
    Child(PageNo),
}

/// A record: a key and its value. Used both to insert records and to read them from a page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Record<'a> {
    /// The key bytes (compared with `memcmp` order, as `&[u8]`'s `Ord`).
    pub key: &'a [u8],
    /// The value.
    pub value: ValueRef<'a>,
}

/// A record read from a page (the same type as the one inserted).
pub type RecordRef<'a> = Record<'a>;

impl<'a> Record<'a> {
    /// A leaf record with an inline value.
    pub const fn inline(key: &'a [u8], value: &'a [u8]) -> Self {
        Self {
            key,
            value: ValueRef::Inline(value),
        }
    }

    /// A leaf record whose value lives in an overflow chain starting at `first_page`.
    pub const fn overflow(
        key: &'a [u8],
        prefix: &'a [u8],
        total_len: u64,
        first_page: PageNo,
    ) -> Self {
        Self {
            key,
            value: ValueRef::Overflow {
                prefix,
                total_len,
                first_page,
            },
        }
    }

    /// An internal-node record pointing to `child`.
    pub const fn child(key: &'a [u8], child: PageNo) -> Self {
        Self {
            key,
            value: ValueRef::Child(child),
        }
    }

    /// Bytes the record occupies in the heap (without its 2-byte slot).
    pub const fn encoded_len(&self) -> usize {
        let fixed = match self.value {
            ValueRef::Inline(v) => INLINE_HEADER_SIZE + v.len(),
            ValueRef::Overflow { prefix, .. } => OVERFLOW_HEADER_SIZE + prefix.len(),
            ValueRef::Child(_) => CHILD_HEADER_SIZE,
        };
        fixed + self.key.len()
    }

    /// Whether this is a child pointer (internal-node record).
    pub const fn is_child(&self) -> bool {
        matches!(self.value, ValueRef::Child(_))
    }

    /// The child page, for internal-node records.
    pub const fn child_page(&self) -> Option<PageNo> {
        match self.value {
            ValueRef::Child(p) => Some(p),
            _ => None,
        }
    }

    /// Checks the value-kind invariants that do not depend on the page: lengths representable
    /// and overflow pointers well-formed. Returns a description of the first violation.
    pub(crate) fn shape_error(&self) -> Option<&'static str> {
        if self.key.len() > usize::from(u16::MAX) {
            return Some("key length does not fit in u16");
        }
        match self.value {
            ValueRef::Inline(v) if v.len() > usize::from(u16::MAX) => {
                Some("inline value length does not fit in u16")
            }
            ValueRef::Overflow {
                prefix,
                total_len,
                first_page,
            } => {
                if prefix.len() > usize::from(u16::MAX) {
                    Some("overflow prefix length does not fit in u16")
                } else if total_len <= prefix.len() as u64 {
                    Some("overflow total length not greater than its prefix")
                } else if total_len > MAX_OVERFLOW_LEN {
                    // Readers size buffers from this length: bound it before anyone does.
                    Some("overflow total length above the 4 GiB - 1 limit")
                } else if first_page == FIL_NULL {
                    Some("overflow pointer is FIL_NULL")
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Appends the record's heap encoding (the bytes it occupies in a page, module docs) to
    /// `out`: what a redo record carries to replay an insert or a replace. Fails, appending
    /// nothing, with a description of the fault if the record has no valid encoding (a length
    /// beyond `u16`, an overflow pointer that is `FIL_NULL` or not longer than its prefix).
    pub fn encode_to(&self, out: &mut Vec<u8>) -> Result<(), &'static str> {
        if let Some(what) = self.shape_error() {
            return Err(what);
        }
        let at = out.len();
        out.resize(at + self.encoded_len(), 0);
        self.encode(out, at);
        Ok(())
    }

    /// Decodes a record from exactly `bytes` (as [`encode_to`](Self::encode_to) wrote it):
    /// every length is checked against `bytes`, and trailing bytes are an error. Never panics.
    pub fn decode_exact(bytes: &'a [u8]) -> Result<Self, &'static str> {
        let (rec, len) = Self::decode(bytes, 0, bytes.len())?;
        if len != bytes.len() {
            return Err("bytes left after the record");
        }
        Ok(rec)
    }

    /// Writes the record at `buf[off..off + encoded_len()]`. The caller has checked the bounds
    /// and [`shape_error`](Self::shape_error).
    pub(crate) fn encode(&self, buf: &mut [u8], off: usize) {
        let key_len = self.key.len() as u16;
        match self.value {
            ValueRef::Inline(v) => {
                put(buf, off, &[KIND_INLINE]);
                put_u16(buf, off + 1, key_len);
                put_u16(buf, off + 3, v.len() as u16);
                put(buf, off + INLINE_HEADER_SIZE, self.key);
                put(buf, off + INLINE_HEADER_SIZE + self.key.len(), v);
            }
            ValueRef::Overflow {
                prefix,
                total_len,
                first_page,
            } => {
                put(buf, off, &[KIND_OVERFLOW]);
                put_u16(buf, off + 1, key_len);
                put_u16(buf, off + 3, prefix.len() as u16);
                put_u64(buf, off + 5, total_len);
                put_u32(buf, off + 13, first_page);
                put(buf, off + OVERFLOW_HEADER_SIZE, self.key);
                put(buf, off + OVERFLOW_HEADER_SIZE + self.key.len(), prefix);
            }
            ValueRef::Child(child) => {
                put(buf, off, &[KIND_CHILD]);
                put_u16(buf, off + 1, key_len);
                put_u32(buf, off + 3, child);
                put(buf, off + CHILD_HEADER_SIZE, self.key);
            }
        }
    }

    /// Decodes the record at `buf[off..]`, which must end at or before `limit`. Returns the
    /// record and its encoded length, or a description of what is wrong. Never panics.
    /// Just the key of the record at `off` (heap bounded by `limit`): what binary search needs,
    /// without decoding the value. `None` where [`decode`](Self::decode) would fail on bounds.
    #[inline]
    pub(crate) fn decode_key(buf: &'a [u8], off: usize, limit: usize) -> Option<&'a [u8]> {
        let heap = buf.get(..limit)?;
        let header = match u8_at(heap, off)? {
            KIND_INLINE => INLINE_HEADER_SIZE,
            KIND_OVERFLOW => OVERFLOW_HEADER_SIZE,
            KIND_CHILD => CHILD_HEADER_SIZE,
            _ => return None,
        };
        let key_len = usize::from(u16_at(heap, off + 1)?);
        slice_at(heap, off + header, key_len)
    }

    #[inline]
    pub(crate) fn decode(
        buf: &'a [u8],
        off: usize,
        limit: usize,
    ) -> Result<(Self, usize), &'static str> {
        let heap = buf.get(..limit).ok_or("record limit beyond page")?;
        let oob = "record runs past the heap top";
        let kind = u8_at(heap, off).ok_or(oob)?;
        let key_len = usize::from(u16_at(heap, off + 1).ok_or(oob)?);
        match kind {
            KIND_INLINE => {
                let value_len = usize::from(u16_at(heap, off + 3).ok_or(oob)?);
                let key = slice_at(heap, off + INLINE_HEADER_SIZE, key_len).ok_or(oob)?;
                let value =
                    slice_at(heap, off + INLINE_HEADER_SIZE + key_len, value_len).ok_or(oob)?;
                Ok((
                    Self::inline(key, value),
                    INLINE_HEADER_SIZE + key_len + value_len,
                ))
            }
            KIND_OVERFLOW => {
                let prefix_len = usize::from(u16_at(heap, off + 3).ok_or(oob)?);
                let total_len = u64_at(heap, off + 5).ok_or(oob)?;
                let first_page = u32_at(heap, off + 13).ok_or(oob)?;
                let key = slice_at(heap, off + OVERFLOW_HEADER_SIZE, key_len).ok_or(oob)?;
                let prefix =
                    slice_at(heap, off + OVERFLOW_HEADER_SIZE + key_len, prefix_len).ok_or(oob)?;
                let rec = Self::overflow(key, prefix, total_len, first_page);
                if let Some(what) = rec.shape_error() {
                    return Err(what);
                }
                Ok((rec, OVERFLOW_HEADER_SIZE + key_len + prefix_len))
            }
            KIND_CHILD => {
                let child = u32_at(heap, off + 3).ok_or(oob)?;
                let key = slice_at(heap, off + CHILD_HEADER_SIZE, key_len).ok_or(oob)?;
                Ok((Self::child(key, child), CHILD_HEADER_SIZE + key_len))
            }
            _ => Err("unknown record kind or reserved kind bits set"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_to_and_decode_exact_round_trip_and_refuse_damage() {
        let recs = [
            Record::inline(b"key", b"value"),
            Record::overflow(b"big", b"pre", 100_000, 77),
            Record::child(b"sep", 9),
        ];
        for rec in recs {
            let mut out = vec![0xEE];
            rec.encode_to(&mut out).expect("valid record");
            assert_eq!(out.len(), 1 + rec.encoded_len());
            assert_eq!(
                Record::decode_exact(out.get(1..).unwrap_or_default()),
                Ok(rec)
            );
            out.push(0);
            assert!(
                Record::decode_exact(out.get(1..).unwrap_or_default()).is_err(),
                "trailing byte"
            );
            out.truncate(out.len() - 2);
            assert!(
                Record::decode_exact(out.get(1..).unwrap_or_default()).is_err(),
                "cut short"
            );
        }
        let bad = Record::overflow(b"k", b"", 10, FIL_NULL);
        let mut out = Vec::new();
        assert!(bad.encode_to(&mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn every_kind_round_trips() {
        let recs = [
            Record::inline(b"key", b"value"),
            Record::inline(b"", b""),
            Record::overflow(b"big", b"pre", 100_000, 77),
            Record::overflow(b"big", b"", 1, 78),
            Record::child(b"sep", 12),
            Record::child(b"", 0),
        ];
        for rec in recs {
            let mut buf = vec![0xAAu8; rec.encoded_len() + 10];
            rec.encode(&mut buf, 3);
            let (back, len) = Record::decode(&buf, 3, 3 + rec.encoded_len()).expect("decodes");
            assert_eq!(back, rec);
            assert_eq!(len, rec.encoded_len());
            // One byte short of the limit is out of bounds.
            assert!(Record::decode(&buf, 3, 2 + rec.encoded_len()).is_err());
        }
    }

    #[test]
    fn malformed_overflow_pointers_are_rejected() {
        assert!(Record::overflow(b"k", b"abc", 3, 1).shape_error().is_some());
        assert!(Record::overflow(b"k", b"", 10, FIL_NULL)
            .shape_error()
            .is_some());
        assert!(Record::overflow(b"k", b"", 10, 5).shape_error().is_none());
        assert!(Record::overflow(b"k", b"", MAX_OVERFLOW_LEN, 5)
            .shape_error()
            .is_none());
        assert!(Record::overflow(b"k", b"", MAX_OVERFLOW_LEN + 1, 5)
            .shape_error()
            .is_some());
        assert!(Record::overflow(b"k", b"", u64::MAX, 5)
            .shape_error()
            .is_some());
    }
}
