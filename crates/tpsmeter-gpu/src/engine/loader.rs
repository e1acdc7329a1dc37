//! [`EngineLoader`]: an [`Engine`] built from a GGUF file as it downloads.
//!
//! Bytes go through the GGUF push parser: once the header is complete the configuration,
//! tokenizer and chat template are built (so a file this engine cannot run fails before its
//! weights download), and each tensor is uploaded as soon as its last byte arrives. Only the
//! header and one partly received tensor are ever held, never the whole file.

use std::sync::Arc;

use crate::chat::ChatTemplate;
use crate::error::{GpuError, Result};
use crate::gguf::{GgufEvent, GgufHeader, GgufStreamParser};
use crate::gpu::context::GpuContext;
use crate::model::config::ModelConfig;
use crate::model::llama::{GpuWeights, StagedWeights};
use crate::tokenizer::{Tokenizer, TokenizerSpec};

use super::model::{GpuModel, ModelOptions};
use super::session::Engine;

/// What the header gives, built once it is complete.
#[derive(Debug)]
struct Prepared {
    cfg: ModelConfig,
    tokenizer: Tokenizer,
    chat: Option<ChatTemplate>,
    name: String,
}

/// Feed it the file's bytes in chunks of any size ([`EngineLoader::push`]), then
/// [`EngineLoader::finish`]. After an error it refuses more input.
#[derive(Debug)]
pub struct EngineLoader {
    ctx: Arc<GpuContext>,
    opts: ModelOptions,
    parser: GgufStreamParser,
    staged: StagedWeights,
    prepared: Option<Prepared>,
}

impl EngineLoader {
    pub fn new(ctx: Arc<GpuContext>, opts: ModelOptions) -> Self {
        Self {
            ctx,
            opts,
            parser: GgufStreamParser::new(),
            staged: StagedWeights::new(),
            prepared: None,
        }
    }

    /// Bytes received so far.
    pub fn bytes_received(&self) -> u64 {
        self.parser.bytes_received()
    }

    /// The model's name (`general.name`), once the header has arrived.
    pub fn name(&self) -> Option<&str> {
        self.prepared.as_ref().map(|p| p.name.as_str())
    }

    /// Feeds the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<()> {
        let Self {
            ctx,
            parser,
            staged,
            prepared,
            ..
        } = self;
        parser.push(chunk, &mut |event| on_event(ctx, staged, prepared, event))
    }

    /// The file has ended: checks it was complete and builds the engine.
    pub fn finish(self) -> Result<Engine> {
        let Self {
            ctx,
            opts,
            parser,
            mut staged,
            mut prepared,
        } = self;
        parser.finish(&mut |event| on_event(&ctx, &mut staged, &mut prepared, event))?;
        let p = prepared.ok_or_else(|| GpuError::StreamState {
            reason: "the file ended before its header was complete".into(),
        })?;
        let weights = GpuWeights::assemble(&ctx, staged, &p.cfg)?;
        let model = GpuModel::from_weights(ctx, p.cfg, weights, &opts)?;
        Ok(Engine::from_parts(p.tokenizer, p.chat, model, p.name))
    }
}

fn on_event(
    ctx: &GpuContext,
    staged: &mut StagedWeights,
    prepared: &mut Option<Prepared>,
    event: GgufEvent<'_>,
) -> Result<()> {
    match event {
        GgufEvent::Header(header) => {
            *prepared = Some(prepare(header)?);
            Ok(())
        }
        GgufEvent::Tensor { info, bytes, .. } => staged.accept(ctx, info, bytes),
    }
}

/// Configuration, tokenizer and chat template from a complete header.
fn prepare(header: &GgufHeader) -> Result<Prepared> {
    let cfg = ModelConfig::from_header(header)?;
    GpuWeights::check_config(&cfg)?;
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
