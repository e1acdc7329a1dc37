//! Where the CLI's prompt comes from: `--prompt`, `--prompt-file`, `--input-tokens` (text
//! synthesised by `tpsmeter_core::prompt`, shared with the browser), or the default.

use std::path::Path;

use anyhow::{Context, bail};
use tpsmeter_core::prompt;

/// Cap on a prompt file: a prompt is text for one request, not a data set.
const MAX_PROMPT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The prompt of a run: `--prompt`, `--prompt-file`, `--input-tokens`, or the default.
pub fn resolve(
    prompt: Option<&str>,
    file: Option<&Path>,
    input_tokens: Option<u32>,
) -> anyhow::Result<String> {
    if let Some(f) = file.filter(|_| prompt.is_none()) {
        let len = std::fs::metadata(f)
            .with_context(|| format!("read prompt file {}", f.display()))?
            .len();
        if len > MAX_PROMPT_FILE_BYTES {
            bail!(
                "prompt file {} is {len} bytes, over the limit of {MAX_PROMPT_FILE_BYTES}",
                f.display()
            );
        }
        return std::fs::read_to_string(f)
            .with_context(|| format!("read prompt file {} (must be UTF-8)", f.display()));
    }
    prompt::resolve(prompt, input_tokens).context("--input-tokens")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn resolve_prefers_text_then_file_then_synthesis() {
        assert_eq!(resolve(Some("hi"), None, None).unwrap(), "hi");
        assert_eq!(resolve(None, None, Some(3)).unwrap().split(' ').count(), 3);
        assert_eq!(resolve(None, None, None).unwrap(), prompt::DEFAULT_PROMPT);
        assert!(resolve(None, None, Some(0)).is_err());
        assert!(resolve(None, Some(Path::new("/nonexistent/p.txt")), None).is_err());
    }
}
