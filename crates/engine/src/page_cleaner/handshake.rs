//! The handshake between committers at the redo log's sync point and the page cleaner
//! (InnoDB: `buf_flush_request_force` raises `buf_flush_sync_lsn` and wakes the cleaner;
//! `buf_flush_wait_flushed` waits for the oldest modification to pass it).
//!
//! A committer raises a request ("make the oldest modification pass LSN X"), wakes the
//! cleaner, and waits for it to report progress; it then checks for itself whether it has room,
//! and asks again if not. The cleaner takes the highest pending request, writes pages for it
//! and checkpoints, reporting progress after every batch. A failure while serving is handed to
//! the committers whose requests it was serving — never to one that asked later, which gets
//! its own attempt — and a cleaner that has exited fails every waiter instead of leaving it
//! waiting.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use barracuda_page::Lsn;

use crate::error::Error;

/// Why a committer at the sync point got no room from the page cleaner.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SyncPointError {
    /// The cleaner thread is gone (stopped, or panicked): nothing writes pages for committers.
    #[error(
        "no room for a commit: the redo age is past the log's sync point and the page cleaner, \
         which writes the pages that make room, is not running"
    )]
    CleanerStopped,
    /// The cleaner failed while serving this request, and an earlier waiter took the error.
    #[error("no room for a commit: the page cleaner failed to write pages at the sync point: {0}")]
    CleanerFailed(String),
    /// The cleaner made no room within the wait limit.
    #[error(
        "no room for a commit: waited {waited:?} for the page cleaner to bring the redo age \
         below the sync point ({sync_point} bytes); it is still {age} bytes"
    )]
    TimedOut {
        /// How long the committer waited.
        waited: Duration,
        /// The redo age (current LSN − oldest modification, plus the commit's estimate) when it
        /// gave up.
        age: u64,
        /// The log's sync point.
        sync_point: u64,
    },
}

impl From<SyncPointError> for Error {
    fn from(err: SyncPointError) -> Self {
        Error::Redo {
            source: Box::new(err),
        }
    }
}

/// What the cleaner is woken for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// The engine is closing.
    Stop,
    /// Committers need the oldest modification to pass `need`; `seq` is the newest request
    /// this covers (for [`Handshake::failed`]).
    Sync {
        /// The LSN the oldest modification must pass.
        need: Lsn,
        /// The newest request served.
        seq: u64,
    },
    /// The regular round is due.
    Tick,
    /// A batch of pages is queued for write-behind (`BufferPool::write_behind`).
    WriteBehind,
}

/// A failure while serving the requests up to `up_to`.
struct Failure {
    up_to: u64,
    message: String,
    /// The file and kind of an I/O error, so that every waiter gets it typed (a background
    /// committer such as purge may be the one that takes `error` itself).
    io: Option<(std::path::PathBuf, crate::error::IoErrorKind)>,
    /// The error itself, for the first waiter to take; later ones get `message`.
    error: Option<Error>,
}

struct State {
    stop: bool,
    running: bool,
    /// Pages are queued for write-behind.
    write_behind: bool,
    /// The highest LSN asked for and not yet taken by the cleaner.
    requested: Option<Lsn>,
    /// Requests made so far: each waiting committer's sequence number.
    posted: u64,
    /// Bumped by every report of the cleaner, so a waiter can tell whether one came since it
    /// last looked (a notification sent before it waits is not lost).
    progress: u64,
    failure: Option<Failure>,
}

impl State {
    /// The failure of a serving that covered request `seq`, if any.
    fn failure_for(&mut self, seq: u64) -> Option<Error> {
        let failure = self.failure.as_mut().filter(|f| f.up_to >= seq)?;
        if let Some(error) = failure.error.take() {
            return Some(error);
        }
        let source = SyncPointError::CleanerFailed(failure.message.clone());
        Some(match &failure.io {
            Some((file, kind)) => Error::Io {
                file: file.clone(),
                kind: *kind,
                source: Box::new(source),
            },
            None => source.into(),
        })
    }
}

/// The shared state of the handshake, with one condition variable each way.
pub(super) struct Handshake {
    state: Mutex<State>,
    /// Wakes the cleaner: a request, or stop.
    wake: Condvar,
    /// Wakes waiting committers: progress, a failure, or the cleaner's exit.
    reported: Condvar,
}

impl Handshake {
    pub(super) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                stop: false,
                running: true,
                write_behind: false,
                requested: None,
                posted: 0,
                progress: 0,
                failure: None,
            }),
            wake: Condvar::new(),
            reported: Condvar::new(),
        }
    }

    /// Asks the cleaner to exit at its next wake-up, and wakes it.
    pub(super) fn request_stop(&self) {
        self.state.lock().stop = true;
        self.wake.notify_all();
    }

    /// Wakes the cleaner for the pages queued for write-behind (the pool's waker: called by a
    /// thread holding page latches, so it only sets a flag and notifies).
    pub(super) fn wake_write_behind(&self) {
        self.state.lock().write_behind = true;
        self.wake.notify_all();
    }

    /// The cleaner's wait: returns at once for a stop or a pending request (a request before a
    /// round that is due, a round that is due before write-behind), else at `deadline` with
    /// [`Event::Tick`].
    pub(super) fn next_event(&self, deadline: Instant) -> Event {
        let mut state = self.state.lock();
        loop {
            if state.stop {
                return Event::Stop;
            }
            if let Some(need) = state.requested.take() {
                return Event::Sync {
                    need,
                    seq: state.posted,
                };
            }
            if Instant::now() >= deadline {
                return Event::Tick;
            }
            if std::mem::take(&mut state.write_behind) {
                return Event::WriteBehind;
            }
            // Woken early by a request or a stop, or at the deadline: the loop tells which.
            let _ = self.wake.wait_until(&mut state, deadline);
        }
    }

    /// The cleaner wrote pages or moved the checkpoint: waiters check their room again.
    pub(super) fn progressed(&self) {
        self.state.lock().progress += 1;
        self.reported.notify_all();
    }

    /// Serving the requests up to `seq` failed with `error`: their waiters get it.
    pub(super) fn failed(&self, seq: u64, error: Error) {
        let mut state = self.state.lock();
        let io = match &error {
            Error::Io { file, kind, .. } => Some((file.clone(), *kind)),
            _ => None,
        };
        state.failure = Some(Failure {
            up_to: seq,
            message: error.to_string(),
            io,
            error: Some(error),
        });
        state.progress += 1;
        drop(state);
        self.reported.notify_all();
    }

    /// The cleaner thread is exiting (or unwinding): no request will be served any more.
    pub(super) fn exited(&self) {
        let mut state = self.state.lock();
        state.running = false;
        state.progress += 1;
        drop(state);
        self.reported.notify_all();
    }

    /// The count of the cleaner's reports; a committer reads it before checking its room, and
    /// passes it to [`request_and_wait`](Self::request_and_wait).
    pub(super) fn progress(&self) -> u64 {
        self.state.lock().progress
    }

    /// Asks for the oldest modification to pass `need` (raising a pending request, never
    /// lowering it), wakes the cleaner, and waits up to `timeout` for a report after `seen`.
    /// `ticket` holds the committer's request number across its calls (`None` on the first).
    ///
    /// Returns the error of a serving that covered this committer's request, or
    /// [`SyncPointError::CleanerStopped`] once the cleaner has exited; `Ok` means "check your
    /// room again" — whether after progress or at the timeout.
    pub(super) fn request_and_wait(
        &self,
        need: Lsn,
        ticket: &mut Option<u64>,
        seen: u64,
        timeout: Duration,
    ) -> Result<(), Error> {
        let mut state = self.state.lock();
        if let Some(error) = ticket.and_then(|seq| state.failure_for(seq)) {
            return Err(error);
        }
        if !state.running {
            return Err(SyncPointError::CleanerStopped.into());
        }
        state.requested = Some(state.requested.map_or(need, |r| r.max(need)));
        let seq = if let Some(seq) = *ticket {
            seq
        } else {
            state.posted += 1;
            state.posted
        };
        *ticket = Some(seq);
        self.wake.notify_all();
        if state.progress == seen {
            // A report, or the timeout: the caller checks its room either way.
            let _ = self.reported.wait_for(&mut state, timeout);
        }
        if let Some(error) = state.failure_for(seq) {
            return Err(error);
        }
        if !state.running {
            return Err(SyncPointError::CleanerStopped.into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error() -> Error {
        Error::fs("tables/t.ibd", std::io::Error::other("injected"))
    }

    #[test]
    fn requests_raise_the_pending_lsn_and_wake_the_cleaner_before_its_round() {
        let h = Handshake::new();
        let far = Instant::now() + Duration::from_hours(1);
        let (mut a, mut b) = (None, None);
        let seen = h.progress();
        h.request_and_wait(500, &mut a, seen, Duration::ZERO)
            .unwrap();
        h.request_and_wait(900, &mut b, seen, Duration::ZERO)
            .unwrap();
        h.request_and_wait(700, &mut a, seen, Duration::ZERO)
            .unwrap();
        assert_eq!((a, b), (Some(1), Some(2)), "one number per committer");
        assert_eq!(
            h.next_event(far),
            Event::Sync { need: 900, seq: 2 },
            "the highest need, at once although the round is an hour away"
        );
        assert_eq!(h.next_event(Instant::now()), Event::Tick, "taken once");
        h.request_stop();
        assert_eq!(h.next_event(far), Event::Stop);
    }

    #[test]
    fn a_report_made_before_the_wait_is_not_lost() {
        let h = Handshake::new();
        let seen = h.progress();
        h.progressed();
        let started = Instant::now();
        h.request_and_wait(1, &mut None, seen, Duration::from_hours(1))
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "returned at once: the progress count had moved"
        );
    }

    #[test]
    fn a_failure_goes_to_the_requests_it_served_and_not_to_later_ones() {
        let h = Handshake::new();
        let (mut first, mut second) = (None, None);
        let seen = h.progress();
        h.request_and_wait(10, &mut first, seen, Duration::ZERO)
            .unwrap();
        h.request_and_wait(20, &mut second, seen, Duration::ZERO)
            .unwrap();
        let Event::Sync { seq, .. } = h.next_event(Instant::now()) else {
            panic!("a request is pending");
        };
        h.failed(seq, io_error());
        let err = h
            .request_and_wait(10, &mut first, seen, Duration::ZERO)
            .unwrap_err();
        assert!(
            matches!(err, Error::Io { .. }),
            "the first waiter gets the cleaner's own error: {err}"
        );
        let err = h
            .request_and_wait(20, &mut second, seen, Duration::ZERO)
            .unwrap_err();
        assert!(
            err.to_string().contains("tables/t.ibd") && err.to_string().contains("sync point"),
            "the next one its message: {err}"
        );
        assert!(
            matches!(err, Error::Io { ref file, .. } if file.ends_with("tables/t.ibd")),
            "typed as the first one's, whichever committer (purge, say) took that: {err:?}"
        );
        let mut later = None;
        let seen = h.progress();
        h.request_and_wait(30, &mut later, seen, Duration::ZERO)
            .expect("a request made after the failure gets its own attempt");
        assert_eq!(later, Some(3));
    }

    #[test]
    fn a_cleaner_that_exited_fails_its_waiters() {
        let h = Handshake::new();
        let mut ticket = None;
        let seen = h.progress();
        h.request_and_wait(10, &mut ticket, seen, Duration::ZERO)
            .unwrap();
        h.exited();
        let err = h
            .request_and_wait(10, &mut ticket, seen, Duration::from_hours(1))
            .unwrap_err();
        assert!(
            err.to_string().contains("page cleaner") && err.to_string().contains("not running"),
            "{err}"
        );
    }
}
