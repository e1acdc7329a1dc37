//! A small GGUF writer: builds valid files in memory for tests (synthetic models, hostile
//! mutations) and tools. It writes what it is given; it does not quantize.

use super::header::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC};
use super::value::{MetadataArray, MetadataValue, type_id};
use crate::error::{ModelError, Result};
use crate::quant::GgmlType;

/// A tensor to write.
#[derive(Debug, Clone)]
struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    bytes: Vec<u8>,
}

/// Builder of a GGUF file (little-endian, version 3 unless told otherwise).
#[derive(Debug, Clone)]
pub struct GgufWriter {
    version: u32,
    alignment: u64,
    metadata: Vec<(String, MetadataValue)>,
    tensors: Vec<PendingTensor>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// Offsets of the sections of a written file (for truncation tests).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// (description, offset where it starts), in file order.
    pub marks: Vec<(String, usize)>,
    /// Where the data section starts.
    pub data_offset: usize,
}

impl GgufWriter {
    /// An empty version-3 file with the default alignment.
    pub fn new() -> Self {
        Self {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            tensors: Vec::new(),
        }
    }

    /// Writes version `v` in the header (2 and 3 share a layout).
    pub fn version(&mut self, v: u32) -> &mut Self {
        self.version = v;
        self
    }

    /// Sets the alignment and writes `general.alignment` (u32, as llama.cpp expects).
    pub fn alignment(&mut self, alignment: u32) -> &mut Self {
        self.alignment = alignment.into();
        self.metadata.retain(|(k, _)| k.as_str() != ALIGNMENT_KEY);
        self.metadata
            .push((ALIGNMENT_KEY.into(), MetadataValue::U32(alignment)));
        self
    }

    /// Adds a metadata pair.
    pub fn metadata(&mut self, key: &str, value: MetadataValue) -> &mut Self {
        self.metadata.push((key.into(), value));
        self
    }

    /// Adds a tensor; `bytes` must be exactly the stored size of `dims` weights of `ty`.
    pub fn tensor(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
        bytes: Vec<u8>,
    ) -> Result<&mut Self> {
        let n: u64 = dims.iter().product();
        let expected = usize::try_from(n)
            .ok()
            .map(|n| ty.row_bytes(n))
            .transpose()?
            .unwrap_or(usize::MAX);
        if bytes.len() != expected {
            return Err(ModelError::QuantLength {
                ty,
                elements: n,
                expected_bytes: expected as u64,
                got_bytes: bytes.len() as u64,
            });
        }
        self.tensors.push(PendingTensor {
            name: name.into(),
            dims: dims.to_vec(),
            ty,
            bytes,
        });
        Ok(self)
    }

    /// Adds an f32 tensor.
    pub fn tensor_f32(&mut self, name: &str, dims: &[u64], values: &[f32]) -> Result<&mut Self> {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.tensor(name, dims, GgmlType::F32, bytes)
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with_layout().0
    }

    /// The file's bytes and where each section starts.
    pub fn to_bytes_with_layout(&self) -> (Vec<u8>, Layout) {
        let mut out = Vec::new();
        let mut layout = Layout::default();
        let mut mark = |out: &Vec<u8>, what: String| layout.marks.push((what, out.len()));
        mark(&out, "magic".into());
        out.extend_from_slice(&GGUF_MAGIC);
        mark(&out, "version".into());
        out.extend_from_slice(&self.version.to_le_bytes());
        mark(&out, "tensor count".into());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        mark(&out, "metadata count".into());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            mark(&out, format!("metadata key {k}"));
            write_string(&mut out, k);
            mark(&out, format!("metadata value of {k}"));
            write_value(&mut out, v);
        }
        // An invalid alignment is written as asked (tests want such files) but laid out as 1.
        let align = self.alignment.max(1);
        // Tensor offsets: each aligned, in the order given.
        let mut offsets = Vec::with_capacity(self.tensors.len());
        let mut next = 0u64;
        for t in &self.tensors {
            let off = next.next_multiple_of(align);
            offsets.push(off);
            next = off + t.bytes.len() as u64;
        }
        for (t, &off) in self.tensors.iter().zip(&offsets) {
            mark(&out, format!("tensor info {}", t.name));
            write_string(&mut out, &t.name);
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.ty.id().to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
        }
        let data_offset = (out.len() as u64).next_multiple_of(align) as usize;
        if !self.tensors.is_empty() {
            out.resize(data_offset, 0);
        }
        layout.data_offset = data_offset;
        for (t, &off) in self.tensors.iter().zip(&offsets) {
            out.resize(data_offset + off as usize, 0);
            mark(&out, format!("tensor data {}", t.name));
            out.extend_from_slice(&t.bytes);
        }
        (out, layout)
    }
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn value_type(v: &MetadataValue) -> u32 {
    match v {
        MetadataValue::U8(_) => type_id::U8,
        MetadataValue::I8(_) => type_id::I8,
        MetadataValue::U16(_) => type_id::U16,
        MetadataValue::I16(_) => type_id::I16,
        MetadataValue::U32(_) => type_id::U32,
        MetadataValue::I32(_) => type_id::I32,
        MetadataValue::F32(_) => type_id::F32,
        MetadataValue::Bool(_) => type_id::BOOL,
        MetadataValue::String(_) => type_id::STRING,
        MetadataValue::Array(_) => type_id::ARRAY,
        MetadataValue::U64(_) => type_id::U64,
        MetadataValue::I64(_) => type_id::I64,
        MetadataValue::F64(_) => type_id::F64,
    }
}

fn write_value(out: &mut Vec<u8>, v: &MetadataValue) {
    out.extend_from_slice(&value_type(v).to_le_bytes());
    write_payload(out, v);
}

fn write_payload(out: &mut Vec<u8>, v: &MetadataValue) {
    match v {
        MetadataValue::U8(x) => out.push(*x),
        MetadataValue::I8(x) => out.push(*x as u8),
        MetadataValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::Bool(x) => out.push(u8::from(*x)),
        MetadataValue::String(s) => write_string(out, s),
        MetadataValue::Array(a) => write_array(out, a),
        MetadataValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetadataValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

fn write_array(out: &mut Vec<u8>, a: &MetadataArray) {
    fn header(out: &mut Vec<u8>, ty: u32, len: usize) {
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&(len as u64).to_le_bytes());
    }
    match a {
        MetadataArray::U8(v) => {
            header(out, type_id::U8, v.len());
            out.extend_from_slice(v);
        }
        MetadataArray::I8(v) => {
            header(out, type_id::I8, v.len());
            out.extend(v.iter().map(|&x| x as u8));
        }
        MetadataArray::U16(v) => {
            header(out, type_id::U16, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::I16(v) => {
            header(out, type_id::I16, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::U32(v) => {
            header(out, type_id::U32, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::I32(v) => {
            header(out, type_id::I32, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::F32(v) => {
            header(out, type_id::F32, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::Bool(v) => {
            header(out, type_id::BOOL, v.len());
            out.extend(v.iter().map(|&x| u8::from(x)));
        }
        MetadataArray::String(v) => {
            header(out, type_id::STRING, v.len());
            v.iter().for_each(|s| write_string(out, s));
        }
        MetadataArray::Array(v) => {
            header(out, type_id::ARRAY, v.len());
            v.iter().for_each(|a| write_array(out, a));
        }
        MetadataArray::U64(v) => {
            header(out, type_id::U64, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::I64(v) => {
            header(out, type_id::I64, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        MetadataArray::F64(v) => {
            header(out, type_id::F64, v.len());
            v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
    }
}
