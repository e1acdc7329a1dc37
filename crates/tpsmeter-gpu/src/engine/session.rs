//! [`Engine`]: a model, its tokenizer and chat template, and the generation loop, behind one
//! streaming call that yields (token id, text piece, timestamp).

use std::sync::Arc;

use crate::backend::Backend;
use crate::error::Result;
use tpsmeter_model::chat::{ChatMessage, ChatTemplate, RenderOptions};
use tpsmeter_model::generate::{
    CancelToken, GenerateParams, Generation, Generator, TokenEvent, TokenStep,
};
use tpsmeter_model::sample::SamplerConfig;
use tpsmeter_model::tokenizer::Tokenizer;

use crate::runtime::GpuModel;
use tpsmeter_model::tokenizer::TokenSpan;

impl Backend for GpuModel {
    fn set_sampling(&mut self, sampling: SamplerConfig) -> Result<()> {
        GpuModel::set_sampling(self, sampling)
    }

    async fn logits_after(&mut self, tokens: &[u32], start: usize) -> Result<Vec<f32>> {
        self.step(tokens, start).await?;
        self.read_logits_async().await
    }
}

impl Backend for crate::cpu::CpuModel {
    fn set_sampling(&mut self, sampling: SamplerConfig) -> Result<()> {
        Ok(crate::cpu::CpuModel::set_sampling(self, sampling)?)
    }

    async fn logits_after(&mut self, tokens: &[u32], start: usize) -> Result<Vec<f32>> {
        Ok(self.logits_async(tokens, start).await?)
    }
}

/// A loaded model ready to generate text, on the GPU (the default) or the CPU
/// (`Engine<CpuModel>`).
#[derive(Debug)]
pub struct Engine<M = GpuModel> {
    prompts: Prompts,
    generator: Generator<M>,
    name: String,
    sha256: Option<String>,
    synthetic: bool,
}

impl<M: Backend> Engine<M> {
    /// An engine from a loaded model and what its header described.
    pub(crate) fn from_parts(
        tokenizer: Tokenizer,
        chat: Option<ChatTemplate>,
        model: M,
        name: String,
        sha256: Option<String>,
    ) -> Self {
        Self {
            prompts: Prompts {
                tokenizer: Arc::new(tokenizer),
                chat: chat.map(Arc::new),
            },
            generator: Generator::new(model),
            name,
            sha256,
            synthetic: false,
        }
    }

    /// Whether the model is synthetic (`crate::synthetic`: a real model's shapes with random
    /// weights): its speed is the real model's, its text noise, and reports must say so.
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }

    pub(crate) fn set_synthetic(&mut self, synthetic: bool) {
        self.synthetic = synthetic;
    }

    /// `general.name` of the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lowercase hex SHA-256 of the model's bytes, when its loader was asked for it
    /// ([`super::loader::FileChecks`]).
    pub fn sha256(&self) -> Option<&str> {
        self.sha256.as_deref()
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.prompts.tokenizer
    }

    pub fn model(&self) -> &M {
        self.generator.model()
    }

    pub fn model_mut(&mut self) -> &mut M {
        self.generator.model_mut()
    }

    /// Whether the model ships a chat template.
    pub fn has_chat_template(&self) -> bool {
        self.prompts.chat.is_some()
    }

    /// Token ids of a raw prompt (BOS added when the model asks for it).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.prompts().encode(text)
    }

    /// Renders `messages` with the model's chat template (ending with the assistant header)
    /// and tokenizes the result. Without a template, the contents are joined by newlines.
    pub fn encode_chat(
        &self,
        messages: &[ChatMessage],
        now_unix_seconds: Option<i64>,
    ) -> Result<Vec<u32>> {
        self.prompts().encode_chat(messages, now_unix_seconds)
    }

    /// The prompt side (tokenizer and chat template), borrowed.
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The prompt side and the model apart, for a caller that drives the model itself while
    /// encoding and detokenizing (a server's batched decoding: see `batch.rs`).
    pub fn split_mut(&mut self) -> (&Prompts, &mut M) {
        (&self.prompts, self.generator.model_mut())
    }

    /// Generates from `prompt` with `sampling`, calling `on_event` for every token as its
    /// text becomes showable (id, text piece and the time `clock` read when the id came
    /// back). Keys and values of a prefix shared with the previous call are reused.
    pub async fn generate_async(
        &mut self,
        prompt: &[u32],
        params: &GenerateParams,
        sampling: &SamplerConfig,
        cancel: &CancelToken,
        clock: &mut dyn FnMut() -> f64,
        on_event: &mut dyn FnMut(&TokenEvent),
    ) -> Result<Generation> {
        self.generator.model_mut().set_sampling(*sampling)?;
        self.generator
            .generate(
                &self.prompts.tokenizer,
                prompt,
                params,
                cancel,
                clock,
                on_event,
            )
            .await
            .map_err(Into::into)
    }

    /// Native: [`Engine::generate_async`], blocking the calling thread until it ends.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn generate(
        &mut self,
        prompt: &[u32],
        params: &GenerateParams,
        sampling: &SamplerConfig,
        cancel: &CancelToken,
        clock: &mut dyn FnMut() -> f64,
        on_event: &mut dyn FnMut(&TokenEvent),
    ) -> Result<Generation> {
        pollster::block_on(self.generate_async(prompt, params, sampling, cancel, clock, on_event))
    }

    /// Forgets the KV cache's contents: the next prompt runs in full (benchmarks that must
    /// measure prefill every time).
    pub fn forget_cache(&mut self) {
        self.generator.forget_cache();
    }
}

/// An engine's tokenizer and chat template: prompts to ids, ids to text. Cheap to clone and
/// shareable across threads, so a server can encode requests (and refuse the ones that do
/// not fit) on its own threads while the engine's thread keeps decoding.
#[derive(Debug, Clone)]
pub struct Prompts {
    tokenizer: Arc<Tokenizer>,
    chat: Option<Arc<ChatTemplate>>,
}

impl Prompts {
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// See [`Engine::encode`].
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.tokenizer.encode(text, true)?)
    }

    /// See [`Engine::encode_chat`].
    pub fn encode_chat(
        &self,
        messages: &[ChatMessage],
        now_unix_seconds: Option<i64>,
    ) -> Result<Vec<u32>> {
        let (text, add_special) = self.chat_text(messages, now_unix_seconds)?;
        Ok(self.tokenizer.encode(&text, add_special)?)
    }

    /// The text [`Prompts::encode_chat`] encodes, and whether its encoding adds the special
    /// tokens (BOS) itself: for a caller that looks at the text before encoding it (a server
    /// refusing a prompt too long for its context from its length alone).
    pub fn chat_text(
        &self,
        messages: &[ChatMessage],
        now_unix_seconds: Option<i64>,
    ) -> Result<(String, bool)> {
        match self.chat.as_deref() {
            Some(t) => {
                let text = t.render(
                    messages,
                    &RenderOptions {
                        add_generation_prompt: true,
                        now_unix_seconds,
                        ..Default::default()
                    },
                )?;
                // The template writes BOS itself where the model wants one.
                Ok((text, false))
            }
            None => {
                let text: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
                Ok((text.join("\n"), true))
            }
        }
    }

    /// How much text one token can stand for, so that a text's length bounds its token
    /// count from below before it is encoded: see [`TokenSpan`]. Walks the vocabulary: call
    /// it once.
    pub fn token_span(&self) -> Option<TokenSpan> {
        TokenSpan::of(&self.tokenizer)
    }
}
