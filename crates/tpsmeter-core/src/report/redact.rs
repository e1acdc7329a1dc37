//! Removing credentials from URLs before they reach a report, a log or an error message.
//!
//! Hand-written rather than with the `url` crate: we only need to cut three spans (userinfo,
//! secret-looking query parameters, fragment) and must never fail, even on a URL `url` would
//! reject; a parse error there would tempt a caller to fall back to the raw string.

use serde::{Deserialize, Deserializer, Serialize};

/// Query parameter names (lower-cased, `-` read as `_`) that carry credentials. Gemini takes
/// its key as `?key=`, Azure SAS URLs as `sig=`; names ending in `key`, `token`, `secret`,
/// `password` or `signature` are removed as well.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "auth",
    "authorization",
    "code",
    "credential",
    "credentials",
    "passwd",
    "pwd",
    "session",
    "sessionid",
    "sig",
];
const SECRET_SUFFIXES: &[&str] = &["key", "token", "secret", "password", "signature"];

/// `url` without userinfo (`user:pass@`), without query parameters whose name looks like a
/// credential, and without a fragment. Other query parameters (`alt=sse`) are kept.
/// Never fails: input that is not a URL is treated the same way, span by span.
pub fn redact_url(url: &str) -> String {
    let url = url.split('#').next().unwrap_or_default();
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    out.push_str(host);
    out.push_str(path);
    if let Some(query) = query {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter(|p| !is_secret_param(p.split('=').next().unwrap_or_default()))
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
    }
    out
}

/// The credentials [`redact_url`] removes from `url`: the userinfo (`user:pass`) and the
/// values of secret-looking query parameters, for a [`crate::request::Redactor`] to look for
/// in what a server sends back.
pub(crate) fn url_secrets(url: &str) -> Vec<&str> {
    let url = url.split('#').next().unwrap_or_default();
    let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut out = Vec::new();
    if let Some(i) = authority.rfind('@') {
        let userinfo = &authority[..i];
        out.push(userinfo);
        if let Some((_, password)) = userinfo.split_once(':') {
            out.push(password);
        }
    }
    if let Some((_, query)) = tail.split_once('?') {
        for p in query.split('&') {
            if let Some((name, value)) = p.split_once('=') {
                if is_secret_param(name) {
                    out.push(value);
                }
            }
        }
    }
    out
}

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    SECRET_PARAMS.contains(&name.as_str()) || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// A URL that has been through [`redact_url`]. The only way to build one, and the only URL
/// type a report holds, so no code path can put a raw URL into a report. Deserialising one
/// redacts again, so a hand-edited report cannot smuggle a key back in either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct RedactedUrl(String);

impl RedactedUrl {
    pub fn new(raw: &str) -> RedactedUrl {
        RedactedUrl(redact_url(raw))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RedactedUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Ok(RedactedUrl::new(&raw))
    }
}

impl std::fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_userinfo_key_params_and_fragment() {
        assert_eq!(
            redact_url(
                "https://u:p%40ss@gen.example.com:8443/v1beta/models/x:streamGenerateContent?alt=sse&key=AIzaSECRET#frag"
            ),
            "https://gen.example.com:8443/v1beta/models/x:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            redact_url("http://h/v1?API-Key=s1&x=1&access_token=s2&sig=s3"),
            "http://h/v1?x=1"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(redact_url("user:pw@host?token=t"), "host");
    }
}
