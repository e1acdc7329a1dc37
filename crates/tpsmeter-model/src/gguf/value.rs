//! GGUF metadata values: the 13 value types of the specification, arrays (nested ones
//! included) stored as typed vectors so a 262k-entry vocabulary costs one allocation, and
//! their parsing with every length capped.

use super::cursor::Cursor;
use super::limits::{MAX_ARRAY_LEN, MAX_NESTING_DEPTH};
use crate::error::{ModelError, Result};

/// GGUF value type ids (`gguf_type` in ggml's gguf.h).
pub mod type_id {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(MetadataArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// An array value: all elements share one type; arrays of arrays may differ per element.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Array(Vec<MetadataArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl MetadataValue {
    /// The type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::U8(_) => "u8",
            Self::I8(_) => "i8",
            Self::U16(_) => "u16",
            Self::I16(_) => "i16",
            Self::U32(_) => "u32",
            Self::I32(_) => "i32",
            Self::F32(_) => "f32",
            Self::Bool(_) => "bool",
            Self::String(_) => "string",
            Self::Array(a) => a.type_name(),
            Self::U64(_) => "u64",
            Self::I64(_) => "i64",
            Self::F64(_) => "f64",
        }
    }

    /// Any integer value that is non-negative, widened to u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any float value as f64 (integers are not floats here: a type mix-up is worth an error).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            _ => None,
        }
    }
}

impl MetadataArray {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::U8(v) => v.len(),
            Self::I8(v) => v.len(),
            Self::U16(v) => v.len(),
            Self::I16(v) => v.len(),
            Self::U32(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::F32(v) => v.len(),
            Self::Bool(v) => v.len(),
            Self::String(v) => v.len(),
            Self::Array(v) => v.len(),
            Self::U64(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::F64(v) => v.len(),
        }
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::U8(_) => "array of u8",
            Self::I8(_) => "array of i8",
            Self::U16(_) => "array of u16",
            Self::I16(_) => "array of i16",
            Self::U32(_) => "array of u32",
            Self::I32(_) => "array of i32",
            Self::F32(_) => "array of f32",
            Self::Bool(_) => "array of bool",
            Self::String(_) => "array of string",
            Self::Array(_) => "array of arrays",
            Self::U64(_) => "array of u64",
            Self::I64(_) => "array of i64",
            Self::F64(_) => "array of f64",
        }
    }
}

/// The fewest bytes one element of type `id` occupies; used to refuse counts the remaining
/// input cannot possibly hold before allocating for them.
fn min_element_bytes(id: u32) -> u64 {
    match id {
        type_id::U8 | type_id::I8 | type_id::BOOL => 1,
        type_id::U16 | type_id::I16 => 2,
        type_id::U32 | type_id::I32 | type_id::F32 => 4,
        type_id::U64 | type_id::I64 | type_id::F64 | type_id::STRING => 8,
        // element type u32 + count u64
        _ => 12,
    }
}

/// Reads a value of type `id` for metadata key `key`.
pub(crate) fn read_value(c: &mut Cursor<'_>, id: u32, key: &str) -> Result<MetadataValue> {
    const W: &str = "metadata value";
    Ok(match id {
        type_id::U8 => MetadataValue::U8(c.u8(W)?),
        type_id::I8 => MetadataValue::I8(c.u8(W)? as i8),
        type_id::U16 => MetadataValue::U16(c.u16(W)?),
        type_id::I16 => MetadataValue::I16(c.u16(W)? as i16),
        type_id::U32 => MetadataValue::U32(c.u32(W)?),
        type_id::I32 => MetadataValue::I32(c.u32(W)? as i32),
        type_id::F32 => MetadataValue::F32(f32::from_bits(c.u32(W)?)),
        type_id::BOOL => MetadataValue::Bool(c.u8(W)? != 0),
        type_id::STRING => MetadataValue::String(c.string("metadata string value")?),
        type_id::ARRAY => MetadataValue::Array(read_array(c, key, 1)?),
        type_id::U64 => MetadataValue::U64(c.u64(W)?),
        type_id::I64 => MetadataValue::I64(c.u64(W)? as i64),
        type_id::F64 => MetadataValue::F64(f64::from_bits(c.u64(W)?)),
        _ => {
            return Err(ModelError::UnknownValueType {
                key: key.to_owned(),
                id,
            });
        }
    })
}

/// Reads `count` elements with `read` (the caller has checked the input can hold them).
fn fixed<T>(
    c: &mut Cursor<'_>,
    count: u64,
    mut read: impl FnMut(&mut Cursor<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    (0..count).map(|_| read(c)).collect()
}

/// Reads an array header (element type, count) and its elements, `depth` levels deep.
fn read_array(c: &mut Cursor<'_>, key: &str, depth: usize) -> Result<MetadataArray> {
    const W: &str = "metadata array element";
    if depth > MAX_NESTING_DEPTH {
        return Err(ModelError::FileLimit {
            what: format!("nesting depth of arrays in metadata key {key:?}"),
            value: depth as u64,
            limit: MAX_NESTING_DEPTH as u64,
        });
    }
    let elem = c.u32("metadata array element type")?;
    let count = c.u64("metadata array length")?;
    if count > MAX_ARRAY_LEN {
        return Err(ModelError::FileLimit {
            what: format!("length of array in metadata key {key:?}"),
            value: count,
            limit: MAX_ARRAY_LEN,
        });
    }
    // count ≤ 2^24 and sizes ≤ 12, so the product cannot overflow.
    c.ensure(count * min_element_bytes(elem), "metadata array elements")?;
    Ok(match elem {
        type_id::U8 => MetadataArray::U8(fixed(c, count, |c| c.u8(W))?),
        type_id::I8 => MetadataArray::I8(fixed(c, count, |c| c.u8(W).map(|v| v as i8))?),
        type_id::U16 => MetadataArray::U16(fixed(c, count, |c| c.u16(W))?),
        type_id::I16 => MetadataArray::I16(fixed(c, count, |c| c.u16(W).map(|v| v as i16))?),
        type_id::U32 => MetadataArray::U32(fixed(c, count, |c| c.u32(W))?),
        type_id::I32 => MetadataArray::I32(fixed(c, count, |c| c.u32(W).map(|v| v as i32))?),
        type_id::F32 => MetadataArray::F32(fixed(c, count, |c| c.u32(W).map(f32::from_bits))?),
        type_id::BOOL => MetadataArray::Bool(fixed(c, count, |c| c.u8(W).map(|v| v != 0))?),
        type_id::STRING => {
            MetadataArray::String(fixed(c, count, |c| c.string("metadata array string"))?)
        }
        type_id::ARRAY => MetadataArray::Array(fixed(c, count, |c| read_array(c, key, depth + 1))?),
        type_id::U64 => MetadataArray::U64(fixed(c, count, |c| c.u64(W))?),
        type_id::I64 => MetadataArray::I64(fixed(c, count, |c| c.u64(W).map(|v| v as i64))?),
        type_id::F64 => MetadataArray::F64(fixed(c, count, |c| c.u64(W).map(f64::from_bits))?),
        _ => {
            return Err(ModelError::UnknownValueType {
                key: key.to_owned(),
                id: elem,
            });
        }
    })
}
