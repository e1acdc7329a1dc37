//! [`CacheBust`]: whether each request's prompt is made unique, so that no server answers it
//! from a prompt cache (the marks themselves are made by `prompts`).

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// How the prompts of a run differ from one another.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CacheBust {
    /// Each prompt starts with a mark unique to its request (the default).
    #[default]
    Prefix,
    /// Every request sends the same prompt.
    Off,
}

impl CacheBust {
    /// The CLI's and the browser's spelling: `prefix` or `off`.
    pub fn parse(s: &str) -> Result<CacheBust> {
        match s {
            "prefix" | "on" => Ok(CacheBust::Prefix),
            "off" => Ok(CacheBust::Off),
            other => Err(CoreError::InvalidSpec {
                what: "cache bust",
                input: other.chars().take(40).collect(),
                reason: "must be prefix (a unique mark per request) or off".into(),
            }),
        }
    }
}
