//! One streaming request, timed as its bytes arrive.
//!
//! Timing rules (see ARCHITECTURE.md, path 1): one monotonic origin (`Instant`) per run;
//! the request's start is stamped right before it is handed to the client; every body read
//! is stamped the moment `Response::chunk()` returns it, before any parsing, then fed to the
//! core's stream parser and timeline. Nothing heavier than a clock read happens between the
//! read completing and its stamp.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::time::timeout_at;
use tokio_util::sync::CancellationToken;
use tpsmeter_core::request::HttpRequest;
use tpsmeter_core::stream::StreamParser;
use tpsmeter_core::timeline::Timeline;
use tpsmeter_core::{Api, CoreError, StreamEvent};

use crate::failure::{Failure, MAX_ERROR_BODY_BYTES, MAX_EXCERPT_CHARS, body_excerpt, cap_chars};

/// What one request produced: its timeline (always finished) and, if it failed, why.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub timeline: Timeline,
    pub failure: Option<Failure>,
    /// The HTTP status of the response, when one arrived.
    pub http_status: Option<u16>,
    /// The negotiated HTTP version ("HTTP/1.1", "HTTP/2.0"), when a response arrived.
    pub http_version: Option<String>,
}

/// Sends one prepared request and times its stream. Cheap to share between tasks.
#[derive(Debug)]
pub struct Runner {
    client: reqwest::Client,
    template: reqwest::Request,
    api: Api,
    origin: Instant,
    timeout: Duration,
    idle_timeout: Duration,
}

impl Runner {
    /// Prepares the request once; every run sends a clone of it. `origin` is the run's one
    /// monotonic clock origin.
    pub fn new(
        client: reqwest::Client,
        api: Api,
        http: &HttpRequest,
        origin: Instant,
        timeout: Duration,
        idle_timeout: Duration,
    ) -> anyhow::Result<Arc<Runner>> {
        let template = to_reqwest(&client, http)?;
        Ok(Arc::new(Runner {
            client,
            template,
            api,
            origin,
            timeout,
            idle_timeout,
        }))
    }

    /// Milliseconds since the run's origin.
    pub fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1000.0
    }

    /// The run's clock origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Sends the request and reads the stream to its end, a failure or cancellation.
    pub async fn run(&self, cancel: &CancellationToken) -> Outcome {
        let mut attempt = 0;
        let (response, timeline, first_byte_deadline) = loop {
            attempt += 1;
            // The body is in memory, so cloning cannot fail; a failure here would be a bug
            // in the request builder, reported as a failed request rather than a panic.
            let Some(request) = self.template.try_clone() else {
                let mut timeline = Timeline::new(self.now_ms());
                timeline.finish(self.now_ms());
                let f = Failure::Connection {
                    message: "request body cannot be cloned".into(),
                };
                return Outcome::failed(timeline, f);
            };
            let sent = Instant::now();
            let timeline = Timeline::new(self.ms_at(sent));
            let first_byte_deadline = tokio::time::Instant::from_std(sent + self.timeout);
            let response = tokio::select! {
                biased;
                () = cancel.cancelled() => return self.end(timeline, None, Failure::Cancelled),
                r = timeout_at(first_byte_deadline, self.client.execute(request)) => r,
            };
            match response {
                Err(_elapsed) => {
                    let f = Failure::Timeout {
                        after_s: self.timeout.as_secs_f64(),
                    };
                    return self.end(timeline, None, f);
                }
                // A pooled keep-alive connection the server closed just as we reused it
                // (llama-server closes idle connections after 5 s): the server never saw
                // the request, so send it once more on a fresh connection, timed afresh.
                Ok(Err(e)) if attempt == 1 && is_stale_connection(&e) => continue,
                Ok(Err(e)) => return self.end(timeline, None, Failure::from_reqwest(&e)),
                Ok(Ok(r)) => break (r, timeline, first_byte_deadline),
            }
        };
        let status = response.status();
        let version = format!("{:?}", response.version());
        let mut outcome = if status.is_success() {
            self.read_stream(response, timeline, first_byte_deadline, cancel)
                .await
        } else {
            self.read_error(response, timeline, cancel).await
        };
        outcome.http_status = Some(status.as_u16());
        outcome.http_version = Some(version);
        outcome
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        mut timeline: Timeline,
        first_byte_deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> Outcome {
        let mut parser = StreamParser::new(self.api);
        let mut deadline = first_byte_deadline;
        let mut started = false;
        loop {
            let read = tokio::select! {
                biased;
                () = cancel.cancelled() => return self.end(timeline, None, Failure::Cancelled),
                r = timeout_at(deadline, response.chunk()) => r,
            };
            // The stamp: taken as soon as the read completes, before anything else.
            let t = self.now_ms();
            let chunk = match read {
                // After the end marker the request is complete; we only kept reading so
                // the connection could be reused. A stall or reset now loses nothing.
                Err(_) | Ok(Err(_)) if timeline.saw_done() => return Outcome::ok(timeline),
                Err(_elapsed) => {
                    let f = if started {
                        Failure::IdleTimeout {
                            after_s: self.idle_timeout.as_secs_f64(),
                        }
                    } else {
                        Failure::Timeout {
                            after_s: self.timeout.as_secs_f64(),
                        }
                    };
                    return self.end(timeline, Some(t), f);
                }
                // The connection broke after the stream had started: the body was cut
                // before its end marker (reqwest says "error decoding response body").
                Ok(Err(e)) if started => {
                    let f = Failure::Truncated {
                        message: format!(
                            "connection lost mid-stream: {}",
                            crate::failure::reqwest_message(&e)
                        ),
                    };
                    return self.end(timeline, Some(t), f);
                }
                Ok(Err(e)) => {
                    return self.end(timeline, Some(t), Failure::from_reqwest(&e));
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(bytes))) => bytes,
            };
            if chunk.is_empty() {
                continue;
            }
            started = true;
            deadline = tokio::time::Instant::now() + self.idle_timeout;
            timeline.on_bytes(t, chunk.len());
            let events = match parser.feed(&chunk) {
                Ok(events) => events,
                Err(e) => return self.end(timeline, Some(t), Failure::Decode(e)),
            };
            if let Some(f) = absorb(&mut timeline, t, &events) {
                return self.end(timeline, Some(t), f);
            }
        }
        // End of body: the parser decides whether the protocol's end marker was seen
        // (Gemini has none; its adapter applies its own rule).
        let t = self.now_ms();
        match parser.finish() {
            Ok(events) => {
                if let Some(f) = absorb(&mut timeline, t, &events) {
                    return self.end(timeline, Some(t), f);
                }
                // A no-op when the end marker already ended the timeline.
                timeline.finish(t);
                Outcome::ok(timeline)
            }
            Err(e @ CoreError::TruncatedStream { .. }) => {
                let f = Failure::Truncated {
                    message: e.to_string(),
                };
                self.end(timeline, Some(t), f)
            }
            Err(e) => self.end(timeline, Some(t), Failure::Decode(e)),
        }
    }

    /// Reads a capped excerpt of an error response's body.
    async fn read_error(
        &self,
        mut response: reqwest::Response,
        timeline: Timeline,
        cancel: &CancellationToken,
    ) -> Outcome {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        let mut timeline = timeline;
        while body.len() < MAX_ERROR_BODY_BYTES {
            let deadline = tokio::time::Instant::now() + self.idle_timeout;
            let read = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                r = timeout_at(deadline, response.chunk()) => r,
            };
            let t = self.now_ms();
            match read {
                Ok(Ok(Some(bytes))) => {
                    timeline.on_bytes(t, bytes.len());
                    let room = MAX_ERROR_BODY_BYTES - body.len();
                    body.extend_from_slice(&bytes[..bytes.len().min(room)]);
                }
                // A broken or slow error body still leaves the status to report.
                _ => break,
            }
        }
        let excerpt = body_excerpt(&body);
        let t = self.now_ms();
        let f = if status == 429 {
            Failure::rate_limited(retry_after.as_deref(), excerpt)
        } else {
            Failure::HttpStatus { status, excerpt }
        };
        self.end(timeline, Some(t), f)
    }

    fn end(&self, mut timeline: Timeline, t: Option<f64>, failure: Failure) -> Outcome {
        timeline.finish(t.unwrap_or_else(|| self.now_ms()));
        Outcome::failed(timeline, failure)
    }

    fn ms_at(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64() * 1000.0
    }
}

impl Outcome {
    fn ok(timeline: Timeline) -> Outcome {
        Outcome {
            timeline,
            failure: None,
            http_status: None,
            http_version: None,
        }
    }

    fn failed(timeline: Timeline, failure: Failure) -> Outcome {
        Outcome {
            timeline,
            failure: Some(failure),
            http_status: None,
            http_version: None,
        }
    }
}

/// Feeds one read's events to the timeline. Returns the failure when the events end the
/// request (an error event); marks the end time at the protocol's end marker.
fn absorb(timeline: &mut Timeline, t: f64, events: &[StreamEvent]) -> Option<Failure> {
    timeline.on_chunk(t, events);
    for event in events {
        match event {
            StreamEvent::Error { code, message } => {
                return Some(Failure::StreamError {
                    code: code.clone(),
                    message: cap_chars(message, MAX_EXCERPT_CHARS),
                });
            }
            // The request's end is its end marker, not the connection's close that may
            // follow it later.
            StreamEvent::Done => timeline.finish(t),
            _ => {}
        }
    }
    None
}

/// Whether `e` is hyper's report of a reused connection that the server had closed before
/// our request reached it (nothing was received, so a retry cannot duplicate work).
fn is_stale_connection(e: &reqwest::Error) -> bool {
    !e.is_timeout()
        && crate::failure::error_chain(e).contains("connection closed before message completed")
}

/// Converts the core's plain request description into a reqwest request.
fn to_reqwest(client: &reqwest::Client, http: &HttpRequest) -> anyhow::Result<reqwest::Request> {
    use anyhow::Context;
    let method = reqwest::Method::from_bytes(http.method.as_bytes())
        .with_context(|| format!("invalid HTTP method {:?}", http.method))?;
    let builder = client.request(method, http.url.as_str());
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &http.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("invalid header name {name:?}"))?;
        // The error must not echo the value: it may be the API key.
        let mut v = reqwest::header::HeaderValue::from_str(value.as_str()).map_err(|_| {
            anyhow::anyhow!("the value of header {name} is not a valid header value")
        })?;
        // Sensitive values are left out of reqwest's and hyper's Debug output too.
        v.set_sensitive(value.is_sensitive());
        headers.append(name, v);
    }
    let builder = builder.headers(headers);
    // Don't use `with_context` showing the headers: one of them may carry the API key.
    builder
        .body(http.body.clone())
        .build()
        .context("build the HTTP request (check --url)")
}
