//! Perceived speed: when the streamed answer was *painted*, derived from the same timeline
//! as the wire metrics.
//!
//! The browser records one [`PaintMark`](crate::timeline::PaintMark) per animation frame
//! while a stream is shown: the frame's time (the first `requestAnimationFrame` after the
//! DOM update, refined by the Long Animation Frames API) and how many characters it made
//! visible (0 for a frame that showed nothing new although text had arrived). The
//! painted text is the answer text in arrival order, so characters pair arrivals with
//! paints: the answer chunk whose last character is the k-th was painted by the first
//! frame whose running total of painted characters reaches k.
//!
//! Definitions (times ms, on the request's clock):
//! - **paint lag** of a chunk: its paint time − its arrival stamp (≥ 0 by construction of
//!   the browser side; a negative value would be a bug and is kept, not clamped, so a test
//!   can catch it);
//! - **tokens per frame**: for each frame that painted text, the delta events (tokens, one
//!   per event as the chunk count has it) of the chunks it completed;
//! - **painted TPS**: tokens painted after the first text frame ÷ (last text frame − first
//!   text frame): the rate at which a reader sees the answer grow, `None` with one frame;
//! - **empty frames**: frames that showed nothing new while text was waiting.
//!
//! The paint marks themselves come from [`attribute_paints`]: the page reports when its DOM
//! held the text and when frames ran, and the characters are counted here, from the text
//! the exchange parsed.

mod attribute;

use serde::{Deserialize, Serialize};

pub use attribute::{Frame, Ready, attribute_paints};

use crate::stats::Summary;
use crate::timeline::Timeline;

/// The perceived-speed metrics of one request (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PaintMetrics {
    /// Time to first painted text − request start.
    pub ttfp_ms: Option<f64>,
    /// Tokens per second as painted.
    pub painted_tps: Option<f64>,
    /// Paint − arrival of every answer chunk that was painted.
    pub lag_ms: Vec<f64>,
    /// The lag's summary (p50/p90/p99).
    pub lag: Option<Summary>,
    /// Tokens made visible by each frame that painted text.
    pub tokens_per_frame: Vec<f64>,
    /// Frames that painted text.
    pub frames: u64,
    /// Frames that showed nothing new while text was waiting.
    pub empty_frames: u64,
    /// Answer characters that arrived but were never painted (the tab was hidden, the
    /// page closed, or the renderer dropped them).
    pub unpainted_chars: u64,
}

impl PaintMetrics {
    /// The paint metrics of `timeline`; `None` when it has no paint marks (native runs, or
    /// a browser run without a render target).
    pub fn from_timeline(timeline: &Timeline) -> Option<PaintMetrics> {
        let paints = timeline.paints();
        if paints.is_empty() {
            return None;
        }
        let start = timeline.request_start_ms();
        let mut lag_ms = Vec::new();
        let mut per_frame: Vec<(f64, u64)> = Vec::new();
        let mut painted: usize = 0;
        let mut frames = paints.iter().filter(|p| p.chars > 0).peekable();
        let mut arrived: usize = 0;
        for chunk in timeline.content_chunks() {
            arrived += chunk.chars;
            // Advance to the first frame whose running total covers this chunk.
            while painted < arrived {
                match frames.next() {
                    Some(p) => {
                        painted += p.chars;
                        per_frame.push((p.t_ms, 0));
                    }
                    None => break,
                }
            }
            if painted < arrived {
                break;
            }
            if let Some(frame) = per_frame.last_mut() {
                lag_ms.push(frame.0 - chunk.t_ms);
                frame.1 += chunk.deltas as u64;
            }
        }
        let text_frames = paints.iter().filter(|p| p.chars > 0).count() as u64;
        let total_chars: usize = timeline.content_chunks().iter().map(|c| c.chars).sum();
        let painted_chars: usize = paints.iter().map(|p| p.chars).sum();
        let painted_tps = match (per_frame.first(), per_frame.last()) {
            (Some(first), Some(last)) if last.0 > first.0 => {
                let after_first: u64 = per_frame[1..].iter().map(|f| f.1).sum();
                Some(after_first as f64 / (last.0 - first.0) * 1000.0)
            }
            _ => None,
        };
        Some(PaintMetrics {
            ttfp_ms: paints.iter().find(|p| p.chars > 0).map(|p| p.t_ms - start),
            painted_tps,
            lag: Summary::from_values(&lag_ms),
            lag_ms,
            tokens_per_frame: per_frame.iter().map(|f| f.1 as f64).collect(),
            frames: text_frames,
            empty_frames: paints.iter().filter(|p| p.chars == 0).count() as u64,
            unpainted_chars: total_chars.saturating_sub(painted_chars) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::StreamEvent;

    fn text(s: &str) -> StreamEvent {
        StreamEvent::ContentDelta { text: s.into() }
    }

    #[test]
    fn chunks_pair_with_the_frame_that_completes_them() {
        let mut t = Timeline::new(0.0);
        t.on_chunk(10.0, &[text("ab")]);
        t.on_chunk(12.0, &[text("c"), text("d")]);
        t.on_chunk(40.0, &[text("e")]);
        t.on_paint(16.0, 4);
        t.on_paint(33.0, 0);
        t.on_paint(50.0, 1);
        let m = PaintMetrics::from_timeline(&t).unwrap();
        assert_eq!(m.lag_ms, vec![6.0, 4.0, 10.0]);
        assert_eq!(m.tokens_per_frame, vec![3.0, 1.0]);
        assert_eq!(m.frames, 2);
        assert_eq!(m.empty_frames, 1);
        assert_eq!(m.ttfp_ms, Some(16.0));
        // One token after the first frame, over 34 ms.
        assert!((m.painted_tps.unwrap() - 1000.0 / 34.0).abs() < 1e-9);
        assert_eq!(m.unpainted_chars, 0);
    }

    #[test]
    fn text_never_painted_is_counted_not_paired() {
        let mut t = Timeline::new(0.0);
        t.on_chunk(10.0, &[text("abc")]);
        t.on_chunk(20.0, &[text("def")]);
        t.on_paint(16.0, 3);
        let m = PaintMetrics::from_timeline(&t).unwrap();
        assert_eq!(m.lag_ms, vec![6.0]);
        assert_eq!(m.unpainted_chars, 3);
        assert_eq!(m.painted_tps, None);
        assert!(PaintMetrics::from_timeline(&Timeline::new(0.0)).is_none());
    }
}
