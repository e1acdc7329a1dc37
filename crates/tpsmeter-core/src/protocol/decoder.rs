//! [`Decoder`]: one API's protocol adapter, chosen by the caller.
//!
//! [`Decoder::new`] links every adapter (the CLI and the benchmark build decode all APIs).
//! The per-family constructors link only their own, so a build that names one family (the
//! real-user meter's wasm, a module per wire family) carries that family's code alone: the
//! adapters are most of that module, and an app's users download it.

use super::Adapter;
use super::anthropic::Anthropic;
use super::gemini::Gemini;
use super::ollama::Ollama;
use super::openai_chat::OpenaiChat;
use super::openai_completions::OpenaiCompletions;
use super::openai_responses::OpenaiResponses;
use super::vercel_ui::VercelUi;
use crate::api::Api;

/// The adapters, one per wire family; [`Api::family`] says which an API speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// OpenAI chat-completion chunks: `openai-chat` and `local`.
    OpenaiChat,
    /// OpenAI legacy completion chunks.
    OpenaiCompletions,
    /// OpenAI Responses' named events.
    OpenaiResponses,
    /// Anthropic Messages' events.
    Anthropic,
    /// Gemini's `GenerateContentResponse` stream.
    Gemini,
    /// Ollama's NDJSON lines: `ollama-chat` and `ollama-generate`.
    Ollama,
    /// The Vercel AI SDK's UI message stream.
    VercelUi,
}

impl Api {
    /// The wire family whose adapter decodes this API's stream.
    pub fn family(self) -> Family {
        match self {
            Api::OpenaiChat | Api::Local => Family::OpenaiChat,
            Api::OpenaiCompletions => Family::OpenaiCompletions,
            Api::OpenaiResponses => Family::OpenaiResponses,
            Api::Anthropic => Family::Anthropic,
            Api::Gemini => Family::Gemini,
            Api::OllamaChat | Api::OllamaGenerate => Family::Ollama,
            Api::VercelUi => Family::VercelUi,
        }
    }
}

/// One API's protocol adapter, for [`crate::StreamParser::with_decoder`] and
/// [`crate::Exchange::with_decoder`].
pub struct Decoder {
    pub(crate) api: Api,
    pub(crate) adapter: Box<dyn Adapter>,
}

/// By hand: an adapter's `Debug` stays out of its vtable (see `StreamParser`'s).
impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

impl Decoder {
    /// The decoder for `api`, from every family's code.
    pub fn new(api: Api) -> Decoder {
        match api.family() {
            Family::OpenaiChat => Self::of(api, OpenaiChat),
            Family::OpenaiCompletions => Self::of(api, OpenaiCompletions),
            Family::OpenaiResponses => Self::of(api, OpenaiResponses),
            Family::Anthropic => Self::of(api, Anthropic),
            Family::Gemini => Self::of(api, Gemini::default()),
            Family::Ollama => Self::of(api, Ollama::default()),
            Family::VercelUi => Self::of(api, VercelUi::default()),
        }
    }

    /// `api`'s decoder if it speaks OpenAI chat-completion chunks.
    pub fn openai_chat(api: Api) -> Option<Decoder> {
        Self::only(api, Family::OpenaiChat, OpenaiChat)
    }

    /// `api`'s decoder if it speaks OpenAI legacy completion chunks.
    pub fn openai_completions(api: Api) -> Option<Decoder> {
        Self::only(api, Family::OpenaiCompletions, OpenaiCompletions)
    }

    /// `api`'s decoder if it speaks OpenAI Responses' events.
    pub fn openai_responses(api: Api) -> Option<Decoder> {
        Self::only(api, Family::OpenaiResponses, OpenaiResponses)
    }

    /// `api`'s decoder if it speaks Anthropic Messages' events.
    pub fn anthropic(api: Api) -> Option<Decoder> {
        Self::only(api, Family::Anthropic, Anthropic)
    }

    /// `api`'s decoder if it speaks Gemini's stream.
    pub fn gemini(api: Api) -> Option<Decoder> {
        Self::only(api, Family::Gemini, Gemini::default())
    }

    /// `api`'s decoder if it speaks Ollama's NDJSON.
    pub fn ollama(api: Api) -> Option<Decoder> {
        Self::only(api, Family::Ollama, Ollama::default())
    }

    /// `api`'s decoder if it speaks the Vercel AI SDK's UI message stream.
    pub fn vercel_ui(api: Api) -> Option<Decoder> {
        Self::only(api, Family::VercelUi, VercelUi::default())
    }

    /// The API this decoder reads.
    pub fn api(&self) -> Api {
        self.api
    }

    fn only(api: Api, family: Family, adapter: impl Adapter + 'static) -> Option<Decoder> {
        (api.family() == family).then(|| Self::of(api, adapter))
    }

    fn of(api: Api, adapter: impl Adapter + 'static) -> Decoder {
        Decoder {
            api,
            adapter: Box::new(adapter),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Constructor = fn(Api) -> Option<Decoder>;

    /// Each API has exactly one family constructor, the one its `family()` names.
    #[test]
    fn every_api_has_one_family_constructor() {
        let constructors: [(Family, Constructor); 7] = [
            (Family::OpenaiChat, Decoder::openai_chat),
            (Family::OpenaiCompletions, Decoder::openai_completions),
            (Family::OpenaiResponses, Decoder::openai_responses),
            (Family::Anthropic, Decoder::anthropic),
            (Family::Gemini, Decoder::gemini),
            (Family::Ollama, Decoder::ollama),
            (Family::VercelUi, Decoder::vercel_ui),
        ];
        for api in Api::ALL.into_iter().chain([Api::Local]) {
            let matched: Vec<Family> = constructors
                .iter()
                .filter_map(|(family, make)| make(api).map(|d| (*family, d)))
                .map(|(family, d)| {
                    assert_eq!(d.api(), api);
                    family
                })
                .collect();
            assert_eq!(matched, vec![api.family()], "{api}");
        }
    }
}
