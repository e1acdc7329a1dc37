//! `Value`: a parsed JSON value as the adapters read it.
//!
//! Not `serde_json::Value`: its objects are `BTreeMap`s, whose insert, remove and rebalancing
//! code is a large part of the real-user meter's lazy wasm parser, and which sort keys on
//! the way. Here an object is its pairs in document order, searched linearly: a streamed
//! chunk's objects have a handful of keys (parsing keeps only the ones an adapter reads),
//! and values kept whole (error objects, tool arguments) are written back in the order the
//! server sent them.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Fields),
}

/// A JSON number as serde_json reports it: a non-negative integer, a negative one, or a
/// float (finite: JSON has no other).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

/// The members of one JSON object, in document order. A key given twice reads as its last
/// value (serde_json's rule).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fields(Vec<(String, Value)>);

impl Value {
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(Number::PosInt(n)) => Some(*n),
            _ => None,
        }
    }

    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(n.as_f64()),
            _ => None,
        }
    }

    pub(crate) fn as_number(&self) -> Option<Number> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// Member `key` of an object; `None` for a missing key or a value that is no object.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.get(key),
            _ => None,
        }
    }
}

impl Number {
    /// serde_json's rule: a negative integer reads as `NegInt`, any other as `PosInt`.
    pub(crate) fn from_i64(n: i64) -> Number {
        u64::try_from(n).map_or(Number::NegInt(n), Number::PosInt)
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Number::PosInt(n) => n as f64,
            Number::NegInt(n) => n as f64,
            Number::Float(f) => f,
        }
    }
}

impl Fields {
    pub(crate) fn new() -> Fields {
        Fields(Vec::new())
    }

    /// Appends a member. Duplicates are kept (a later one shadows an earlier one), so a
    /// hostile object of many keys costs linear time, not quadratic.
    pub(crate) fn insert(&mut self, key: String, value: Value) {
        self.0.push((key, value));
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Takes out the member `key` reads as.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.0.iter().rposition(|(k, _)| k == key)?;
        Some(self.0.swap_remove(at).1)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => n.serialize(s),
            Value::String(text) => s.serialize_str(text),
            Value::Array(items) => s.collect_seq(items),
            Value::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.0.len()))?;
                for (k, v) in &fields.0 {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::PosInt(n) => s.serialize_u64(n),
            Number::NegInt(n) => s.serialize_i64(n),
            Number::Float(f) => s.serialize_f64(f),
        }
    }
}

/// Compact JSON, as serde_json writes it (floats by its shortest round-trip writer; core's
/// float `Display` would link a second float formatter into the wasm).
fn write_json(value: &impl Serialize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&serde_json::to_string(value).map_err(|_| fmt::Error)?)
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_json(self, f)
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_json(self, f)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::protocol::json::parse_value;

    #[test]
    fn written_back_in_document_order_as_serde_json_writes_it() {
        for text in [
            r#"{"z":1,"a":[true,null,-2,0.5,"x\"y"],"m":{"k":"v"}}"#,
            r#"[]"#,
            r#"{}"#,
            r#"18446744073709551615"#,
            r#"-9223372036854775808"#,
            r#"1e300"#,
        ] {
            let ours = parse_value(text).unwrap().to_string();
            let theirs = serde_json::from_str::<serde_json::Value>(text).unwrap();
            // serde_json sorts keys: compare as values, and our text byte for byte where
            // the order is already sorted.
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&ours).unwrap(),
                theirs
            );
        }
        assert_eq!(
            parse_value(r#"{"b":1,"a":2}"#).unwrap().to_string(),
            r#"{"b":1,"a":2}"#
        );
    }

    #[test]
    fn a_repeated_key_reads_as_its_last_value() {
        let v = parse_value(r#"{"k":1,"other":0,"k":2}"#).unwrap();
        assert_eq!(v.get("k").and_then(Value::as_u64), Some(2));
        let Value::Object(mut fields) = v else {
            panic!("not an object")
        };
        assert_eq!(fields.remove("k").and_then(|v| v.as_u64()), Some(2));
        assert_eq!(fields.get("other").and_then(Value::as_u64), Some(0));
    }

    #[test]
    fn numbers_keep_their_kind() {
        let kinds = |t: &str| parse_value(t).unwrap().as_number().unwrap();
        assert_eq!(kinds("7"), Number::PosInt(7));
        assert_eq!(kinds("-7"), Number::NegInt(-7));
        assert_eq!(kinds("7.5"), Number::Float(7.5));
        assert_eq!(Number::from_i64(3), Number::PosInt(3));
        assert_eq!(Number::Float(2.0).to_string(), "2.0");
    }
}
