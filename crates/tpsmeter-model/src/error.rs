//! The one error type of this crate: reading a model (GGUF, quantized blocks, metadata), its
//! tokenizer and chat template, and the generation loop's own checks. Variants carry the
//! offending values so a message names the culprit (tensor name, offset, count, limit). A
//! backend's error wraps this one (`tpsmeter_gpu::GpuError::Model`).

/// Everything that can go wrong reading a model or a request against it, on any backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The bytes are not a GGUF file.
    #[error("not a GGUF file: {}, expected \"GGUF\"", describe_magic(found))]
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
    /// A count or size beyond a limit of this crate or of the request (vocabulary size, stop
    /// strings, sequence slots).
    #[error("{what} is {value}, above the limit of {limit}")]
    LimitExceeded {
        what: String,
        value: u64,
        limit: u64,
    },
    /// A count or length the GGUF file declares beyond the reader's caps
    /// (`gguf::limits`): no real model comes near them, so the file is malformed.
    #[error("malformed GGUF file: {what} is {value}, above the reader's limit of {limit}")]
    FileLimit {
        what: String,
        value: u64,
        limit: u64,
    },
    /// A tensor type id that ggml does not define.
    #[error("unknown GGML tensor type id {id}")]
    UnknownGgmlType { id: u32 },
    /// A GGUF tensor whose type id ggml does not define.
    #[error("tensor {tensor:?} has unknown GGML type id {id}")]
    UnknownTensorType { tensor: String, id: u32 },
    /// A known type without a CPU dequantizer (or without support where it was asked for).
    #[error("tensor type {ty} is not supported here")]
    UnsupportedGgmlType { ty: crate::quant::GgmlType },
    /// A weight count that is not a whole number of blocks of its type.
    #[error("{elements} weights of type {ty} are not a whole number of {block_len}-weight blocks")]
    PartialBlock {
        ty: crate::quant::GgmlType,
        elements: u64,
        block_len: usize,
    },
    /// A byte buffer whose length does not match the weights it should hold.
    #[error("{elements} weights of type {ty} take {expected_bytes} bytes, got {got_bytes}")]
    QuantLength {
        ty: crate::quant::GgmlType,
        elements: u64,
        expected_bytes: u64,
        got_bytes: u64,
    },
    /// A metadata value type id outside the GGUF specification.
    #[error("metadata key {key:?} has unknown value type id {id}")]
    UnknownValueType { key: String, id: u32 },
    /// `general.alignment` is zero, not a power of two, or absurdly large.
    #[error("GGUF alignment {alignment} must be a power of two between 1 and {limit}")]
    BadAlignment { alignment: u64, limit: u64 },
    /// A tensor's dimensions are unusable (zero, too many, overflowing, partial blocks).
    #[error("tensor {tensor:?} has unusable dims {dims:?}: {reason}")]
    BadTensorShape {
        tensor: String,
        dims: Vec<u64>,
        reason: String,
    },
    /// A tensor larger than the largest buffer the GPU adapter can create, found in the
    /// header, before any of its bytes are read.
    #[error(
        "tensor {tensor:?} with dims {dims:?} takes {bytes} bytes, more than the {limit} bytes this GPU adapter allows in one buffer"
    )]
    TensorTooLarge {
        tensor: String,
        dims: Vec<u64>,
        bytes: u64,
        limit: u64,
    },
    /// Holding a tensor's bytes until the last of them arrives needed more memory than the
    /// allocator could give (a WebAssembly module has at most 4 GiB).
    #[error("out of memory holding the {bytes} bytes of tensor {tensor:?} before its upload")]
    HostOutOfMemory { tensor: String, bytes: u64 },
    /// The model's SHA-256 differs from the one the caller expected (a pinned download, or
    /// the digest a cache recorded).
    #[error("the model's SHA-256 is {found}, expected {expected}")]
    ChecksumMismatch { expected: String, found: String },
    /// A tensor's bytes lie (partly) outside the data section.
    #[error(
        "tensor {tensor:?} occupies bytes {offset}..{offset}+{size} of the data section, which has {data_len}"
    )]
    TensorOutOfRange {
        tensor: String,
        offset: u64,
        size: u64,
        data_len: u64,
    },
    /// Two tensors share bytes.
    #[error(
        "tensor {second:?} at data offset {offset} overlaps tensor {first:?} (ends at {first_end})"
    )]
    TensorsOverlap {
        first: String,
        first_end: u64,
        second: String,
        offset: u64,
    },
    /// A tensor's data offset is not a multiple of the file's alignment.
    #[error(
        "tensor {tensor:?} data offset {offset} is not a multiple of the alignment {alignment}"
    )]
    TensorMisaligned {
        tensor: String,
        offset: u64,
        alignment: u64,
    },
    /// A metadata key appears twice.
    #[error("metadata key {key:?} appears twice")]
    DuplicateKey { key: String },
    /// A tensor name appears twice.
    #[error("tensor {tensor:?} appears twice")]
    DuplicateTensor { tensor: String },
    /// A required metadata key is absent.
    #[error("missing metadata key {key:?}")]
    MissingMetadata { key: String },
    /// A metadata key holds a value of another type than the one asked for.
    #[error("metadata key {key:?} holds {found}, expected {expected}")]
    MetadataType {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    /// A metadata value is present but unusable (zero heads, non-dividing dims, ...).
    #[error("metadata key {key:?}: {reason}")]
    BadMetadata { key: String, reason: String },
    /// The model's architecture is not one this crate implements.
    #[error("unsupported model architecture {arch:?} (supported: {supported})")]
    UnsupportedArchitecture {
        arch: String,
        supported: &'static str,
    },
    /// A tensor the architecture needs is absent.
    #[error("missing tensor {name:?}")]
    MissingTensor { name: String },
    /// A tensor has another shape than the hyper-parameters imply.
    #[error("tensor {tensor:?} has dims {found:?}, expected {expected:?}")]
    WrongTensorShape {
        tensor: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    /// A token id outside the vocabulary.
    #[error("token id {token} is outside the vocabulary of {vocab}")]
    TokenOutOfRange { token: u32, vocab: usize },
    /// The KV cache is full.
    #[error("position {position} is beyond the context length {limit}")]
    ContextFull { position: usize, limit: usize },
    /// A streaming parser was used out of order (data after the end, finish before the end).
    #[error("GGUF stream: {reason}")]
    StreamState { reason: String },
    /// A tokenizer family or pre-tokenizer this crate cannot build.
    #[error("unsupported tokenizer: model {model:?}, pre-tokenizer {pre:?}")]
    UnsupportedTokenizer { model: String, pre: String },
    /// The `tokenizers` pipeline refused to build or to encode.
    #[error("tokenizer: {reason}")]
    Tokenizer { reason: String },
    /// A `tokenizer.json` regex refused before it is compiled, because running it could take
    /// time out of all proportion to the text (`tokenizer::vet_pattern`).
    #[error("tokenizer.json: the pattern {pattern:?} at {at} is refused: {reason}")]
    UnsafeTokenizer {
        /// Where in the file: `pre_tokenizer.pretokenizers[1].pattern.Regex`.
        at: String,
        /// The pattern's start.
        pattern: String,
        reason: String,
    },
    /// A chat template that does not parse or fails while rendering.
    #[error("chat template: {reason}")]
    ChatTemplate { reason: String },
    /// Generation was asked to continue an empty prompt.
    #[error("the prompt has no tokens: generation needs at least one")]
    EmptyPrompt,
    /// A batched-decoding call out of order (a step for a slot with no prompt, a read with
    /// nothing submitted): a bug in the caller's scheduling.
    #[error("batched decoding: {reason}")]
    BatchState { reason: &'static str },
    /// A `tokenizer.json` of a model type this crate does not load (`tokenizer/admit.rs`
    /// says which it does, and why).
    #[error(
        "tokenizer.json: the model type {model:?} is not accepted (only {accepted}, the types \
         of text-generating models)"
    )]
    UnsupportedTokenizerJson { model: String, accepted: String },
    /// A count took longer than its time budget
    /// (`tokenizer::count_budget_ms`).
    #[error(
        "counting {bytes} bytes of text went over its time budget of {budget_ms} ms \
         ({elapsed_ms} ms for the first {done} bytes): this tokenizer is too slow for it"
    )]
    CountTooSlow {
        bytes: u64,
        done: u64,
        elapsed_ms: u64,
        budget_ms: u64,
    },
    /// An option this crate cannot honour (a synthetic model's name or type).
    #[error("{option}: {reason}")]
    InvalidOption {
        option: &'static str,
        reason: String,
    },
    /// A generation request that cannot be run as it is (`request.rs`): its JSON, or
    /// the field named (`param`, as OpenAI's error object names it) out of range.
    #[error("{message}")]
    BadRequest {
        param: Option<&'static str>,
        message: String,
    },
}

impl ModelError {
    /// A stable name for the kind of failure, for callers that branch on it (the browser
    /// engine's `Error.name`): `InvalidModel` (the file is not a GGUF this engine reads
    /// correctly: cut, corrupt, inconsistent, or declaring counts and lengths beyond the
    /// reader's caps), `UnsupportedModel` (well-formed, but an architecture, tokenizer or
    /// format not implemented), `UnsafeTokenizer` (a `tokenizer.json` whose regexes could
    /// pin the CPU), `ChecksumMismatch` (not the bytes the caller pinned), `LimitExceeded`
    /// (one of this crate's limits), `OutOfMemory`, `ContextFull` and `InvalidRequest` (a
    /// prompt or template problem).
    pub fn kind(&self) -> &'static str {
        use ModelError::*;
        match self {
            BadMagic { .. }
            | UnsupportedVersion { .. }
            | Truncated { .. }
            | UnknownGgmlType { .. }
            | UnknownTensorType { .. }
            | PartialBlock { .. }
            | QuantLength { .. }
            | UnknownValueType { .. }
            | BadAlignment { .. }
            | BadTensorShape { .. }
            | FileLimit { .. }
            | TensorOutOfRange { .. }
            | TensorsOverlap { .. }
            | TensorMisaligned { .. }
            | DuplicateKey { .. }
            | DuplicateTensor { .. }
            | MissingMetadata { .. }
            | MetadataType { .. }
            | BadMetadata { .. }
            | MissingTensor { .. }
            | WrongTensorShape { .. }
            | StreamState { .. } => "InvalidModel",
            UnsupportedGgmlType { .. }
            | UnsupportedArchitecture { .. }
            | UnsupportedTokenizer { .. }
            | UnsupportedTokenizerJson { .. } => "UnsupportedModel",
            UnsafeTokenizer { .. } => "UnsafeTokenizer",
            LimitExceeded { .. } | TensorTooLarge { .. } | CountTooSlow { .. } => "LimitExceeded",
            HostOutOfMemory { .. } => "OutOfMemory",
            ChecksumMismatch { .. } => "ChecksumMismatch",
            ContextFull { .. } => "ContextFull",
            TokenOutOfRange { .. }
            | Tokenizer { .. }
            | ChatTemplate { .. }
            | EmptyPrompt
            | BatchState { .. }
            | InvalidOption { .. }
            | BadRequest { .. } => "InvalidRequest",
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;

/// The first bytes of a file that is not GGUF, as a reader would want them: text as text
/// (a web page served where a model should be starts with `<`), anything else in hex.
fn describe_magic(found: &[u8; 4]) -> String {
    if found.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        let text: String = found.iter().map(|&b| char::from(b)).collect();
        let what = if found[0] == b'<' {
            "markup, such as a web page"
        } else {
            "text"
        };
        format!("it starts with {text:?} ({what})")
    } else {
        format!("magic is {found:02x?}")
    }
}
