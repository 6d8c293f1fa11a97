//! The seed corpus of `doublewrite_file`: real files written by [`Doublewrite`], some damaged
//! as a crash or bit rot would. Deterministic.

use barracuda_io::{FaultyFileSystem, FileSystem};
use barracuda_page::{PageId, PageSize};

use super::{dir, sealed_page, RESEAL_DESCRIPTORS, RESEAL_HEADER, RESEAL_IMAGES};
use crate::format::{AreaKind, CopyContent, Geometry, FILE_NAME};
use crate::{Doublewrite, DoublewriteConfig, DoublewriteError, PageImage};

/// A seed of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// File name inside `fuzz/corpus/doublewrite_file/`.
    pub name: String,
    /// The input: byte 0, then the file.
    pub bytes: Vec<u8>,
}

/// Byte 0 selecting `size` (its index in [`PageSize::ALL`]).
fn size_bits(size: PageSize) -> u8 {
    PageSize::ALL.iter().position(|s| *s == size).unwrap_or(0) as u8
}

/// A batch of the seed files: its pages (id, LSN) and the kind of area it takes.
type Batch<'a> = (&'a [(PageId, u64)], AreaKind);

/// The bytes of a doublewrite file after `batches` were protected (and written in place).
fn build(
    page_size: PageSize,
    geometry: Geometry,
    content: CopyContent,
    batches: &[Batch<'_>],
) -> Result<Vec<u8>, DoublewriteError> {
    let fs = FaultyFileSystem::new();
    fs.create_dir_all(dir())?;
    let config = DoublewriteConfig {
        geometry,
        content,
        direct_io: false,
    };
    let dw = Doublewrite::create(&fs, dir(), page_size, config)?;
    for (i, (pages, kind)) in batches.iter().enumerate() {
        let images: Vec<Vec<u8>> = pages
            .iter()
            .map(|(id, lsn)| sealed_page(page_size, *id, *lsn, 0x40 + i as u8))
            .collect();
        let batch: Vec<PageImage<'_>> = pages
            .iter()
            .zip(&images)
            .map(|((id, lsn), image)| PageImage {
                id: *id,
                lsn: *lsn,
                image,
            })
            .collect();
        dw.protect(&batch, *kind)?.written_in_place(Vec::new());
    }
    Ok(fs
        .file(&dir().join(FILE_NAME))
        .map(|f| f.inner().contents())
        .unwrap_or_default())
}

fn seed(name: &str, selector: u8, file: &[u8]) -> Seed {
    let mut bytes = vec![selector];
    bytes.extend_from_slice(file);
    Seed {
        name: name.to_owned(),
        bytes,
    }
}

/// The seeds: full-image and descriptors-only files, copies of one page in two areas, a torn
/// copy, a damaged header, a short file, an empty one.
pub fn seeds() -> Result<Vec<Seed>, DoublewriteError> {
    let small = Geometry {
        batch_areas: 1,
        pages_per_area: 3,
        single_page_slots: 1,
    };
    let k4 = size_bits(PageSize::K4);
    let images = build(
        PageSize::K4,
        small,
        CopyContent::Images,
        &[
            (
                &[
                    (PageId::new(0, 1), 100),
                    (PageId::new(0, 2), 101),
                    (PageId::new(2, 3), 102),
                ],
                AreaKind::Batch,
            ),
            (&[(PageId::new(2, 5), 150)], AreaKind::SinglePage),
        ],
    )?;
    let two_areas = build(
        PageSize::K4,
        Geometry {
            batch_areas: 2,
            pages_per_area: 2,
            single_page_slots: 1,
        },
        CopyContent::Images,
        &[
            (
                &[(PageId::new(2, 1), 100), (PageId::new(2, 2), 100)],
                AreaKind::Batch,
            ),
            (
                &[(PageId::new(2, 1), 200), (PageId::new(4, 3), 200)],
                AreaKind::Batch,
            ),
        ],
    )?;
    let detect_only = build(
        PageSize::K8,
        Geometry {
            batch_areas: 1,
            pages_per_area: 2,
            single_page_slots: 1,
        },
        CopyContent::DescriptorsOnly,
        &[(
            &[(PageId::new(0, 1), 7), (PageId::new(6, 2), 9)],
            AreaKind::Batch,
        )],
    )?;
    let p4 = PageSize::K4.bytes();
    let mut torn_copy = images.clone();
    // The second image slot of the batch area, its last 512-byte sector lost.
    torn_copy[3 * p4 - 512..3 * p4].fill(0);
    let mut bad_header = images.clone();
    bad_header[0] ^= 0xFF;
    let short = build(PageSize::K16, small, CopyContent::Images, &[])?;
    let reseal = RESEAL_HEADER | RESEAL_IMAGES | RESEAL_DESCRIPTORS;
    Ok(vec![
        seed("4k-images", k4, &images),
        seed("4k-two-areas-resealed", k4 | reseal, &two_areas),
        seed("8k-detect-only", size_bits(PageSize::K8), &detect_only),
        seed("4k-torn-copy", k4, &torn_copy),
        seed("4k-damaged-header", k4, &bad_header),
        seed(
            "16k-short",
            size_bits(PageSize::K16),
            &short[..PageSize::K16.bytes() + 64],
        ),
        seed("empty", 0, &[]),
    ])
}
