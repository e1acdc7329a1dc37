//! Every wire format's `StreamParser` on any body, cut at fuzzer-chosen points, must give the
//! same events as the same body fed whole and fed one byte at a time (split invariance), and
//! `finish` must hand over every event the body completed (nothing finished is lost).
//!
//! Input: byte 0 picks tiny caps (its low bit, so the line and event caps are reached by
//! short inputs) and the API (the other seven bits, modulo `Api::ALL`'s length: every API
//! in the list is fuzzed, however many there are); the rest is `tpsmeter_fuzz::chunks`' cut
//! lengths and body. [`mode`] writes that byte.

use tpsmeter_core::{Api, CoreError, Limits, StreamEvent, StreamParser};

/// Events of one run and how it ended: `Err` is the first error (feed or finish).
struct Run {
    events: Vec<StreamEvent>,
    end: Result<(), CoreError>,
}

fn run_one(api: Api, limits: Limits, chunks: &[&[u8]]) -> Run {
    let mut parser = StreamParser::with_limits(api, limits);
    let mut events = Vec::new();
    for chunk in chunks {
        match parser.feed(chunk) {
            Ok(evs) => events.extend(evs),
            Err(e) => {
                // Poisoned: the next call repeats the error, and `finish` does too.
                assert_eq!(parser.feed(b"data: {}\n\n").err().as_ref(), Some(&e));
                assert_eq!(parser.finish().err().as_ref(), Some(&e));
                return Run {
                    events,
                    end: Err(e),
                };
            }
        }
    }
    let end = match parser.finish() {
        Ok(evs) => {
            events.extend(evs);
            // A second finish adds nothing and changes nothing.
            assert_eq!(parser.finish().map(|e| e.len()), Ok(0));
            Ok(())
        }
        Err(e) => Err(e),
    };
    Run { events, end }
}

/// The first byte of an input for `api` (tiny caps or not), as [`run`] reads it.
pub fn mode(api: Api, tiny_caps: bool) -> Option<u8> {
    let index = Api::ALL.iter().position(|&a| a == api)?;
    u8::try_from(index)
        .ok()
        .filter(|&i| i < 128)
        .map(|i| i << 1 | u8::from(tiny_caps))
}

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let api = Api::ALL[usize::from(mode >> 1) % Api::ALL.len()];
    let limits = if mode & 1 != 0 {
        Limits {
            max_line_bytes: 64,
            max_event_data_bytes: 96,
        }
    } else {
        Limits::default()
    };
    let (chunks, body) = super::chunks(rest);
    let whole = run_one(api, limits, &[body]);
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    let bytewise = run_one(api, limits, &bytes);
    let split = run_one(api, limits, &chunks);

    // How a body ends does not depend on how it was cut.
    assert_eq!(whole.end, bytewise.end, "end: whole vs one byte at a time");
    assert_eq!(
        split.end, bytewise.end,
        "end: fuzzer cuts vs one byte at a time"
    );
    if bytewise.end.is_ok() {
        // A valid body: every cut gives every event, in order.
        assert_eq!(whole.events, bytewise.events, "events: whole vs bytewise");
        assert_eq!(split.events, bytewise.events, "events: cuts vs bytewise");
    } else {
        // An invalid body: the events of the chunk that failed are dropped with it, so each
        // run keeps a prefix of what one byte at a time saw before the failing byte.
        assert!(
            bytewise.events.starts_with(&whole.events),
            "whole is a prefix"
        );
        assert!(
            bytewise.events.starts_with(&split.events),
            "cuts are a prefix"
        );
    }
    // Nothing follows the end: at most one `Done`/`Error`, and only as the last event.
    if let Some(i) = bytewise
        .events
        .iter()
        .position(|e| matches!(e, StreamEvent::Done | StreamEvent::Error { .. }))
    {
        assert_eq!(i + 1, bytewise.events.len(), "events after the end");
    }
}
