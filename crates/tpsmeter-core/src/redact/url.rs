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

/// The credentials [`redact_url`] removes from `url`, for a [`Redactor`](super::Redactor) to
/// look for in what a server sends back: the userinfo (`user:pass`) and the values of
/// secret-looking query parameters, each as written and percent-decoded, and the userinfo as
/// an HTTP client sends it in basic auth (`user:pass` decoded; `user:` with no password).
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let url = url.split('#').next().unwrap_or_default();
    let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut out = Vec::new();
    if let Some(i) = authority.rfind('@') {
        let userinfo = &authority[..i];
        push_both(&mut out, userinfo);
        // What basic auth encodes: each part decoded on its own (a `%3A` in the user name
        // is not the separator).
        let basic = match userinfo.split_once(':') {
            Some((user, password)) => {
                push_both(&mut out, password);
                format!("{}:{}", percent_decoded(user), percent_decoded(password))
            }
            None => format!("{}:", percent_decoded(userinfo)),
        };
        out.push(basic);
    }
    if let Some((_, query)) = tail.split_once('?') {
        for p in query.split('&') {
            if let Some((name, value)) = p.split_once('=') {
                if is_secret_param(name) {
                    push_both(&mut out, value);
                }
            }
        }
    }
    out
}

/// `raw`, and `raw` percent-decoded when that differs.
fn push_both(out: &mut Vec<String>, raw: &str) {
    let decoded = percent_decoded(raw);
    if decoded != raw {
        out.push(decoded);
    }
    out.push(raw.to_owned());
}

/// `s` with its `%XX` escapes decoded (lossy UTF-8; a `%` not followed by two hex digits
/// kept as is), as a URL parser reads userinfo and query values.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                // Two hex digits: at most 255.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

    #[test]
    fn url_secrets_include_the_basic_auth_form() {
        let s = url_secrets("http://us%40er:p%2Fss-word@h/v1?alt=sse&key=k%3D1");
        for want in [
            "us%40er:p%2Fss-word",
            "p%2Fss-word",
            "p/ss-word",
            "us@er:p/ss-word",
            "k%3D1",
            "k=1",
        ] {
            assert!(s.iter().any(|x| x == want), "{want} not in {s:?}");
        }
        assert!(url_secrets("http://only-a-user@h").contains(&"only-a-user:".to_owned()));
        assert_eq!(percent_decoded("100%-%zz%4"), "100%-%zz%4");
    }
}
