//! JSON helpers shared by the adapters: parsing with capped error excerpts, and reading the
//! many shapes an in-stream error takes.

use serde::Deserialize;
use serde_json::Value;

use crate::decode::limits::MAX_ERROR_EXCERPT_CHARS;
use crate::error::{CoreError, Result};
use crate::event::StreamEvent;

/// Cap, in characters, on serde_json's message inside `MalformedJson`: type errors quote
/// the offending value, which may be long.
const MAX_ERROR_MESSAGE_CHARS: usize = 160;

/// Parses `data` as `T`, mapping failures to `MalformedJson` with a capped excerpt.
pub(crate) fn parse<'a, T: Deserialize<'a>>(context: &'static str, data: &'a str) -> Result<T> {
    serde_json::from_str(data).map_err(|e| malformed(context, &e, data))
}

/// Parses a payload whose JSON `type` (or SSE event name) selects its shape. If the typed
/// parse fails but the payload is valid JSON of a type `is_known` rejects, the payload is a
/// newer event this adapter does not know and `Ok(None)` lets the caller ignore it.
pub(crate) fn parse_typed<'a, T: Deserialize<'a>>(
    context: &'static str,
    event: &str,
    data: &'a str,
    is_known: impl Fn(&str) -> bool,
) -> Result<Option<T>> {
    match serde_json::from_str(data) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            let Ok(value) = serde_json::from_str::<Value>(data) else {
                return Err(malformed(context, &e, data));
            };
            let kind = value.get("type").and_then(Value::as_str).unwrap_or(event);
            if is_known(kind) {
                Err(malformed(context, &e, data))
            } else {
                Ok(None)
            }
        }
    }
}

fn malformed(context: &'static str, e: &serde_json::Error, data: &str) -> CoreError {
    CoreError::MalformedJson {
        context,
        message: truncate_chars(&e.to_string(), MAX_ERROR_MESSAGE_CHARS),
        excerpt: truncate_chars(data, MAX_ERROR_EXCERPT_CHARS),
    }
}

/// The first `max` characters of `s`, with `…` appended when something was cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// An in-stream error in any of the shapes servers use: a string, or an object with
/// `message` and one of `type` / `code` / `status` (strings or numbers).
pub(crate) fn error_event(error: &Value) -> StreamEvent {
    match error {
        Value::String(message) => StreamEvent::Error {
            code: None,
            message: message.clone(),
        },
        Value::Object(map) => {
            // A name (`overloaded_error`, `UNAVAILABLE`) says more than a number (503).
            let fields = || {
                ["type", "code", "status"]
                    .into_iter()
                    .filter_map(|k| map.get(k))
            };
            let code = fields()
                .find_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                .or_else(|| fields().find_map(|v| v.as_number().map(|n| n.to_string())));
            let message = map
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            StreamEvent::Error { code, message }
        }
        other => StreamEvent::Error {
            code: None,
            message: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn excerpt_is_capped_on_a_char_boundary() {
        let long = "é".repeat(500);
        let err = parse::<Value>("test", &format!("{long}{{")).unwrap_err();
        let CoreError::MalformedJson { excerpt, .. } = err else {
            panic!("wrong variant");
        };
        assert_eq!(excerpt.chars().count(), MAX_ERROR_EXCERPT_CHARS + 1);
        assert!(excerpt.ends_with('…'));
    }

    #[test]
    fn error_event_reads_object_and_string_shapes() {
        let v: Value =
            serde_json::from_str(r#"{"message":"slow down","type":"rate_limit","code":429}"#)
                .unwrap();
        assert_eq!(
            error_event(&v),
            StreamEvent::Error {
                code: Some("rate_limit".into()),
                message: "slow down".into()
            }
        );
        let v: Value = serde_json::from_str(r#"{"code":500,"message":"boom"}"#).unwrap();
        assert_eq!(
            error_event(&v),
            StreamEvent::Error {
                code: Some("500".into()),
                message: "boom".into()
            }
        );
        assert_eq!(
            error_event(&Value::String("model not found".into())),
            StreamEvent::Error {
                code: None,
                message: "model not found".into()
            }
        );
    }

    #[test]
    fn unknown_event_with_unexpected_shape_is_ignored_but_known_one_is_an_error() {
        #[derive(Debug, Deserialize)]
        struct T {
            #[allow(dead_code)]
            delta: Option<String>,
        }
        let data = r#"{"type":"new.kind","delta":{"x":1}}"#;
        let r = parse_typed::<T>("t", "", data, |k| k == "old.kind").unwrap();
        assert!(r.is_none());
        let data = r#"{"type":"old.kind","delta":{"x":1}}"#;
        assert!(parse_typed::<T>("t", "", data, |k| k == "old.kind").is_err());
    }
}
