//! The seed corpora of both targets: real mtrs from [`MtrWriter`] (every record type) and real
//! logs from [`RedoLog`], in the targets' input formats. Deterministic.

use std::path::Path;

use barracuda_io::{FaultyFileSystem, FileSystem, OpenOptions};
use barracuda_page::{IndexPage, PageId, PageSize};

use super::records::{base_index_page, Selector};
use super::scan::{CREATOR, LOG_ID, MODE_RAW, MODE_RESEAL_FRAMES, RAW_RESEAL_HEADER};
use super::{Seed, REDO_LOG_SCAN, REDO_RECORDS};
use crate::format::{Checkpoint, Header, BLOCK, DATA_OFFSET, SLOT_LEN, SLOT_OFFSETS};
use crate::record::{MtrWriter, RecordError};
use crate::{log_path, Durability, Lsn, Recovery, RedoError, RedoLog, RedoOptions};

/// Why the seeds could not be generated: the writer, the log or the page API refused what
/// the generator asked of it.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The mtr writer refused a record.
    #[error("seed mtr: {0}")]
    Record(#[from] RecordError),
    /// The redo log failed.
    #[error("seed log: {0}")]
    Log(#[from] RedoError),
    /// The in-memory file system failed.
    #[error("seed file: {0}")]
    Io(#[from] barracuda_io::IoError),
    /// The page API refused a change to a seed page.
    #[error("seed page: {0}")]
    Page(#[from] barracuda_page::PageError),
    /// A seed does not have the shape the generator meant to give it.
    #[error("seed {0}: not as built")]
    Shape(&'static str),
}

/// The page most seed mtrs change.
const P: PageId = PageId::new(1, 3);
/// A second page.
const Q: PageId = PageId::new(1, 4);

/// The seeds of both corpora, each naming its target.
pub fn seeds() -> Result<Vec<Seed>, SeedError> {
    let mtrs = record_seeds()?;
    let mut seeds: Vec<Seed> = mtrs
        .iter()
        .map(|(name, bytes)| Seed {
            target: REDO_RECORDS,
            name: name.clone(),
            bytes: bytes.clone(),
        })
        .collect();
    seeds.extend(scan_seeds(&mtrs)?);
    Ok(seeds)
}

fn size_name(size: PageSize) -> String {
    format!("{}k", size.bytes() >> 10)
}

/// `(name, input)` of each `redo_records` seed: byte 0, then the mtr.
fn record_seeds() -> Result<Vec<(String, Vec<u8>)>, SeedError> {
    let mut out = Vec::new();
    let seed = |sel: Selector, w: MtrWriter| {
        let mut bytes = vec![sel.to_byte()];
        bytes.extend_from_slice(w.as_bytes());
        bytes
    };
    for size in PageSize::ALL {
        let p = size.bytes();
        let name = size_name(size);
        let leaf = |records| Selector {
            page_size: size,
            level: 0,
            records,
        };

        // Byte-level records on two pages, relative and absolute offsets, the page's end.
        let mut w = MtrWriter::new(size);
        w.init_page(Q);
        w.write(Q, 100, b"hello")?;
        w.write(Q, 110, b"relative to the previous end")?;
        w.memset(Q, 200, 64, b"ab")?;
        w.memmove(Q, 300, 100, 40)?;
        w.memmove(Q, 50, 300, 20)?;
        w.write(Q, p - 4, &[1, 2, 3, 4])?;
        w.option(Q, b"trx")?;
        w.free_page(P);
        w.init_page(P);
        w.memset(P, 0, p, &[0xa5])?;
        out.push((format!("{name}-bytes"), seed(leaf(4), w)));

        // Every index record change on a leaf of 6 records.
        let sel = leaf(6);
        let value = vec![b'v'; 40];
        let mut w = MtrWriter::new(size);
        w.index_insert(P, 1, &barracuda_page::Record::inline(b"k01", b"v"))?;
        w.index_replace(P, 0, &barracuda_page::Record::inline(b"k00", &value))?;
        w.index_remove(P, 3)?;
        w.index_truncate(P, 4)?;
        w.index_reorganize(P)?;
        w.index_insert(
            P,
            4,
            &barracuda_page::Record::overflow(b"k99", b"pre", 10_000, 77),
        )?;
        w.option(P, b"")?;
        out.push((format!("{name}-index-leaf"), seed(sel, w)));

        // Child pointers on an internal page of 3 records.
        let sel = Selector {
            page_size: size,
            level: 1,
            records: 3,
        };
        let mut w = MtrWriter::new(size);
        w.index_insert(P, 1, &barracuda_page::Record::child(b"k01", 500))?;
        w.index_remove(P, 0)?;
        w.index_replace(P, 0, &barracuda_page::Record::child(b"k01", 501))?;
        out.push((format!("{name}-index-internal"), seed(sel, w)));

        // The diff of an insert into the base page, as the B+tree logs a change it does not
        // describe.
        let sel = leaf(8);
        let before = base_index_page(sel, P);
        let mut after = IndexPage::open(before.clone(), size)?;
        after.insert(3, &barracuda_page::Record::inline(b"k05", b"a fifth value"))?;
        let mut w = MtrWriter::new(size);
        w.log_page_diff(P, &before, after.as_bytes())?;
        out.push((format!("{name}-diff"), seed(sel, w)));
    }
    out.push(("4k-raw-index-page".into(), raw_index_page_seed()?));
    Ok(out)
}

/// A 4 KiB input whose first page is a valid index page (base (c) of the target), so that the
/// index record changes after it replay onto raw bytes too: byte 0 and an OPTION record's header
/// cover the page's first bytes (checksum and page number, which the replay does not read), its
/// payload the rest of the page.
fn raw_index_page_seed() -> Result<Vec<u8>, SeedError> {
    let size = PageSize::K4;
    let p = size.bytes();
    let sel = Selector {
        page_size: size,
        level: 0,
        records: 5,
    };
    let image = base_index_page(sel, P);
    // The OPTION header's length depends on the payload's, which depends on the header's.
    for k in 2..16 {
        let payload = image.get(k..).ok_or(SeedError::Shape("raw index page"))?;
        let mut w = MtrWriter::new(size);
        w.option(P, payload)?;
        if 1 + w.len() - payload.len() != k {
            continue;
        }
        w.index_insert(P, 1, &barracuda_page::Record::inline(b"k01", b"x"))?;
        w.index_remove(P, 2)?;
        w.index_reorganize(P)?;
        let mut bytes = vec![sel.to_byte()];
        bytes.extend_from_slice(w.as_bytes());
        if bytes.get(k..p) != image.get(k..p) {
            return Err(SeedError::Shape("raw index page"));
        }
        return Ok(bytes);
    }
    Err(SeedError::Shape("raw index page"))
}

/// A small log: 16 KiB of capacity, 4 KiB buffers.
fn seed_options(start_lsn: Lsn) -> RedoOptions {
    RedoOptions {
        capacity: 16 << 10,
        buffer_bytes: 4096,
        start_lsn,
        durability: Durability::Sync,
    }
}

/// A real log holding `mtrs` (those that fit a frame) over and over until at least `bytes` of
/// frames are written and the log's end is in the first quarter of the data area, committed one
/// by one and, every third, as a two-frame commit unit. When the log would fill, the checkpoint
/// moves to the first unit at most half the capacity behind the end, so the frames after it
/// cross the data area's end. The log ends with a unit whose last frame is missing. Returns the
/// file, its log id and creator normalised so that the seed is the same on every run.
fn seed_log(start_lsn: Lsn, mtrs: &[&[u8]], bytes: u64) -> Result<Vec<u8>, SeedError> {
    let fs = FaultyFileSystem::new();
    let dir = Path::new("/seed");
    let options = seed_options(start_lsn);
    let capacity = options.capacity;
    let log = RedoLog::create(&fs, dir, &options)?;
    let max = log.max_mtr_bytes() as usize;
    let fitting: Vec<&[u8]> = mtrs.iter().copied().filter(|m| m.len() <= max).collect();
    let mut units = std::collections::VecDeque::new();
    let mut written = 0u64;
    let mut n = 0usize;
    while written < bytes || !(capacity / 8..capacity / 4).contains(&(log.current_lsn() % capacity))
    {
        let mtr = fitting
            .get(n % fitting.len().max(1))
            .copied()
            .ok_or(SeedError::Shape("seed log"))?;
        if log.free_space() < 2 * (mtr.len() as u64 + 8) {
            while units
                .front()
                .is_some_and(|&u| log.current_lsn() - u > capacity / 2)
            {
                units.pop_front();
            }
            log.write_checkpoint(units.front().copied().unwrap_or(log.current_lsn()))?;
        }
        let start = log.current_lsn();
        units.push_back(start);
        // Every third mtr goes twice, as the two frames of one commit unit.
        if n % 3 == 1 {
            log.append_to_unit(mtr, true)?;
        }
        let (_, end) = log.commit(mtr)?;
        written += end - start;
        n += 1;
    }
    let last = fitting
        .first()
        .copied()
        .ok_or(SeedError::Shape("seed log"))?;
    let (_, end) = log.append_to_unit(last, true)?;
    log.wait_durable(end)?;
    log.close()?;
    let path = log_path(dir);
    let file = fs.open(&path, &OpenOptions::new())?;
    let mut bytes = vec![0u8; file.len()? as usize];
    file.read_at(&mut bytes, 0)?;
    normalise(&mut bytes)?;
    Ok(bytes)
}

/// Rewrites the header's log id and creator and the slots' log id to fixed ones, re-sealed:
/// the frames do not depend on them.
fn normalise(file: &mut [u8]) -> Result<(), SeedError> {
    let shape = SeedError::Shape("log header");
    let old = file
        .get(..BLOCK as usize)
        .and_then(|b| Header::decode(b).ok())
        .ok_or(shape)?;
    let new = Header {
        log_id: LOG_ID,
        creator: CREATOR.into(),
        ..old.clone()
    };
    put(file, 0, &new.encode());
    for slot in SLOT_OFFSETS {
        let at = slot as usize;
        let cp = file
            .get(at..at + SLOT_LEN)
            .and_then(|s| Checkpoint::decode(s, &old));
        if let Some(cp) = cp {
            put(file, at, &cp.encode(LOG_ID));
        }
    }
    Ok(())
}

fn put(file: &mut [u8], at: usize, src: &[u8]) {
    if let Some(dst) = file.get_mut(at..at + src.len()) {
        dst.copy_from_slice(src);
    }
}

/// The built-mode input that describes `file` (a seed log of [`seed_options`]): its
/// parameters, the checkpoint of the log opened from it, and the log bytes from that
/// checkpoint to 16 bytes past the last valid frame.
fn built_from(file: &[u8], mode: u8) -> Result<Vec<u8>, SeedError> {
    let fs = FaultyFileSystem::new();
    let dir = Path::new("/built");
    fs.create_dir_all(&dir.join("redo"))?;
    fs.open(&log_path(dir), &OpenOptions::new().create(true))?
        .write_at(file, 0)?;
    let recovery = Recovery::open(&fs, dir)?;
    let (cp, resume) = (recovery.checkpoint_lsn(), recovery.resume_lsn());
    let header = file
        .get(..BLOCK as usize)
        .and_then(|b| Header::decode(b).ok())
        .ok_or(SeedError::Shape("built log"))?;
    let offset =
        u32::try_from(cp - crate::DEFAULT_START_LSN).map_err(|_| SeedError::Shape("built log"))?;
    // buffer 4096 (0), capacity 4 buffers (0), start 8192 (0), both slots at the checkpoint
    // with sequence numbers 1 (slot 0) and 0 (slot 1).
    let mut bytes = vec![mode, 0, 0, 0];
    bytes.extend_from_slice(&offset.to_le_bytes());
    bytes.push(0b11 | (1 << 2));
    for lsn in cp..resume + 16 {
        let at = (DATA_OFFSET + lsn % header.capacity) as usize;
        bytes.push(file.get(at).copied().unwrap_or(0));
    }
    Ok(bytes)
}

/// The `redo_log_scan` seeds: real logs raw and built, with their frames re-sealed after a
/// change, and one starting just before the data area's end.
fn scan_seeds(records: &[(String, Vec<u8>)]) -> Result<Vec<Seed>, SeedError> {
    let mtrs: Vec<&[u8]> = records
        .iter()
        .filter_map(|(_, input)| input.get(1..))
        .collect();
    // Page size 16 KiB (index 2) in bits 2.., for decoding the payloads.
    let k16 = 2 << 2;
    let wrapped = seed_log(crate::DEFAULT_START_LSN, &mtrs, 3 * (16 << 10))?;
    let near_end = seed_log(3 * (16 << 10) - 100, &mtrs, 3000)?;
    let mut out = Vec::new();
    let mut seed = |name: &str, bytes: Vec<u8>| {
        out.push(Seed {
            target: REDO_LOG_SCAN,
            name: name.into(),
            bytes,
        });
    };
    let raw = |flags: u8, file: &[u8]| {
        let mut bytes = vec![MODE_RAW | k16, flags];
        bytes.extend_from_slice(file);
        bytes
    };
    seed("raw-wrapped", raw(0, &wrapped));
    seed("raw-near-end", raw(0, &near_end));
    let mut renamed = wrapped.clone();
    put(&mut renamed, 40, b"renamed");
    seed(
        "raw-wrapped-reseal-header",
        raw(RAW_RESEAL_HEADER, &renamed),
    );
    seed("built-wrapped", built_from(&wrapped, k16)?);
    seed("built-near-end", built_from(&near_end, k16)?);
    let mut changed = built_from(&wrapped, k16 | MODE_RESEAL_FRAMES)?;
    // A byte inside the first frame's payload (after 9 bytes of parameters, 4 of length).
    if let Some(b) = changed.get_mut(9 + 4 + 2) {
        *b ^= 0x10;
    }
    seed("built-wrapped-reseal-frames", changed);
    Ok(out)
}
