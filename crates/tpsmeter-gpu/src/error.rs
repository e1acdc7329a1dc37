//! The one error type of this crate. Add variants as needed; keep them carrying the
//! offending values so a message names the culprit (tensor name, offset, count, limit).

/// Everything that can go wrong reading a model, preparing it, or running it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The bytes are not a GGUF file.
    #[error("not a GGUF file: magic is {found:02x?}, expected \"GGUF\"")]
    BadMagic { found: [u8; 4] },
    /// A GGUF version this reader does not understand.
    #[error("unsupported GGUF version {version} (supported: 2, 3)")]
    UnsupportedVersion { version: u32 },
    /// The file ended inside the named section.
    #[error("truncated GGUF file: needed {needed} bytes at offset {offset} while reading {what}")]
    Truncated {
        what: String,
        offset: u64,
        needed: u64,
    },
    /// A count or length beyond the reader's caps.
    #[error("{what} is {value}, above the limit of {limit}")]
    LimitExceeded {
        what: String,
        value: u64,
        limit: u64,
    },
}

/// Shorthand used throughout the crate.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
