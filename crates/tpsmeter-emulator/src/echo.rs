//! `/echo-key` ([`crate::Overrides`]): the emulator as a careless or hostile server that
//! quotes the credential it was sent back in its errors, so tests can check that a client
//! keeps every echo out of what it stores and prints.

use hyper::HeaderMap;

/// The credential a request carried: the `Authorization` value (`Bearer <key>`), Anthropic's
/// `x-api-key`, Gemini's `x-goog-api-key`, Azure's `api-key`, or a `key=` query value.
pub fn credential(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    for name in ["authorization", "x-api-key", "x-goog-api-key", "api-key"] {
        if let Some(v) = headers.get(name).and_then(|v| v.to_str().ok()) {
            return Some(v.to_owned());
        }
    }
    query?
        .split('&')
        .find_map(|p| p.strip_prefix("key="))
        .map(str::to_owned)
}

/// The bare key of a credential (`Bearer ` taken off).
fn bare(credential: &str) -> &str {
    credential
        .strip_prefix("Bearer ")
        .unwrap_or(credential)
        .trim()
}

/// What an echoing server's error says: the credential verbatim, its first 12 characters
/// masked as OpenAI does, and URL-encoded as a quoted request line would show it.
pub fn message(credential: &str) -> String {
    let key = bare(credential);
    let prefix: String = key.chars().take(12).collect();
    format!(
        "Invalid API key provided: {credential}. Your key starts with {prefix}****. Request: GET /v1/models?key={}",
        percent_encoded(key)
    )
}

/// The value the `Retry-After` header of an echoing 429 carries.
pub fn header_value(credential: &str) -> String {
    format!("Bearer {}", bare(credential))
}

fn percent_encoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_credential_is_found_wherever_the_api_puts_it() {
        let mut h = HeaderMap::new();
        assert_eq!(
            credential(&h, Some("alt=sse&key=k%2F1")),
            Some("k%2F1".into())
        );
        h.insert("x-goog-api-key", "g-key".parse().unwrap());
        assert_eq!(credential(&h, None), Some("g-key".into()));
        h.insert("authorization", "Bearer sk-1".parse().unwrap());
        assert_eq!(credential(&h, None), Some("Bearer sk-1".into()));
        let m = message("Bearer sk-abc/def+ghi=jkl");
        assert!(m.contains("Bearer sk-abc/def+ghi=jkl"), "{m}");
        assert!(m.contains("sk-abc/def+g****"), "{m}");
        assert!(m.contains("sk-abc%2Fdef%2Bghi%3Djkl"), "{m}");
    }
}
