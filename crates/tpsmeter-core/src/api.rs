//! The remote APIs tpsmeter can measure.

use serde::{Deserialize, Serialize};

/// A streaming LLM API wire format. The kebab-case names are the CLI's `--api` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI `/v1/chat/completions` (and every server that copies it: vLLM, llama.cpp, ...).
    OpenaiChat,
    /// OpenAI legacy `/v1/completions`.
    OpenaiCompletions,
    /// OpenAI `/v1/responses` with named SSE events.
    OpenaiResponses,
    /// Anthropic `/v1/messages`.
    Anthropic,
    /// Google Gemini `:streamGenerateContent?alt=sse`.
    Gemini,
    /// Ollama native `/api/chat` (NDJSON).
    OllamaChat,
    /// Ollama native `/api/generate` (NDJSON).
    OllamaGenerate,
    /// Vercel AI SDK (v5) UI message stream, as a web app's own chat route returns it to
    /// `useChat` (`x-vercel-ai-ui-message-stream: v1`). The URL is the app's endpoint, used
    /// as given.
    VercelUi,
    /// The local engine of the npm package (`tpsmeter/engine`): a model running on this
    /// machine's GPU, in the page's Worker, reached without a network. Its stream is OpenAI
    /// chat-completion chunks, so it is parsed as `openai-chat`; the URL is not used. Only
    /// the browser's `bench()` can drive it (natively, `tpsmeter run` measures the engine).
    Local,
}

impl Api {
    /// Every remote API (each a wire format over HTTP), in a stable order (for help texts
    /// and exhaustive tests). [`Api::Local`] is not among them.
    pub const ALL: [Api; 8] = [
        Api::OpenaiChat,
        Api::OpenaiCompletions,
        Api::OpenaiResponses,
        Api::Anthropic,
        Api::Gemini,
        Api::OllamaChat,
        Api::OllamaGenerate,
        Api::VercelUi,
    ];

    /// The CLI / report name.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenaiChat => "openai-chat",
            Api::OpenaiCompletions => "openai-completions",
            Api::OpenaiResponses => "openai-responses",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
            Api::OllamaChat => "ollama-chat",
            Api::OllamaGenerate => "ollama-generate",
            Api::VercelUi => "vercel-ui",
            Api::Local => "local",
        }
    }

    /// Parses a CLI name. `ollama` alone means `/api/chat`.
    pub fn from_name(name: &str) -> Option<Api> {
        if name == "ollama" {
            return Some(Api::OllamaChat);
        }
        if name == "local" {
            return Some(Api::Local);
        }
        Api::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether requests go over HTTP (every API but [`Api::Local`]).
    pub fn is_remote(self) -> bool {
        self != Api::Local
    }

    /// Whether the stream is NDJSON (Ollama) rather than server-sent events.
    pub fn is_ndjson(self) -> bool {
        matches!(self, Api::OllamaChat | Api::OllamaGenerate)
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
