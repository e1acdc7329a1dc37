//! The one error type of this crate. Add variants as needed; keep them carrying the
//! offending values so a message names the culprit (tensor name, offset, count, limit).

/// Everything that can go wrong reading a model, preparing it, or running it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
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
    /// ([`crate::gguf::limits`]): no real model comes near them, so the file is malformed.
    #[error("malformed GGUF file: {what} is {value}, above the reader's limit of {limit}")]
    FileLimit {
        what: String,
        value: u64,
        limit: u64,
    },
    /// No GPU adapter matched the request (none installed, or none with the asked-for name).
    #[error("no GPU adapter found{}", match wanted { Some(w) => format!(" matching {w:?}"), None => String::new() })]
    NoAdapter { wanted: Option<String> },
    /// The adapter refused to create a device.
    #[error("could not create a device on adapter {adapter:?}: {reason}")]
    RequestDevice { adapter: String, reason: String },
    /// The device was lost (driver reset, out of memory on some platforms, tab backgrounded).
    #[error("GPU device lost: {reason}")]
    DeviceLost { reason: String },
    /// The caller stopped the work (a load's compilation, through its progress callback).
    #[error("{what} was cancelled")]
    Cancelled { what: &'static str },
    /// An allocation failed on the GPU.
    #[error("GPU out of memory while {what}")]
    OutOfMemory { what: String },
    /// A wgpu validation error: a bug in this crate (or an adapter limit it did not check).
    #[error("GPU validation error: {message}")]
    Validation { message: String },
    /// An operation got tensors whose shapes or types do not fit together.
    #[error("{op}: {detail}")]
    ShapeMismatch { op: &'static str, detail: String },
    /// One buffer binding would exceed the adapter's `maxStorageBufferBindingSize` (or
    /// `maxBufferSize`) even after splitting.
    #[error("{what} needs {bytes} bytes in one binding, above the adapter limit of {limit}")]
    BindingTooLarge {
        what: String,
        bytes: u64,
        limit: u64,
    },
    /// The adapter lacks a feature the requested kernel variant needs.
    #[error("adapter lacks feature {feature} needed by {what}")]
    MissingFeature { feature: &'static str, what: String },
    /// A tensor format the kernels do not handle.
    #[error("{op} does not support weight format {format}")]
    UnsupportedFormat { op: &'static str, format: String },
    /// Mapping a buffer for readback failed.
    #[error("GPU readback failed: {reason}")]
    Readback { reason: String },
    // ---- GGUF, quantized formats, model configuration, CPU reference ----
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
    /// time out of all proportion to the text ([`crate::tokenizer::vet_pattern`]).
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
    /// The CPU backend's thread pool could not start.
    #[error("CPU thread pool: {reason}")]
    ThreadPool { reason: String },
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
    /// ([`crate::tokenizer::count_budget_ms`]).
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
}

impl GpuError {
    /// A stable name for the kind of failure, for callers that branch on it (the browser
    /// engine's `Error.name`): `InvalidModel` (the file is not a GGUF this engine reads
    /// correctly: cut, corrupt, inconsistent, or declaring counts and lengths beyond the
    /// reader's caps), `UnsupportedModel` (well-formed, but an architecture, tokenizer or
    /// format not implemented), `UnsafeTokenizer` (a `tokenizer.json` whose regexes could
    /// pin the CPU), `ChecksumMismatch` (not the bytes the caller pinned),
    /// `NoAdapter`, `RequestDeviceError`, `MissingFeature`, `LimitExceeded` (a device limit,
    /// or one of this crate's), `OutOfMemory`,
    /// `DeviceLost`, `GpuError` (validation or readback: a bug here, or a driver's),
    /// `ContextFull` and `InvalidRequest` (a prompt or template problem).
    pub fn kind(&self) -> &'static str {
        use GpuError::*;
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
            UnsupportedFormat { .. }
            | UnsupportedGgmlType { .. }
            | UnsupportedArchitecture { .. }
            | UnsupportedTokenizer { .. }
            | UnsupportedTokenizerJson { .. } => "UnsupportedModel",
            UnsafeTokenizer { .. } => "UnsafeTokenizer",
            NoAdapter { .. } => "NoAdapter",
            RequestDevice { .. } => "RequestDeviceError",
            MissingFeature { .. } => "MissingFeature",
            LimitExceeded { .. }
            | BindingTooLarge { .. }
            | TensorTooLarge { .. }
            | CountTooSlow { .. } => "LimitExceeded",
            OutOfMemory { .. } | HostOutOfMemory { .. } => "OutOfMemory",
            ChecksumMismatch { .. } => "ChecksumMismatch",
            DeviceLost { .. } => "DeviceLost",
            Cancelled { .. } => "AbortError",
            Validation { .. } | Readback { .. } | ShapeMismatch { .. } => "GpuError",
            ContextFull { .. } => "ContextFull",
            ThreadPool { .. } => "ThreadPool",
            TokenOutOfRange { .. }
            | Tokenizer { .. }
            | ChatTemplate { .. }
            | EmptyPrompt
            | BatchState { .. }
            | InvalidOption { .. } => "InvalidRequest",
        }
    }
}

impl GpuError {
    /// A load's compilation stopped by its caller (`runtime/warm.rs`).
    pub(crate) fn compile_cancelled() -> Self {
        GpuError::Cancelled {
            what: "compiling the model's kernels",
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

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
