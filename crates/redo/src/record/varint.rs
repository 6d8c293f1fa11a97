//! The prefix varint of page ids, offsets and lengths (`docs/FORMATS.md` §10.2): 1–5 bytes,
//! the count of leading one bits of the first byte says how many bytes follow, and each length
//! covers its own range of values (biased), so every value has exactly one encoding.

/// First value of each encoded length: 1 byte holds `0..128`, 2 bytes `128..16_512`, …
const BASE: [u64; 5] = [
    0,
    0x80,
    0x80 + 0x4000,
    0x80 + 0x4000 + 0x20_0000,
    0x80 + 0x4000 + 0x20_0000 + 0x1000_0000,
];

/// The most bytes one varint takes.
pub(crate) const MAX_LEN: usize = 5;

/// Bytes `encode(v)` takes.
pub(crate) const fn len(v: u32) -> usize {
    let v = v as u64;
    if v < BASE[1] {
        1
    } else if v < BASE[2] {
        2
    } else if v < BASE[3] {
        3
    } else if v < BASE[4] {
        4
    } else {
        5
    }
}

/// Appends the encoding of `v` to `out`.
pub(crate) fn encode(v: u32, out: &mut Vec<u8>) {
    let n = len(v);
    let w = u64::from(v) - BASE.get(n - 1).copied().unwrap_or(0);
    // The bits above the trailing bytes go into the first byte after the `n - 1` one bits and
    // a zero; the rest follow little-endian.
    let tail_bits = 8 * (n - 1);
    let prefix: u8 = match n {
        1 => 0x00,
        2 => 0x80,
        3 => 0xC0,
        4 => 0xE0,
        _ => 0xF0,
    };
    let top = if n == 5 { 0 } else { (w >> tail_bits) as u8 };
    out.push(prefix | top);
    let le = w.to_le_bytes();
    out.extend(le.iter().take(n - 1));
}

/// Decodes one varint from the start of `bytes`: the value and the bytes it took, or `None`
/// if `bytes` ends inside it or its first byte is `0xF1..=0xFF` (undefined prefixes).
pub(crate) fn decode(bytes: &[u8]) -> Option<(u32, usize)> {
    let first = *bytes.first()?;
    let (n, top) = match first {
        0x00..=0x7F => return Some((u32::from(first), 1)),
        0x80..=0xBF => (2, first & 0x3F),
        0xC0..=0xDF => (3, first & 0x1F),
        0xE0..=0xEF => (4, first & 0x0F),
        0xF0 => (5, 0),
        _ => return None,
    };
    let tail = bytes.get(1..n)?;
    let mut le = [0u8; 8];
    for (d, s) in le.iter_mut().zip(tail) {
        *d = *s;
    }
    let w = u64::from_le_bytes(le) | (u64::from(top) << (8 * (n - 1)));
    let v = u32::try_from(w + BASE.get(n - 1).copied().unwrap_or(0)).ok()?;
    Some((v, n))
}

/// Zigzag: a signed delta as an unsigned varint value, the sign in the low bit.
pub(crate) fn zigzag(d: i32) -> u32 {
    ((d << 1) ^ (d >> 31)) as u32
}

/// The inverse of [`zigzag`].
pub(crate) fn unzigzag(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_round_trip_with_the_documented_lengths() {
        let cases: [(u32, usize); 10] = [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_511, 2),
            (16_512, 3),
            (2_113_663, 3),
            (2_113_664, 4),
            (270_549_119, 4),
            (270_549_120, 5),
            (u32::MAX, 5),
        ];
        for (v, n) in cases {
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(out.len(), n, "{v}");
            assert_eq!(len(v), n);
            assert_eq!(decode(&out), Some((v, n)), "{v}");
        }
    }

    #[test]
    fn byte_exact_examples() {
        let enc = |v| {
            let mut o = Vec::new();
            encode(v, &mut o);
            o
        };
        assert_eq!(enc(5), [0x05]);
        assert_eq!(enc(128), [0x80, 0x00]);
        assert_eq!(enc(300), [0x80, 0xAC]);
        assert_eq!(enc(16_512), [0xC0, 0x00, 0x00]);
        assert_eq!(enc(16_512 + 0x1_0203), [0xC1, 0x03, 0x02]);
    }

    #[test]
    fn out_of_range_and_truncated_inputs_are_rejected() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0x80]), None);
        assert_eq!(decode(&[0xF1, 0, 0, 0, 0]), None);
        assert_eq!(
            decode(&[0xF0, 0xFF, 0xFF, 0xFF, 0xFF]),
            None,
            "beyond u32::MAX"
        );
    }

    #[test]
    fn zigzag_round_trips() {
        for d in [0, 1, -1, 2, -2, 65_535, -65_536, i32::MAX, i32::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
