//! A created page starts as zeros whatever frame it gets: one never used (whose memory the
//! pool does not clear again), one that held another page, or the frame of the same page
//! already cached. What would break: a new page carrying an evicted page's bytes into its free
//! space, where they would be written to disk and logged as the page's image.
mod common;

use common::{commit_change, pid, setup, small_config};

fn assert_zeros(page: &[u8], what: &str) {
    let first = page.iter().position(|&b| b != 0);
    assert_eq!(first, None, "{what}: byte {first:?} is not zero");
}

#[test]
fn a_created_page_is_zeros_in_a_fresh_a_reused_and_its_own_frame() {
    const FRAMES: u32 = 16;
    let (store, pool) = setup(small_config(FRAMES as usize), 64);

    // A fresh pool: the first create takes a never-used frame.
    {
        let page = pool.create(pid(40)).unwrap();
        assert_zeros(&page, "page 40 in a never-used frame");
    }

    // Every frame now holds a page read from the store (non-zero stamps).
    for n in 0..FRAMES {
        let page = pool.get_shared(pid(n)).unwrap();
        assert_eq!(&page[..], &store.stamp(pid(n))[..], "page {n} as read");
    }
    assert!(pool.stats().pages_read >= u64::from(FRAMES));

    // Creating more pages than there are frames reuses frames that held stamped pages.
    for n in 50..50 + FRAMES {
        let page = pool.create(pid(n)).unwrap();
        assert_zeros(&page, &format!("page {n} in a reused frame"));
    }

    // The same page created again while cached (and changed): its own frame, cleared.
    let again = pid(60);
    {
        let mut page = pool.create(again).unwrap();
        page.fill(0xA5);
        commit_change(&mut page, 7);
    }
    assert_eq!(
        pool.get_shared(again).unwrap()[100],
        0xA5,
        "the change is cached"
    );
    let page = pool.create(again).unwrap();
    assert_zeros(&page, "a cached page created again");
}
