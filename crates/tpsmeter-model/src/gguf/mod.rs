//! GGUF (versions 2 and 3) reading: header, metadata of every value type, tensor infos and
//! tensor data, from a byte slice ([`GgufFile`]) or incrementally ([`GgufStreamParser`]).
//!
//! Every count and length a file declares is checked against the caps in [`limits`] before
//! anything is allocated for it, and every failure is a typed [`crate::ModelError`] naming the
//! section, offset, key or tensor at fault. Only little-endian files are read (a big-endian
//! file shows up as an unsupported version).

pub mod file;
pub mod header;
pub mod limits;
pub mod metadata;
pub mod stream;
pub mod tensor_info;
pub mod value;
pub mod writer;

mod cursor;

pub use crate::quant::GgmlType;
pub use file::GgufFile;
pub use header::GgufHeader;
pub use metadata::Metadata;
pub use stream::{GgufEvent, GgufStreamParser};
pub use tensor_info::TensorInfo;
pub use value::{MetadataArray, MetadataValue};
pub use writer::GgufWriter;
