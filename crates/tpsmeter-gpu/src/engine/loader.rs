//! [`EngineLoader`]: an [`Engine`] built from a GGUF file as it downloads.
//!
//! Bytes go through the GGUF push parser: once the header is complete the configuration,
//! tokenizer and chat template are built and every tensor's size is checked against the
//! adapter and the file's announced length (so a file this engine cannot run fails before
//! its weights download), and each tensor is uploaded as soon as its last byte arrives. Only
//! the header and one partly received tensor are ever held, never the whole file. Input past
//! the end of the last tensor is not read ([`EngineLoader::wants_more`]).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::chat::ChatTemplate;
use crate::error::{GpuError, Result};
use crate::gguf::{GgufEvent, GgufHeader, GgufStreamParser};
use crate::gpu::context::GpuContext;
use crate::model::config::ModelConfig;
use crate::model::weights::{GpuWeights, StagedWeights};
use crate::tokenizer::{Tokenizer, TokenizerSpec};

use super::model::{GpuModel, ModelOptions};
use super::session::Engine;

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
    /// finish`] refuses another with [`GpuError::ChecksumMismatch`] before building the
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
}

/// What the parser's events build up.
#[derive(Debug, Default)]
struct Received {
    staged: StagedWeights,
    prepared: Option<Prepared>,
    digest: Option<Sha256>,
}

/// Feed it the file's bytes in chunks of any size ([`EngineLoader::push`]), then
/// [`EngineLoader::finish`]. After an error it refuses more input.
#[derive(Debug)]
pub struct EngineLoader {
    ctx: Arc<GpuContext>,
    opts: ModelOptions,
    checks: FileChecks,
    parser: GgufStreamParser,
    received: Received,
}

impl EngineLoader {
    pub fn new(ctx: Arc<GpuContext>, opts: ModelOptions) -> Self {
        Self {
            ctx,
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
            return Err(GpuError::StreamState {
                reason: "checks set after the first bytes".into(),
            });
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
            ctx,
            checks,
            parser,
            received,
            ..
        } = self;
        parser.push(chunk, &mut |event| received.on_event(ctx, checks, event))
    }

    /// The input has ended: completes a header the parser held back (see
    /// [`GgufStreamParser::flush`]), after which [`Self::model_bytes`] is final.
    pub fn flush(&mut self) -> Result<()> {
        let Self {
            ctx,
            checks,
            parser,
            received,
            ..
        } = self;
        parser.flush(&mut |event| received.on_event(ctx, checks, event))
    }

    /// The file has ended: checks it was complete (and its digest, when one was expected)
    /// and builds the engine.
    pub fn finish(self) -> Result<Engine> {
        let Self {
            ctx,
            opts,
            checks,
            parser,
            mut received,
        } = self;
        parser.finish(&mut |event| received.on_event(&ctx, &checks, event))?;
        let Received {
            staged,
            prepared,
            digest,
        } = received;
        let p = prepared.ok_or_else(|| GpuError::StreamState {
            reason: "the file ended before its header was complete".into(),
        })?;
        let sha256: Option<[u8; 32]> = digest.map(|d| d.finalize().into());
        if let (Some(expected), Some(found)) = (checks.expect_sha256, sha256)
            && expected != found
        {
            return Err(GpuError::ChecksumMismatch {
                expected: hex(&expected),
                found: hex(&found),
            });
        }
        let weights = GpuWeights::assemble(&ctx, staged, &p.cfg)?;
        let model = GpuModel::from_weights(ctx, p.cfg, weights, &opts)?;
        let sha256 = sha256.map(|d| hex(&d));
        Ok(Engine::from_parts(
            p.tokenizer,
            p.chat,
            model,
            p.name,
            sha256,
        ))
    }
}

impl Received {
    fn on_event(
        &mut self,
        ctx: &GpuContext,
        checks: &FileChecks,
        event: GgufEvent<'_>,
    ) -> Result<()> {
        match event {
            GgufEvent::Header(header) => {
                self.prepared = Some(prepare(ctx, checks, header)?);
                Ok(())
            }
            GgufEvent::Bytes(bytes) => {
                if let Some(d) = &mut self.digest {
                    d.update(bytes);
                }
                Ok(())
            }
            GgufEvent::Tensor { info, bytes, .. } => self.staged.accept(ctx, info, bytes),
        }
    }
}

/// Checks a complete header against the file's length and the adapter, then builds the
/// configuration, tokenizer and chat template.
fn prepare(ctx: &GpuContext, checks: &FileChecks, header: &GgufHeader) -> Result<Prepared> {
    // A header describing more data than the file holds is malformed: say so now, rather
    // than read the whole file to find it cut short.
    if let Some(len) = checks.len {
        header.check_data_len(len.saturating_sub(header.data_offset))?;
    }
    // A tensor is held whole until its last byte arrives; one larger than any buffer this
    // adapter can make is refused before any of it is read.
    header.check_tensor_bytes(ctx.limits.max_buffer_size)?;
    let p = describe(header)?;
    GpuWeights::check_config(&p.cfg)?;
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
    })
}

/// Lowercase hex, as `sha256sum` prints a digest.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Engine {
    /// Parses a whole GGUF file held in memory, builds its tokenizer and uploads the model.
    pub fn load(ctx: Arc<GpuContext>, gguf: &[u8], opts: &ModelOptions) -> Result<Self> {
        // The streamed load's one path: a whole file is a download in one chunk (each
        // tensor is then a slice of it, not a copy).
        let mut loader = EngineLoader::new(ctx, opts.clone());
        loader.push(gguf)?;
        loader.finish()
    }
}
