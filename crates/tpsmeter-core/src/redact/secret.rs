//! API keys that never print.

/// An API key. `Debug` and `Display` print `<redacted>`; only [`Secret::expose`] reveals it,
/// so a key cannot reach a log, a report or an error message by accident. It deliberately
/// implements no `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The key itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

/// An HTTP header value; `Sensitive` ones carry a secret and are redacted in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub enum HeaderValue {
    Plain(String),
    Sensitive(Secret),
}

impl HeaderValue {
    /// The value to put on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            HeaderValue::Plain(v) => v,
            HeaderValue::Sensitive(s) => s.expose(),
        }
    }

    /// Whether the value carries a secret (HTTP clients should mark it sensitive, e.g.
    /// `http::HeaderValue::set_sensitive`, so it is left out of their logs too).
    pub fn is_sensitive(&self) -> bool {
        matches!(self, HeaderValue::Sensitive(_))
    }
}

impl std::fmt::Debug for HeaderValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderValue::Plain(v) => std::fmt::Debug::fmt(v, f),
            HeaderValue::Sensitive(_) => f.write_str("<redacted>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("sk-live-123");
        assert_eq!(
            format!("{s:?} {s} {:?}", HeaderValue::Sensitive(s.clone())),
            "<redacted> <redacted> <redacted>"
        );
        assert_eq!(s.expose(), "sk-live-123");
    }
}
