//! Per-request overrides in the URL path, so one emulator serves a whole browser test suite
//! (a page cannot restart the server between tests, and CORS rules make extra headers cost a
//! preflight each).
//!
//! Syntax: any of these segments, each at most once, in any order, before the API path:
//! - `/fault/<spec>`: the fault, in [`parse_fault`]'s syntax (`/fault/cut:3`);
//! - `/pace/<ttft_ms>,<itl_ms>,<tokens>[,<tokens_per_chunk>]`: the schedule (milliseconds may
//!   have decimals);
//! - `/no-cors`: no CORS headers on this response nor on its preflight, to provoke a browser's
//!   CORS failure on purpose;
//! - `/max-streams/<n>`: the server's capacity ([`EmulatorConfig::max_streams`]), shared by
//!   every request that names the same `n`;
//! - `/echo-key`: a hostile server's manners: every error this response sends (a `status`
//!   body, the `rate-limited` body and its `Retry-After` header, an `error-event`) quotes the
//!   credential the request carried, as `Bearer <key>`, as its first 12 characters and
//!   asterisks, and URL-encoded. Clients must keep all of it out of their records.
//!
//! E.g. `POST /fault/cut:3/pace/5,2,16/v1/chat/completions`. A malformed override, a segment
//! repeated, a prefix longer than [`MAX_PREFIX_BYTES`], or an unknown segment before an API
//! path is answered 400 with the reason (see [`diagnose_not_found`]).

use std::borrow::Cow;
use std::time::Duration;

use anyhow::{Context as _, bail};
use hyper::Method;

use crate::config::{EmulatorConfig, Fault, Schedule, parse_fault};
use crate::request::{Route, route};

/// Cap on the override prefix, in bytes. Three overrides fit in under 100; the cap keeps
/// a hostile path from being scanned or quoted in an error at length.
pub const MAX_PREFIX_BYTES: usize = 256;

/// Cap on milliseconds in `/pace`: a test's stream is seconds long, an hour is plenty.
const MAX_PACE_MS: f64 = 3_600_000.0;

/// Cap on `/pace` tokens: the response's plan holds one step per chunk, so the count must
/// not let one URL allocate without bound.
const MAX_PACE_TOKENS: u32 = 1_000_000;

/// Cap on `/max-streams`: each distinct value keeps a semaphore for the server's life, and
/// a test needs a handful of slots.
const MAX_STREAMS: u32 = 100_000;

/// What the path prefix of one request changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `/fault/<spec>`.
    pub fault: Option<Fault>,
    /// `/pace/...`: the schedule.
    pub schedule: Option<Schedule>,
    /// `/pace/...`'s optional fourth number.
    pub tokens_per_chunk: Option<u32>,
    /// `/no-cors`.
    pub no_cors: bool,
    /// `/echo-key`.
    pub echo_key: bool,
    /// `/max-streams/<n>`.
    pub max_streams: Option<u32>,
}

impl Overrides {
    /// Splits the override segments off the front of `path`; returns them and the rest (the
    /// API path, possibly empty).
    pub fn split(path: &str) -> anyhow::Result<(Overrides, &str)> {
        let mut o = Overrides::default();
        let mut rest = path;
        loop {
            let (name, after) = segment(rest);
            let (value, next) = segment(after);
            let consumed = |next: &str| path.len() - next.len();
            match name {
                "fault" | "pace" | "max-streams" if consumed(next) > MAX_PREFIX_BYTES => {
                    bail!("the override prefix is longer than {MAX_PREFIX_BYTES} bytes")
                }
                "fault" => {
                    if o.fault.is_some() {
                        bail!("/fault is given twice");
                    }
                    if value.is_empty() {
                        bail!("/fault needs a spec, e.g. /fault/cut:3");
                    }
                    o.fault = Some(parse_fault(value).with_context(|| format!("/fault/{value}"))?);
                    rest = next;
                }
                "pace" => {
                    if o.schedule.is_some() {
                        bail!("/pace is given twice");
                    }
                    let (schedule, k) =
                        parse_pace(value).with_context(|| format!("/pace/{value}"))?;
                    o.schedule = Some(schedule);
                    o.tokens_per_chunk = k;
                    rest = next;
                }
                "max-streams" => {
                    if o.max_streams.is_some() {
                        bail!("/max-streams is given twice");
                    }
                    let n = value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=MAX_STREAMS).contains(n))
                        .with_context(|| {
                            format!("/max-streams/{value}: a whole number in 1..={MAX_STREAMS}")
                        })?;
                    o.max_streams = Some(n);
                    rest = next;
                }
                "no-cors" => {
                    if o.no_cors {
                        bail!("/no-cors is given twice");
                    }
                    o.no_cors = true;
                    rest = after;
                }
                "echo-key" => {
                    if o.echo_key {
                        bail!("/echo-key is given twice");
                    }
                    o.echo_key = true;
                    rest = after;
                }
                _ => return Ok((o, rest)),
            }
        }
    }

    /// Whether the path had no override at all.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }

    /// `base` with these overrides applied (borrowed when there are none: the common case
    /// under load).
    pub fn apply<'a>(&self, base: &'a EmulatorConfig) -> Cow<'a, EmulatorConfig> {
        if self.fault.is_none() && self.schedule.is_none() && self.max_streams.is_none() {
            return Cow::Borrowed(base);
        }
        let mut cfg = base.clone();
        if let Some(fault) = &self.fault {
            cfg.fault = fault.clone();
        }
        if let Some(schedule) = self.schedule {
            cfg.schedule = schedule;
        }
        if let Some(k) = self.tokens_per_chunk {
            cfg.tokens_per_chunk = k;
        }
        if let Some(n) = self.max_streams {
            cfg.max_streams = Some(n);
        }
        Cow::Owned(cfg)
    }
}

/// The reason to answer 400 rather than 404 for a path that does not route after the
/// overrides were split off (`rest`): an unknown segment in front of a served path (a typo
/// such as `/faults/cut:3/v1/messages`), or overrides with no API path after them.
pub fn diagnose_not_found(overrides: &Overrides, rest: &str) -> Option<String> {
    const EXPECTED: &str = "expected /fault/<spec>, /pace/<ttft_ms>,<itl_ms>,<tokens>[,<tokens_per_chunk>], /max-streams/<n>, /no-cors or /echo-key before the API path";
    // The root `/` also streams (see `request::route`), but a path merely ending in `/` is
    // not an API path behind an unknown segment.
    let unknown = rest
        .char_indices()
        .take_while(|&(i, _)| i <= MAX_PREFIX_BYTES)
        .filter(|&(i, c)| c == '/' && i > 0 && &rest[i..] != "/")
        .map(|(i, _)| i)
        .find(|&i| matches!(route(&Method::POST, &rest[i..]), Route::Stream(..)));
    if let Some(i) = unknown {
        return Some(format!("unknown override {:?}; {EXPECTED}", &rest[..i]));
    }
    if !overrides.is_empty() {
        let shown: String = rest.chars().take(64).collect();
        return Some(format!("no API path after the overrides (got {shown:?})"));
    }
    None
}

/// The first segment of `path` (without its leading `/`) and the rest (starting with `/`,
/// or empty). A path that does not start with `/` has no segment.
fn segment(path: &str) -> (&str, &str) {
    let Some(after) = path.strip_prefix('/') else {
        return ("", path);
    };
    match after.find('/') {
        Some(end) => (&after[..end], &after[end..]),
        None => (after, ""),
    }
}

/// `<ttft_ms>,<itl_ms>,<tokens>[,<tokens_per_chunk>]`.
fn parse_pace(value: &str) -> anyhow::Result<(Schedule, Option<u32>)> {
    let fields: Vec<&str> = value.split(',').collect();
    if !(3..=4).contains(&fields.len()) {
        bail!("expected <ttft_ms>,<itl_ms>,<tokens>[,<tokens_per_chunk>]");
    }
    let ms = |s: &str, what: &str| -> anyhow::Result<Duration> {
        let v: f64 = s
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && (0.0..=MAX_PACE_MS).contains(v))
            .with_context(|| format!("{what} must be a number of ms in 0..={MAX_PACE_MS}"))?;
        Ok(Duration::from_secs_f64(v / 1000.0))
    };
    let count = |s: &str, what: &str| -> anyhow::Result<u32> {
        s.parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_PACE_TOKENS).contains(n))
            .with_context(|| format!("{what} must be a whole number in 1..={MAX_PACE_TOKENS}"))
    };
    let schedule = Schedule {
        ttft: ms(fields[0], "ttft_ms")?,
        itl: ms(fields[1], "itl_ms")?,
        output_tokens: count(fields[2], "tokens")?,
    };
    let k = match fields.get(3) {
        Some(s) => Some(count(s, "tokens_per_chunk")?),
        None => None,
    };
    Ok((schedule, k))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn overrides_split_in_any_order() {
        for path in [
            "/fault/cut:3/pace/5,2,16/no-cors/v1/chat/completions",
            "/no-cors/pace/5,2,16/echo-key/fault/cut:3/v1/chat/completions",
        ] {
            let (o, rest) = Overrides::split(path).unwrap();
            assert_eq!(rest, "/v1/chat/completions");
            assert_eq!(o.fault, Some(Fault::CutAfter { tokens: 3 }));
            assert_eq!(
                o.schedule,
                Some(Schedule {
                    ttft: Duration::from_millis(5),
                    itl: Duration::from_millis(2),
                    output_tokens: 16,
                })
            );
            assert_eq!(o.tokens_per_chunk, None);
            assert!(o.no_cors);
            assert_eq!(o.echo_key, path.contains("echo-key"));
        }
        let (o, rest) = Overrides::split("/v1/messages").unwrap();
        assert!(o.is_empty());
        assert_eq!(rest, "/v1/messages");
        let (o, _) = Overrides::split("/pace/0.5,0,3,2/api/chat").unwrap();
        assert_eq!(o.schedule.unwrap().ttft, Duration::from_micros(500));
        assert_eq!(o.tokens_per_chunk, Some(2));
    }

    #[test]
    fn malformed_overrides_are_errors_that_name_the_segment() {
        for (path, says) in [
            ("/fault/explode/v1/messages", "unknown fault"),
            ("/fault", "needs a spec"),
            ("/fault/cut:1/fault/cut:2/api/chat", "twice"),
            ("/pace/5,2/api/chat", "expected <ttft_ms>"),
            ("/pace/5,-1,3/api/chat", "itl_ms"),
            ("/pace/5,1,0/api/chat", "tokens"),
            ("/pace/5,1,3,0/api/chat", "tokens_per_chunk"),
            ("/pace/NaN,1,3/api/chat", "ttft_ms"),
            ("/no-cors/no-cors/api/chat", "twice"),
            ("/echo-key/echo-key/api/chat", "twice"),
            ("/max-streams/0/api/chat", "whole number"),
            ("/max-streams/x/api/chat", "whole number"),
            ("/max-streams/2/max-streams/2/api/chat", "twice"),
        ] {
            let err = format!("{:#}", Overrides::split(path).unwrap_err());
            assert!(err.contains(says), "{path}: {err}");
        }
        let long = format!("/fault/{}/api/chat", "x".repeat(MAX_PREFIX_BYTES));
        let err = Overrides::split(&long).unwrap_err().to_string();
        assert!(err.contains("longer than"), "{err}");
    }

    #[test]
    fn unknown_segments_before_an_api_path_are_diagnosed() {
        let o = Overrides::default();
        let msg = diagnose_not_found(&o, "/faults/cut:3/v1/chat/completions").unwrap();
        assert!(msg.contains("\"/faults/cut:3\""), "{msg}");
        assert_eq!(diagnose_not_found(&o, "/nope"), None);
        let (o, rest) = Overrides::split("/no-cors").unwrap();
        assert!(
            diagnose_not_found(&o, rest)
                .unwrap()
                .contains("no API path")
        );
    }

    #[test]
    fn apply_borrows_when_nothing_changes_the_config() {
        let base = EmulatorConfig::default();
        let (o, _) = Overrides::split("/no-cors/api/chat").unwrap();
        assert!(matches!(o.apply(&base), Cow::Borrowed(_)));
        let (o, _) = Overrides::split("/pace/1,1,2,2/fault/cut:1/api/chat").unwrap();
        let cfg = o.apply(&base);
        assert_eq!(cfg.schedule.output_tokens, 2);
        assert_eq!(cfg.tokens_per_chunk, 2);
        assert_eq!(cfg.fault, Fault::CutAfter { tokens: 1 });
        let (o, rest) = Overrides::split("/max-streams/3/v1/chat/completions").unwrap();
        assert_eq!(rest, "/v1/chat/completions");
        assert_eq!(o.apply(&base).max_streams, Some(3));
    }
}
