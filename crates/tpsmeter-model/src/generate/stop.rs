//! Stop strings: generation ends where one appears, and none of it is ever shown.
//!
//! Text that could still be the start of a stop string is held back until the next piece
//! decides: it is released when it can no longer match, dropped when it does.

use crate::{ModelError, Result};

/// Most stop strings per request (OpenAI allows 4; llama.cpp has no limit).
const MAX_STOP_STRINGS: usize = 64;
/// Longest stop string in bytes.
const MAX_STOP_BYTES: usize = 1024;

/// Watches a text stream for stop strings.
#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    /// Empty strings are ignored (they would match before any text).
    pub fn new(stops: &[String]) -> Result<Self> {
        if stops.len() > MAX_STOP_STRINGS {
            return Err(ModelError::LimitExceeded {
                what: "number of stop strings".to_owned(),
                value: stops.len() as u64,
                limit: MAX_STOP_STRINGS as u64,
            });
        }
        if let Some(long) = stops.iter().find(|s| s.len() > MAX_STOP_BYTES) {
            return Err(ModelError::LimitExceeded {
                what: "stop string length in bytes".to_owned(),
                value: long.len() as u64,
                limit: MAX_STOP_BYTES as u64,
            });
        }
        Ok(Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        })
    }

    /// Adds `text`; returns what may be shown now and, when a stop string completed, its
    /// index in the list given to [`StopMatcher::new`]. After a match the rest is discarded.
    pub fn push(&mut self, text: &str) -> (String, Option<usize>) {
        if self.stops.is_empty() {
            return (text.to_owned(), None);
        }
        self.held.push_str(text);
        // The earliest match wins; at the same position, the first listed.
        let found = self
            .stops
            .iter()
            .enumerate()
            .filter_map(|(i, s)| self.held.find(s.as_str()).map(|at| (at, i)))
            .min();
        if let Some((at, index)) = found {
            let shown = self.held[..at].to_owned();
            self.held.clear();
            return (shown, Some(index));
        }
        // Hold back the longest tail that is still the start of some stop string.
        let cut = self
            .held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &self.held[i..];
                self.stops.iter().any(|s| s.starts_with(tail))
            })
            .unwrap_or(self.held.len());
        let shown = self.held[..cut].to_owned();
        self.held.drain(..cut);
        (shown, None)
    }

    /// Ends the stream: held-back text can no longer become a stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}
