//! Damaged or random bytes in the doublewrite file never panic recovery and never yield a copy
//! whose page id, LSN or bytes disagree with what was written.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::collections::HashMap;

use barracuda_doublewrite::fuzzing::{doublewrite_file, RESEAL_DESCRIPTORS, RESEAL_IMAGES};
use barracuda_doublewrite::{read_copies, AreaKind, Doublewrite, FILE_NAME};
use barracuda_io::{FileSystem, OpenOptions};
use barracuda_page::{PageId, PageSize};
use common::{batch, config, dir, fs, protect};
use proptest::prelude::*;

const PS: PageSize = PageSize::K4;

/// A file holding copies in every area, and every image written per page.
fn base() -> (Vec<u8>, HashMap<PageId, Vec<Vec<u8>>>) {
    let fs = fs();
    let dw = Doublewrite::create(&fs, dir(), PS, config(2, 3, 2)).unwrap();
    let mut written: HashMap<PageId, Vec<Vec<u8>>> = HashMap::new();
    let batches: [(&[u32], u64, AreaKind); 4] = [
        (&[0, 1, 2], 10, AreaKind::Batch),
        (&[1, 3], 20, AreaKind::Batch),
        (&[2], 30, AreaKind::SinglePage),
        (&[0], 40, AreaKind::SinglePage),
    ];
    for (pages, lsn, kind) in batches {
        let ids: Vec<PageId> = pages.iter().map(|&n| PageId::new(4, n)).collect();
        let pages = batch(PS, &ids, lsn);
        for (id, image) in &pages {
            written.entry(*id).or_default().push(image.clone());
        }
        protect(&dw, &pages, kind)
            .unwrap()
            .written_in_place(Vec::new());
    }
    let bytes = fs.file(&dir().join(FILE_NAME)).unwrap().inner().contents();
    (bytes, written)
}

#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, xor: u8 },
    Truncate { len: usize },
    Garbage { page: usize, bytes: Vec<u8> },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => (any::<usize>(), 1..=255u8).prop_map(|(at, xor)| Damage::Flip { at, xor }),
        1 => any::<usize>().prop_map(|len| Damage::Truncate { len }),
        2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 64..=4096))
            .prop_map(|(page, bytes)| Damage::Garbage { page, bytes }),
    ]
}

fn apply(file: &mut Vec<u8>, d: &Damage) {
    if file.is_empty() {
        return;
    }
    match d {
        Damage::Flip { at, xor } => {
            let i = at % file.len();
            file[i] ^= xor;
        }
        Damage::Truncate { len } => file.truncate(len % file.len()),
        Damage::Garbage { page, bytes } => {
            let start = (page % file.len().div_ceil(4096)) * 4096;
            let end = (start + bytes.len()).min(file.len());
            file[start..end].copy_from_slice(&bytes[..end - start]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn damage_never_yields_a_copy_that_was_not_written(
        damages in proptest::collection::vec(damage(), 1..24)
    ) {
        let (mut file, written) = base();
        for d in &damages {
            apply(&mut file, d);
        }
        let fs = fs();
        let f = fs.open(&dir().join(FILE_NAME), &OpenOptions::new().create(true)).unwrap();
        f.write_at(&file, 0).unwrap();
        let copies = read_copies(&fs, dir(), PS).unwrap().unwrap();
        for c in copies.copies() {
            let versions = written.get(&c.id);
            prop_assert!(
                versions.is_some_and(|v| v.contains(&c.image)),
                "a copy of {} at LSN {} that was never written", c.id, c.lsn
            );
            prop_assert_eq!(barracuda_page::page_lsn(&c.image), Some(c.lsn));
        }
    }

    #[test]
    fn random_files_never_panic_recovery(
        selector in any::<u8>(),
        file in proptest::collection::vec(any::<u8>(), 0..20_000),
    ) {
        let mut input = vec![selector % 3]; // 4 to 16 KiB pages, no re-sealing
        input.extend_from_slice(&file);
        doublewrite_file(&input);
    }

    #[test]
    fn resealed_damage_never_panics_recovery(
        damages in proptest::collection::vec(damage(), 1..24),
        reseal in 0..4u8,
    ) {
        let (mut file, _) = base();
        for d in &damages {
            apply(&mut file, d);
        }
        let bits = [0, RESEAL_IMAGES, RESEAL_DESCRIPTORS, RESEAL_IMAGES | RESEAL_DESCRIPTORS];
        let mut input = vec![bits[usize::from(reseal)]]; // 4 KiB pages
        input.extend_from_slice(&file);
        doublewrite_file(&input);
    }
}
