//! Compile-time promises of the public API: which handles may be sent to and shared between
//! threads. If a change makes one of them false, the crate stops building here, instead of
//! breaking a user's program that relied on it.

use crate::{Engine, EngineStatus, Error, Range, Table, Transaction};

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    const fn assert_send_sync_static<T: Send + Sync + 'static>() {}

    // One engine serves every thread by reference or in an `Arc`.
    assert_send_sync::<Engine>();
    // Table handles are cloned into worker threads.
    assert_send_sync::<Table>();
    // An iterator holds no latch between items, so it may move to another thread mid-scan.
    assert_send_sync::<Range>();
    // A transaction borrows its engine; it may be built on one thread and committed on another.
    assert_send_sync::<Transaction<'_>>();
    // Errors cross threads and go into `Box<dyn Error + Send + Sync>` / `anyhow::Error`.
    assert_send_sync_static::<Error>();
    assert_send_sync::<EngineStatus>();
};
