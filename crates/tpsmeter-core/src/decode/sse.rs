//! Incremental server-sent events decoder (WHATWG HTML §9.2.6 "Interpreting an event
//! stream"), fed arbitrary byte chunks.
//!
//! Rules implemented, each with a unit test below:
//! - lines end in CRLF, LF or a lone CR, also when the CR and LF arrive in different chunks;
//! - a leading UTF-8 BOM is stripped;
//! - lines starting with `:` are comments (keep-alives) and ignored;
//! - `field:value` with at most one space after the colon removed; a line without a colon
//!   is a field with an empty value;
//! - `data` lines append their value plus `\n`; the final `\n` is removed at dispatch, so
//!   several `data:` lines join with `\n`;
//! - `event` sets the type (default `message`), `id` sets the last event id (unless it holds
//!   NUL; it persists across events), `retry` sets the reconnection time if all ASCII digits;
//!   other fields are ignored;
//! - an empty line dispatches; an event whose data buffer is empty is not dispatched.
//!
//! One deliberate deviation: WHATWG discards an event that is still pending when the body
//! ends. [`SseDecoder::finish`] dispatches it instead, because some servers close the
//! connection right after their last `data:` line, and dropping e.g. `data: [DONE]` would
//! misreport a complete stream as truncated.

use crate::decode::limits::Limits;
use crate::decode::lines::LineSplitter;
use crate::error::{CoreError, Result};

/// One dispatched event. Borrowed from the decoder; copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` type, `"message"` when the event named none.
    pub event: &'a str,
    /// The joined `data:` lines.
    pub data: &'a str,
    /// The last event id seen so far in the stream (empty if none).
    pub id: &'a str,
}

/// Field state of the event being assembled, kept apart from the line splitter so both
/// can be borrowed at once.
#[derive(Debug, Default)]
struct EventState {
    data: String,
    event_type: String,
    last_id: String,
    retry_ms: Option<u64>,
    max_data: usize,
}

/// Incremental SSE decoder.
#[derive(Debug)]
pub struct SseDecoder {
    lines: LineSplitter,
    state: EventState,
}

impl SseDecoder {
    pub fn new(limits: Limits) -> Self {
        SseDecoder {
            lines: LineSplitter::new(limits.max_line_bytes, true),
            state: EventState {
                max_data: limits.max_event_data_bytes,
                ..EventState::default()
            },
        }
    }

    /// Feeds the next chunk; calls `on_event` for every event it completes.
    pub fn feed<F>(&mut self, chunk: &[u8], on_event: &mut F) -> Result<()>
    where
        F: FnMut(SseEvent<'_>) -> Result<()>,
    {
        let state = &mut self.state;
        self.lines
            .feed(chunk, &mut |line| state.on_line(line, on_event))
    }

    /// The body ended: processes a trailing unterminated line and dispatches a pending
    /// event (see the module docs for why).
    pub fn finish<F>(&mut self, on_event: &mut F) -> Result<()>
    where
        F: FnMut(SseEvent<'_>) -> Result<()>,
    {
        let state = &mut self.state;
        self.lines
            .finish(&mut |line| state.on_line(line, on_event))?;
        state.dispatch(on_event)
    }

    /// The reconnection time the server asked for with `retry:`, if any.
    pub fn retry_ms(&self) -> Option<u64> {
        self.state.retry_ms
    }
}

impl EventState {
    fn on_line<F>(&mut self, line: &str, on_event: &mut F) -> Result<()>
    where
        F: FnMut(SseEvent<'_>) -> Result<()>,
    {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > self.max_data {
                    return Err(CoreError::EventTooLarge {
                        limit: self.max_data,
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => {
                self.event_type.clear();
                self.event_type.push_str(value);
            }
            "id" if !value.contains('\0') => {
                self.last_id.clear();
                self.last_id.push_str(value);
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits only, so the sole failure is overflow: ignore it like a bad value.
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<F>(&mut self, on_event: &mut F) -> Result<()>
    where
        F: FnMut(SseEvent<'_>) -> Result<()>,
    {
        if self.data.is_empty() {
            self.event_type.clear();
            return Ok(());
        }
        let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
        let event = if self.event_type.is_empty() {
            "message"
        } else {
            &self.event_type
        };
        let result = on_event(SseEvent {
            event,
            data,
            id: &self.last_id,
        });
        self.data.clear();
        self.event_type.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Ev(String, String, String);

    fn decode_chunks(chunks: &[&[u8]]) -> Result<Vec<Ev>> {
        let mut d = SseDecoder::new(Limits::default());
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| {
            out.push(Ev(e.event.into(), e.data.into(), e.id.into()));
            Ok(())
        };
        for c in chunks {
            d.feed(c, &mut push)?;
        }
        d.finish(&mut push)?;
        Ok(out)
    }

    fn decode(s: &str) -> Vec<Ev> {
        decode_chunks(&[s.as_bytes()]).unwrap()
    }

    fn ev(event: &str, data: &str, id: &str) -> Ev {
        Ev(event.into(), data.into(), id.into())
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_are_equivalent() {
        let want = vec![ev("message", "a", ""), ev("message", "b", "")];
        assert_eq!(decode("data: a\n\ndata: b\n\n"), want);
        assert_eq!(decode("data: a\r\n\r\ndata: b\r\n\r\n"), want);
        assert_eq!(decode("data: a\r\rdata: b\r\r"), want);
    }

    #[test]
    fn cr_and_lf_in_different_chunks_do_not_dispatch_twice() {
        // "data: a\r" | "\n" | "data: b\r\n\r\n": a naive decoder sees CR, then an empty LF
        // line, and dispatches "a" early and alone; both lines belong to one event.
        let out = decode_chunks(&[b"data: a\r", b"\ndata: b\r\n\r\n"]).unwrap();
        assert_eq!(out, vec![ev("message", "a\nb", "")]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            decode(": keep-alive\n\ndata: x\n: mid-event comment\n\n"),
            vec![ev("message", "x", "")]
        );
    }

    #[test]
    fn multiple_data_lines_join_with_newline() {
        assert_eq!(
            decode("data: {\"a\":\ndata: 1}\n\n"),
            vec![ev("message", "{\"a\":\n1}", "")]
        );
    }

    #[test]
    fn only_one_space_after_the_colon_is_removed() {
        assert_eq!(decode("data:x\n\n"), vec![ev("message", "x", "")]);
        assert_eq!(decode("data:  x\n\n"), vec![ev("message", " x", "")]);
    }

    #[test]
    fn event_names_the_type_and_resets_after_dispatch() {
        assert_eq!(
            decode("event: ping\ndata: 1\n\ndata: 2\n\n"),
            vec![ev("ping", "1", ""), ev("message", "2", "")]
        );
    }

    #[test]
    fn id_persists_and_ignores_values_with_nul() {
        assert_eq!(
            decode("id: 7\ndata: a\n\nid: x\0y\ndata: b\n\n"),
            vec![ev("message", "a", "7"), ev("message", "b", "7")]
        );
    }

    #[test]
    fn retry_accepts_only_digits() {
        let mut d = SseDecoder::new(Limits::default());
        let mut ignore = |_: SseEvent<'_>| Ok(());
        d.feed(b"retry: 1500\n\nretry: 2s\n\n", &mut ignore)
            .unwrap();
        assert_eq!(d.retry_ms(), Some(1500));
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert_eq!(decode("event: x\n\nid: 1\n\n\n\n"), vec![]);
        // ... but an empty data line is data.
        assert_eq!(decode("data:\n\n"), vec![ev("message", "", "")]);
    }

    #[test]
    fn field_without_colon_is_a_field_with_empty_value() {
        assert_eq!(decode("data\ndata\n\n"), vec![ev("message", "\n", "")]);
    }

    #[test]
    fn leading_bom_is_stripped_only_once() {
        assert_eq!(decode("\u{feff}data: a\n\n"), vec![ev("message", "a", "")]);
        // A second BOM is part of the first line's field name, which is then unknown.
        assert_eq!(decode("\u{feff}\u{feff}data: a\n\n"), vec![]);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            decode("foo: bar\ndata: a\n\n"),
            vec![ev("message", "a", "")]
        );
    }

    #[test]
    fn pending_event_is_flushed_at_end_of_body() {
        assert_eq!(decode("data: [DONE]"), vec![ev("message", "[DONE]", "")]);
        assert_eq!(decode("data: [DONE]\n"), vec![ev("message", "[DONE]", "")]);
    }

    #[test]
    fn event_data_over_the_cap_is_an_error() {
        let mut d = SseDecoder::new(Limits {
            max_line_bytes: 100,
            max_event_data_bytes: 10,
        });
        let mut ignore = |_: SseEvent<'_>| Ok(());
        let err = d
            .feed(b"data: 12345\ndata: 67890\n", &mut ignore)
            .unwrap_err();
        assert_eq!(err, CoreError::EventTooLarge { limit: 10 });
    }
}
