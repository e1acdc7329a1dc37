//! Turning the HTTP clients' errors (reqwest's, hyper's) into the core's [`Failure`] classes. Everything else about a
//! failure (class, message, back-off) lives in `tpsmeter_core::failure`, shared with the
//! browser.

use std::error::Error as StdError;

pub use tpsmeter_core::cap::cap_chars;
pub use tpsmeter_core::failure::{Failure, MAX_ERROR_BODY_BYTES, MAX_EXCERPT_CHARS, body_excerpt};
use tpsmeter_core::report::redact_url;

/// Classifies an error from reqwest (connect, send or body read).
pub fn from_reqwest(err: &reqwest::Error) -> Failure {
    classify(err, err.is_connect(), reqwest_message(err))
}

/// Classifies an error from hyper or hyper-util's client (the plain-http path); `is_connect`
/// when it failed to connect. Neither names the URL, so nothing needs redacting.
pub fn from_hyper(err: &(dyn StdError + 'static), is_connect: bool) -> Failure {
    classify(err, is_connect, error_chain(err))
}

fn classify(err: &(dyn StdError + 'static), is_connect: bool, message: String) -> Failure {
    if chain_has_io_kind(err, std::io::ErrorKind::ConnectionRefused) {
        return Failure::ConnectionRefused { message };
    }
    // hyper-util reports resolver failures as a ConnectError "dns error" wrapping the
    // resolver's io::Error ("failed to lookup address information").
    if is_connect && (message.contains("dns error") || message.contains("lookup")) {
        return Failure::UnknownHost { message };
    }
    Failure::Connection { message }
}

/// A reqwest error's message with its URL redacted: reqwest's Display names the URL, and a
/// user may have put a credential in it (`?key=`).
pub fn reqwest_message(err: &reqwest::Error) -> String {
    let message = error_chain(err);
    match err.url() {
        Some(url) => message.replace(url.as_str(), &redact_url(url.as_str())),
        None => message,
    }
}

/// The error and its sources joined with ": " (reqwest's own Display hides the cause).
pub fn error_chain(err: &(dyn StdError + 'static)) -> String {
    let mut out = err.to_string();
    let mut src = err.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        src = s.source();
    }
    cap_chars(&out, MAX_EXCERPT_CHARS)
}

fn chain_has_io_kind(err: &(dyn StdError + 'static), kind: std::io::ErrorKind) -> bool {
    let mut src: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == kind {
                return true;
            }
        }
        src = s.source();
    }
    false
}
