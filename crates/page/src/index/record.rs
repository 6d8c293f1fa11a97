//! Record encoding inside an index page.
//!
//! Format (all little-endian; `kind` low 2 bits, bit 5 the delete mark of a leaf record, the
//! other bits reserved, MUST be 0):
//! - inline:   `{ kind=0 u8 | key_len u16 | value_len u16 | trx_id u48 | roll_ptr u56 | key |
//!               value }`
//! - overflow: `{ kind=1 u8 | key_len u16 | prefix_len u16 | total_len u64 | first_page u32 |
//!               trx_id u48 | roll_ptr u56 | key | prefix }`
//! - child:    `{ kind=2 u8 | key_len u16 | child u32 | key }`
//!
//! `trx_id` and `roll_ptr` are InnoDB's `DB_TRX_ID` (6 bytes) and `DB_ROLL_PTR` (7 bytes): the
//! transaction that last changed the record and where its previous version is, in the undo log
//! ([`SysFields`]). They sit at a fixed offset before the key, so that a transaction can rewrite
//! them (and the delete mark) in place without re-encoding the record.
//!
//! InnoDB: ROW_FORMAT=DYNAMIC stores a 20-byte external pointer; ours is 12 bytes plus an optional
//! inline prefix, since a key-value store has no column boundaries to keep prefixes of.

use crate::bytes::{
    get_array, put, put_u16, put_u32, put_u64, slice_at, u16_at, u32_at, u64_at, u8_at,
};
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
/// The kind bits of the first byte.
const KIND_MASK: u8 = 0b11;
/// The delete mark in the first byte of a leaf record (InnoDB: `REC_INFO_DELETED_FLAG`).
pub(crate) const DELETE_MARK: u8 = 0x20;

/// Bytes of a leaf record's transaction fields: `trx_id` (6) and `roll_ptr` (7).
pub const SYS_FIELDS_SIZE: usize = TRX_ID_SIZE + ROLL_PTR_SIZE;
const TRX_ID_SIZE: usize = 6;
const ROLL_PTR_SIZE: usize = 7;
/// The largest transaction id a record can hold (48 bits, as InnoDB's `DB_TRX_ID`).
pub const MAX_TRX_ID: u64 = (1 << 48) - 1;
/// The largest roll pointer a record can hold (56 bits, as InnoDB's `DB_ROLL_PTR`).
pub const MAX_ROLL_PTR: u64 = (1 << 56) - 1;

/// Offset, inside an inline record, of its transaction fields.
pub const INLINE_SYS_OFFSET: usize = 5;
/// Offset, inside an overflow record, of its transaction fields.
pub const OVERFLOW_SYS_OFFSET: usize = 17;
/// Fixed bytes before the key of an inline record.
pub const INLINE_HEADER_SIZE: usize = INLINE_SYS_OFFSET + SYS_FIELDS_SIZE;
/// Fixed bytes before the key of an overflow record.
pub const OVERFLOW_HEADER_SIZE: usize = OVERFLOW_SYS_OFFSET + SYS_FIELDS_SIZE;
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

/// The transaction fields of a leaf record: who changed it last, where its previous version
/// is, and whether it is delete-marked (InnoDB: `DB_TRX_ID`, `DB_ROLL_PTR` and
/// `REC_INFO_DELETED_FLAG`). All zero — the default — means "no history: visible to every
/// reader", what a record written outside transactions or purged of its history holds.
/// Child records carry none (they are always the default).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct SysFields {
    /// The id of the transaction that last changed the record; at most [`MAX_TRX_ID`].
    pub trx_id: u64,
    /// Where the record's previous version is in the undo log (the undo log defines the
    /// bits); at most [`MAX_ROLL_PTR`].
    pub roll_ptr: u64,
    /// Whether the record is delete-marked: deleted by `trx_id`, kept until purge removes it.
    pub deleted: bool,
}

impl SysFields {
    /// Fields with no history: transaction 0, no previous version, not deleted.
    pub const NONE: Self = Self {
        trx_id: 0,
        roll_ptr: 0,
        deleted: false,
    };

    /// Writes `trx_id` and `roll_ptr` (13 bytes, little-endian) at `buf[off..]`.
    pub(crate) fn encode_ids(&self, buf: &mut [u8], off: usize) {
        let trx = self.trx_id.to_le_bytes();
        let roll = self.roll_ptr.to_le_bytes();
        put(buf, off, trx.get(..TRX_ID_SIZE).unwrap_or_default());
        put(
            buf,
            off + TRX_ID_SIZE,
            roll.get(..ROLL_PTR_SIZE).unwrap_or_default(),
        );
    }

    /// Reads the 13 bytes of ids at `buf[off..]` and the delete mark from `kind_byte`.
    pub(crate) fn decode(buf: &[u8], off: usize, kind_byte: u8) -> Option<Self> {
        let raw: [u8; SYS_FIELDS_SIZE] = get_array(buf, off)?;
        let (trx, roll) = raw.split_at(TRX_ID_SIZE);
        let mut trx_id = [0u8; 8];
        let mut roll_ptr = [0u8; 8];
        trx_id.get_mut(..TRX_ID_SIZE)?.copy_from_slice(trx);
        roll_ptr.get_mut(..ROLL_PTR_SIZE)?.copy_from_slice(roll);
        Some(Self {
            trx_id: u64::from_le_bytes(trx_id),
            roll_ptr: u64::from_le_bytes(roll_ptr),
            deleted: kind_byte & DELETE_MARK != 0,
        })
    }

    /// The first byte of a leaf record of `kind` with these fields.
    pub(crate) const fn kind_byte(&self, kind: u8) -> u8 {
        if self.deleted {
            kind | DELETE_MARK
        } else {
            kind
        }
    }
}

/// A record: a key, its value and, for leaf records, its transaction fields. Used both to
/// insert records and to read them from a page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Record<'a> {
    /// The key bytes (compared with `memcmp` order, as `&[u8]`'s `Ord`).
    pub key: &'a [u8],
    /// The value.
    pub value: ValueRef<'a>,
    /// The transaction fields (leaf records; always [`SysFields::NONE`] for child records).
    pub sys: SysFields,
}

/// A record read from a page (the same type as the one inserted).
pub type RecordRef<'a> = Record<'a>;

impl<'a> Record<'a> {
    /// A leaf record with an inline value.
    pub const fn inline(key: &'a [u8], value: &'a [u8]) -> Self {
        Self {
            key,
            value: ValueRef::Inline(value),
            sys: SysFields::NONE,
        }
    }

    /// The same record with the transaction fields `sys` (meaningful for leaf records only).
    #[must_use]
    pub const fn with_sys(mut self, sys: SysFields) -> Self {
        self.sys = sys;
        self
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
            sys: SysFields::NONE,
        }
    }

    /// An internal-node record pointing to `child`.
    pub const fn child(key: &'a [u8], child: PageNo) -> Self {
        Self {
            key,
            value: ValueRef::Child(child),
            sys: SysFields::NONE,
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
        if self.sys.trx_id > MAX_TRX_ID {
            return Some("transaction id above 2^48 - 1");
        }
        if self.sys.roll_ptr > MAX_ROLL_PTR {
            return Some("roll pointer above 2^56 - 1");
        }
        match self.value {
            ValueRef::Child(_) if self.sys != SysFields::NONE => {
                Some("a child record with transaction fields")
            }
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

    /// Writes the record's heap encoding into `out`, which must be exactly
    /// [`encoded_len`](Self::encoded_len) bytes long: [`encode_to`](Self::encode_to) for a
    /// buffer that is not a `Vec`. Fails, writing nothing, as `encode_to` does, or when `out`
    /// has another length.
    pub fn encode_into(&self, out: &mut [u8]) -> Result<(), &'static str> {
        if let Some(what) = self.shape_error() {
            return Err(what);
        }
        if out.len() != self.encoded_len() {
            return Err("output length is not the record's encoded length");
        }
        self.encode(out, 0);
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
                put(buf, off, &[self.sys.kind_byte(KIND_INLINE)]);
                put_u16(buf, off + 1, key_len);
                put_u16(buf, off + 3, v.len() as u16);
                self.sys.encode_ids(buf, off + INLINE_SYS_OFFSET);
                put(buf, off + INLINE_HEADER_SIZE, self.key);
                put(buf, off + INLINE_HEADER_SIZE + self.key.len(), v);
            }
            ValueRef::Overflow {
                prefix,
                total_len,
                first_page,
            } => {
                put(buf, off, &[self.sys.kind_byte(KIND_OVERFLOW)]);
                put_u16(buf, off + 1, key_len);
                put_u16(buf, off + 3, prefix.len() as u16);
                put_u64(buf, off + 5, total_len);
                put_u32(buf, off + 13, first_page);
                self.sys.encode_ids(buf, off + OVERFLOW_SYS_OFFSET);
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

    /// Just the key of the record at `off` (heap bounded by `limit`): what binary search needs,
    /// without decoding the value. `None` where [`decode`](Self::decode) would fail on bounds.
    #[inline]
    pub(crate) fn decode_key(buf: &'a [u8], off: usize, limit: usize) -> Option<&'a [u8]> {
        let heap = buf.get(..limit)?;
        let header = match u8_at(heap, off)? & !DELETE_MARK {
            KIND_INLINE => INLINE_HEADER_SIZE,
            KIND_OVERFLOW => OVERFLOW_HEADER_SIZE,
            KIND_CHILD => CHILD_HEADER_SIZE,
            _ => return None,
        };
        let key_len = usize::from(u16_at(heap, off + 1)?);
        slice_at(heap, off + header, key_len)
    }

    /// Decodes the record at `buf[off..]`, which must end at or before `limit`. Returns the
    /// record and its encoded length, or a description of what is wrong. Never panics.
    #[expect(
        clippy::inline_always,
        reason = "returned out of line, the record went through the stack in pieces and was \
                  read back whole: a store-forwarding stall per record, a third of a scan"
    )]
    #[inline(always)]
    pub(crate) fn decode(
        buf: &'a [u8],
        off: usize,
        limit: usize,
    ) -> Result<(Self, usize), &'static str> {
        let heap = buf.get(..limit).ok_or("record limit beyond page")?;
        let oob = "record runs past the heap top";
        let first = u8_at(heap, off).ok_or(oob)?;
        let kind = first & KIND_MASK;
        if first & !(KIND_MASK | DELETE_MARK) != 0 || (kind == KIND_CHILD && first != KIND_CHILD) {
            return Err("unknown record kind or reserved kind bits set");
        }
        let key_len = usize::from(u16_at(heap, off + 1).ok_or(oob)?);
        match kind {
            KIND_INLINE => {
                let value_len = usize::from(u16_at(heap, off + 3).ok_or(oob)?);
                let sys = SysFields::decode(heap, off + INLINE_SYS_OFFSET, first).ok_or(oob)?;
                let key = slice_at(heap, off + INLINE_HEADER_SIZE, key_len).ok_or(oob)?;
                let value =
                    slice_at(heap, off + INLINE_HEADER_SIZE + key_len, value_len).ok_or(oob)?;
                Ok((
                    Self::inline(key, value).with_sys(sys),
                    INLINE_HEADER_SIZE + key_len + value_len,
                ))
            }
            KIND_OVERFLOW => {
                let prefix_len = usize::from(u16_at(heap, off + 3).ok_or(oob)?);
                let total_len = u64_at(heap, off + 5).ok_or(oob)?;
                let first_page = u32_at(heap, off + 13).ok_or(oob)?;
                let sys = SysFields::decode(heap, off + OVERFLOW_SYS_OFFSET, first).ok_or(oob)?;
                let key = slice_at(heap, off + OVERFLOW_HEADER_SIZE, key_len).ok_or(oob)?;
                let prefix =
                    slice_at(heap, off + OVERFLOW_HEADER_SIZE + key_len, prefix_len).ok_or(oob)?;
                let rec = Self::overflow(key, prefix, total_len, first_page).with_sys(sys);
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
        let sys = SysFields {
            trx_id: MAX_TRX_ID,
            roll_ptr: MAX_ROLL_PTR,
            deleted: true,
        };
        let recs = [
            Record::inline(b"key", b"value"),
            Record::inline(b"key", b"value").with_sys(sys),
            Record::overflow(b"big", b"pre", 100_000, 77).with_sys(SysFields {
                trx_id: 0x0102_0304_0506,
                roll_ptr: 0x07_0605_0403_0201,
                deleted: false,
            }),
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
    fn transaction_fields_sit_before_the_key_and_out_of_range_ones_are_refused() {
        let rec = Record::inline(b"k", b"v").with_sys(SysFields {
            trx_id: 0x0605_0403_0201,
            roll_ptr: 0x0D_0C0B_0A09_0807,
            deleted: true,
        });
        let mut out = Vec::new();
        rec.encode_to(&mut out).expect("valid");
        assert_eq!(
            out,
            [0x20, 1, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, b'k', b'v']
        );
        let too_big = |sys| Record::inline(b"k", b"v").with_sys(sys).shape_error();
        assert!(too_big(SysFields {
            trx_id: MAX_TRX_ID + 1,
            ..SysFields::NONE
        })
        .is_some());
        assert!(too_big(SysFields {
            roll_ptr: MAX_ROLL_PTR + 1,
            ..SysFields::NONE
        })
        .is_some());
        // A child record has none; a delete-marked child byte is refused when decoding.
        let child = Record::child(b"k", 3).with_sys(SysFields {
            deleted: true,
            ..SysFields::NONE
        });
        assert!(child.shape_error().is_some());
        assert!(Record::decode_exact(&[0x22, 1, 0, 3, 0, 0, 0, b'k']).is_err());
        assert!(
            Record::decode_exact(&[0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
                .is_err()
        );
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
