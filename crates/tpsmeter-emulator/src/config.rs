//! What the emulator does per request: the token schedule and the fault to inject, and
//! [`parse_fault`], the one parser of the fault syntax (the binary's `--fault`, the URL's
//! `/fault/<spec>`).

use std::time::Duration;

use anyhow::{Context as _, bail};

/// The token schedule of every streamed response.
///
/// All times count from the moment the request's headers arrived (its *arrival*), on absolute
/// deadlines, so scheduling jitter never accumulates along a stream: token `i` (0-based) is
/// due at `arrival + ttft + i * itl`. A chunk of `k` tokens
/// ([`EmulatorConfig::tokens_per_chunk`]) is sent when its first token is due, so chunk `j`
/// leaves at `arrival + ttft + j * k * itl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Time to the first content token.
    pub ttft: Duration,
    /// Time between consecutive tokens.
    pub itl: Duration,
    /// Tokens per response; the request's own `max_tokens` (in each API's spelling) caps it,
    /// and then the response ends with the API's "length" finish reason.
    pub output_tokens: u32,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(20),
            output_tokens: 64,
        }
    }
}

/// A failure to inject into every response. Token positions count content tokens sent
/// before the fault strikes (`tokens: 0` strikes before the first one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    /// A well-formed stream.
    #[default]
    None,
    /// Answer at once with this HTTP status and body (`application/json`), no stream.
    Status {
        /// The HTTP status code (e.g. 500, 503, 400).
        code: u16,
        /// The response body, sent as is.
        body: String,
    },
    /// Answer with a redirect (`code`, a 3xx) whose `Location` is the request's own API path
    /// on `http://<to>`: a server pointing a client's credential at another host.
    Redirect {
        /// The redirect status (301, 302, 303, 307 or 308).
        code: u16,
        /// `host:port` of the target.
        to: String,
    },
    /// Answer 429 with a `Retry-After: retry_after_s` header and an OpenAI-style error body.
    RateLimited {
        /// Seconds written in `Retry-After`.
        retry_after_s: u32,
    },
    /// After `tokens` tokens, send nothing for `for_`, then go on (the rest of the schedule
    /// moves back by `for_`). Exercises the client's idle timeout.
    StallAfter {
        /// Tokens sent before the stall.
        tokens: u32,
        /// How long the stream stays silent.
        for_: Duration,
    },
    /// After `tokens` tokens, abort the connection: no end marker, no final HTTP chunk.
    CutAfter {
        /// Tokens sent before the cut.
        tokens: u32,
    },
    /// After `tokens` tokens, end the HTTP body cleanly but without the API's end marker
    /// (`[DONE]`, `message_stop`, `response.completed`, `done: true`, a finish reason).
    EndWithoutMarkerAfter {
        /// Tokens sent before the early end.
        tokens: u32,
    },
    /// After `tokens` tokens, send the API's in-stream error event (HTTP status stays 200),
    /// then end the stream.
    ErrorEventAfter {
        /// Tokens sent before the error event.
        tokens: u32,
    },
    /// After `tokens` tokens, send one event whose JSON is cut off, then go on normally.
    MalformedJsonAfter {
        /// Tokens sent before the malformed event.
        tokens: u32,
    },
    /// Before the first token, send one line of `bytes` bytes with no line end until its
    /// last byte (in 64 KiB writes), then go on normally. Exercises the client's line cap.
    OversizedLine {
        /// The line's length in bytes.
        bytes: usize,
    },
    /// After `tokens` tokens, send one content chunk whose text holds the bytes `FF FE`
    /// (never valid UTF-8), then go on normally.
    InvalidUtf8After {
        /// Tokens sent before the invalid chunk.
        tokens: u32,
    },
    /// Hold the response headers back this long; the whole schedule starts after them.
    SlowHeaders(Duration),
}

/// How the emulator behaves. Every request gets the same schedule and fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatorConfig {
    /// The token schedule.
    pub schedule: Schedule,
    /// The fault injected into every response.
    pub fault: Fault,
    /// Tokens per content chunk (at least 1; 0 is taken as 1). More than one models servers
    /// that send several tokens per event (speculative decoding, batching proxies).
    pub tokens_per_chunk: u32,
    /// The TCP port on 127.0.0.1; 0 picks a free one (see [`crate::Emulator::base_url`]).
    pub port: u16,
    /// Keep a [`crate::RequestRecord`] of each response's send times, for benchmarks that
    /// separate client error from server jitter. Off by default: it grows without bound.
    pub record: bool,
    /// Answer CORS preflights and send CORS, `Timing-Allow-Origin` and
    /// `Cross-Origin-Resource-Policy` headers, so a page on any origin can stream from the
    /// emulator and read its Resource Timing. On by default; a request can still opt out
    /// with the `/no-cors` path prefix ([`crate::Overrides`]).
    pub cors: bool,
    /// The listen backlog (`listen(2)`'s argument): connections whose handshake the kernel
    /// completes and holds until the server accepts them. Linux holds one more than this,
    /// and drops the SYN of any connection beyond, which the client sends again 1 s, 3 s ...
    /// later. `None`: tokio's default (1024, capped by `net.core.somaxconn`).
    pub backlog: Option<u32>,
    /// Accept at most one connection per this interval, as a server whose accept loop is
    /// slow or busy does: a burst of connects then overflows a small backlog. Zero: accept
    /// as fast as connections come.
    pub accept_interval: Duration,
    /// After accepting its first connection, accept no other for this long (a server busy
    /// with its first client): later connections wait in the backlog, and beyond it for
    /// their SYN's retry. Zero: no pause.
    pub accept_pause: Duration,
    /// The server's capacity: at most this many streams run at once, and a request beyond
    /// them waits, headers and all, until one ends; its schedule starts when it gets a slot
    /// (as a server with this many batch slots queues). `None`: no limit. Requests that
    /// override it (`/max-streams/N`) share the slots of every request with the same N.
    pub max_streams: Option<u32>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            schedule: Schedule::default(),
            fault: Fault::None,
            tokens_per_chunk: 1,
            port: 0,
            record: false,
            cors: true,
            backlog: None,
            accept_interval: Duration::ZERO,
            accept_pause: Duration::ZERO,
            max_streams: None,
        }
    }
}

/// Cap on the milliseconds of `stall` and `slow-headers`: an hour is beyond any test's
/// timeout, and a spec in a URL must not park a connection for years.
const MAX_FAULT_MS: u64 = 3_600_000;

/// Cap on the `oversized` line: 1 GiB is 256 times the client's default line cap, and a spec
/// in a URL must not make the emulator stream without end.
const MAX_OVERSIZED_BYTES: u64 = 1 << 30;

/// Cap on a `redirect` target's host name (DNS's limit).
const MAX_REDIRECT_HOST_BYTES: usize = 253;

/// Parses a fault spec: `none`, `status:CODE`, `redirect:CODE:HOST:PORT`,
/// `rate-limited:SECS`, `stall:TOKENS:MS`,
/// `cut:TOKENS`, `end-early:TOKENS`, `error-event:TOKENS`, `malformed:TOKENS`,
/// `oversized:BYTES`, `invalid-utf8:TOKENS`, `slow-headers:MS`.
pub fn parse_fault(spec: &str) -> anyhow::Result<Fault> {
    let mut parts = spec.split(':');
    let kind = parts.next().unwrap_or("none");
    if kind == "redirect" {
        // Its HOST field is not a number, unlike every other fault's.
        return parse_redirect(spec);
    }
    let mut num = |what: &str| -> anyhow::Result<u64> {
        parts
            .next()
            .with_context(|| format!("fault {kind} needs {what}"))?
            .parse::<u64>()
            .with_context(|| format!("fault {kind}: {what} must be a whole number"))
    };
    let tokens = |n: u64| u32::try_from(n).context("token count too large");
    let ms = |n: u64| {
        if n > MAX_FAULT_MS {
            bail!("fault {kind}: at most {MAX_FAULT_MS} ms");
        }
        Ok(Duration::from_millis(n))
    };
    let fault = match kind {
        "none" => Fault::None,
        "status" => {
            let code = num("CODE")?;
            if !(100..=999).contains(&code) {
                bail!("fault status: CODE must be an HTTP status (100-999), not {code}");
            }
            Fault::Status {
                code: code as u16,
                body: r#"{"error":{"message":"emulated error","type":"server_error"}}"#.into(),
            }
        }
        "rate-limited" => Fault::RateLimited {
            retry_after_s: tokens(num("SECS")?)?,
        },
        "stall" => Fault::StallAfter {
            tokens: tokens(num("TOKENS")?)?,
            for_: ms(num("MS")?)?,
        },
        "cut" => Fault::CutAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "end-early" => Fault::EndWithoutMarkerAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "error-event" => Fault::ErrorEventAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "malformed" => Fault::MalformedJsonAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "oversized" => {
            let bytes = num("BYTES")?;
            if bytes > MAX_OVERSIZED_BYTES {
                bail!("fault oversized: at most {MAX_OVERSIZED_BYTES} bytes");
            }
            Fault::OversizedLine {
                bytes: usize::try_from(bytes).context("line too large for this machine")?,
            }
        }
        "invalid-utf8" => Fault::InvalidUtf8After {
            tokens: tokens(num("TOKENS")?)?,
        },
        "slow-headers" => Fault::SlowHeaders(ms(num("MS")?)?),
        other => bail!(
            "unknown fault {other:?}; expected none, status, redirect, rate-limited, stall, cut, \
             end-early, error-event, malformed, oversized, invalid-utf8 or slow-headers"
        ),
    };
    if parts.next().is_some() {
        bail!("fault {kind}: too many ':' fields in {spec:?}");
    }
    Ok(fault)
}

/// `redirect:CODE:HOST:PORT`.
fn parse_redirect(spec: &str) -> anyhow::Result<Fault> {
    let fields: Vec<&str> = spec.split(':').skip(1).collect();
    let [code, host, port] = fields[..] else {
        bail!("fault redirect needs CODE:HOST:PORT, got {spec:?}");
    };
    let code = code
        .parse::<u16>()
        .ok()
        .filter(|c| [301, 302, 303, 307, 308].contains(c))
        .with_context(|| {
            format!("fault redirect: CODE must be 301, 302, 303, 307 or 308, not {code:?}")
        })?;
    let host_ok = !host.is_empty()
        && host.len() <= MAX_REDIRECT_HOST_BYTES
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    if !host_ok {
        bail!("fault redirect: HOST must be a host name or IPv4 address");
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .with_context(|| format!("fault redirect: PORT must be in 1..=65535, not {port:?}"))?;
    Ok(Fault::Redirect {
        code,
        to: format!("{host}:{port}"),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_fault_kind_parses() {
        let cases = [
            ("none", Fault::None),
            ("rate-limited:7", Fault::RateLimited { retry_after_s: 7 }),
            (
                "stall:2:300",
                Fault::StallAfter {
                    tokens: 2,
                    for_: Duration::from_millis(300),
                },
            ),
            ("cut:3", Fault::CutAfter { tokens: 3 }),
            ("end-early:1", Fault::EndWithoutMarkerAfter { tokens: 1 }),
            ("error-event:0", Fault::ErrorEventAfter { tokens: 0 }),
            ("malformed:4", Fault::MalformedJsonAfter { tokens: 4 }),
            ("oversized:65536", Fault::OversizedLine { bytes: 65536 }),
            ("invalid-utf8:2", Fault::InvalidUtf8After { tokens: 2 }),
            (
                "redirect:307:127.0.0.2:8080",
                Fault::Redirect {
                    code: 307,
                    to: "127.0.0.2:8080".into(),
                },
            ),
            (
                "slow-headers:50",
                Fault::SlowHeaders(Duration::from_millis(50)),
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_fault(spec).unwrap(), want, "{spec}");
        }
        assert!(matches!(
            parse_fault("status:503").unwrap(),
            Fault::Status { code: 503, .. }
        ));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, says) in [
            ("cut", "needs TOKENS"),
            ("cut:x", "whole number"),
            ("cut:3:4", "too many"),
            ("status:20", "HTTP status"),
            ("redirect:200:h:1", "301, 302"),
            ("redirect:302:h", "CODE:HOST:PORT"),
            ("redirect:302:h/x:1", "host name"),
            ("redirect:302:h:0", "PORT"),
            ("stall:1:99999999999", "at most"),
            ("oversized:99999999999", "at most"),
            ("explode:1", "unknown fault"),
            ("", "unknown fault"),
        ] {
            let err = format!("{:#}", parse_fault(spec).unwrap_err());
            assert!(err.contains(says), "{spec:?}: {err}");
        }
    }
}
