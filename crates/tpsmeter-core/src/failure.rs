//! Why one request failed, classified from what the transport (reqwest natively, `fetch` in
//! the browser), the HTTP layer or the stream decoder reported.
//!
//! Every failure is recorded in the request's record and the run goes on. Messages are
//! built from our own wording plus error kinds, never from request headers, so an API key
//! cannot leak through them; response bodies are capped excerpts ([`MAX_EXCERPT_CHARS`]).
//! The transports turn their own errors into a [`Failure`]; everything after that (classes,
//! messages, back-off) is shared.

use crate::cap::cap_chars;
use crate::error::CoreError;
use crate::redact::Redactor;
use crate::redact::redact_url;
use crate::report::{ErrorClass, ErrorRecord};

/// Cap on the response-body excerpt kept with an HTTP error: enough for a provider's JSON
/// error message, small enough that a server returning megabytes of HTML cannot bloat the
/// report.
pub const MAX_EXCERPT_CHARS: usize = 512;

/// Cap on the bytes read from an error response's body to build the excerpt; the rest is
/// dropped unread with the connection.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Cap on a `Retry-After` header value kept verbatim (an HTTP-date is 29 characters).
pub(crate) const MAX_RETRY_AFTER_CHARS: usize = 64;

/// Cap on a redirect's `Location` kept for the message (after redaction): enough to show
/// where the server points, short enough that a hostile header cannot fill the record.
pub const MAX_LOCATION_CHARS: usize = 256;

/// What went wrong with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// A non-2xx status other than 429 and a redirect.
    HttpStatus { status: u16, excerpt: String },
    /// A redirect (a 3xx with a `Location`), never followed: the request's credential would
    /// go along to wherever the server points. `status` is unknown in the browser, whose
    /// `redirect: 'manual'` answer hides it, and so is `location`; natively `location` is the
    /// header, redacted ([`redact_url`]) and capped ([`MAX_LOCATION_CHARS`]).
    Redirect {
        status: Option<u16>,
        location: Option<String>,
    },
    /// HTTP 429. `retry_after_s` is the header in seconds when numeric; `retry_after_raw`
    /// keeps the header verbatim (it may be an HTTP-date).
    RateLimited {
        retry_after_s: Option<f64>,
        retry_after_raw: Option<String>,
        excerpt: String,
    },
    /// The TCP connection was refused (nothing listening).
    ConnectionRefused { message: String },
    /// The host name did not resolve.
    UnknownHost { message: String },
    /// Any other connect or transport failure (TLS, reset, HTTP protocol error).
    Connection { message: String },
    /// The browser blocked the response: the server is reachable but does not allow this
    /// page's origin (CORS). The message says what the server must send.
    Cors { message: String },
    /// No body byte arrived within `--timeout` of the send.
    Timeout { after_s: f64 },
    /// The stream started, then no byte arrived for `--idle-timeout`.
    IdleTimeout { after_s: f64 },
    /// The body ended before the protocol's end marker.
    Truncated { message: String },
    /// The server sent an error event inside the stream.
    StreamError {
        code: Option<String>,
        message: String,
    },
    /// The decoder rejected the bytes: malformed JSON, a line or event over its cap,
    /// invalid UTF-8.
    Decode(CoreError),
    /// The run was interrupted (Ctrl-C) while this request was in flight.
    Cancelled,
    /// A failure the transport classified itself (the browser's `fetch` errors and timers):
    /// its class and our own message.
    Reported { class: ErrorClass, message: String },
}

impl Failure {
    /// The report's class of this failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Failure::HttpStatus { status, .. } if (400..500).contains(status) => {
                ErrorClass::Http4xx
            }
            Failure::HttpStatus { status, .. } if *status >= 500 => ErrorClass::Http5xx,
            // 1xx, and a 3xx without a Location (304 to a POST, an odd proxy): no class of
            // their own.
            Failure::HttpStatus { .. } => ErrorClass::Other,
            Failure::Redirect { .. } => ErrorClass::Redirect,
            Failure::RateLimited { .. } => ErrorClass::RateLimited,
            Failure::ConnectionRefused { .. } => ErrorClass::ConnectRefused,
            Failure::UnknownHost { .. } => ErrorClass::Dns,
            Failure::Connection { .. } => ErrorClass::Connect,
            Failure::Cors { .. } => ErrorClass::Cors,
            Failure::Timeout { .. } => ErrorClass::TimeoutFirstByte,
            Failure::IdleTimeout { .. } => ErrorClass::Stall,
            Failure::Truncated { .. } | Failure::Decode(CoreError::TruncatedStream { .. }) => {
                ErrorClass::Truncated
            }
            Failure::StreamError { .. } => ErrorClass::StreamError,
            Failure::Decode(CoreError::MalformedJson { .. }) => ErrorClass::MalformedJson,
            Failure::Decode(CoreError::LineTooLong { .. } | CoreError::EventTooLarge { .. }) => {
                ErrorClass::Oversized
            }
            Failure::Decode(CoreError::InvalidUtf8 { .. }) => ErrorClass::InvalidUtf8,
            Failure::Decode(_) => ErrorClass::Other,
            Failure::Cancelled => ErrorClass::Cancelled,
            Failure::Reported { class, .. } => *class,
        }
    }

    /// The report's record of this failure.
    pub fn to_record(&self) -> ErrorRecord {
        self.to_record_redacted(&Redactor::default())
    }

    /// The report's record of this failure, with the run's secrets taken out of the
    /// message (which may quote the server's body, a header or an error event).
    pub fn to_record_redacted(&self, redactor: &Redactor) -> ErrorRecord {
        let mut record = ErrorRecord::redacted(self.class(), &self.message(), redactor);
        record.http_status = self.http_status();
        record.retry_after_s = self.retry_after_s();
        record
    }

    /// The HTTP status, when the failure is one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Failure::HttpStatus { status, .. } => Some(*status),
            Failure::Redirect { status, .. } => *status,
            Failure::RateLimited { .. } => Some(429),
            _ => None,
        }
    }

    /// How long the server asked us to wait, in seconds, when it said so numerically.
    pub fn retry_after_s(&self) -> Option<f64> {
        match self {
            Failure::RateLimited { retry_after_s, .. } => *retry_after_s,
            _ => None,
        }
    }

    /// A human-readable one-line message.
    pub fn message(&self) -> String {
        match self {
            Failure::HttpStatus { status, excerpt } => format!("HTTP {status}: {excerpt}"),
            Failure::Redirect { status, location } => {
                let what = match status {
                    Some(s) => format!("HTTP {s} redirect"),
                    None => "a redirect".to_string(),
                };
                let to = match location {
                    Some(l) => format!(" to {l}"),
                    None if status.is_none() => " (the browser does not say where to)".into(),
                    None => String::new(),
                };
                format!(
                    "{what}{to}, not followed: redirects are never followed, since the \
                     request's credential would go along; set the URL to the address it \
                     redirects to"
                )
            }
            Failure::RateLimited {
                retry_after_raw,
                excerpt,
                ..
            } => match retry_after_raw {
                Some(r) => format!("HTTP 429 (Retry-After: {r}): {excerpt}"),
                None => format!("HTTP 429: {excerpt}"),
            },
            Failure::ConnectionRefused { message }
            | Failure::UnknownHost { message }
            | Failure::Connection { message }
            | Failure::Cors { message }
            | Failure::Truncated { message } => message.clone(),
            Failure::Timeout { after_s } => {
                format!("no response byte within {} s", seconds(*after_s))
            }
            Failure::IdleTimeout { after_s } => {
                format!("stream stalled: no byte for {} s", seconds(*after_s))
            }
            Failure::StreamError { code, message } => match code {
                Some(c) => format!("error event in stream ({c}): {message}"),
                None => format!("error event in stream: {message}"),
            },
            Failure::Decode(e) => e.to_string(),
            Failure::Cancelled => "cancelled (run interrupted)".to_string(),
            Failure::Reported { message, .. } => message.clone(),
        }
    }

    /// A redirect's failure from its status and `Location` header (redacted and capped
    /// here: the header is the server's and may name a credential).
    pub fn redirect(status: Option<u16>, location: Option<&str>) -> Failure {
        Failure::Redirect {
            status,
            location: location.map(|l| cap_chars(&redact_url(l.trim()), MAX_LOCATION_CHARS)),
        }
    }

    /// A 429 response's failure from its headers and body excerpt.
    pub fn rate_limited(retry_after: Option<&str>, excerpt: String) -> Failure {
        let raw = retry_after.map(|r| cap_chars(r.trim(), MAX_RETRY_AFTER_CHARS));
        let secs = raw.as_deref().and_then(delay_seconds);
        Failure::RateLimited {
            retry_after_s: secs,
            retry_after_raw: raw,
            excerpt,
        }
    }
}

/// A `Retry-After` delay: RFC 9110's `delay-seconds` (digits), also with a decimal
/// fraction as some servers send (`1.5`); `None` for anything else (an HTTP-date). Parsed
/// by hand rather than with `str::parse::<f64>`, whose tables would be most of the float
/// code in the real-user meter's lazy parser; the header is capped, so at most
/// `MAX_RETRY_AFTER_CHARS` digits are read.
fn delay_seconds(raw: &str) -> Option<f64> {
    let (whole, fraction) = match raw.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (raw, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !fraction.is_none_or(digits) {
        return None;
    }
    let mut value = 0.0f64;
    for b in whole.bytes() {
        value = value * 10.0 + f64::from(b - b'0');
    }
    let mut scale = 1.0f64;
    for b in fraction.unwrap_or_default().bytes() {
        scale /= 10.0;
        value += f64::from(b - b'0') * scale;
    }
    Some(value)
}

/// Seconds with at most three decimals, written without `f64`'s `Display`: float
/// formatting is ~15 KB of wasm, and this is the only use of it the real-user meter's
/// lazy parser would otherwise link.
fn seconds(s: f64) -> String {
    let ms = (s * 1000.0).round().clamp(0.0, u64::MAX as f64) as u64;
    match ms % 1000 {
        0 => format!("{}", ms / 1000),
        frac => format!(
            "{}.{}",
            ms / 1000,
            format!("{frac:03}").trim_end_matches('0')
        ),
    }
}

/// The excerpt of an error body: lossy UTF-8 (the body is untrusted), whitespace runs
/// collapsed so it fits on one line, capped.
pub fn body_excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one_line: Vec<&str> = text.split_whitespace().collect();
    cap_chars(&one_line.join(" "), MAX_EXCERPT_CHARS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn excerpt_is_capped_and_single_line() {
        let body = "x\n".repeat(10_000);
        let e = body_excerpt(body.as_bytes());
        assert!(e.chars().count() <= MAX_EXCERPT_CHARS + 1);
        assert!(!e.contains('\n'));
        assert_eq!(body_excerpt(b"\xff\xfe bad"), "\u{fffd}\u{fffd} bad");
    }

    #[test]
    fn timeouts_say_their_seconds() {
        assert_eq!(
            Failure::Timeout { after_s: 60.0 }.message(),
            "no response byte within 60 s"
        );
        assert_eq!(
            Failure::IdleTimeout { after_s: 0.25 }.message(),
            "stream stalled: no byte for 0.25 s"
        );
        assert_eq!(seconds(1.5), "1.5");
        assert_eq!(seconds(0.001), "0.001");
    }

    #[test]
    fn retry_after_numeric_and_date() {
        let f = Failure::rate_limited(Some(" 7 "), String::new());
        assert_eq!(f.retry_after_s(), Some(7.0));
        let f = Failure::rate_limited(Some("1.5"), String::new());
        assert_eq!(f.retry_after_s(), Some(1.5));
        for not_a_delay in ["", "-1", "1.", ".5", "1e3", "1.5.2", "inf", "NaN", "+3"] {
            let f = Failure::rate_limited(Some(not_a_delay), String::new());
            assert_eq!(f.retry_after_s(), None, "{not_a_delay:?}");
        }
        let f = Failure::rate_limited(Some("Wed, 21 Oct 2015 07:28:00 GMT"), String::new());
        assert_eq!(f.retry_after_s(), None);
        assert!(f.message().contains("2015"));
        assert_eq!(f.http_status(), Some(429));
    }

    /// A 3xx with a `Location` is a redirect not followed, naming the target without its
    /// credentials; one without (a 304) stays a plain HTTP status; a `Location` on a 2xx
    /// changes nothing.
    #[test]
    fn a_redirect_names_its_target_redacted() {
        use crate::{Api, Exchange};
        let run = |status: u16, location: Option<&str>| {
            let mut ex = Exchange::new(Api::OpenaiChat, 0.0);
            ex.on_response(status, None);
            if let Some(l) = location {
                ex.on_location(l);
            }
            ex.on_bytes(1.0, b"data: [DONE]\n\n");
            ex.on_body_end(2.0);
            ex.into_outcome().failure
        };
        let f = run(
            307,
            Some("http://u:pw-secret@evil.example:8443/v1/chat?alt=sse&key=sk-abc#frag"),
        )
        .unwrap();
        assert_eq!(f.class(), ErrorClass::Redirect);
        assert_eq!(f.http_status(), Some(307));
        let m = f.message();
        assert!(
            m.starts_with(
                "HTTP 307 redirect to http://evil.example:8443/v1/chat?alt=sse, not followed"
            ),
            "{m}"
        );
        assert!(!m.contains("pw-secret") && !m.contains("sk-abc"), "{m}");
        let long = format!("http://h/{}", "x".repeat(10_000));
        let m = run(302, Some(&long)).unwrap().message();
        assert!(m.chars().count() < MAX_LOCATION_CHARS + 300, "{m}");
        assert_eq!(run(304, None).unwrap().class(), ErrorClass::Other);
        assert!(run(200, Some("http://elsewhere/")).is_none());
        let browser = Failure::redirect(None, None);
        assert_eq!(browser.http_status(), None);
        assert!(
            browser.message().contains("does not say where"),
            "{}",
            browser.message()
        );
    }

    #[test]
    fn decode_errors_map_to_their_classes() {
        let f = Failure::Decode(CoreError::LineTooLong { limit: 1 });
        assert_eq!(f.class(), ErrorClass::Oversized);
        let f = Failure::Decode(CoreError::InvalidUtf8 { offset: 3 });
        assert_eq!(f.class(), ErrorClass::InvalidUtf8);
        let f = Failure::HttpStatus {
            status: 503,
            excerpt: "busy".into(),
        };
        assert_eq!(f.class(), ErrorClass::Http5xx);
        let r = f.to_record();
        assert_eq!(r.http_status, Some(503));
        assert!(r.message.contains("busy"));
    }
}
