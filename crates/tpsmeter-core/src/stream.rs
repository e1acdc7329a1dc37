//! [`StreamParser`]: response body bytes in, [`StreamEvent`]s out, for one API.
//!
//! The contract the CLI and the browser build on: feed each network chunk as it arrives
//! (stamping the returned events with that chunk's arrival time), then call `finish` when
//! the body ends. Any split of the same body yields the same events.
//!
//! Ending rules:
//! - the first `Done` or `Error` event ends the stream; anything after it is ignored
//!   (a server that keeps talking after its end marker does not change the measurement);
//! - `finish` after an `Error` is `Ok` (the error already explains the end), after neither
//!   `Done` nor `Error` it is `CoreError::TruncatedStream` — except for Gemini, whose
//!   stream has no end marker (see `protocol::gemini` for its rule);
//! - any error (invalid UTF-8, a line over its cap, malformed JSON, truncation) poisons the
//!   parser: that call and every later one return the same error. Events completed by the
//!   failing chunk before the error are dropped with it: the body is invalid.

use crate::api::Api;
use crate::decode::{Limits, NdjsonDecoder, SseDecoder};
use crate::error::{CoreError, Result};
use crate::event::StreamEvent;
use crate::protocol::{Adapter, Decoder};

#[derive(Debug)]
enum Framing {
    Sse(SseDecoder),
    Ndjson(NdjsonDecoder),
}

/// Incremental parser of one response body of one API: decoder plus protocol adapter.
pub struct StreamParser {
    framing: Framing,
    api: Api,
    adapter: Box<dyn Adapter>,
    bytes_seen: u64,
    /// A `Done` or `Error` was emitted.
    ended: bool,
    /// `finish` already ran.
    finished: bool,
    /// The first decoding error, repeated by every later call.
    failed: Option<CoreError>,
}

/// By hand: the adapter is shown by its API only, because `Debug` as a supertrait of
/// `Adapter` would put every adapter's `Debug` in its vtable, where the linker cannot drop
/// it (and with it Unicode escaping tables) from the real-user meter's wasm.
impl std::fmt::Debug for StreamParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamParser")
            .field("framing", &self.framing)
            .field("api", &self.api)
            .field("bytes_seen", &self.bytes_seen)
            .field("ended", &self.ended)
            .field("finished", &self.finished)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl StreamParser {
    /// A parser with the default [`Limits`].
    pub fn new(api: Api) -> Self {
        Self::with_limits(api, Limits::default())
    }

    /// A parser with caller-chosen caps.
    pub fn with_limits(api: Api, limits: Limits) -> Self {
        Self::with_decoder(Decoder::new(api), limits)
    }

    /// A parser of the decoder's API with caller-chosen caps: a build that links only the
    /// adapters it names (the real-user meter's wasm) passes its own [`Decoder`].
    pub fn with_decoder(decoder: Decoder, limits: Limits) -> Self {
        let Decoder { api, adapter } = decoder;
        let framing = if api.is_ndjson() {
            Framing::Ndjson(NdjsonDecoder::new(limits))
        } else {
            Framing::Sse(SseDecoder::new(limits))
        };
        StreamParser {
            framing,
            api,
            adapter,
            bytes_seen: 0,
            ended: false,
            finished: false,
            failed: None,
        }
    }

    /// Feeds the next network chunk; returns the events it completed (maybe none).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<StreamEvent>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.bytes_seen += chunk.len() as u64;
        let mut out = Vec::new();
        let result = self.run(
            |framing, on_message| match framing {
                Framing::Sse(d) => d.feed(chunk, &mut |ev| on_message(ev.event, ev.data)),
                Framing::Ndjson(d) => d.feed(chunk, &mut |line| on_message("", line)),
            },
            &mut out,
        );
        self.settle(result, out)
    }

    /// The body ended: flushes a trailing unterminated event/line, then returns
    /// `Err(CoreError::TruncatedStream{..})` if the protocol's end marker never arrived.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut out = Vec::new();
        if self.finished {
            return Ok(out);
        }
        self.finished = true;
        let result = self.run(
            |framing, on_message| match framing {
                Framing::Sse(d) => d.finish(&mut |ev| on_message(ev.event, ev.data)),
                Framing::Ndjson(d) => d.finish(&mut |line| on_message("", line)),
            },
            &mut out,
        );
        let result = result.and_then(|()| {
            if self.ended {
                Ok(())
            } else {
                let before = out.len();
                self.adapter.on_end(&mut out)?;
                self.ended = out[before..].iter().any(ends_stream);
                Ok(())
            }
        });
        self.settle(result, out)
    }

    /// Raw body bytes fed so far (BOM and terminators included).
    pub fn bytes_seen(&self) -> u64 {
        self.bytes_seen
    }

    /// Runs the decoder step `step`, routing every framed message through the adapter.
    fn run<S>(&mut self, step: S, out: &mut Vec<StreamEvent>) -> Result<()>
    where
        S: FnOnce(&mut Framing, &mut dyn FnMut(&str, &str) -> Result<()>) -> Result<()>,
    {
        let adapter = &mut self.adapter;
        let ended = &mut self.ended;
        let mut on_message = |event: &str, data: &str| {
            if *ended {
                return Ok(());
            }
            let before = out.len();
            adapter.on_message(event, data, out)?;
            // Keep events up to and including the first end; drop the rest.
            if let Some(i) = out[before..].iter().position(ends_stream) {
                out.truncate(before + i + 1);
                *ended = true;
            }
            Ok(())
        };
        step(&mut self.framing, &mut on_message)
    }

    fn settle(&mut self, result: Result<()>, out: Vec<StreamEvent>) -> Result<Vec<StreamEvent>> {
        match result {
            Ok(()) => Ok(out),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }
}

fn ends_stream(event: &StreamEvent) -> bool {
    matches!(event, StreamEvent::Done | StreamEvent::Error { .. })
}
