//! Named workloads: sets of options that mirror the input and output sizes of published
//! benchmarks, so a run says in one word what it measured and the report records it.
//!
//! | name       | input tokens      | output tokens | mirrors                                        |
//! |------------|-------------------|---------------|------------------------------------------------|
//! | `chat`     | 128               | 256           | a short chat turn                              |
//! | `rag-1k`   | 1,000             | 256           | Artificial Analysis's 1k-token input           |
//! | `long-10k` | 10,000            | 256           | Artificial Analysis's 10k-token input          |
//! | `llmperf`  | 550 (stdev 150)   | 150           | LLMPerf's defaults (`--mean-input-tokens 550 --stddev-input-tokens 150 --mean-output-tokens 150`) |
//!
//! Input is synthesised (see the `synth` module): exact with a tokenizer, estimated without.
//! Output is the `max_tokens` cap: a server that stops early (end of sequence) sends less,
//! which `ignore_eos` prevents where a server supports it. LLMPerf also draws output lengths
//! (stdev 10); tpsmeter keeps the cap fixed at the mean, and says so here.
//!
//! A workload fixes the input: it conflicts with a prompt or an input length of the user's
//! own. An output cap the user gives explicitly wins over the workload's.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// A named workload (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    Chat,
    #[serde(rename = "rag-1k")]
    Rag1k,
    #[serde(rename = "long-10k")]
    Long10k,
    Llmperf,
}

/// What a workload sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub input_tokens: u32,
    pub input_tokens_stdev: Option<u32>,
    pub max_tokens: u32,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::Chat,
        Workload::Rag1k,
        Workload::Long10k,
        Workload::Llmperf,
    ];

    /// The CLI's and the browser's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Chat => "chat",
            Workload::Rag1k => "rag-1k",
            Workload::Long10k => "long-10k",
            Workload::Llmperf => "llmperf",
        }
    }

    pub fn parse(s: &str) -> Result<Workload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| CoreError::InvalidSpec {
                what: "workload",
                input: s.chars().take(40).collect(),
                reason: format!(
                    "must be one of {}",
                    Workload::ALL.map(Workload::name).join(", ")
                ),
            })
    }

    pub fn shape(self) -> Shape {
        let fixed = |input_tokens, max_tokens| Shape {
            input_tokens,
            input_tokens_stdev: None,
            max_tokens,
        };
        match self {
            Workload::Chat => fixed(128, 256),
            Workload::Rag1k => fixed(1_000, 256),
            Workload::Long10k => fixed(10_000, 256),
            Workload::Llmperf => Shape {
                input_tokens: 550,
                input_tokens_stdev: Some(150),
                max_tokens: 150,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_choices() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.name()).unwrap(), w);
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{}\"", w.name()));
        }
        let e = Workload::parse("huge").unwrap_err().to_string();
        assert!(e.contains("rag-1k") && e.contains("llmperf"), "{e}");
        assert_eq!(Workload::Llmperf.shape().input_tokens_stdev, Some(150));
    }
}
