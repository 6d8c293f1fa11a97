//! CRC-32C (Castagnoli), the checksum of every page, log frame and doublewrite slot.
//!
//! One place computes it so that every format uses the same implementation: `crc-fast`, which
//! folds with carry-less multiplication (PCLMULQDQ, or VPCLMULQDQ with AVX-512) where the CPU
//! has it. Measured on this project's machine (`docs/EXPERIMENTS.md` §16, ninth pass) a 16 KiB
//! page takes 0.23–0.30 µs against 1.0 µs with the `crc32c` crate's three-way `crc32`
//! instruction loop; below ~200 bytes the two are equal. The values are the standard CRC-32C
//! (CRC-32/ISCSI), so the on-disk formats did not change.

use crc_fast::{CrcAlgorithm, Digest};

/// CRC-32C of `bytes` (initial value and final XOR `0xFFFF_FFFF`, reflected; `b"123456789"`
/// gives `0xE306_9283`).
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(bytes)
}

/// The CRC-32C of `a` followed by `bytes`, given `crc = crc32c(a)`: `crc32c_append(crc32c(a), b)
/// == crc32c(a ‖ b)`.
#[inline]
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    // The digest's state is the register before the final XOR.
    let mut digest = Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    digest.update(bytes);
    // A 32-bit CRC's digest yields a value below 2^32.
    digest.finalize() as u32
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "test data of known lengths; a panic is a failed test"
)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xFF, and 0..32 ascending.
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
    }

    #[test]
    fn every_length_of_a_page_matches_a_bitwise_crc() {
        // A reference computed one bit at a time, for lengths across the folding thresholds.
        fn bitwise(bytes: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 == 1 {
                        (crc >> 1) ^ 0x82F6_3B78
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        }
        let data: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in (0..300).chain([511, 512, 513, 4095, 4096, 16_383, 16_384, 16_385, 20_000]) {
            assert_eq!(crc32c(&data[..len]), bitwise(&data[..len]), "length {len}");
        }
    }

    proptest! {
        #[test]
        fn append_continues_a_crc(bytes in proptest::collection::vec(any::<u8>(), 0..5000), cut in any::<prop::sample::Index>()) {
            let at = cut.index(bytes.len() + 1);
            let (a, b) = bytes.split_at(at);
            prop_assert_eq!(crc32c_append(crc32c(a), b), crc32c(&bytes));
        }
    }
}
