//! The response body: a planned sequence of events, each released at its deadline.
//!
//! The body is polled by hyper. When the next step is not yet due it arms one tokio timer
//! and returns `Pending`, which makes hyper flush what it has written so far: every chunk
//! therefore reaches the socket on its own, at its own time, with no task or channel per
//! stream (thousands of streams share two cores with the load generator under test).
//! Content events are rendered when released, so their `x_sent_ns` is taken after the
//! deadline, right before hyper writes them.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

use tpsmeter_arrival::{Departure, Departures};

use crate::clock;
use crate::server::Shared;
use crate::wire::{Durations, Finish, Wire, token_text};

/// Lines of an [`crate::Fault::OversizedLine`] go out in writes of this size.
const FILL_PIECE: usize = 64 * 1024;
static FILL: [u8; FILL_PIECE] = [b'a'; FILL_PIECE];

/// One thing the body does at its deadline.
#[derive(Debug)]
pub enum Step {
    /// Send these bytes as they are.
    Static(Bytes),
    /// Send the content event for tokens `first .. first + count`.
    Content {
        /// First token index.
        first: u32,
        /// Tokens in the event.
        count: u32,
    },
    /// Send a content event with invalid UTF-8 in its text.
    InvalidUtf8,
    /// Send an event with cut-off JSON.
    Malformed,
    /// Send the API's error event(s), then end the body.
    ErrorEvent,
    /// Send a line of this many bytes.
    Oversized(usize),
    /// Send the finish, usage and end-marker events.
    Epilogue(Finish, Durations),
    /// End the body cleanly here (whatever is left is dropped).
    End,
    /// Abort the connection.
    Cut,
}

/// The send times of one response, kept when [`crate::EmulatorConfig::record`] is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestRecord {
    /// Sequence number of the request (0-based, in order of arrival).
    pub id: u64,
    /// CLOCK_MONOTONIC ns when the request's headers were read.
    pub arrival_ns: u64,
    /// The model the request named (as echoed back): a load generator that gives each of its
    /// workers its own name pairs its requests with these records exactly.
    pub model: String,
    /// When each content event was due (CLOCK_MONOTONIC ns).
    pub due_ns: Vec<u64>,
    /// When each content event was produced, right before its write (its `x_sent_ns`).
    pub sent_ns: Vec<u64>,
    /// When the kernel sent each content event's last byte (its transmit stamp, see
    /// `tpsmeter_arrival::Departures`), or the event's `sent_ns` where the kernel gave none.
    /// Unlike `sent_ns`, it cannot be early by a preemption between the stamp and the write.
    pub departed_ns: Vec<u64>,
    /// How many of `departed_ns` are the kernel's stamps.
    pub departed_by_kernel: usize,
    /// Tokens in each content event.
    pub tokens: Vec<u32>,
}

/// A record being filled: the content events' departures arrive after the body is done
/// (the kernel reports a write after it), so they are read when the record is taken.
#[derive(Debug)]
pub(crate) struct Recording {
    pub(crate) record: RequestRecord,
    departures: Departures,
    departed: Vec<Departure>,
}

impl Recording {
    pub(crate) fn new(record: RequestRecord, departures: Departures) -> Self {
        Self {
            record,
            departures,
            departed: Vec::new(),
        }
    }

    /// The record, with each event's departure as known now.
    pub(crate) fn finish(self) -> RequestRecord {
        let mut r = self.record;
        r.departed_ns = r.sent_ns.clone();
        r.departed_by_kernel = 0;
        for (slot, d) in r.departed_ns.iter_mut().zip(&self.departed) {
            if let Some(at) = d.get() {
                *slot = clock::instant_ns(at);
                r.departed_by_kernel += 1;
            }
        }
        r
    }
}

/// The body of every emulator response.
#[derive(Debug)]
pub struct ScheduledBody {
    /// Frames ready to go out now.
    ready: VecDeque<Bytes>,
    /// Steps not yet due, with their offsets from `base`.
    steps: VecDeque<(Duration, Step)>,
    base: Instant,
    wire: Option<Wire>,
    sleep: Pin<Box<Sleep>>,
    /// The deadline `sleep` is armed for, to avoid re-registering the timer on every poll.
    armed: Option<Instant>,
    /// Tokens sent so far.
    sent_tokens: u32,
    /// Data was handed to hyper since the body last returned `Pending` (hyper writes
    /// what it buffered only then).
    unflushed: bool,
    record: Option<Recording>,
    /// Set for streams: counts open streams and receives the record on drop.
    shared: Option<Arc<Shared>>,
    /// The server's stream slot this body holds (`max_streams`), freed when its last step
    /// has gone out or the body is dropped (a client that hung up).
    slot: Option<OwnedSemaphorePermit>,
}

impl ScheduledBody {
    /// A body that is sent whole at once (error statuses, `/v1/models`).
    pub fn full(bytes: impl Into<Bytes>) -> ScheduledBody {
        ScheduledBody {
            ready: VecDeque::from([bytes.into()]),
            steps: VecDeque::new(),
            base: Instant::now(),
            wire: None,
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: None,
            unflushed: false,
            sent_tokens: 0,
            record: None,
            shared: None,
            slot: None,
        }
    }

    /// A streamed response that runs `steps` from `base`.
    pub(crate) fn stream(
        wire: Wire,
        steps: Vec<(Duration, Step)>,
        base: Instant,
        record: Option<Recording>,
        shared: Arc<Shared>,
    ) -> ScheduledBody {
        shared.stats.open_streams.fetch_add(1, Ordering::Relaxed);
        ScheduledBody {
            ready: VecDeque::new(),
            steps: steps.into(),
            base,
            wire: Some(wire),
            sleep: Box::pin(tokio::time::sleep_until(base)),
            armed: None,
            unflushed: false,
            sent_tokens: 0,
            record,
            shared: Some(shared),
            slot: None,
        }
    }

    /// Keeps `slot` until the stream ends.
    pub(crate) fn hold(&mut self, slot: OwnedSemaphorePermit) {
        self.slot = Some(slot);
    }

    /// Runs one due step. Returns an error when the step is a cut.
    fn run(&mut self, due: Duration, step: Step) -> Result<(), std::io::Error> {
        let Some(wire) = self.wire.as_mut() else {
            return Ok(());
        };
        match step {
            Step::Static(b) => self.ready.push_back(b),
            Step::Content { first, count } => {
                let text: String = (first..first + count).map(token_text).collect();
                self.sent_tokens += count;
                let now = clock::monotonic_ns();
                let frame = wire.content(&text, self.sent_tokens, now);
                if let Some(rec) = self.record.as_mut() {
                    rec.departed.push(rec.departures.watch(&frame));
                    let r = &mut rec.record;
                    r.due_ns
                        .push(clock::instant_ns((self.base + due).into_std()));
                    r.sent_ns.push(now);
                    r.tokens.push(count);
                }
                self.ready.push_back(frame);
            }
            Step::InvalidUtf8 => {
                let b = wire.invalid_utf8(self.sent_tokens, clock::monotonic_ns());
                self.ready.push_back(b);
            }
            Step::Malformed => self.ready.push_back(wire.malformed()),
            Step::ErrorEvent => {
                self.ready.extend(wire.error_event());
                self.steps.clear();
            }
            Step::Oversized(bytes) => {
                let (head, tail): (&[u8], &[u8]) = if wire.content_type().contains("ndjson") {
                    (b"{\"x\":\"", b"\"}\n")
                } else {
                    (b"data: {\"x\":\"", b"\"}\n\n")
                };
                self.ready.push_back(Bytes::from_static(head));
                let mut left = bytes.saturating_sub(head.len() + tail.len());
                while left > 0 {
                    let n = left.min(FILL_PIECE);
                    self.ready.push_back(Bytes::from_static(&FILL[..n]));
                    left -= n;
                }
                self.ready.push_back(Bytes::from_static(tail));
            }
            Step::Epilogue(finish, d) => {
                let b = wire.epilogue(self.sent_tokens, finish, d);
                self.ready.extend(b);
            }
            Step::End => self.steps.clear(),
            Step::Cut => {
                self.steps.clear();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "emulated cut",
                ));
            }
        }
        Ok(())
    }
}

impl Body for ScheduledBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.ready.pop_front() {
                this.unflushed = true;
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            let Some(&(due, _)) = this.steps.front() else {
                return Poll::Ready(None);
            };
            let deadline = this.base + due;
            if Instant::now() < deadline {
                if this.armed != Some(deadline) {
                    this.sleep.as_mut().reset(deadline);
                    this.armed = Some(deadline);
                }
                if this.sleep.as_mut().poll(cx).is_pending() {
                    this.unflushed = false;
                    return Poll::Pending;
                }
            }
            if this.unflushed && matches!(this.steps.front(), Some((_, Step::Cut))) {
                // A body error makes hyper drop the connection with whatever it has not
                // written yet: when the cut is already due (a late emulator on a loaded
                // machine), the tokens before it would vanish with it, and the stream would be
                // cut after fewer tokens than planned. Yield once so hyper writes them out.
                this.unflushed = false;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some((due, step)) = this.steps.pop_front() {
                if let Err(e) = this.run(due, step) {
                    return Poll::Ready(Some(Err(e)));
                }
                if this.steps.is_empty() {
                    // The answer is generated: its slot is free for the next request, as
                    // a server frees a batch slot, whatever hyper still has to write.
                    this.slot = None;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_empty() && self.steps.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        if self.steps.is_empty() {
            // Lets hyper send Content-Length for one-shot bodies instead of chunking them.
            let len: usize = self.ready.iter().map(Bytes::len).sum();
            SizeHint::with_exact(len as u64)
        } else {
            SizeHint::default()
        }
    }
}

impl Drop for ScheduledBody {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            // The record first: whoever sees no open stream finds every record.
            if let Some(r) = self.record.take() {
                if let Ok(mut records) = shared.records.lock() {
                    records.push(r);
                }
            }
            shared.stats.open_streams.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
