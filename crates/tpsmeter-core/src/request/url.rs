//! Endpoint URLs from a user's base URL.
//!
//! The rule (the same for every API): trailing `/`s are ignored; if the base already ends
//! with a version segment the API uses (`/v1` for OpenAI and Anthropic, `/v1beta`, `/v1` or
//! `/v1alpha` for Gemini, `/api` for Ollama) it is kept, otherwise the API's default version
//! segment is appended; then the endpoint path follows. So `http://host:8080`,
//! `http://host:8080/` and `http://host:8080/v1/` all give
//! `http://host:8080/v1/chat/completions`. A base that already ends with the full endpoint
//! path is used as is. For Ollama a base ending in `/v1` (its OpenAI-compatible prefix) has
//! the `/v1` replaced by `/api`.
//!
//! Query strings and fragments are rejected (keys never go in URLs; Gemini's goes in a
//! header). Error messages do not quote the URL, in case a user pasted a key into it.

use crate::error::{CoreError, Result};

/// Checks the scheme and shape of `base` and returns it without trailing `/`s.
pub(crate) fn normalise_base(base: &str) -> Result<&str> {
    let base = base.trim().trim_end_matches('/');
    let rest = base
        .strip_prefix("http://")
        .or_else(|| base.strip_prefix("https://"))
        .ok_or_else(|| invalid("the base URL must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(invalid("the base URL has no host"));
    }
    if rest.contains(['?', '#']) {
        return Err(invalid(
            "the base URL must not have a query or fragment (keys go in headers)",
        ));
    }
    if rest.contains(char::is_whitespace) {
        return Err(invalid("the base URL contains whitespace"));
    }
    Ok(base)
}

/// `base` + version segment (kept if present, else `default_version`) + `endpoint`.
/// `versions` lists the segments that count as already present.
pub(crate) fn endpoint(
    base: &str,
    versions: &[&str],
    default_version: &str,
    endpoint: &str,
) -> Result<String> {
    let base = normalise_base(base)?;
    if base.ends_with(&format!("{default_version}{endpoint}")) {
        return Ok(base.to_owned());
    }
    if versions.iter().any(|v| base.ends_with(v)) {
        Ok(format!("{base}{endpoint}"))
    } else {
        Ok(format!("{base}{default_version}{endpoint}"))
    }
}

fn invalid(reason: &str) -> CoreError {
    CoreError::InvalidRequest(reason.to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn chat(base: &str) -> String {
        endpoint(base, &["/v1"], "/v1", "/chat/completions").unwrap()
    }

    #[test]
    fn trailing_slash_and_v1_are_both_accepted() {
        let want = "http://h:8080/v1/chat/completions";
        for base in [
            "http://h:8080",
            "http://h:8080/",
            "http://h:8080/v1",
            "http://h:8080/v1/",
            "http://h:8080/v1/chat/completions",
        ] {
            assert_eq!(chat(base), want, "base {base}");
        }
    }

    #[test]
    fn path_prefixes_are_kept() {
        assert_eq!(
            chat("https://proxy.example/openai"),
            "https://proxy.example/openai/v1/chat/completions"
        );
    }

    #[test]
    fn bad_bases_are_rejected_without_quoting_them() {
        for base in [
            "ftp://h",
            "h:8080",
            "http://",
            "http:///x",
            "http://h/?key=sk-1",
        ] {
            let err = normalise_base(base).unwrap_err();
            assert!(!err.to_string().contains("sk-1"));
        }
    }
}
