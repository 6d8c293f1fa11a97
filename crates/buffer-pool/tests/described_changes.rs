//! A change the caller describes to the log itself (`described_change_mut`) takes no
//! before-image, still counts as a change (poison rule), and — when the pool keeps it — leaves
//! the page as it was before the description, for the log to check its replay against. A
//! `DerefMut` after it captures the before-image at that point: the description covers what
//! came before, the diff what came after.
//!
//! What would break: a before-image copy per described change (the cost this API removes); a
//! described change that escapes the poison rule; a kept copy that is not the page before the
//! first described change, so a log's replay check would pass wrong descriptions or fail right
//! ones.
mod common;

use barracuda_buffer_pool::PoolError;
use common::{commit_change, pid, setup, small_config};

#[test]
fn a_described_change_takes_no_before_image_and_a_later_raw_change_does() {
    let (store, pool) = setup(small_config(32).capture_before_images(true), 100);
    let original = store.stamp(pid(1));
    let mut page = pool.get_exclusive(pid(1)).unwrap();
    page.described_change_mut()[100] = 0xAA;
    assert!(page.has_unrecorded_change());
    assert!(
        page.before_image().is_none(),
        "no copy for a described change"
    );
    assert!(
        page.described_from().is_none(),
        "kept only when the pool is told to"
    );
    page[200] = 0xBB;
    let before = page.before_image().expect("a raw change captures the page");
    assert_eq!(
        before[100], 0xAA,
        "the before-image follows the described change"
    );
    assert_eq!(before[200], original[200]);
    commit_change(&mut page, 7);
    assert!(page.before_image().is_none());
}

#[test]
fn the_page_before_the_first_described_change_is_kept_when_asked() {
    let config = small_config(32)
        .capture_before_images(true)
        .keep_described_from(true);
    let (store, pool) = setup(config, 100);
    let original = store.stamp(pid(2));
    let mut page = pool.get_exclusive(pid(2)).unwrap();
    page.described_change_mut()[100] = 1;
    page.described_change_mut()[101] = 2;
    let from = page.described_from().expect("kept");
    assert_eq!(
        from,
        &original[..],
        "the page before the first described change"
    );
    commit_change(&mut page, 9);
    assert!(
        page.described_from().is_none(),
        "a recorded change starts afresh"
    );
    page.described_change_mut()[102] = 3;
    assert_eq!(page.described_from().expect("kept again")[101], 2);
    commit_change(&mut page, 10);
    // Not kept after a raw change: the diff from the before-image covers what follows.
    page[50] = 4;
    page.described_change_mut()[51] = 5;
    assert!(page.described_from().is_none());
    commit_change(&mut page, 11);
}

#[test]
fn an_unrecorded_described_change_poisons_the_page() {
    let (_store, pool) = setup(small_config(32).capture_before_images(true), 100);
    {
        let mut page = pool.get_exclusive(pid(3)).unwrap();
        page.described_change_mut()[100] = 0xCD;
    }
    assert!(matches!(
        pool.get_shared(pid(3)),
        Err(PoolError::PoisonedPage { page }) if page == pid(3)
    ));
    assert!(pool.writes_stopped().is_some());
}

#[test]
fn stamping_the_page_lsn_takes_no_before_image_and_counts_as_a_change() {
    let (_store, pool) = setup(small_config(32).capture_before_images(true), 100);
    {
        let mut page = pool.get_exclusive(pid(4)).unwrap();
        page.stamp_page_lsn(42);
        assert!(page.before_image().is_none());
        assert!(page.has_unrecorded_change());
        assert_eq!(barracuda_page::page_lsn(&page), Some(42));
        page.mark_dirty(42);
    }
    assert!(pool.writes_stopped().is_none());
}
