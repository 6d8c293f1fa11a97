//! Roll pointers: where a record's previous version is (FORMATS.md §13.1).

use barracuda_page::{PageNo, MAX_ROLL_PTR};

/// The insert flag: the record's newest change inserted it, so no older version exists.
const INSERT_BIT: u64 = 1 << 55;
/// Bits 48–54, reserved for an undo tablespace number: 0 today.
const RESERVED_BITS: u64 = 0x7F << 48;

/// A decoded roll pointer: an undo record's page and offset, and whether it undoes an insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RollPtr {
    /// The undo page holding the record.
    pub page_no: PageNo,
    /// The record's offset in that page.
    pub offset: u16,
    /// The record undoes an insert: the row had no version before it.
    pub insert: bool,
}

impl RollPtr {
    /// The 56-bit value a leaf record stores.
    pub const fn to_u64(self) -> u64 {
        let insert = if self.insert { INSERT_BIT } else { 0 };
        insert | ((self.page_no as u64) << 16) | self.offset as u64
    }

    /// Decodes a stored value: `None` for 0 (no history), and for a value with reserved bits
    /// set or beyond 56 bits (damaged or crafted).
    pub const fn from_u64(v: u64) -> Option<Self> {
        if v == 0 || v > MAX_ROLL_PTR || v & RESERVED_BITS != 0 {
            return None;
        }
        Some(Self {
            page_no: ((v >> 16) & 0xFFFF_FFFF) as PageNo,
            offset: (v & 0xFFFF) as u16,
            insert: v & INSERT_BIT != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_pointer_round_trips(page_no in any::<u32>(), offset in 1..=u16::MAX, insert in any::<bool>()) {
            let p = RollPtr { page_no, offset, insert };
            prop_assert!(p.to_u64() <= MAX_ROLL_PTR);
            prop_assert_eq!(RollPtr::from_u64(p.to_u64()), Some(p));
        }
    }

    #[test]
    fn no_history_and_reserved_bits_decode_to_none() {
        assert_eq!(RollPtr::from_u64(0), None);
        assert_eq!(RollPtr::from_u64(1 << 48), None);
        assert_eq!(RollPtr::from_u64(MAX_ROLL_PTR + 1), None);
        let p = RollPtr {
            page_no: 7,
            offset: 96,
            insert: true,
        };
        assert_eq!(p.to_u64(), (1 << 55) | (7 << 16) | 0x60);
    }
}
