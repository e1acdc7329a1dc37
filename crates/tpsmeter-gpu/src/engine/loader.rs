//! [`EngineLoader`]: an [`Engine`] built from a GGUF file as it downloads, on the GPU or the
//! CPU ([`LoadTarget`]).
//!
//! Bytes go through the GGUF push parser: once the header is complete the configuration,
//! tokenizer and chat template are built and every tensor's size is checked against the
//! backend and the file's announced length (so a file this engine cannot run fails before
//! its weights download), and each tensor goes to the backend as soon as its last byte
//! arrives (uploaded to the GPU, or kept as stored for the CPU). Beside what the backend
//! keeps, only the header and one partly received tensor are ever held, never the whole file.
//! Input past the end of the last tensor is not read ([`EngineLoader::wants_more`]).

use std::sync::Arc;
use tpsmeter_model::ModelError;

use sha2::{Digest, Sha256};

use crate::cpu::{CpuModel, CpuOptions, CpuTarget};
use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use tpsmeter_model::chat::ChatTemplate;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgufEvent, GgufHeader, GgufStreamParser};
use tpsmeter_model::tokenizer::{Tokenizer, TokenizerSpec};

use super::session::Engine;
use super::target::GpuTarget;
use crate::backend::LoadTarget;
use tpsmeter_model::options::ModelOptions;

/// What the caller knows of the file before it arrives, checked while it does.
#[derive(Debug, Clone, Default)]
pub struct FileChecks {
    /// The file's length when known (a download's `Content-Length`, a `Blob`'s size): a
    /// header whose tensors need more bytes than that is refused as soon as it is complete.
    pub len: Option<u64>,
    /// Compute the SHA-256 of the model's bytes ([`Engine::sha256`]): the file up to the end
    /// of its last tensor, nothing appended after it.
    pub sha256: bool,
    /// The SHA-256 the model must have (computed whatever `sha256` says): [`EngineLoader::
    /// finish`] refuses another with [`ModelError::ChecksumMismatch`] before building the
    /// engine.
    pub expect_sha256: Option<[u8; 32]>,
}

/// What the header gives, built once it is complete.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) cfg: ModelConfig,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) chat: Option<ChatTemplate>,
    pub(crate) name: String,
    /// The file says it is a synthetic model (`crate::synthetic`): random weights.
    pub(crate) synthetic: bool,
}

/// What the parser's events build up.
#[derive(Debug, Default)]
struct Received<S> {
    staged: S,
    prepared: Option<Prepared>,
    digest: Option<Sha256>,
}

/// Feed it the file's bytes in chunks of any size ([`EngineLoader::push`]), then
/// [`EngineLoader::finish`]. After an error it refuses more input. Loads for the GPU
/// ([`EngineLoader::new`]) or the CPU ([`EngineLoader::cpu`]).
#[derive(Debug)]
pub struct EngineLoader<T: LoadTarget = GpuTarget> {
    target: T,
    opts: ModelOptions,
    checks: FileChecks,
    parser: GgufStreamParser,
    received: Received<T::Staged>,
}

impl EngineLoader {
    /// Loads into GPU buffers on `ctx`'s device.
    pub fn new(ctx: Arc<GpuContext>, opts: ModelOptions) -> Self {
        Self::with_target(GpuTarget(ctx), opts)
    }
}

impl EngineLoader<CpuTarget> {
    /// Loads into memory for the CPU backend.
    pub fn cpu(cpu: CpuOptions, opts: ModelOptions) -> Self {
        Self::with_target(CpuTarget(cpu), opts)
    }
}

impl<T: LoadTarget> EngineLoader<T> {
    pub fn with_target(target: T, opts: ModelOptions) -> Self {
        Self {
            target,
            opts,
            checks: FileChecks::default(),
            parser: GgufStreamParser::new(),
            received: Received::default(),
        }
    }

    /// What the file must satisfy: set before the first [`Self::push`] (a digest started
    /// later would miss the bytes before), or this fails.
    pub fn set_checks(&mut self, checks: FileChecks) -> Result<()> {
        if self.parser.bytes_received() > 0 {
            return Err(GpuError::from(ModelError::StreamState {
                reason: "checks set after the first bytes".into(),
            }));
        }
        let hash = checks.sha256 || checks.expect_sha256.is_some();
        self.received.digest = hash.then(Sha256::new);
        self.checks = checks;
        Ok(())
    }

    /// Bytes received so far (up to the model's end: what follows is not read).
    pub fn bytes_received(&self) -> u64 {
        self.parser.bytes_received()
    }

    /// Bytes known to be the model's (see [`GgufStreamParser::model_bytes`]): what a cache
    /// should keep of the input so far.
    pub fn model_bytes(&self) -> u64 {
        self.parser.model_bytes()
    }

    /// Whether more input can belong to the model; false once its end has arrived, when the
    /// download can stop.
    pub fn wants_more(&self) -> bool {
        self.parser.wants_more()
    }

    /// The model's length in bytes, once the header is complete.
    pub fn model_len(&self) -> Option<u64> {
        self.parser.header().map(GgufHeader::model_len)
    }

    /// The model's name (`general.name`), once the header has arrived.
    pub fn name(&self) -> Option<&str> {
        self.received.prepared.as_ref().map(|p| p.name.as_str())
    }

    /// Feeds the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<()> {
        let Self {
            target,
            checks,
            parser,
            received,
            ..
        } = self;
        parser.push(chunk, &mut |event| received.on_event(target, checks, event))
    }

    /// The input has ended: completes a header the parser held back (see
    /// [`GgufStreamParser::flush`]), after which [`Self::model_bytes`] is final.
    pub fn flush(&mut self) -> Result<()> {
        let Self {
            target,
            checks,
            parser,
            received,
            ..
        } = self;
        parser.flush(&mut |event| received.on_event(target, checks, event))
    }

    /// The file has ended: checks it was complete (and its digest, when one was expected)
    /// and builds the engine.
    pub fn finish(self) -> Result<Engine<T::Model>> {
        let Self {
            target,
            opts,
            checks,
            parser,
            mut received,
        } = self;
        parser.finish(&mut |event| received.on_event(&target, &checks, event))?;
        let Received {
            staged,
            prepared,
            digest,
        } = received;
        let p = prepared.ok_or_else(|| {
            GpuError::from(ModelError::StreamState {
                reason: "the file ended before its header was complete".into(),
            })
        })?;
        let sha256: Option<[u8; 32]> = digest.map(|d| d.finalize().into());
        if let (Some(expected), Some(found)) = (checks.expect_sha256, sha256)
            && expected != found
        {
            return Err(GpuError::from(ModelError::ChecksumMismatch {
                expected: hex(&expected),
                found: hex(&found),
            }));
        }
        let model = target.build(staged, p.cfg, &opts)?;
        let sha256 = sha256.map(|d| hex(&d));
        let mut engine = Engine::from_parts(p.tokenizer, p.chat, model, p.name, sha256);
        engine.set_synthetic(p.synthetic);
        Ok(engine)
    }
}

impl<S> Received<S> {
    fn on_event<T: LoadTarget<Staged = S>>(
        &mut self,
        target: &T,
        checks: &FileChecks,
        event: GgufEvent<'_>,
    ) -> Result<()> {
        match event {
            GgufEvent::Header(header) => {
                self.prepared = Some(prepare(target, checks, header)?);
                Ok(())
            }
            GgufEvent::Bytes(bytes) => {
                if let Some(d) = &mut self.digest {
                    d.update(bytes);
                }
                Ok(())
            }
            GgufEvent::Tensor { info, bytes, .. } => target.accept(&mut self.staged, info, bytes),
        }
    }
}

/// Checks a complete header against the file's length and the backend, then builds the
/// configuration, tokenizer and chat template.
fn prepare(target: &impl LoadTarget, checks: &FileChecks, header: &GgufHeader) -> Result<Prepared> {
    // A header describing more data than the file holds is malformed: say so now, rather
    // than read the whole file to find it cut short.
    if let Some(len) = checks.len {
        header.check_data_len(len.saturating_sub(header.data_offset))?;
    }
    target.check_header(header)?;
    let p = describe(header)?;
    target.check_config(&p.cfg)?;
    Ok(p)
}

/// What any backend builds from a complete header: the configuration, tokenizer, chat
/// template and name.
pub(crate) fn describe(header: &GgufHeader) -> Result<Prepared> {
    let cfg = ModelConfig::from_header(header)?;
    let tokenizer = Tokenizer::from_spec(&TokenizerSpec::from_gguf(&header.metadata)?)?;
    // A model without a usable template can still complete raw prompts.
    let chat = ChatTemplate::from_tokenizer(&tokenizer).ok();
    let name = header
        .metadata
        .opt_str("general.name")?
        .unwrap_or("local model")
        .to_owned();
    Ok(Prepared {
        cfg,
        tokenizer,
        chat,
        name,
        synthetic: crate::synthetic::is_synthetic(&header.metadata),
    })
}

/// Lowercase hex, as `sha256sum` prints a digest.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Engine {
    /// Parses a whole GGUF file held in memory, builds its tokenizer, uploads the model and
    /// (natively) compiles every pipeline it will run ([`crate::runtime::GpuModel::compile`]),
    /// so the first answer is as fast as later ones. On the web, call
    /// [`crate::runtime::GpuModel::compile`] yourself.
    pub fn load(ctx: Arc<GpuContext>, gguf: &[u8], opts: &ModelOptions) -> Result<Self> {
        // The streamed load's one path: a whole file is a download in one chunk (each
        // tensor is then a slice of it, not a copy).
        let mut loader = EngineLoader::new(ctx, opts.clone());
        loader.push(gguf)?;
        #[cfg(not(target_arch = "wasm32"))]
        let compiling = std::time::Instant::now();
        #[allow(unused_mut)]
        let mut engine = loader.finish()?;
        #[cfg(not(target_arch = "wasm32"))]
        {
            // The decode step's graph is made by `finish`: its compilation counts too.
            engine.model_mut().compile_blocking(Some(compiling))?;
        }
        Ok(engine)
    }
}

impl Engine<CpuModel> {
    /// Parses a whole GGUF file held in memory, builds its tokenizer and chat template, and
    /// copies its weights (as stored) for the CPU: `gguf` can be dropped once this returns.
    pub fn load_cpu(gguf: &[u8], opts: &ModelOptions, cpu: CpuOptions) -> Result<Self> {
        let mut loader = EngineLoader::cpu(cpu, opts.clone());
        loader.push(gguf)?;
        loader.finish()
    }
}
