//! Helpers shared by the engine's integration tests.

use std::error::Error as _;

use barracuda::Error;

/// The error and all its sources, one message each, joined by ` <- `: what a test searches for
/// a file name, a page or an OS error that a wrapper may hold deeper down.
pub fn chain(err: &Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(" <- ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
