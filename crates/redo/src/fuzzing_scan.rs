//! The `redo_log_scan` target: a log file built from the input, opened and scanned as recovery
//! does (input format and invariants in the [module docs](super)).

use std::path::Path;

use barracuda_io::{FaultyFileSystem, FileSystem, OpenOptions};
use barracuda_page::PageSize;

use crate::format::{
    self, Checkpoint, Header, BLOCK, DATA_OFFSET, FRAME_OVERHEAD, HEADER_LEN, SLOT_LEN,
    SLOT_OFFSETS,
};
use crate::record::RecordReader;
use crate::{log_path, Durability, Lsn, Recovery, RedoError, UncheckedMtr, DEFAULT_START_LSN};

/// The database directory inside the in-memory file system.
pub(crate) const DIR: &str = "/db";
/// The log id of built files (and of the seeds, which normalise theirs to it).
pub(crate) const LOG_ID: u64 = 0x5eed_1dea_0000_0001;
/// The creator string of built files and seeds.
pub(crate) const CREATOR: &str = "barracuda fuzz";
/// Mode bit: the rest is a raw file, not a built one.
pub(crate) const MODE_RAW: u8 = 1;
/// Mode bit: re-seal every frame the scan would read.
pub(crate) const MODE_RESEAL_FRAMES: u8 = 2;
/// Raw mode's flags bit: re-seal the header's and the checkpoint slots' CRCs.
pub(crate) const RAW_RESEAL_HEADER: u8 = 1;
/// Sequence numbers a built file's slots may carry (the selector `7` leaves a slot zero).
const SEQS: [u64; 7] = [0, 1, 2, 3, u64::MAX - 1, u64::MAX, 1 << 32];

/// Runs one input of the `redo_log_scan` target (see the [module docs](super)).
///
/// # Panics
/// When the scan misbehaves: that panic is the crash libFuzzer reports.
pub fn redo_log_scan(data: &[u8]) {
    let Some((file, page_size)) = input_file(data) else {
        return;
    };
    let fs = FaultyFileSystem::new();
    let dir = Path::new(DIR);
    let path = log_path(dir);
    let written = fs
        .create_dir_all(dir.join("redo").as_path())
        .and_then(|()| fs.open(&path, &OpenOptions::new().create(true)))
        .and_then(|f| f.write_at(&file, 0));
    if let Err(e) = written {
        panic!(
            "harness: writing {} bytes to the in-memory file: {e}",
            file.len()
        );
    }
    scan(&fs, dir, &file, page_size);
}

/// The log file an input describes, and the page size its mtrs are decoded with; `None` for
/// an empty input.
pub(crate) fn input_file(data: &[u8]) -> Option<(Vec<u8>, PageSize)> {
    let (&mode, rest) = data.split_first()?;
    let mut file = if mode & MODE_RAW != 0 {
        raw_file(rest)
    } else {
        built_file(rest)
    };
    if mode & MODE_RESEAL_FRAMES != 0 {
        reseal_frames(&mut file);
    }
    let sizes = PageSize::ALL;
    let page_size = sizes
        .get(usize::from(mode >> 2) % sizes.len())
        .copied()
        .unwrap_or_default();
    Some((file, page_size))
}

/// Raw mode: the file as given, its header and slot CRCs re-sealed if the flags say so.
fn raw_file(rest: &[u8]) -> Vec<u8> {
    let Some((&flags, bytes)) = rest.split_first() else {
        return Vec::new();
    };
    let mut file = bytes.to_vec();
    if flags & RAW_RESEAL_HEADER != 0 {
        reseal(&mut file, 0, HEADER_LEN);
        for slot in SLOT_OFFSETS {
            reseal(&mut file, slot as usize, SLOT_LEN);
        }
    }
    file
}

/// Writes the CRC-32C of `file[at..at + len - 4]` little-endian into its last 4 bytes, if
/// the file holds them.
fn reseal(file: &mut [u8], at: usize, len: usize) {
    let Some(crc) = file.get(at..at + len - 4).map(barracuda_page::crc32c) else {
        return;
    };
    if let Some(dst) = file.get_mut(at + len - 4..at + len) {
        dst.copy_from_slice(&crc.to_le_bytes());
    }
}

/// A cursor over the input that yields zeros once it runs out, so every input builds a file.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.data.split_first().unwrap_or((&0, &[]));
        self.data = rest;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn rest(self) -> &'a [u8] {
        self.data
    }
}

/// Built mode: a valid header, the checkpoint slots the parameters describe, and the input's
/// remaining bytes as the log from the checkpoint on.
fn built_file(rest: &[u8]) -> Vec<u8> {
    let mut r = Reader { data: rest };
    let buffer_bytes = 4096 * (1 + u32::from(r.u8() % 4));
    let capacity = 4 * u64::from(buffer_bytes) + BLOCK * u64::from(r.u8() % 8);
    let start_lsn = match r.u8() % 4 {
        0 => DEFAULT_START_LSN,
        1 => 3 * capacity + DEFAULT_START_LSN,
        2 => u64::MAX / 2,
        _ => u64::MAX - 2 * capacity,
    };
    let cp_lsn = start_lsn.saturating_add(u64::from(r.u32()));
    let slots = r.u8();
    let log = r.rest();
    let header = Header {
        log_id: LOG_ID,
        capacity,
        buffer_bytes,
        start_lsn,
        creator: CREATOR.into(),
    };
    let mut file = vec![0u8; (DATA_OFFSET + capacity) as usize];
    put(&mut file, 0, &header.encode());
    for (i, slot) in SLOT_OFFSETS.into_iter().enumerate() {
        let Some(&seq) = SEQS.get(usize::from(slots >> (2 + 3 * i)) & 7) else {
            continue;
        };
        let lsn = if slots & (1 << i) != 0 {
            cp_lsn
        } else {
            start_lsn
        };
        let cp = Checkpoint {
            seq,
            lsn,
            offset: header.offset_of(lsn),
        };
        put(&mut file, slot as usize, &cp.encode(LOG_ID));
    }
    let from = cp_lsn % capacity;
    for (i, &b) in (0..capacity).zip(log) {
        let at = DATA_OFFSET + (from + i) % capacity;
        if let Some(dst) = file.get_mut(at as usize) {
            *dst = b;
        }
    }
    file
}

/// Copies `src` into `file` at `at`, as much as fits.
fn put(file: &mut [u8], at: usize, src: &[u8]) {
    if let Some(tail) = file.get_mut(at..) {
        for (dst, &b) in tail.iter_mut().zip(src) {
            *dst = b;
        }
    }
}

/// The file offset of log byte `lsn`.
fn ring_at(header: &Header, lsn: Lsn) -> usize {
    header.offset_of(lsn) as usize
}

/// Re-seals the CRC of every frame the scan would read: from the checkpoint it would pick, as
/// long as the length fields chain within the header's bounds (the CRCs are what the fuzzer
/// cannot forge).
fn reseal_frames(file: &mut [u8]) {
    let Some(Ok(header)) = file.get(..BLOCK as usize).map(Header::decode) else {
        return;
    };
    if (file.len() as u64) < DATA_OFFSET + header.capacity {
        return;
    }
    // The slot Recovery::open picks: the newer sequence number, slot 0 on a tie.
    let mut best: Option<Checkpoint> = None;
    for slot in SLOT_OFFSETS {
        let at = slot as usize;
        let found = file
            .get(at..at + SLOT_LEN)
            .and_then(|s| Checkpoint::decode(s, &header));
        if let Some(cp) = found {
            if best.is_none_or(|b| crate::recovery::newer(cp.seq, b.seq)) {
                best = Some(cp);
            }
        }
    }
    let Some(cp) = best else {
        return;
    };
    let limit = cp.lsn + header.capacity;
    let byte = |file: &[u8], lsn: Lsn| file.get(ring_at(&header, lsn)).copied().unwrap_or(0);
    let mut lsn = cp.lsn;
    while lsn.checked_add(4).is_some_and(|end| end <= limit) {
        let field = [
            byte(file, lsn),
            byte(file, lsn + 1),
            byte(file, lsn + 2),
            byte(file, lsn + 3),
        ];
        let Some((len, _)) = format::frame_len(&header, lsn, field, limit) else {
            return;
        };
        let payload: Vec<u8> = (0..len).map(|i| byte(file, lsn + 4 + i)).collect();
        let crc = format::frame_crc(lsn, u32::from_le_bytes(field), &payload);
        for (i, b) in (0..).zip(crc.to_le_bytes()) {
            if let Some(dst) = file.get_mut(ring_at(&header, lsn + 4 + len + i)) {
                *dst = b;
            }
        }
        lsn += len + FRAME_OVERHEAD;
    }
}

/// Opens, scans, re-reads, finishes and re-opens the log at `dir`, whose file holds `file`,
/// checking the promises of [`Recovery`] (module docs).
fn scan(fs: &FaultyFileSystem, dir: &Path, file: &[u8], page_size: PageSize) {
    let mut recovery = match Recovery::open(fs, dir) {
        Ok(recovery) => recovery,
        Err(e) => {
            assert!(
                matches!(e, RedoError::Corrupt { .. }),
                "opening a damaged log failed with {e:?}, not a Corrupt error"
            );
            return;
        }
    };
    let header = file
        .get(..BLOCK as usize)
        .map(Header::decode)
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("Recovery::open accepted a header Header::decode refuses"));
    let (cp, end, resume) = (
        recovery.checkpoint_lsn(),
        recovery.end_lsn(),
        recovery.resume_lsn(),
    );
    assert!(
        cp <= end && end <= resume && resume - cp <= header.capacity,
        "checkpoint {cp}, end {end}, resume {resume}: not in order within a capacity of {}",
        header.capacity
    );
    assert_eq!(
        recovery.scanned_lsn(),
        cp,
        "the iteration does not start at the checkpoint"
    );
    assert_eq!(recovery.discarded_bytes(), resume - end);

    let mut mtrs = Vec::new();
    let mut at = cp;
    for item in recovery.by_ref() {
        let mtr = item.unwrap_or_else(|e| {
            panic!("the frame at LSN {at}, valid in the scan at open, fails to read: {e}")
        });
        let len = mtr.payload.len() as u64;
        assert_eq!(mtr.start_lsn, at, "frames are not contiguous");
        assert!(
            len >= 1 && len <= header.max_mtr_bytes(),
            "an mtr of {len} bytes at LSN {at}: outside 1..={}",
            header.max_mtr_bytes()
        );
        assert_eq!(
            mtr.end_lsn,
            at + len + FRAME_OVERHEAD,
            "frame end at LSN {at}"
        );
        assert!(
            mtr.end_lsn <= end,
            "a frame at LSN {at} runs past the end {end}"
        );
        at = mtr.end_lsn;
        // What recovery does next with the payload: the record decoder must take any bytes.
        for record in RecordReader::new(&mtr.payload, page_size) {
            if record.is_err() {
                break;
            }
        }
        mtrs.push(mtr);
    }
    assert_eq!(
        at, end,
        "iteration stopped at LSN {at}, the scan at open found the end at {end}"
    );

    // Recovery's reading thread: the unchecked reads give the same frames, every CRC matching.
    let mut again = Recovery::open(fs, dir)
        .unwrap_or_else(|e| panic!("a log that opened does not open a second time: {e}"));
    assert_eq!(
        (again.checkpoint_lsn(), again.end_lsn(), again.resume_lsn()),
        (cp, end, resume),
        "a second open of the same file disagrees"
    );
    for mtr in &mtrs {
        let unchecked = again.next_mtr_unchecked().unwrap_or_else(|e| {
            panic!("unchecked read of the frame at LSN {}: {e}", mtr.start_lsn)
        });
        let Some(u) = unchecked else {
            panic!(
                "the unchecked reads end before the frame at LSN {}",
                mtr.start_lsn
            );
        };
        assert!(
            (u.start_lsn, u.end_lsn, u.payload) == (mtr.start_lsn, mtr.end_lsn, &mtr.payload[..]),
            "the unchecked read of the frame at LSN {} differs",
            mtr.start_lsn
        );
        assert!(
            UncheckedMtr::crc_matches(u.start_lsn, u.payload, u.continues, u.crc),
            "the frame at LSN {} has a CRC that does not match",
            u.start_lsn
        );
    }
    let extra = again.next_mtr_unchecked().map(|m| m.map(|u| u.start_lsn));
    assert!(
        matches!(extra, Ok(None)),
        "the unchecked reads go on past the end {end}: {extra:?}"
    );
    drop(again);

    let log = recovery
        .finish(Durability::Sync)
        .unwrap_or_else(|e| panic!("finish after a clean scan (end {end}, resume {resume}): {e}"));
    assert_eq!(
        log.current_lsn(),
        resume,
        "the log resumes elsewhere than resume_lsn"
    );
    drop(log);
    let reopened = Recovery::open(fs, dir)
        .unwrap_or_else(|e| panic!("the log does not open after finish: {e}"));
    let want = if resume > end {
        (resume, resume, resume)
    } else {
        (cp, end, resume)
    };
    assert_eq!(
        (
            reopened.checkpoint_lsn(),
            reopened.end_lsn(),
            reopened.resume_lsn()
        ),
        want,
        "after finish, the log opens at (checkpoint, end, resume) other than expected"
    );
}
