//! Which frame showed which text: the step between what the browser recorded (when the
//! answer text was in the DOM, when each animation frame ran) and the [`PaintMark`]s the
//! paint metrics read.
//!
//! The page knows when its DOM held new text and when frames ran; this side knows the text
//! itself, because the exchange parsed it: each answer chunk of the timeline
//! ([`Timeline::content_chunks`](crate::timeline::Timeline::content_chunks)) is one piece of
//! text, with its arrival stamp and its characters (Unicode scalar values). So a read
//! crosses into wasm once, and the characters are counted where the text was decoded.
//!
//! Rules (those `bench({render})` and the real-user meter always used):
//! - a chunk is ready no earlier than it arrived (a stamp from before its arrival is moved to
//!   the arrival);
//! - text is rendered in order: a chunk is on screen no later than any later chunk is, so
//!   each ready time is lowered to the earliest ready time of the chunks after it;
//! - a frame paints every chunk that was ready at its `requestAnimationFrame` and not painted
//!   before; a frame in which text had arrived but nothing new was ready paints 0 (the text
//!   was waiting); frames before any text arrived, or after all of it was painted, paint
//!   nothing and are not recorded.

use crate::timeline::{ChunkMark, PaintMark};

/// One animation frame the page ran while it showed a stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// When its `requestAnimationFrame` callback ran: text in the DOM by then is in this
    /// frame.
    pub raf_ms: f64,
    /// When it was shown: the end of a long animation frame spanning `raf_ms` (the browser's
    /// Long Animation Frames API), otherwise `raf_ms`.
    pub shown_ms: f64,
}

/// When the page's DOM held the answer text.
#[derive(Debug, Clone, Copy)]
pub enum Ready<'a> {
    /// When each answer chunk was in the DOM, in order (`bench({render})`, which gives each
    /// piece of text to the DOM itself). A chunk past the end of the list, or at infinity,
    /// never was.
    PerChunk(&'a [f64]),
    /// Stamps of the app's DOM updates, not tied to any text (the real-user meter, which
    /// does not parse while the stream runs): a chunk is in the DOM from the first update at
    /// or after its arrival.
    Updates(&'a [f64]),
}

/// The paints of `frames`: which frame showed how many characters of `chunks` (see the
/// module docs for the rules).
pub fn attribute_paints(
    chunks: &[ChunkMark],
    ready: Ready<'_>,
    frames: &[Frame],
) -> Vec<PaintMark> {
    let ready = ready_times(chunks, ready);
    let mut out = Vec::new();
    let mut painted = 0;
    for f in frames {
        let Some(waiting) = chunks.get(painted) else {
            break;
        };
        let mut chars = 0;
        while painted < chunks.len() && ready[painted] <= f.raf_ms {
            chars += chunks[painted].chars;
            painted += 1;
        }
        if chars > 0 || waiting.t_ms <= f.raf_ms {
            out.push(PaintMark {
                t_ms: f.shown_ms,
                chars,
            });
        }
    }
    out
}

/// Each chunk's ready time, clamped to its arrival and made monotone.
fn ready_times(chunks: &[ChunkMark], ready: Ready<'_>) -> Vec<f64> {
    let mut times: Vec<f64> = match ready {
        Ready::PerChunk(r) => (0..chunks.len())
            .map(|i| r.get(i).copied().unwrap_or(f64::INFINITY))
            .collect(),
        Ready::Updates(updates) => {
            let mut u = 0;
            chunks
                .iter()
                .map(|c| {
                    while u < updates.len() && updates[u] < c.t_ms {
                        u += 1;
                    }
                    updates.get(u).copied().unwrap_or(f64::INFINITY)
                })
                .collect()
        }
    };
    for (t, c) in times.iter_mut().zip(chunks) {
        // NaN (a page bug) means never, as a missing time does.
        *t = if t.is_nan() {
            f64::INFINITY
        } else {
            t.max(c.t_ms)
        };
    }
    for i in (0..times.len().saturating_sub(1)).rev() {
        times[i] = times[i].min(times[i + 1]);
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(t_ms: f64, chars: usize) -> ChunkMark {
        ChunkMark {
            t_ms,
            chars,
            deltas: 1,
        }
    }

    fn frames(raf: &[f64]) -> Vec<Frame> {
        raf.iter()
            .map(|&t| Frame {
                raf_ms: t,
                shown_ms: t,
            })
            .collect()
    }

    fn paints(p: &[PaintMark]) -> Vec<(f64, usize)> {
        p.iter().map(|p| (p.t_ms, p.chars)).collect()
    }

    #[test]
    fn a_frame_paints_what_was_ready_at_its_raf_and_an_empty_frame_only_while_text_waits() {
        let chunks = [chunk(10.0, 2), chunk(12.0, 3), chunk(40.0, 1)];
        // Chunk 1 is in the DOM at 20, after the frame at 16: that frame paints only chunk 0.
        let ready = [11.0, 20.0, 41.0];
        let p = attribute_paints(
            &chunks,
            Ready::PerChunk(&ready),
            &frames(&[5.0, 16.0, 33.0, 38.0, 50.0, 66.0]),
        );
        // 5: no text yet (not recorded); 38: everything arrived so far was painted and
        // chunk 2 has not arrived (not recorded); 66: all painted (not recorded).
        assert_eq!(paints(&p), vec![(16.0, 2), (33.0, 3), (50.0, 1)]);
    }

    #[test]
    fn text_arrived_but_not_ready_makes_empty_frames() {
        let chunks = [chunk(10.0, 4)];
        let p = attribute_paints(
            &chunks,
            Ready::PerChunk(&[30.0]),
            &frames(&[16.0, 25.0, 33.0]),
        );
        assert_eq!(paints(&p), vec![(16.0, 0), (25.0, 0), (33.0, 4)]);
    }

    #[test]
    fn ready_before_arrival_is_clamped_to_the_arrival() {
        // A stamp from before the text arrived cannot paint it in an earlier frame.
        let chunks = [chunk(20.0, 3)];
        let p = attribute_paints(&chunks, Ready::PerChunk(&[5.0]), &frames(&[16.0, 33.0]));
        assert_eq!(paints(&p), vec![(33.0, 3)]);
    }

    #[test]
    fn a_later_chunk_ready_makes_the_earlier_ones_ready() {
        // The app said chunk 1 was rendered at 14 but never said so for chunk 0: in-order
        // rendering means chunk 0 was on screen by then too.
        let chunks = [chunk(10.0, 2), chunk(12.0, 3)];
        let ready = [f64::INFINITY, 14.0];
        let p = attribute_paints(&chunks, Ready::PerChunk(&ready), &frames(&[16.0]));
        assert_eq!(paints(&p), vec![(16.0, 5)]);
    }

    #[test]
    fn text_never_ready_is_never_painted() {
        let chunks = [chunk(10.0, 2), chunk(12.0, 3)];
        // Chunk 1 has no ready time at all (the list is short).
        let p = attribute_paints(&chunks, Ready::PerChunk(&[11.0]), &frames(&[16.0, 33.0]));
        assert_eq!(paints(&p), vec![(16.0, 2), (33.0, 0)]);
        let p = attribute_paints(
            &chunks,
            Ready::PerChunk(&[11.0, f64::NAN]),
            &frames(&[16.0]),
        );
        assert_eq!(paints(&p), vec![(16.0, 2)]);
    }

    #[test]
    fn an_update_makes_the_text_that_arrived_before_it_ready() {
        let chunks = [chunk(10.0, 2), chunk(12.0, 3), chunk(30.0, 1)];
        // The update at 12 (same stamp as chunk 1's arrival) covers chunks 0 and 1; chunk 2
        // waits for the update at 45.
        let p = attribute_paints(
            &chunks,
            Ready::Updates(&[12.0, 45.0]),
            &frames(&[16.0, 33.0, 50.0]),
        );
        assert_eq!(paints(&p), vec![(16.0, 5), (33.0, 0), (50.0, 1)]);
        // No update at all: nothing is painted, frames while text waits are empty.
        let p = attribute_paints(&chunks, Ready::Updates(&[]), &frames(&[16.0]));
        assert_eq!(paints(&p), vec![(16.0, 0)]);
    }

    #[test]
    fn a_paint_is_stamped_when_its_frame_was_shown() {
        // A long frame: its rAF ran at 16 but it reached the screen at 120. Attribution goes
        // by the rAF (text ready at 20 is not in it), the paint by when it was shown.
        let chunks = [chunk(10.0, 2), chunk(18.0, 1)];
        let f = [
            Frame {
                raf_ms: 16.0,
                shown_ms: 120.0,
            },
            Frame {
                raf_ms: 125.0,
                shown_ms: 125.0,
            },
        ];
        let p = attribute_paints(&chunks, Ready::PerChunk(&[12.0, 20.0]), &f);
        assert_eq!(paints(&p), vec![(120.0, 2), (125.0, 1)]);
    }
}
