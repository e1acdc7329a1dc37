//! The metadata key/value store of a GGUF file, in file order, with typed getters that name
//! the key in their errors.

use super::value::{MetadataArray, MetadataValue};
use crate::error::{ModelError, Result};
use std::collections::HashMap;

/// All key/value pairs of a file.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    entries: Vec<(String, MetadataValue)>,
    index: HashMap<String, usize>,
}

impl Metadata {
    /// Adds a pair; a key seen before is an error (llama.cpp rejects duplicates too).
    pub(crate) fn insert(&mut self, key: String, value: MetadataValue) -> Result<()> {
        if self.index.contains_key(&key) {
            return Err(ModelError::DuplicateKey { key });
        }
        self.index.insert(key.clone(), self.entries.len());
        self.entries.push((key, value));
        Ok(())
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Pairs in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &MetadataValue)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    fn require(&self, key: &str) -> Result<&MetadataValue> {
        self.get(key).ok_or_else(|| ModelError::MissingMetadata {
            key: key.to_owned(),
        })
    }

    fn mismatch(key: &str, expected: &'static str, found: &MetadataValue) -> ModelError {
        ModelError::MetadataType {
            key: key.to_owned(),
            expected,
            found: found.type_name(),
        }
    }

    /// An unsigned integer that fits u64, stored as any integer type (writers disagree on
    /// u32/i32/u64 for counts).
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| Self::mismatch(key, "a non-negative integer", v))
    }

    /// An unsigned integer that fits u32.
    pub fn get_u32(&self, key: &str) -> Result<u32> {
        let v = self.get_u64(key)?;
        u32::try_from(v).map_err(|_| ModelError::BadMetadata {
            key: key.to_owned(),
            reason: format!("{v} does not fit in 32 bits"),
        })
    }

    /// Like [`Self::get_u32`], but `None` when the key is absent.
    pub fn opt_u32(&self, key: &str) -> Result<Option<u32>> {
        if self.contains(key) {
            self.get_u32(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A float stored as f32 or f64.
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        let v = self.require(key)?;
        v.as_f64()
            .map(|f| f as f32)
            .ok_or_else(|| Self::mismatch(key, "a float", v))
    }

    /// Like [`Self::get_f32`], but `None` when the key is absent.
    pub fn opt_f32(&self, key: &str) -> Result<Option<f32>> {
        if self.contains(key) {
            self.get_f32(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A boolean.
    pub fn get_bool(&self, key: &str) -> Result<bool> {
        match self.require(key)? {
            MetadataValue::Bool(b) => Ok(*b),
            v => Err(Self::mismatch(key, "a bool", v)),
        }
    }

    /// Like [`Self::get_bool`], but `None` when the key is absent.
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        if self.contains(key) {
            self.get_bool(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A string.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        match self.require(key)? {
            MetadataValue::String(s) => Ok(s),
            v => Err(Self::mismatch(key, "a string", v)),
        }
    }

    /// Like [`Self::get_str`], but `None` when the key is absent.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>> {
        if self.contains(key) {
            self.get_str(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// An array of any element type.
    pub fn get_array(&self, key: &str) -> Result<&MetadataArray> {
        match self.require(key)? {
            MetadataValue::Array(a) => Ok(a),
            v => Err(Self::mismatch(key, "an array", v)),
        }
    }

    /// An array of strings (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`).
    pub fn get_str_array(&self, key: &str) -> Result<&[String]> {
        match self.get_array(key)? {
            MetadataArray::String(v) => Ok(v),
            a => Err(ModelError::MetadataType {
                key: key.to_owned(),
                expected: "array of string",
                found: a.type_name(),
            }),
        }
    }

    /// An array of f32 (`tokenizer.ggml.scores`).
    pub fn get_f32_array(&self, key: &str) -> Result<&[f32]> {
        match self.get_array(key)? {
            MetadataArray::F32(v) => Ok(v),
            a => Err(ModelError::MetadataType {
                key: key.to_owned(),
                expected: "array of f32",
                found: a.type_name(),
            }),
        }
    }

    /// An array of integers of any width, widened to i64 (`tokenizer.ggml.token_type` is
    /// i32; per-layer head counts are u32 or i32 depending on the writer).
    pub fn get_int_array(&self, key: &str) -> Result<Vec<i64>> {
        let a = self.get_array(key)?;
        Ok(match a {
            MetadataArray::U8(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::I8(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::U16(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::I16(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::U32(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::I32(v) => v.iter().map(|&x| x.into()).collect(),
            MetadataArray::I64(v) => v.clone(),
            MetadataArray::U64(v) => v
                .iter()
                .map(|&x| {
                    i64::try_from(x).map_err(|_| ModelError::BadMetadata {
                        key: key.to_owned(),
                        reason: format!("element {x} does not fit in i64"),
                    })
                })
                .collect::<Result<_>>()?,
            other => {
                return Err(ModelError::MetadataType {
                    key: key.to_owned(),
                    expected: "array of integers",
                    found: other.type_name(),
                });
            }
        })
    }
}
