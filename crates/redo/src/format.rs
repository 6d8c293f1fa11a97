//! Byte-exact layout of the redo log file (specified in `docs/FORMATS.md`, "Redo log files"):
//! the file header, the two checkpoint slots and the framing of one mtr. No I/O here, so every
//! decoder is a total function of its bytes.

use crate::error::RedoError;
use crate::Lsn;

/// Every structure of the header area occupies its own 4 KiB block, so that a torn write of one
/// (even on a 4 KiB-sector device that rewrites the whole sector) never touches another.
pub const BLOCK: u64 = 4096;
/// File offsets of checkpoint slots 0 and 1.
pub const SLOT_OFFSETS: [u64; 2] = [BLOCK, 2 * BLOCK];
/// File offset of the circular data area: LSN `l` lives at `DATA_OFFSET + l % capacity`.
pub const DATA_OFFSET: u64 = 3 * BLOCK;
/// Bytes a frame adds to its mtr: the length before it and the CRC-32C after it.
pub const FRAME_OVERHEAD: u64 = 8;
/// `"BRRL"` read as a little-endian `u32`: the file header's magic.
pub const HEADER_MAGIC: u32 = u32::from_le_bytes(*b"BRRL");
/// `"BRCP"` read as a little-endian `u32`: a checkpoint slot's magic.
pub const SLOT_MAGIC: u32 = u32::from_le_bytes(*b"BRCP");
/// The only format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Size of the creator string field (UTF-8, zero-padded).
pub const CREATOR_LEN: usize = 32;
/// Encoded size of the file header, CRC included.
pub const HEADER_LEN: usize = 76;
/// Encoded size of a checkpoint slot, CRC included.
pub const SLOT_LEN: usize = 40;
/// Smallest log buffer: one 4 KiB block.
pub const MIN_BUFFER_BYTES: u32 = 4096;
/// Largest log buffer (and so the largest mtr plus its frame): bounds what a scan of hostile
/// bytes may allocate for one record.
pub const MAX_BUFFER_BYTES: u32 = 256 << 20;
/// Largest capacity of the data area (1 TiB).
pub const MAX_CAPACITY: u64 = 1 << 40;

/// The fixed parameters of a log, from its file header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Unique per created log (random); checkpoint slots must carry the same id.
    pub log_id: u64,
    /// Bytes of the circular data area.
    pub capacity: u64,
    /// Log buffer size: bounds one mtr's frame and the bytes written but not yet synced.
    pub buffer_bytes: u32,
    /// The LSN the log started at when it was created.
    pub start_lsn: Lsn,
    /// What created the file, e.g. `"barracuda 0.1.0"`.
    pub creator: String,
}

/// Checks the parameters a header may carry, so a hostile header cannot make the scan allocate
/// or loop beyond what the file itself bounds.
pub fn check_geometry(capacity: u64, buffer_bytes: u32) -> Result<(), String> {
    if !(MIN_BUFFER_BYTES..=MAX_BUFFER_BYTES).contains(&buffer_bytes) {
        return Err(format!(
            "log buffer of {buffer_bytes} bytes outside {MIN_BUFFER_BYTES}..={MAX_BUFFER_BYTES}"
        ));
    }
    if !capacity.is_multiple_of(BLOCK) || capacity > MAX_CAPACITY {
        return Err(format!(
            "capacity {capacity} is not a multiple of {BLOCK} up to {MAX_CAPACITY}"
        ));
    }
    // Recovery zero-fills up to two buffers past the end; a log must hold more than that.
    if capacity < 4 * u64::from(buffer_bytes) {
        return Err(format!(
            "capacity {capacity} is less than 4 x the log buffer ({buffer_bytes} bytes)"
        ));
    }
    Ok(())
}

/// Reads a little-endian `u32` at `at`; `None` if `bytes` is too short.
fn le32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Reads a little-endian `u64` at `at`; `None` if `bytes` is too short.
fn le64(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at + 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

impl Header {
    /// The header's bytes (`HEADER_LEN` of them; the rest of its block is zero).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(&HEADER_MAGIC.to_le_bytes());
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.log_id.to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        out.extend_from_slice(&self.buffer_bytes.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.start_lsn.to_le_bytes());
        let mut creator = [0u8; CREATOR_LEN];
        for (dst, src) in creator.iter_mut().zip(self.creator.as_bytes()) {
            *dst = *src;
        }
        out.extend_from_slice(&creator);
        let crc = barracuda_page::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes and validates a header block; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Header, String> {
        let body = bytes
            .get(..HEADER_LEN - 4)
            .ok_or("header block shorter than the header")?;
        let stored = le32(bytes, HEADER_LEN - 4).ok_or("header block shorter than the header")?;
        let magic = le32(body, 0).unwrap_or(0);
        if magic != HEADER_MAGIC {
            return Err(format!(
                "magic {magic:#010x}, expected {HEADER_MAGIC:#010x} (\"BRRL\")"
            ));
        }
        let computed = barracuda_page::crc32c(body);
        if stored != computed {
            return Err(format!(
                "header CRC-32C {stored:#010x}, computed {computed:#010x}"
            ));
        }
        let version = le32(body, 4).unwrap_or(0);
        if version != FORMAT_VERSION {
            return Err(format!(
                "format version {version}, this build reads {FORMAT_VERSION}"
            ));
        }
        let header = Header {
            log_id: le64(body, 8).unwrap_or(0),
            capacity: le64(body, 16).unwrap_or(0),
            buffer_bytes: le32(body, 24).unwrap_or(0),
            start_lsn: le64(body, 32).unwrap_or(0),
            creator: body
                .get(40..40 + CREATOR_LEN)
                .map(|c| {
                    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                    String::from_utf8_lossy(c.get(..end).unwrap_or_default()).into_owned()
                })
                .unwrap_or_default(),
        };
        if le32(body, 28) != Some(0) {
            return Err("reserved header bytes 28..32 are not zero".into());
        }
        check_geometry(header.capacity, header.buffer_bytes)?;
        Ok(header)
    }

    /// The file offset LSN `lsn` maps to.
    pub fn offset_of(&self, lsn: Lsn) -> u64 {
        DATA_OFFSET + lsn % self.capacity
    }

    /// The largest mtr payload a frame may carry: a frame fits in the log buffer.
    pub fn max_mtr_bytes(&self) -> u64 {
        u64::from(self.buffer_bytes) - FRAME_OVERHEAD
    }
}

/// One checkpoint slot: recovery starts scanning at `lsn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Grows by one per checkpoint written (wrapping); slot `seq % 2` holds it; the newer valid
    /// one in serial-number arithmetic wins (`recovery::newer`).
    pub seq: u64,
    /// Every change below this LSN is in the data files; the scan starts here.
    pub lsn: Lsn,
    /// `DATA_OFFSET + lsn % capacity`, stored so a reader can cross-check the mapping.
    pub offset: u64,
}

impl Checkpoint {
    /// The slot's bytes (`SLOT_LEN` of them) for the log `log_id`.
    pub fn encode(&self, log_id: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(SLOT_LEN);
        out.extend_from_slice(&SLOT_MAGIC.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.lsn.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&log_id.to_le_bytes());
        let crc = barracuda_page::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a slot of the log described by `header`; `None` when the slot is empty, torn,
    /// of another log, or inconsistent (a reader then uses the other slot).
    pub fn decode(bytes: &[u8], header: &Header) -> Option<Checkpoint> {
        let body = bytes.get(..SLOT_LEN - 4)?;
        if le32(body, 0)? != SLOT_MAGIC
            || le32(bytes, SLOT_LEN - 4)? != barracuda_page::crc32c(body)
        {
            return None;
        }
        let cp = Checkpoint {
            seq: le64(body, 4)?,
            lsn: le64(body, 12)?,
            offset: le64(body, 20)?,
        };
        let consistent = le64(body, 28)? == header.log_id
            && cp.lsn >= header.start_lsn
            && cp.offset == header.offset_of(cp.lsn)
            && cp.lsn.checked_add(header.capacity).is_some();
        consistent.then_some(cp)
    }
}

/// Bit 31 of a frame's length field: more frames of the same *commit unit* follow. A unit is
/// one frame without the bit, preceded by any number with it; recovery applies a unit whole or
/// not at all (a transaction's mtrs form one unit).
pub const CONTINUES: u32 = 1 << 31;

/// The CRC-32C of a frame: over its LSN, its length field (the [`CONTINUES`] bit included) and
/// its payload. The LSN makes bytes left by an earlier lap of the circular file (same offset,
/// LSN smaller by a multiple of the capacity) fail the check, so they are never taken for
/// records.
pub fn frame_crc(lsn: Lsn, len_field: u32, payload: &[u8]) -> u32 {
    let crc = barracuda_page::crc32c(&lsn.to_le_bytes());
    let crc = barracuda_page::crc32c_append(crc, &len_field.to_le_bytes());
    barracuda_page::crc32c_append(crc, payload)
}

/// The length field of a frame of `payload` (at most `MAX_BUFFER_BYTES` long, so bit 31 is
/// free for the flag).
fn len_field(payload: &[u8], continues: bool) -> u32 {
    let len = payload.len() as u32;
    if continues {
        len | CONTINUES
    } else {
        len
    }
}

/// Appends the frame of `payload`, starting at `lsn`, to `out`; `continues` says that the
/// frame's commit unit goes on in the next frame.
pub fn encode_frame(lsn: Lsn, payload: &[u8], continues: bool, out: &mut Vec<u8>) {
    let field = len_field(payload, continues);
    out.extend_from_slice(&field.to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&frame_crc(lsn, field, payload).to_le_bytes());
}

/// Clears the [`CONTINUES`] bit of `frame`, one whole encoded frame starting at `lsn`, and
/// recomputes its CRC. Returns false, changing nothing, if `frame` is not a frame with the bit
/// set whose length field matches its size.
pub fn end_unit_in_place(lsn: Lsn, frame: &mut [u8]) -> bool {
    let n = frame.len();
    let Some(field) = frame
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
    else {
        return false;
    };
    let len = (field & !CONTINUES) as usize;
    if field & CONTINUES == 0 || len.checked_add(FRAME_OVERHEAD as usize) != Some(n) {
        return false;
    }
    let field = field & !CONTINUES;
    let crc = frame_crc(lsn, field, frame.get(4..4 + len).unwrap_or(&[]));
    if let Some(head) = frame.get_mut(..4) {
        head.copy_from_slice(&field.to_le_bytes());
    }
    if let Some(tail) = frame.get_mut(n - 4..) {
        tail.copy_from_slice(&crc.to_le_bytes());
    }
    true
}

/// A frame's payload length and [`CONTINUES`] flag read from its first 4 bytes, or `None` when
/// the length cannot start a frame here: zero (unwritten or zero-filled space), larger than the
/// header allows, or reaching past `limit` (the LSN the scan must not cross).
pub fn frame_len(header: &Header, lsn: Lsn, len_bytes: [u8; 4], limit: Lsn) -> Option<(u64, bool)> {
    let field = u32::from_le_bytes(len_bytes);
    let len = u64::from(field & !CONTINUES);
    let fits = len > 0
        && len <= header.max_mtr_bytes()
        && lsn
            .checked_add(len + FRAME_OVERHEAD)
            .is_some_and(|end| end <= limit);
    fits.then_some((len, field & CONTINUES != 0))
}

/// Whether `crc_bytes` is the CRC of the frame of `payload` at `lsn` with the given flag.
pub fn frame_valid(lsn: Lsn, payload: &[u8], continues: bool, crc_bytes: [u8; 4]) -> bool {
    u32::from_le_bytes(crc_bytes) == frame_crc(lsn, len_field(payload, continues), payload)
}

/// A [`RedoError::Corrupt`] for the file header.
pub fn bad_header(path: &std::path::Path, what: &str) -> RedoError {
    RedoError::Corrupt {
        path: path.to_owned(),
        offset: 0,
        what: format!("invalid redo log header: {what}"),
    }
}
