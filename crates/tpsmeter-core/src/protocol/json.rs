//! JSON helpers shared by the adapters: parsing with capped error excerpts, a small typed
//! walk over the parsed [`Value`], and reading the many shapes an in-stream error takes.
//!
//! Every payload is parsed into a `Value` (one deserializer, shared by all adapters) and
//! its fields are then taken out with the typed accessors below, rather than deserialised
//! into per-adapter `#[derive(Deserialize)]` structs: each derived struct instantiates its
//! own visitors, which made the browser's lazily loaded parser several times larger. The
//! accessors keep the derived structs' rules: a missing field or `null` is absent, a field
//! of the wrong JSON type is an error (`MalformedJson` naming the field), unknown fields are
//! ignored. Their messages never quote the offending value (that would link float
//! formatting into the wasm build).

pub(crate) use crate::protocol::value::{Fields, Number, Value};

use crate::cap::cap_chars;
use crate::decode::limits::MAX_ERROR_EXCERPT_CHARS;
use crate::error::{CoreError, Result};
use crate::event::StreamEvent;

/// Cap, in characters, on serde_json's message inside `MalformedJson`: type errors quote
/// the offending value, which may be long.
const MAX_ERROR_MESSAGE_CHARS: usize = 160;

/// A field of a payload whose JSON type is not the one the protocol defines.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    /// The field's name (`None`: the payload itself).
    field: Option<&'static str>,
    expected: &'static str,
    found: &'static str,
}

impl Shape {
    fn new(field: Option<&'static str>, expected: &'static str, found: &Value) -> Shape {
        let found = match found {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(Number::Float(_)) => "a floating-point number",
            Value::Number(Number::NegInt(_)) => "a negative integer",
            Value::Number(Number::PosInt(_)) => "an integer out of range",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        Shape {
            field,
            expected,
            found,
        }
    }

    /// A required field that is `null`.
    pub(crate) fn null(field: &'static str, expected: &'static str) -> Shape {
        Shape::new(Some(field), expected, &Value::Null)
    }

    /// `MalformedJson` for this shape error in payload `data`.
    pub(crate) fn into_error(self, context: &'static str, data: &str) -> CoreError {
        let Shape {
            field,
            expected,
            found,
        } = self;
        let message = match field {
            Some(field) => format!("invalid type: {found}, expected {expected} at `{field}`"),
            None => format!("invalid type: {found}, expected {expected}"),
        };
        malformed(context, message, data)
    }
}

/// The object keys an adapter reads, at any depth. Parsing keeps only these: every other
/// value is skipped without being built (most of a chunk is `id`, `model`, `created`, ...
/// that no adapter reads), as the derived structs used to skip unknown fields.
#[derive(Debug)]
pub(crate) struct Keys {
    /// Keys whose values are kept, themselves filtered by the same keys.
    pub read: &'static [&'static str],
    /// Keys whose values are kept whole: server or app JSON read as a [`Value`] (error
    /// objects, tool arguments re-serialised, metadata).
    pub whole: &'static [&'static str],
}

/// Parses `data` as JSON keeping only `keys`, mapping failures to `MalformedJson` with a
/// capped excerpt.
fn parse_keys(context: &'static str, keys: &Keys, data: &str) -> Result<Value> {
    deserialize(Some(keys), data).map_err(|e| malformed(context, json_error_message(&e), data))
}

/// serde_json's own message (with the `json-error-detail` feature).
#[cfg(feature = "json-error-detail")]
fn json_error_message(e: &serde_json::Error) -> String {
    e.to_string()
}

/// The kind of fault and where, without serde_json's message table (see the
/// `json-error-detail` feature).
#[cfg(not(feature = "json-error-detail"))]
fn json_error_message(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let kind = match e.classify() {
        Category::Eof => "unexpected end of JSON",
        Category::Syntax => "not valid JSON",
        Category::Data | Category::Io => "unreadable JSON value",
    };
    format!("{kind} at line {} column {}", e.line(), e.column())
}

/// Parses `data` as a whole JSON value (what `serde_json::from_str::<Value>` does, through
/// the one visitor the adapters share).
pub(crate) fn parse_value(data: &str) -> serde_json::Result<Value> {
    deserialize(None, data)
}

fn deserialize(keys: Option<&Keys>, data: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(data);
    let value = serde::de::DeserializeSeed::deserialize(Filtered(keys), &mut de)?;
    de.end()?;
    Ok(value)
}

/// Parses `data` as a JSON object and decodes it with `decode`, mapping failures (not
/// JSON, not an object, a field of the wrong type) to `MalformedJson`.
pub(crate) fn parse_with<T>(
    context: &'static str,
    keys: &Keys,
    data: &str,
    decode: impl FnOnce(Fields) -> std::result::Result<T, Shape>,
) -> Result<T> {
    root(parse_keys(context, keys, data)?)
        .and_then(decode)
        .map_err(|shape| shape.into_error(context, data))
}

/// Parses a payload whose JSON `type` (or SSE event name) selects its shape. If decoding
/// fails but the payload is valid JSON of a type `is_known` rejects, the payload is a
/// newer event this adapter does not know and `Ok(None)` lets the caller ignore it.
/// `keys` must include `type`.
pub(crate) fn parse_typed<T>(
    context: &'static str,
    keys: &Keys,
    event: &str,
    data: &str,
    is_known: impl Fn(&str) -> bool,
    decode: impl FnOnce(Fields) -> std::result::Result<T, Shape>,
) -> Result<Option<T>> {
    let fields = match parse_keys(context, keys, data)? {
        Value::Object(fields) => fields,
        other => {
            let shape = Shape::new(None, "an object", &other);
            return if is_known(event) {
                Err(shape.into_error(context, data))
            } else {
                Ok(None)
            };
        }
    };
    match decode(fields) {
        Ok(v) => Ok(Some(v)),
        Err(shape) => {
            // Failures are rare: parse again rather than read the kind up front, which
            // every message would pay for.
            let value = parse_keys(context, keys, data).unwrap_or(Value::Null);
            let kind = value.get("type").and_then(Value::as_str).unwrap_or(event);
            if is_known(kind) {
                Err(shape.into_error(context, data))
            } else {
                Ok(None)
            }
        }
    }
}

/// Builds a [`Value`] keeping only the object keys in its [`Keys`] (all keys for `None`):
/// one visitor for every adapter, in place of serde_json's own `Value` visitor.
#[derive(Clone, Copy)]
struct Filtered<'k>(Option<&'k Keys>);

/// What to do with one object key.
enum Key {
    Read(String),
    Whole(String),
    Skip,
}

impl<'de> serde::de::DeserializeSeed<'de> for Filtered<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Filtered<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(Number::from_i64(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(Number::PosInt(v)))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        // serde_json's rule: a non-finite float is `null`.
        Ok(if v.is_finite() {
            Value::Number(Number::Float(v))
        } else {
            Value::Null
        })
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut fields = Fields::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            match key {
                Key::Read(key) => {
                    let value = map.next_value_seed(self)?;
                    fields.insert(key, value);
                }
                Key::Whole(key) => {
                    let value = map.next_value_seed(Filtered(None))?;
                    fields.insert(key, value);
                }
                Key::Skip => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(fields))
    }
}

/// Sorts object keys into [`Key`]s without allocating the skipped ones.
#[derive(Clone, Copy)]
struct KeySeed<'k>(Option<&'k Keys>);

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Key, E> {
        let Some(keys) = self.0 else {
            return Ok(Key::Read(v.to_owned()));
        };
        Ok(if keys.read.contains(&v) {
            Key::Read(v.to_owned())
        } else if keys.whole.contains(&v) {
            Key::Whole(v.to_owned())
        } else {
            Key::Skip
        })
    }
}

/// The payload itself, which must be an object.
pub(crate) fn root(value: Value) -> std::result::Result<Fields, Shape> {
    match value {
        Value::Object(fields) => Ok(fields),
        other => Err(Shape::new(None, "an object", &other)),
    }
}

/// Takes out field `key`: `None` when missing or `null`.
fn take(fields: &mut Fields, key: &str) -> Option<Value> {
    fields.remove(key).filter(|v| !v.is_null())
}

/// An optional object field.
pub(crate) fn object(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<Fields>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(other) => Err(Shape::new(Some(key), "an object", &other)),
    }
}

/// An optional string field.
pub(crate) fn string(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<String>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Shape::new(Some(key), "a string", &other)),
    }
}

/// An optional boolean field.
pub(crate) fn boolean(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<bool>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(Shape::new(Some(key), "a boolean", &other)),
    }
}

/// An optional count: a non-negative integer.
pub(crate) fn count(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<u64>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| Shape::new(Some(key), "a non-negative integer", &v)),
    }
}

/// An optional index: a non-negative integer that fits in 32 bits.
pub(crate) fn index(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<u32>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| Shape::new(Some(key), "a 32-bit non-negative integer", &v)),
    }
}

/// An optional number of any kind.
pub(crate) fn number(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<f64>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| Shape::new(Some(key), "a number", &v)),
    }
}

/// An optional field of any JSON type (the app's or the server's own JSON).
pub(crate) fn any(fields: &mut Fields, key: &'static str) -> Option<Value> {
    take(fields, key)
}

/// An optional array field of any elements.
pub(crate) fn array(
    fields: &mut Fields,
    key: &'static str,
) -> std::result::Result<Option<Vec<Value>>, Shape> {
    match take(fields, key) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(Shape::new(Some(key), "an array", &other)),
    }
}

/// An optional array of objects, each decoded with `decode`.
pub(crate) fn objects<T>(
    fields: &mut Fields,
    key: &'static str,
    mut decode: impl FnMut(Fields) -> std::result::Result<T, Shape>,
) -> std::result::Result<Option<Vec<T>>, Shape> {
    let Some(items) = array(fields, key)? else {
        return Ok(None);
    };
    // A plain loop: `collect` into a `Result` instantiates a larger adapter per `T`.
    let mut decoded = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(o) => decoded.push(decode(o)?),
            other => return Err(Shape::new(Some(key), "an array of objects", &other)),
        }
    }
    Ok(Some(decoded))
}

fn malformed(context: &'static str, message: String, data: &str) -> CoreError {
    CoreError::MalformedJson {
        context,
        message: cap_chars(&message, MAX_ERROR_MESSAGE_CHARS),
        excerpt: cap_chars(data, MAX_ERROR_EXCERPT_CHARS),
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
        let none = Keys {
            read: &[],
            whole: &[],
        };
        let err = parse_keys("test", &none, &format!("{long}{{")).unwrap_err();
        let CoreError::MalformedJson { excerpt, .. } = err else {
            panic!("wrong variant");
        };
        assert_eq!(excerpt.chars().count(), MAX_ERROR_EXCERPT_CHARS + 1);
        assert!(excerpt.ends_with('…'));
    }

    #[test]
    fn a_syntax_error_names_its_position_with_or_without_detail() {
        let none = Keys {
            read: &[],
            whole: &[],
        };
        for (data, at) in [
            ("{\"a\":}", "line 1 column 6"),
            ("{\"a\":1", "line 1 column 6"),
        ] {
            let CoreError::MalformedJson { message, .. } =
                parse_keys("t", &none, data).unwrap_err()
            else {
                panic!("wrong variant");
            };
            assert!(message.ends_with(at), "{message}");
        }
    }

    #[test]
    fn error_event_reads_object_and_string_shapes() {
        let v = parse_value(r#"{"message":"slow down","type":"rate_limit","code":429}"#).unwrap();
        assert_eq!(
            error_event(&v),
            StreamEvent::Error {
                code: Some("rate_limit".into()),
                message: "slow down".into()
            }
        );
        let v = parse_value(r#"{"code":500,"message":"boom"}"#).unwrap();
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
        const KEYS: Keys = Keys {
            read: &["type", "delta"],
            whole: &[],
        };
        let decode = |mut f: Fields| string(&mut f, "delta");
        let data = r#"{"type":"new.kind","delta":{"x":1}}"#;
        let r = parse_typed("t", &KEYS, "", data, |k| k == "old.kind", decode).unwrap();
        assert!(r.is_none());
        let data = r#"{"type":"old.kind","delta":{"x":1}}"#;
        assert!(parse_typed("t", &KEYS, "", data, |k| k == "old.kind", decode).is_err());
    }

    #[test]
    fn wrong_field_type_names_the_field_without_quoting_the_value() {
        // The message must not format the offending number: that links float formatting
        // into the wasm build.
        let keys = Keys {
            read: &["n"],
            whole: &[],
        };
        let err = parse_with("t", &keys, r#"{"n":1.5}"#, |mut f| count(&mut f, "n")).unwrap_err();
        let CoreError::MalformedJson { message, .. } = err else {
            panic!("wrong variant");
        };
        assert_eq!(
            message,
            "invalid type: a floating-point number, expected a non-negative integer at `n`"
        );
    }

    #[test]
    fn accessors_follow_the_derived_structs_rules() {
        let mut f = root(
            parse_value(r#"{"a":null,"n":4294967296,"m":-1,"i":7,"x":3.5,"o":[{},{}]}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(string(&mut f, "a"), Ok(None));
        assert_eq!(string(&mut f, "missing"), Ok(None));
        assert!(index(&mut f, "n").is_err());
        assert!(count(&mut f, "m").is_err());
        assert_eq!(index(&mut f, "i"), Ok(Some(7)));
        assert_eq!(number(&mut f, "x"), Ok(Some(3.5)));
        assert_eq!(objects(&mut f, "o", |_| Ok(())), Ok(Some(vec![(), ()])));
        assert!(root(Value::Null).is_err());
    }

    #[test]
    fn parsing_keeps_only_the_keys_read_and_whole_values_whole() {
        let keys = Keys {
            read: &["a", "b"],
            whole: &["w"],
        };
        let data = r#"{"a":{"b":[1,{"x":2,"b":-3}],"y":1e400},"w":{"x":[1.5,null]},"z":"skip"}"#;
        let value = parse_keys("t", &keys, data).unwrap();
        let expected = parse_value(r#"{"a":{"b":[1,{"b":-3}]},"w":{"x":[1.5,null]}}"#).unwrap();
        assert_eq!(value, expected);
        // Trailing garbage is still an error.
        assert!(parse_keys("t", &keys, r#"{"a":1} x"#).is_err());
    }
}
