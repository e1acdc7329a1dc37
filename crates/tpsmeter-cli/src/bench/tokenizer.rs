//! `--tokenizer`: finding and loading the model's tokenizer, which counts input tokens
//! exactly and output tokens when a server sends no usage.
//!
//! The argument is a file (a `tokenizer.json`, or a GGUF whose header carries the
//! vocabulary) or a Hugging Face model id (`ORG/NAME`) found in the local Hugging Face cache,
//! where `huggingface-cli download` and every `transformers` program put it. Nothing is
//! downloaded: a benchmark run should not depend on a hub being reachable, and a gated
//! model's tokenizer needs the user's own token. A `tokenizer.json`'s regexes are vetted
//! before they run (`tpsmeter_model::tokenizer::vet_pattern`): one that could pin the CPU is
//! refused with the pattern and where it is in the file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tpsmeter_model::ModelError;

use anyhow::{Context, bail};
use tpsmeter_core::tokens::TokenCounter;
use tpsmeter_model::tokenizer::{MAX_TOKENIZER_JSON_BYTES, Tokenizer, count_budget_ms, is_gguf};

/// Cap on a `tokenizer.json`: the engine's, checked here before the file is read.
const MAX_JSON_BYTES: u64 = MAX_TOKENIZER_JSON_BYTES as u64;
/// Cap on the part of a GGUF read for its header (a 256k vocabulary's header is ~10 MB).
const MAX_GGUF_HEADER_BYTES: u64 = 256 << 20;

/// A loaded tokenizer and the name the report gives it.
#[derive(Debug)]
pub struct CliTokenizer {
    tokenizer: Tokenizer,
    name: String,
    /// Set once a count has gone over its time budget: every later count fails at once
    /// instead of paying that time again (a run's answers are alike, so the next would be
    /// as slow).
    too_slow: AtomicBool,
}

impl TokenCounter for CliTokenizer {
    /// The tokenizer's count within its time budget ([`count_budget_ms`]).
    fn count(&self, text: &str) -> tpsmeter_core::Result<u32> {
        let bad = |reason: String| tpsmeter_core::CoreError::InvalidSpec {
            what: "tokenizer",
            input: self.name.clone(),
            reason,
        };
        if self.too_slow.load(Ordering::Relaxed) {
            return Err(bad(
                "an earlier count went over its time budget, so this one was not tried".into(),
            ));
        }
        let start = Instant::now();
        let mut now_ms = || start.elapsed().as_secs_f64() * 1000.0;
        let counted = self
            .tokenizer
            .count_within(text, count_budget_ms(text.len()), &mut now_ms);
        if matches!(counted, Err(ModelError::CountTooSlow { .. })) {
            self.too_slow.store(true, Ordering::Relaxed);
        }
        counted.map_err(|e| bad(e.to_string()))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// Loads the tokenizer `arg` names (see the module docs).
pub fn load(arg: &str) -> anyhow::Result<CliTokenizer> {
    load_with(arg, &hf_cache_dirs())
}

/// [`load`], looking for model ids in the Hugging Face caches `caches`.
pub fn load_with(arg: &str, caches: &[PathBuf]) -> anyhow::Result<CliTokenizer> {
    let path = Path::new(arg);
    let file = if path.is_file() {
        path.to_path_buf()
    } else if let Some(found) = hf_cache_lookup(caches, arg) {
        found
    } else {
        bail!(
            "--tokenizer {arg}: no such file, and no tokenizer.json for a model {arg:?} in the \
             Hugging Face cache (looked in {}); download it with `huggingface-cli download \
             {arg} tokenizer.json`, or pass a tokenizer.json or GGUF path",
            caches
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let tokenizer = read(&file).with_context(|| format!("--tokenizer {}", file.display()))?;
    Ok(CliTokenizer {
        tokenizer,
        name: arg.to_owned(),
        too_slow: AtomicBool::new(false),
    })
}

/// Reads a tokenizer file: a GGUF's header only (growing the read until the header is
/// whole), a `tokenizer.json` whole.
fn read(file: &Path) -> anyhow::Result<Tokenizer> {
    let mut f = std::fs::File::open(file)?;
    let len = f.metadata()?.len();
    let mut bytes = Vec::new();
    (&mut f).take(4).read_to_end(&mut bytes)?;
    if !is_gguf(&bytes) {
        if len > MAX_JSON_BYTES {
            bail!("{len} bytes, over the {MAX_JSON_BYTES}-byte limit of a tokenizer.json");
        }
        f.read_to_end(&mut bytes)?;
        return Ok(Tokenizer::from_file_bytes(&bytes)?);
    }
    let mut want: u64 = 16 << 20;
    loop {
        let have = bytes.len() as u64;
        (&mut f)
            .take(want.saturating_sub(have))
            .read_to_end(&mut bytes)?;
        match Tokenizer::from_file_bytes(&bytes) {
            Err(ModelError::Truncated { .. })
                if (bytes.len() as u64) < len && want < MAX_GGUF_HEADER_BYTES =>
            {
                want = (want * 4).min(MAX_GGUF_HEADER_BYTES);
            }
            r => return Ok(r?),
        }
    }
}

/// Where the Hugging Face cache lives, in the order `huggingface_hub` looks.
fn hf_cache_dirs() -> Vec<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("HF_HUB_CACHE").or_else(|| env("HUGGINGFACE_HUB_CACHE")) {
        return vec![d];
    }
    if let Some(h) = env("HF_HOME") {
        return vec![h.join("hub")];
    }
    let cache = env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|h| h.join(".cache")));
    cache
        .map(|c| vec![c.join("huggingface").join("hub")])
        .unwrap_or_default()
}

/// `tokenizer.json` of model `id` (`ORG/NAME`) in the cache: the snapshot `refs/main`
/// names, else any snapshot that has one.
fn hf_cache_lookup(caches: &[PathBuf], id: &str) -> Option<PathBuf> {
    let valid = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let (org, name) = id.split_once('/')?;
    if !valid(org) || !valid(name) {
        return None;
    }
    for cache in caches {
        let repo = cache.join(format!("models--{org}--{name}"));
        if !repo.is_dir() {
            continue;
        }
        let snapshots = repo.join("snapshots");
        if let Ok(rev) = std::fs::read_to_string(repo.join("refs").join("main")) {
            let rev = rev.trim();
            if valid(rev) {
                let file = snapshots.join(rev).join("tokenizer.json");
                if file.is_file() {
                    return Some(file);
                }
            }
        }
        let Ok(entries) = std::fs::read_dir(&snapshots) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("tokenizer.json"))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        if let Some(f) = found.pop() {
            return Some(f);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn model_ids_are_checked_before_they_become_paths() {
        let caches = [std::env::temp_dir()];
        assert_eq!(hf_cache_lookup(&caches, "../etc"), None);
        assert_eq!(hf_cache_lookup(&caches, "a/../b"), None);
        assert_eq!(hf_cache_lookup(&caches, "noslash"), None);
        let e = load_with("nobody/no-such-model-xyz", &caches)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Hugging Face cache"), "{e}");
    }
}
