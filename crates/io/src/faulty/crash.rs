//! Turning the unsynced writes of a [`FaultyFile`](super::FaultyFile) into the image that
//! survives a crash.

use super::plan::CrashMode;

/// An operation done on the live file and not yet synced.
#[derive(Debug, Clone)]
pub(crate) enum Pending {
    /// `write_at(data, offset)`, or `write_atomic_at` when `atomic`: then a crash keeps all of
    /// it or none.
    Write {
        offset: u64,
        data: Vec<u8>,
        atomic: bool,
    },
    /// `set_len(len)`.
    SetLen(u64),
    /// `punch_hole(offset, len)`.
    Punch { offset: u64, len: u64 },
}

/// What a crash did to one unsynced write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteFate {
    /// Offset of the write.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// How many of its leading bytes reached the durable image (0 = lost, `len` = whole).
    pub persisted_bytes: u64,
    /// It was an untorn write (`write_atomic_at`): `persisted_bytes` is 0 or `len`.
    pub atomic: bool,
}

/// What [`FaultyFile::crash`](super::FaultyFile::crash) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// One entry per unsynced write, in write order.
    pub writes: Vec<WriteFate>,
    /// Unsynced `set_len` / `punch_hole` calls that were lost.
    pub lost_metadata_ops: usize,
}

impl CrashReport {
    /// Writes cut strictly inside (some sectors persisted, some not).
    pub fn torn_writes(&self) -> usize {
        self.writes
            .iter()
            .filter(|w| w.persisted_bytes > 0 && w.persisted_bytes < w.len)
            .count()
    }
}

/// SplitMix64: tiny, seedable, good enough to choose tear points.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max`.
    pub(crate) fn up_to(&mut self, max: u64) -> u64 {
        self.next_u64() % (max + 1)
    }
}

/// Copies `data` into `image` at `offset`, growing it with zeros as needed.
pub(crate) fn apply_write(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if end > image.len() {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

/// Applies one synced operation to the durable image.
pub(crate) fn apply(image: &mut Vec<u8>, op: &Pending) {
    match op {
        Pending::Write { offset, data, .. } => apply_write(image, *offset, data),
        Pending::SetLen(len) => image.resize(*len as usize, 0),
        Pending::Punch { offset, len } => {
            let size = image.len() as u64;
            let end = offset.saturating_add(*len).min(size);
            if *offset < end {
                image[*offset as usize..end as usize].fill(0);
            }
        }
    }
}

/// Bytes of the first `k` sector pieces of a write of `len` bytes at `offset`.
fn sector_prefix_bytes(offset: u64, len: u64, sector: u64, k: u64) -> u64 {
    if k == 0 {
        return 0;
    }
    // Piece 1 ends at the first sector boundary after `offset`; each later piece is a sector.
    let first_boundary = (offset / sector + 1) * sector;
    (first_boundary - offset + (k - 1) * sector).min(len)
}

/// Number of sector pieces of a write of `len` bytes at `offset`.
fn sector_pieces(offset: u64, len: u64, sector: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    (offset + len).div_ceil(sector) - offset / sector
}

/// Applies `pending` to `durable` as a crash under `mode` would, returning what happened.
/// Untorn (`atomic`) writes persist whole or not at all; the others tear at sector boundaries
/// in [`CrashMode::TearUnsynced`], whatever their size, as on any device.
pub(crate) fn crash_image(
    durable: &mut Vec<u8>,
    pending: &[Pending],
    mode: CrashMode,
    crash_no: u64,
) -> CrashReport {
    let mut report = CrashReport::default();
    let mut rng = match mode {
        CrashMode::DropUnsynced => None,
        CrashMode::TearUnsynced { seed, .. } => Some(SplitMix64::new(
            seed ^ crash_no.wrapping_mul(0xA076_1D64_78BD_642F),
        )),
    };
    for op in pending {
        let Pending::Write {
            offset,
            data,
            atomic,
        } = op
        else {
            report.lost_metadata_ops += 1;
            continue;
        };
        let len = data.len() as u64;
        let persisted = match (mode, rng.as_mut()) {
            (CrashMode::TearUnsynced { sector, .. }, Some(rng)) => {
                if *atomic {
                    if rng.next_u64() & 1 == 1 {
                        len
                    } else {
                        0
                    }
                } else {
                    let sector = u64::from(sector.max(1));
                    let k = rng.up_to(sector_pieces(*offset, len, sector));
                    sector_prefix_bytes(*offset, len, sector, k)
                }
            }
            _ => 0,
        };
        if persisted > 0 {
            apply_write(durable, *offset, &data[..persisted as usize]);
        }
        report.writes.push(WriteFate {
            offset: *offset,
            len,
            persisted_bytes: persisted,
            atomic: *atomic,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_pieces_follow_file_offsets() {
        assert_eq!(sector_pieces(0, 16384, 4096), 4);
        assert_eq!(sector_pieces(100, 512, 512), 2);
        assert_eq!(sector_prefix_bytes(100, 512, 512, 1), 412);
        assert_eq!(sector_prefix_bytes(100, 512, 512, 2), 512);
        assert_eq!(sector_prefix_bytes(4096, 16384, 512, 3), 1536);
    }

    #[test]
    fn drop_mode_keeps_durable_image() {
        let mut img = vec![1u8; 8192];
        let pending = vec![
            Pending::Write {
                offset: 0,
                data: vec![2; 4096],
                atomic: true,
            },
            Pending::SetLen(0),
        ];
        let r = crash_image(&mut img, &pending, CrashMode::DropUnsynced, 0);
        assert_eq!(img, vec![1u8; 8192]);
        assert_eq!(r.writes[0].persisted_bytes, 0);
        assert_eq!(r.lost_metadata_ops, 1);
    }

    #[test]
    fn atomic_writes_are_all_or_nothing_plain_ones_tear() {
        let mut plain_torn = 0;
        for seed in 0..64 {
            let mut img = vec![0u8; 16384];
            let write = |atomic| Pending::Write {
                offset: 16384,
                data: vec![9; 16384],
                atomic,
            };
            let mode = CrashMode::TearUnsynced { sector: 512, seed };
            let r = crash_image(&mut img, &[write(true), write(false)], mode, 0);
            let p = r.writes[0].persisted_bytes;
            assert!(p == 0 || p == 16384, "seed {seed}: {p}");
            assert!(r.writes[0].atomic && !r.writes[1].atomic);
            plain_torn += r.torn_writes();
        }
        assert!(
            plain_torn > 0,
            "plain writes of the same page tear in some seed"
        );
    }
}
