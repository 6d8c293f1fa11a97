//! Positioned I/O on the circular data area: a range of LSNs maps to one or, where it crosses
//! the end of the area, two file ranges.

use barracuda_io::PageFile;

use crate::format::{Header, DATA_OFFSET};
use crate::Lsn;

/// The file pieces `[lsn, lsn + len)` occupies: `(file offset, length)` each, in LSN order.
fn pieces(header: &Header, lsn: Lsn, len: u64) -> [(u64, u64); 2] {
    let pos = lsn % header.capacity;
    let first = len.min(header.capacity - pos);
    [(DATA_OFFSET + pos, first), (DATA_OFFSET, len - first)]
}

/// Writes `data` as the log bytes starting at `lsn`. `data` is at most the capacity long.
pub fn write(
    file: &dyn PageFile,
    header: &Header,
    lsn: Lsn,
    data: &[u8],
) -> barracuda_io::Result<()> {
    let mut rest = data;
    for (offset, len) in pieces(header, lsn, data.len() as u64) {
        if len == 0 {
            continue;
        }
        let (now, later) = rest.split_at(len as usize);
        file.write_at(now, offset)?;
        rest = later;
    }
    Ok(())
}

/// Reads the log bytes starting at `lsn` into `buf` (at most the capacity long).
pub fn read(
    file: &dyn PageFile,
    header: &Header,
    lsn: Lsn,
    buf: &mut [u8],
) -> barracuda_io::Result<()> {
    let mut rest = buf;
    for (offset, len) in pieces(header, lsn, rest.len() as u64) {
        if len == 0 {
            continue;
        }
        let (now, later) = rest.split_at_mut(len as usize);
        file.read_at(now, offset)?;
        rest = later;
    }
    Ok(())
}

/// Bytes of zeros written per call when filling a range.
const ZERO_CHUNK: usize = 1 << 20;

/// Writes zeros over the log bytes `[lsn, lsn + len)` (at most the capacity).
pub fn zero(file: &dyn PageFile, header: &Header, lsn: Lsn, len: u64) -> barracuda_io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK.min(len as usize)];
    let mut at = lsn;
    let end = lsn + len;
    while at < end {
        let n = (end - at).min(zeros.len() as u64) as usize;
        write(file, header, at, zeros.get(..n).unwrap_or_default())?;
        at += n as u64;
    }
    Ok(())
}
