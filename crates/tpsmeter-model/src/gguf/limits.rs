//! Caps on every count and length a GGUF file declares. The reader checks each declared size
//! against these before it allocates or loops, so a hostile header cannot make it allocate
//! more than a small multiple of the bytes it was actually given.
//!
//! The values leave wide margins above real models (the largest tokenizer vocabularies have
//! ~260k entries and ~500k merges; the largest chat templates are tens of KiB; models with
//! thousands of tensors are MoE giants far beyond what this engine runs).

/// Longest string (metadata key, string value, tensor name): chat templates are the long ones.
pub const MAX_STRING_LEN: u64 = 16 << 20;
/// Longest metadata array (token lists, merges, scores).
pub const MAX_ARRAY_LEN: u64 = 16 << 20;
/// Most tensors in one file.
pub const MAX_TENSOR_COUNT: u64 = 1 << 16;
/// Most metadata key/value pairs in one file.
pub const MAX_METADATA_COUNT: u64 = 1 << 16;
/// Most dimensions of one tensor (ggml's `GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// Most elements in one tensor (2^40, far above any single weight matrix; keeps byte sizes
/// well inside u64 and lets wasm32 code convert checked sizes without surprises).
pub const MAX_TENSOR_ELEMENTS: u64 = 1 << 40;
/// Deepest nesting of arrays inside arrays (GGUF allows it; real files use depth 1).
pub const MAX_NESTING_DEPTH: usize = 3;
/// Largest `general.alignment` accepted (real files use 32).
pub const MAX_ALIGNMENT: u64 = 1 << 16;
/// Largest header (everything before the tensor data) the streaming parser buffers while
/// waiting for it to complete. Gemma-3's 262k-token vocabulary makes a header of ~10 MiB.
pub const MAX_HEADER_BYTES: u64 = 256 << 20;
