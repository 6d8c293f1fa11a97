//! Old versions: what an undo record keeps of a row, and the walk back along roll pointers
//! that builds the version a read view sees (InnoDB's `row_vers_build_for_consistent_read`).

use barracuda_btree::{BTreeError, Result, StoredRecord, StoredValue};
use barracuda_page::{PageId, Record, UndoKind, ValueRef};

use crate::log::UndoSpace;
use crate::roll_ptr::RollPtr;
use crate::view::ReadView;

/// The longest version chain a read follows: a longer one means a damaged pointer loops, and is
/// reported as corruption instead of spinning (every real chain is shorter than the number of
/// transactions that changed the row since the oldest open view).
pub const MAX_CHAIN: usize = 1 << 20;

/// The undo payload that keeps `key`'s version `record`: its leaf record encoding (FORMATS.md
/// §5.3), transaction fields and overflow reference included.
pub fn encode_version(key: &[u8], record: &StoredRecord) -> Result<Vec<u8>> {
    let rec = match &record.value {
        StoredValue::Inline(bytes) => Record::inline(key, bytes),
        &StoredValue::Overflow {
            total_len,
            first_page,
        } => Record::overflow(key, &[], total_len, first_page),
    }
    .with_sys(record.sys);
    let mut out = Vec::with_capacity(rec.encoded_len());
    rec.encode_to(&mut out)
        .map_err(|what| BTreeError::Log(format!("a row version has no encoding: {what}")))?;
    Ok(out)
}

/// Decodes an undo payload written by [`encode_version`]: the key and the version. `at` names
/// the undo page, for the error if the bytes are damaged.
pub fn decode_version(payload: &[u8], at: PageId) -> Result<(Vec<u8>, StoredRecord)> {
    let rec = Record::decode_exact(payload).map_err(|what| {
        BTreeError::corrupt(at, format!("undo record holds no row version: {what}"))
    })?;
    let value = match rec.value {
        ValueRef::Inline(bytes) => StoredValue::Inline(bytes.to_vec()),
        ValueRef::Overflow {
            prefix: [],
            total_len,
            first_page,
        } => StoredValue::Overflow {
            total_len,
            first_page,
        },
        ValueRef::Overflow { .. } | ValueRef::Child(_) => {
            return Err(BTreeError::corrupt(
                at,
                "undo record holds a child pointer or a prefixed value",
            ))
        }
    };
    Ok((
        rec.key.to_vec(),
        StoredRecord {
            value,
            sys: rec.sys,
        },
    ))
}

/// The version of `key`'s row that `view` sees, starting from the newest one (`current`, as the
/// leaf holds it): `None` when the row does not exist for the view (inserted after it, or
/// delete-marked by a change it sees). Old versions come from `undo`; their values stay where
/// they were stored (an old overflow value's chain is kept until purge), so the caller reads
/// the value of the version returned with the tree that holds the row.
pub fn visible_version(
    undo: &UndoSpace,
    view: &ReadView,
    key: &[u8],
    current: StoredRecord,
) -> Result<Option<StoredRecord>> {
    let mut version = current;
    for _ in 0..MAX_CHAIN {
        if view.sees(version.sys.trx_id) {
            return Ok((!version.sys.deleted).then_some(version));
        }
        let trx_id = version.sys.trx_id;
        let ptr = RollPtr::from_u64(version.sys.roll_ptr).ok_or_else(|| {
            BTreeError::corrupt(
                PageId::new(undo.space(), 0),
                format!(
                    "a version of transaction {trx_id} has no valid roll pointer ({:#x})",
                    version.sys.roll_ptr
                ),
            )
        })?;
        if ptr.insert {
            return Ok(None);
        }
        let at = PageId::new(undo.space(), ptr.page_no);
        let record = undo.record(ptr)?;
        if record.kind == UndoKind::Insert {
            return Err(BTreeError::corrupt(
                at,
                "a roll pointer without the insert flag names an insert's undo record",
            ));
        }
        let (old_key, old) = decode_version(&record.payload, at)?;
        if old_key != key {
            return Err(BTreeError::corrupt(
                at,
                "a roll pointer names the undo record of another row",
            ));
        }
        version = old;
    }
    Err(BTreeError::corrupt(
        PageId::new(undo.space(), 0),
        format!("a version chain longer than {MAX_CHAIN}: the roll pointers loop"),
    ))
}
