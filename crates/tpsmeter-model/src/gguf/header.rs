//! Parsing everything before the tensor data: magic, version, metadata and tensor infos, then
//! validating the tensor layout (alignment, no overlaps). Shared by the slice reader and the
//! streaming parser.

use super::cursor::Cursor;
use super::limits::{MAX_ALIGNMENT, MAX_DIMS, MAX_METADATA_COUNT, MAX_TENSOR_COUNT};
use super::metadata::Metadata;
use super::tensor_info::TensorInfo;
use super::value::read_value;
use crate::error::{ModelError, Result};
use std::collections::HashSet;

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// Alignment of tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Metadata key overriding the alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// Header, metadata and tensor infos of a GGUF file.
#[derive(Debug, Clone)]
pub struct GgufHeader {
    /// 2 or 3 (version 1 used 32-bit counts and is long obsolete).
    pub version: u32,
    /// All metadata pairs.
    pub metadata: Metadata,
    /// Tensor infos in header order.
    pub tensors: Vec<TensorInfo>,
    /// Alignment of tensor offsets and of the data section.
    pub alignment: u64,
    /// Absolute file offset where the data section starts.
    pub data_offset: u64,
}

impl GgufHeader {
    /// Parses the header at the start of `bytes`. `bytes` may end anywhere after the header;
    /// tensor data ranges are not checked against it here (see [`Self::check_data_len`]).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut c = Cursor::new(bytes);
        let magic: [u8; 4] = {
            let b = c.take(4, "magic")?;
            [b[0], b[1], b[2], b[3]]
        };
        if magic != GGUF_MAGIC {
            return Err(ModelError::BadMagic { found: magic });
        }
        let version = c.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(ModelError::UnsupportedVersion { version });
        }
        let tensor_count = c.u64("tensor count")?;
        let kv_count = c.u64("metadata count")?;
        cap("tensor count", tensor_count, MAX_TENSOR_COUNT)?;
        cap("metadata count", kv_count, MAX_METADATA_COUNT)?;

        let mut metadata = Metadata::default();
        for _ in 0..kv_count {
            let key = c.string("metadata key")?;
            let ty = c.u32("metadata value type").map_err(|e| in_key(e, &key))?;
            let value = read_value(&mut c, ty, &key).map_err(|e| in_key(e, &key))?;
            metadata.insert(key, value)?;
        }

        let alignment = match metadata.get(ALIGNMENT_KEY) {
            None => DEFAULT_ALIGNMENT,
            Some(v) => {
                let a = v.as_u64().ok_or_else(|| ModelError::MetadataType {
                    key: ALIGNMENT_KEY.into(),
                    expected: "an unsigned integer",
                    found: v.type_name(),
                })?;
                if a == 0 || !a.is_power_of_two() || a > MAX_ALIGNMENT {
                    return Err(ModelError::BadAlignment {
                        alignment: a,
                        limit: MAX_ALIGNMENT,
                    });
                }
                a
            }
        };

        // Each tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes: reserve no more than the
        // input can hold, whatever the declared count.
        let mut tensors = Vec::with_capacity((tensor_count as usize).min(c.remaining() / 32));
        let mut names = HashSet::new();
        for _ in 0..tensor_count {
            let name = c.string("tensor name")?;
            let n_dims = c
                .u32("tensor dimension count")
                .map_err(|e| in_tensor(e, &name))?;
            if n_dims > MAX_DIMS {
                return Err(ModelError::FileLimit {
                    what: format!("dimension count of tensor {name:?}"),
                    value: n_dims.into(),
                    limit: MAX_DIMS.into(),
                });
            }
            let dims = (0..n_dims)
                .map(|_| c.u64("tensor dimensions"))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| in_tensor(e, &name))?;
            let type_id = c.u32("tensor type").map_err(|e| in_tensor(e, &name))?;
            let offset = c.u64("tensor offset").map_err(|e| in_tensor(e, &name))?;
            if !names.insert(name.clone()) {
                return Err(ModelError::DuplicateTensor { tensor: name });
            }
            let info = TensorInfo::new(name, dims, type_id, offset)?;
            if info.end().is_none() {
                return Err(ModelError::TensorOutOfRange {
                    tensor: info.name,
                    offset,
                    size: info.n_bytes,
                    data_len: u64::MAX,
                });
            }
            if !info.offset.is_multiple_of(alignment) {
                return Err(ModelError::TensorMisaligned {
                    tensor: info.name,
                    offset: info.offset,
                    alignment,
                });
            }
            tensors.push(info);
        }
        check_overlaps(&tensors)?;
        let data_offset = (c.pos() as u64).next_multiple_of(alignment);
        Ok(Self {
            version,
            metadata,
            tensors,
            alignment,
            data_offset,
        })
    }

    /// Checks every tensor lies within a data section of `data_len` bytes.
    pub fn check_data_len(&self, data_len: u64) -> Result<()> {
        for t in &self.tensors {
            match t.end() {
                Some(end) if end <= data_len => {}
                _ => {
                    return Err(ModelError::TensorOutOfRange {
                        tensor: t.name.clone(),
                        offset: t.offset,
                        size: t.n_bytes,
                        data_len,
                    });
                }
            }
        }
        Ok(())
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Result<&TensorInfo> {
        self.tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ModelError::MissingTensor { name: name.into() })
    }

    /// Whether a tensor named `name` exists.
    pub fn has_tensor(&self, name: &str) -> bool {
        self.tensors.iter().any(|t| t.name == name)
    }

    /// Size of the data section the tensors need (end of the last tensor).
    pub fn data_len_needed(&self) -> u64 {
        self.tensors
            .iter()
            .filter_map(TensorInfo::end)
            .max()
            .unwrap_or(0)
    }

    /// Bytes of the file the model occupies: the header, then the data section through the
    /// end of the last tensor, rounded up to the alignment (writers pad after each tensor,
    /// the last included). Whatever follows is not part of the model. `u64::MAX` where the
    /// offsets would overflow.
    pub fn model_len(&self) -> u64 {
        self.data_offset
            .checked_add(self.data_len_needed())
            .and_then(|end| end.checked_next_multiple_of(self.alignment))
            .unwrap_or(u64::MAX)
    }

    /// Fails with [`ModelError::TensorTooLarge`] on the first tensor of more than `limit` bytes
    /// (the largest buffer the GPU adapter can create): the loader refuses such a file from
    /// its header, before it holds any of that tensor's bytes.
    pub fn check_tensor_bytes(&self, limit: u64) -> Result<()> {
        match self.tensors.iter().find(|t| t.n_bytes > limit) {
            Some(t) => Err(ModelError::TensorTooLarge {
                tensor: t.name.clone(),
                dims: t.dims.clone(),
                bytes: t.n_bytes,
                limit,
            }),
            None => Ok(()),
        }
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<&str> {
        self.metadata.get_str("general.architecture")
    }
}

fn cap(what: &str, value: u64, limit: u64) -> Result<()> {
    if value > limit {
        return Err(ModelError::FileLimit {
            what: what.into(),
            value,
            limit,
        });
    }
    Ok(())
}

/// Adds the key being read to a truncation message.
fn in_key(e: ModelError, key: &str) -> ModelError {
    annotate(e, "key", key)
}

/// Adds the tensor being read to a truncation message.
fn in_tensor(e: ModelError, name: &str) -> ModelError {
    annotate(e, "tensor", name)
}

fn annotate(e: ModelError, kind: &str, name: &str) -> ModelError {
    match e {
        ModelError::Truncated {
            what,
            offset,
            needed,
        } => ModelError::Truncated {
            what: format!("{what} of {kind} {name:?}"),
            offset,
            needed,
        },
        other => other,
    }
}

/// Sorts tensors by offset and fails on the first pair sharing bytes.
fn check_overlaps(tensors: &[TensorInfo]) -> Result<()> {
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let a_end = a.end().ok_or_else(|| ModelError::TensorOutOfRange {
            tensor: a.name.clone(),
            offset: a.offset,
            size: a.n_bytes,
            data_len: u64::MAX,
        })?;
        if b.offset < a_end {
            return Err(ModelError::TensorsOverlap {
                first: a.name.clone(),
                first_end: a_end,
                second: b.name.clone(),
                offset: b.offset,
            });
        }
    }
    Ok(())
}
