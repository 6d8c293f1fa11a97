//! Zeroing the bytes of a page that carry no information, so that page compression does not
//! spend its output on them: an index page's free gap and the heap bytes of removed or shrunk
//! records (garbage), and the body of a free page. What the page *means* does not change: it
//! decodes to the same records, links and values. The caller seals the page afterwards.
// MariaDB: page compression compresses whatever is there; InnoDB's page_zip_compress leaves
// garbage out by compressing records one by one. Zeroing gets the same effect for a
// byte-level codec.

use crate::bytes::zero;
use crate::error::PageError;
use crate::header::{FileHeader, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE};
use crate::ids::PageSize;
use crate::index::{IndexPage, HEAP_START, SLOT_SIZE};

/// Zeroes the bytes of `page` (one page of `page_size`, not yet sealed or sealed — the
/// checksum is stale afterwards either way) that no reader looks at:
/// - an index page: the free gap between the heap and the slot directory, and every heap byte
///   that no live record covers (the `garbage` of removed and shrunk records);
/// - a free page: its whole body;
/// - overflow pages zero their unused tail when written, and the other types have none.
///
/// Fails, changing nothing, when the page's header or (for an index page) its record structure
/// does not decode: such a page is written as it is and its reader names the damage.
pub fn zero_unused_space(page: &mut [u8], page_size: PageSize) -> Result<(), PageError> {
    if page.len() != page_size.bytes() {
        return Err(PageError::WrongSize {
            expected: page_size.bytes(),
            found: page.len(),
        });
    }
    let header = FileHeader::read(page)?;
    match header.page_type {
        PageType::Index => zero_index_page(page, page_size),
        PageType::Free => {
            zero(page, FIL_HEADER_SIZE, page_size.bytes() - FIL_TRAILER_SIZE);
            Ok(())
        }
        PageType::Undo => {
            let free = crate::undo::UndoPage::open(&*page, page_size)?.free();
            zero(
                page,
                usize::from(free),
                page_size.bytes() - FIL_TRAILER_SIZE,
            );
            Ok(())
        }
        PageType::SpaceHeader | PageType::Overflow | PageType::Catalog | PageType::TrxSys => Ok(()),
    }
}

/// The index page case: the ranges of live records, sorted, and the gaps between them.
fn zero_index_page(page: &mut [u8], page_size: PageSize) -> Result<(), PageError> {
    let (mut live, heap_top, dir_start, garbage) = {
        let index = IndexPage::open(&*page, page_size)?;
        let mut live = Vec::with_capacity(if index.garbage() > 0 { index.len() } else { 0 });
        if index.garbage() > 0 {
            for i in 0..index.len() {
                let start = index.slot(i);
                // `record_size_at` counts the record's slot, which lives in the directory.
                live.push((start, start + index.record_size_at(i)? - SLOT_SIZE));
            }
        }
        (live, index.heap_top(), index.dir_start(), index.garbage())
    };
    zero(page, heap_top, dir_start);
    if garbage > 0 {
        live.sort_unstable();
        let mut cursor = HEAP_START;
        for (start, end) in live {
            if start > cursor {
                zero(page, cursor, start);
            }
            cursor = cursor.max(end);
        }
        if heap_top > cursor {
            zero(page, cursor, heap_top);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{seal_page, verify_page, PageId, Record};

    /// An index page whose free gap and whose removed records' heap bytes are all 0xAA.
    fn page_with_garbage(ps: PageSize) -> Vec<u8> {
        let id = PageId::new(3, 7);
        let mut page = IndexPage::init(vec![0u8; ps.bytes()], ps, id, 0, 9).expect("init");
        for i in 0..20u8 {
            let key = [b'k', i];
            let value = vec![i + 1; 60];
            let pos = page.search(&key).unwrap_err();
            page.insert(pos, &Record::inline(&key, &value))
                .expect("fits");
        }
        let start = page.slot(3);
        page.remove(3).expect("remove");
        // The removed record's bytes stay in the heap as garbage (no compaction yet).
        let removed = start..start + page.garbage();
        let (heap_top, dir_start) = (page.heap_top(), page.dir_start());
        let mut bytes = page.into_inner();
        for range in [heap_top..dir_start, removed] {
            if let Some(r) = bytes.get_mut(range) {
                r.fill(0xAA);
            }
        }
        bytes
    }

    #[test]
    fn zeroing_keeps_the_records_and_clears_garbage_and_the_free_gap() {
        let ps = PageSize::K4;
        let mut page = page_with_garbage(ps);
        let before: Vec<String> = IndexPage::open(&page[..], ps)
            .expect("valid")
            .iter()
            .map(|r| format!("{:?}", r.expect("record")))
            .collect();
        let junk = |bytes: &[u8]| bytes.iter().map(|&b| usize::from(b == 0xAA)).sum::<usize>();
        let filled_before = junk(&page);
        assert!(filled_before > 0);
        zero_unused_space(&mut page, ps).expect("zeroed");
        let after: Vec<String> = IndexPage::open(&page[..], ps)
            .expect("still valid")
            .iter()
            .map(|r| format!("{:?}", r.expect("record")))
            .collect();
        assert_eq!(before, after);
        assert_eq!(junk(&page), 0, "the free gap's fill is gone");
        let index = IndexPage::open(&page[..], ps).expect("valid");
        let live: usize = (0..index.len())
            .map(|i| index.record_size_at(i).expect("size") - SLOT_SIZE)
            .sum();
        let heap = page.get(HEAP_START..index.heap_top()).unwrap_or(&[]);
        let nonzero = heap.iter().filter(|&&b| b != 0).count();
        assert!(
            nonzero <= live,
            "no garbage byte survives: {nonzero} non-zero heap bytes, {live} live"
        );
        let once = page.clone();
        zero_unused_space(&mut page, ps).expect("again");
        assert_eq!(page, once, "zeroing twice changes nothing");
        seal_page(&mut page);
        verify_page(&page, PageId::new(3, 7), ps).expect("seals and verifies");
    }

    #[test]
    fn a_damaged_index_page_is_refused_unchanged() {
        let ps = PageSize::K4;
        let mut page = page_with_garbage(ps);
        // heap_top beyond the slot directory.
        crate::bytes::put_u16(&mut page, crate::index::OFF_HEAP_TOP, u16::MAX);
        let copy = page.clone();
        assert!(zero_unused_space(&mut page, ps).is_err());
        assert_eq!(page, copy);
    }
}
