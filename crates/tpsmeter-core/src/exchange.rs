//! [`Exchange`]: one streamed request from the caller's first stamp to its [`Outcome`], with
//! no I/O of its own.
//!
//! The transport (reqwest natively, `fetch` in the browser) sends the request, stamps every
//! read with its clock *before* calling in here, and reports what it saw: the response
//! status, each body read, the end of the body, a timeout or a transport error. The
//! exchange feeds the reads to the [`StreamParser`] and the [`Timeline`], decides when the
//! request has ended and why, and keeps a capped excerpt of an error response's body. So
//! the CLI and the browser end, classify and time a request with the same code.
//!
//! Ending rules (shared by both transports):
//! - the protocol's end marker (`Done`) ends the request at that read's stamp, even if the
//!   connection stays open; a failure reported after it is ignored (nothing was lost);
//! - an error event in the stream, a decoding error, or a body that ends before the end
//!   marker ends it as failed;
//! - a non-2xx status collects at most [`MAX_ERROR_BODY_BYTES`] of body for the excerpt and
//!   ends as an HTTP failure when the body ends, the cap is reached, or the read fails,
//!   times out or is cancelled (the status is the cause either way);
//! - a 3xx with a `Location` ([`Exchange::on_location`]) ends the same way, as a redirect
//!   not followed: neither transport follows one, since the credential would go along.

use crate::answer::KeptAnswer;
use crate::api::Api;
use crate::cap::cap_chars;
use crate::decode::Limits;
use crate::error::CoreError;
use crate::event::{FinishReason, StreamEvent};
use crate::failure::{
    Failure, MAX_ERROR_BODY_BYTES, MAX_EXCERPT_CHARS, MAX_LOCATION_CHARS, MAX_RETRY_AFTER_CHARS,
    body_excerpt,
};
use crate::paint::{Frame, Ready, attribute_paints};
use crate::protocol::Decoder;
use crate::stream::StreamParser;
use crate::timeline::Timeline;

/// What one request produced: its timeline (always finished) and, if it failed, why.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub timeline: Timeline,
    pub failure: Option<Failure>,
    /// The HTTP status of the response, when one arrived.
    pub http_status: Option<u16>,
    /// The negotiated HTTP version ("HTTP/1.1", "h2", ...), when the transport knows it.
    pub http_version: Option<String>,
    /// The answer's text (its first bytes, up to the cap given), when the exchange kept it
    /// ([`Exchange::keep_answer`]).
    pub answer: Option<KeptAnswer>,
}

impl Outcome {
    /// A request that failed before anything could be timed beyond its start.
    pub fn failed_at(start_ms: f64, end_ms: f64, failure: Failure) -> Outcome {
        let mut timeline = Timeline::new(start_ms);
        timeline.finish(end_ms);
        Outcome {
            timeline,
            failure: Some(failure),
            http_status: None,
            http_version: None,
            answer: None,
        }
    }
}

#[derive(Debug)]
enum Body {
    /// Waiting for the response headers.
    Pending,
    /// A 2xx stream being decoded.
    Stream,
    /// A non-2xx body being collected for its excerpt.
    Error {
        status: u16,
        retry_after: Option<String>,
        body: Vec<u8>,
        /// A 3xx's `Location`, as the server sent it ([`Exchange::on_location`]).
        location: Option<String>,
    },
}

/// One request in flight: parser, timeline and the rules that end it.
#[derive(Debug)]
pub struct Exchange {
    parser: StreamParser,
    timeline: Timeline,
    body: Body,
    failure: Option<Failure>,
    http_status: Option<u16>,
    http_version: Option<String>,
    /// The events of the last read, handed back by [`Exchange::on_bytes`].
    events: Vec<StreamEvent>,
    ended: bool,
    /// The answer's text so far, when kept (multi-turn runs send it back; a tokenizer
    /// re-counts it when the server reports no usage).
    answer: Option<KeptAnswer>,
}

impl Exchange {
    /// An exchange for a request of `api` sent at `start_ms` (just before the transport
    /// hands it over).
    pub fn new(api: Api, start_ms: f64) -> Exchange {
        Exchange::with_decoder(Decoder::new(api), start_ms)
    }

    /// As [`Exchange::new`], with the caller's [`Decoder`] (a build that links one wire
    /// family's adapter alone).
    pub fn with_decoder(decoder: Decoder, start_ms: f64) -> Exchange {
        Exchange {
            parser: StreamParser::with_decoder(decoder, Limits::default()),
            timeline: Timeline::new(start_ms),
            body: Body::Pending,
            failure: None,
            http_status: None,
            http_version: None,
            events: Vec::new(),
            ended: false,
            answer: None,
        }
    }

    /// Keep the answer's text, its first `cap` bytes at most (see [`crate::answer`]), for
    /// the outcome. Only for a request whose answer a later step needs: the text costs a
    /// copy per read.
    pub fn keep_answer(&mut self, cap: usize) {
        self.answer = Some(KeptAnswer::new(cap));
    }

    /// The response headers arrived with `status` (and `Retry-After`, when sent).
    pub fn on_response(&mut self, status: u16, retry_after: Option<&str>) {
        if self.ended {
            return;
        }
        self.http_status = Some(status);
        self.body = if (200..300).contains(&status) {
            Body::Stream
        } else {
            Body::Error {
                status,
                retry_after: retry_after.map(|r| cap_chars(r.trim(), MAX_RETRY_AFTER_CHARS)),
                body: Vec::new(),
                location: None,
            }
        };
    }

    /// The response named `location` (its `Location` header), after [`Exchange::on_response`].
    /// A 3xx with one is a redirect, and the request ends as one, not followed; on any other
    /// status the header means nothing here.
    pub fn on_location(&mut self, location: &str) {
        if let Body::Error {
            status: 300..=399,
            location: l,
            ..
        } = &mut self.body
        {
            // Capped before it is kept: the header is the server's. Redacted with the
            // failure it ends in.
            *l = Some(cap_chars(location, 4 * MAX_LOCATION_CHARS));
        }
    }

    /// The request's bytes went out at `t_ms` (see [`Timeline::on_sent`]).
    pub fn on_sent(&mut self, t_ms: f64) {
        self.timeline.on_sent(t_ms);
    }

    /// Records the negotiated HTTP version.
    pub fn set_http_version(&mut self, version: &str) {
        self.http_version = Some(cap_chars(version, 32));
    }

    /// One body read that completed at `t_ms`. Returns the events it completed (none for an
    /// error body). After it, check [`Exchange::is_ended`]: the transport stops reading.
    pub fn on_bytes(&mut self, t_ms: f64, chunk: &[u8]) -> &[StreamEvent] {
        self.events.clear();
        if self.ended || chunk.is_empty() {
            return &self.events;
        }
        self.timeline.on_bytes(t_ms, chunk.len());
        match &mut self.body {
            Body::Error { body, .. } => {
                let room = MAX_ERROR_BODY_BYTES - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_ERROR_BODY_BYTES {
                    self.on_body_end(t_ms);
                }
            }
            Body::Pending | Body::Stream => match self.parser.feed(chunk) {
                Ok(events) => {
                    self.events = events;
                    self.absorb(t_ms);
                }
                Err(e) => self.end(t_ms, Some(Failure::Decode(e))),
            },
        }
        &self.events
    }

    /// The body ended (the reader reported its end) at `t_ms`.
    pub fn on_body_end(&mut self, t_ms: f64) {
        if self.ended {
            return;
        }
        match std::mem::replace(&mut self.body, Body::Stream) {
            Body::Error {
                status,
                retry_after,
                body,
                location,
            } => {
                let excerpt = body_excerpt(&body);
                let failure = if location.is_some() {
                    Failure::redirect(Some(status), location.as_deref())
                } else if status == 429 {
                    Failure::rate_limited(retry_after.as_deref(), excerpt)
                } else {
                    Failure::HttpStatus { status, excerpt }
                };
                self.end(t_ms, Some(failure));
            }
            Body::Pending | Body::Stream => match self.parser.finish() {
                Ok(events) => {
                    self.events = events;
                    self.absorb(t_ms);
                    // A no-op when the end marker already ended the request.
                    self.end(t_ms, None);
                }
                Err(e @ CoreError::TruncatedStream { .. }) => {
                    let failure = Failure::Truncated {
                        message: e.to_string(),
                    };
                    self.end(t_ms, Some(failure));
                }
                Err(e) => self.end(t_ms, Some(Failure::Decode(e))),
            },
        }
    }

    /// A read failed at `t_ms` with the transport's classification. A stream that had
    /// started is reported as cut mid-stream whatever the transport called it; an error
    /// body still ends as its HTTP status.
    pub fn on_read_error(&mut self, t_ms: f64, failure: Failure) {
        if self.ended {
            return;
        }
        match &self.body {
            Body::Error { .. } => self.on_body_end(t_ms),
            Body::Stream if self.started() => {
                let message = format!("connection lost mid-stream: {}", failure.message());
                self.end(
                    t_ms,
                    Some(Failure::Truncated {
                        message: cap_chars(&message, MAX_EXCERPT_CHARS),
                    }),
                );
            }
            _ => self.end(t_ms, Some(failure)),
        }
    }

    /// No byte arrived in time: before the first body byte that is a first-byte timeout
    /// (`timeout_s`), after it a stall (`idle_timeout_s`).
    pub fn on_timeout(&mut self, t_ms: f64, timeout_s: f64, idle_timeout_s: f64) {
        let failure = if self.timeline.first_byte_ms().is_some() {
            Failure::IdleTimeout {
                after_s: idle_timeout_s,
            }
        } else {
            Failure::Timeout { after_s: timeout_s }
        };
        self.fail(t_ms, failure);
    }

    /// Ends the request at `t_ms` with `failure` (transport error, timeout, cancellation),
    /// unless it has already ended. While an error body is being read its HTTP status is
    /// the cause, and stays the recorded failure.
    pub fn fail(&mut self, t_ms: f64, failure: Failure) {
        if matches!(self.body, Body::Error { .. }) {
            self.on_body_end(t_ms);
        } else {
            self.end(t_ms, Some(failure));
        }
    }

    /// The frames the page ran while it showed this answer, and when its DOM held the text:
    /// records which frame painted how many characters of the answer chunks so far (see
    /// [`attribute_paints`]). Call it once, after the last frame that can show the text;
    /// it may follow the end of the request.
    pub fn on_frames(&mut self, ready: Ready<'_>, frames: &[Frame]) {
        for p in attribute_paints(self.timeline.content_chunks(), ready, frames) {
            self.timeline.on_paint(p.t_ms, p.chars);
        }
    }

    /// One piece of answer text that the app received already decoded (an SDK's stream, a
    /// chat library's callback), stamped `t_ms`: a read of a stream whose wire the caller
    /// never saw. Empty text is no read.
    pub fn on_text(&mut self, t_ms: f64, text: &str) {
        if self.ended || text.is_empty() {
            return;
        }
        self.timeline.on_bytes(t_ms, text.len());
        self.events.clear();
        self.events
            .push(StreamEvent::ContentDelta { text: text.into() });
        self.absorb(t_ms);
    }

    /// A stream of text ([`Exchange::on_text`]) ended as the app said at `t_ms`: a complete
    /// answer (`finish_reason: stop`), since the app saw its end and no error.
    pub fn on_text_end(&mut self, t_ms: f64) {
        if self.ended {
            return;
        }
        self.events.clear();
        self.events.push(StreamEvent::Finish {
            reason: FinishReason::Stop,
        });
        self.events.push(StreamEvent::Done);
        self.absorb(t_ms);
    }

    /// Whether the request has ended (the transport stops reading).
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Whether any body byte has arrived.
    pub fn started(&self) -> bool {
        self.timeline.first_byte_ms().is_some()
    }

    /// The failure so far, if any.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// The timeline so far.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The outcome so far: an exchange that has not ended is finished at `now_ms` (the
    /// standalone meter reports streams still open when the page is hidden).
    pub fn outcome(&self, now_ms: f64) -> Outcome {
        let mut timeline = self.timeline.clone();
        timeline.finish(now_ms);
        Outcome {
            timeline,
            failure: self.failure.clone(),
            http_status: self.http_status,
            http_version: self.http_version.clone(),
            answer: self.answer.clone(),
        }
    }

    /// The outcome of an ended exchange (one still open is finished at its last stamp).
    pub fn into_outcome(self) -> Outcome {
        let mut timeline = self.timeline;
        // A no-op when the exchange has ended.
        timeline.finish(timeline.last_stamp_ms());
        Outcome {
            timeline,
            failure: self.failure,
            http_status: self.http_status,
            http_version: self.http_version,
            answer: self.answer,
        }
    }

    /// Feeds the last read's events to the timeline; an error event ends the request, the
    /// end marker ends it successfully at this read.
    fn absorb(&mut self, t_ms: f64) {
        self.timeline.on_chunk(t_ms, &self.events);
        if let Some(answer) = &mut self.answer {
            for event in &self.events {
                if let StreamEvent::ContentDelta { text } = event {
                    answer.push(text);
                }
            }
        }
        let mut outcome = None;
        for event in &self.events {
            match event {
                StreamEvent::Error { code, message } => {
                    outcome = Some(Some(Failure::StreamError {
                        code: code.clone(),
                        message: cap_chars(message, MAX_EXCERPT_CHARS),
                    }));
                    break;
                }
                StreamEvent::Done => outcome = Some(None),
                _ => {}
            }
        }
        if let Some(failure) = outcome {
            self.end(t_ms, failure);
        }
    }

    fn end(&mut self, t_ms: f64, failure: Option<Failure>) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.failure = failure;
        self.timeline.finish(t_ms);
    }
}
