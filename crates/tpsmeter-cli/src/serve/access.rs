//! Who may use the server: the names it answers to (the `Host` header) and the web pages
//! that may call it (the `Origin` header).
//!
//! A local server is reachable by every page the user opens, two ways:
//! - **DNS rebinding**: a page on `attacker.example` makes its own name resolve to 127.0.0.1,
//!   and its requests then reach this server as same-origin ones, free to read every answer
//!   (the model file included). They still carry `Host: attacker.example`, so the server
//!   answers only names that cannot be rebound: `localhost` and `*.localhost` (browsers
//!   resolve those to loopback themselves), IP addresses (a page whose origin is an IP
//!   address is served by that address: nothing to rebind), the address given to `--host`,
//!   and names given with `--allowed-host`. This is the rule of Vite's and webpack's dev
//!   servers; others get a 403.
//! - **Cross-origin requests**: a page on another origin can send a `text/plain` POST with
//!   no preflight, so the completion would run even though the page could not read it. A
//!   request whose `Origin` the user did not allow (`--allowed-origin`) is refused with a
//!   403 before any work, and no CORS header is ever sent for it. The server's own origin
//!   (the site `--www` serves) is always allowed: its `Origin` is `http://` and the `Host`.
//!   By the Fetch standard a same-origin POST from a page whose referrer policy is
//!   `no-referrer` (ours) carries `Origin: null` instead (Chromium 156 sends the origin;
//!   checked by hand); `null` counts as ours only with the browser's
//!   `Sec-Fetch-Site: same-origin`, a header no page can set.
//!
//! Requests without `Origin` (curl, `tpsmeter bench`, any non-browser client) are not
//! affected by the origin rule.

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{StatusCode, Uri};

use super::api_error::ApiError;

/// What `--allowed-host` and `--allowed-origin` allow, normalised.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Host names (lower case, no port, no trailing dot) answered besides the built-in ones.
    hosts: Vec<String>,
    any_host: bool,
    /// Origins (`scheme://host[:port]`, lower case, default port left out) allowed to call.
    origins: Vec<String>,
    any_origin: bool,
}

/// The CORS answer for an allowed request: the origin to echo, if the request named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub origin: Option<HeaderValue>,
}

impl Access {
    /// From the flags: `hosts` as `--allowed-host` gives them (plus `--host`, the name the
    /// server was asked to listen on), `origins` as `--allowed-origin` does; each already
    /// checked by [`parse_allowed_host`] / [`parse_allowed_origin`].
    pub fn new(hosts: &[String], origins: &[String]) -> Self {
        Self {
            any_host: hosts.iter().any(|h| h == "*"),
            hosts: hosts.iter().filter(|h| *h != "*").cloned().collect(),
            any_origin: origins.iter().any(|o| o == "*"),
            origins: origins.iter().filter(|o| *o != "*").cloned().collect(),
        }
    }

    /// Checks a request's `Host` and `Origin`; the refusal is a 400 (no `Host` on HTTP/1.1)
    /// or a 403 whose message says which flag would allow it.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap, http11: bool) -> Result<Allowed, ApiError> {
        // RFC 9112 §3.2: a request with more than one Host is a 400. Taking one of them would
        // let `Host: localhost` vouch for a second, rebinding `Host: attacker.example` that a
        // proxy in front may have read instead.
        if headers.get_all(header::HOST).iter().nth(1).is_some() {
            return Err(ApiError::invalid(
                "the request has more than one Host header; it must have exactly one",
            )
            .with_code("host_duplicated"));
        }
        // An absolute-form request line (`GET http://name/ HTTP/1.1`) names the host there.
        let host = match uri.authority() {
            Some(a) => Some(a.as_str().to_owned()),
            None => match headers.get(header::HOST) {
                Some(v) => Some(
                    v.to_str()
                        .map_err(|_| host_refused("(not text)"))?
                        .to_owned(),
                ),
                None => None,
            },
        };
        let host = match host {
            Some(h) => {
                let name = host_name(&h).ok_or_else(|| host_refused(&h))?;
                if !self.host_allowed(&name) {
                    return Err(host_refused(&name));
                }
                Some(h.to_ascii_lowercase())
            }
            // HTTP/1.0 had no Host; a browser always sends one, so its absence is no
            // rebinding attack.
            None if http11 => {
                return Err(ApiError::invalid(
                    "an HTTP/1.1 request must name its host (the Host header)",
                )
                .with_code("host_missing"));
            }
            None => None,
        };
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(Allowed { origin: None });
        };
        let text = origin.to_str().unwrap_or("");
        let own = host
            .as_deref()
            .map(|h| format!("http://{}", strip_port(h, "80")));
        let same_site_fetch = headers
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes() == b"same-origin");
        if text == "null" {
            if same_site_fetch || self.origins.iter().any(|o| o == "null") || self.any_origin {
                return Ok(Allowed { origin: None });
            }
            return Err(origin_refused(text));
        }
        let normalised = normalise_origin(text);
        let allowed = self.any_origin
            || normalised.as_ref().is_some_and(|o| {
                own.as_deref() == Some(o.as_str()) || self.origins.iter().any(|a| a == o)
            });
        if allowed {
            Ok(Allowed {
                origin: Some(origin.clone()),
            })
        } else {
            Err(origin_refused(text))
        }
    }

    fn host_allowed(&self, name: &str) -> bool {
        self.any_host
            || name == "localhost"
            || name.ends_with(".localhost")
            || is_ip_literal(name)
            || self.hosts.iter().any(|h| h == name)
    }
}

fn host_refused(name: &str) -> ApiError {
    ApiError::status(
        StatusCode::FORBIDDEN,
        "host_not_allowed",
        format!(
            "this server answers requests addressed to localhost or an IP address, not to \
             {name:?}: a web page can point any name it owns at this machine (DNS rebinding). \
             To serve this name, restart the server with --allowed-host {name}"
        ),
    )
}

fn origin_refused(origin: &str) -> ApiError {
    ApiError::status(
        StatusCode::FORBIDDEN,
        "origin_not_allowed",
        format!(
            "pages on {origin} may not use this server; to let them, restart it with \
             --allowed-origin {origin}"
        ),
    )
}

/// The name in a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`): lower case,
/// without port or trailing dot; `None` when it is not of that shape.
fn host_name(host: &str) -> Option<String> {
    let host = host.trim();
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        (
            format!("[{inside}]"),
            after.strip_prefix(':').or(after.is_empty().then_some("")),
        )
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n.to_owned(), Some(p)),
            None => (host.to_owned(), Some("")),
        }
    };
    let port = port?;
    if !port.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let name = name.strip_suffix('.').unwrap_or(&name).to_ascii_lowercase();
    (!name.is_empty()).then_some(name)
}

/// `127.0.0.1`, `192.168.1.5`, `[::1]`: addresses, not names, so no DNS answer changes
/// where they lead.
fn is_ip_literal(name: &str) -> bool {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

/// `host:port` without `:default`.
fn strip_port<'a>(host: &'a str, default: &str) -> &'a str {
    match host.rsplit_once(':') {
        Some((h, p)) if p == default && (!h.starts_with('[') || h.ends_with(']')) => h,
        _ => host,
    }
}

/// `scheme://host[:port]` in lower case without its scheme's default port; `None` for
/// anything else (a path, a query, no scheme).
fn normalise_origin(origin: &str) -> Option<String> {
    let lower = origin.trim().to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://")?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        || rest.contains(['/', '?', '#', '@'])
    {
        return None;
    }
    host_name(rest)?;
    let default = match scheme {
        "http" | "ws" => "80",
        "https" | "wss" => "443",
        _ => "",
    };
    Some(format!("{scheme}://{}", strip_port(rest, default)))
}

/// `--allowed-host`: a host name or address (no port), or `*` for any.
pub fn parse_allowed_host(s: &str) -> Result<String, String> {
    if s == "*" {
        return Ok(s.to_owned());
    }
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    let v6 = s.starts_with('[') && s.ends_with(']') && is_ip_literal(s);
    match host_name(s) {
        Some(name) if plain || v6 => Ok(name),
        _ => Err(format!(
            "{s:?} is not a host name (give it without scheme or port: --allowed-host my-pc.lan)"
        )),
    }
}

/// `--allowed-origin`: `scheme://host[:port]` as a browser sends it, `null` (sandboxed
/// frames, `file:` pages), or `*` for any.
pub fn parse_allowed_origin(s: &str) -> Result<String, String> {
    if s == "*" || s == "null" {
        return Ok(s.to_owned());
    }
    normalise_origin(s).ok_or_else(|| {
        format!(
            "{s:?} is not an origin: give scheme, host and port only, as in \
             https://example.com or http://127.0.0.1:5173"
        )
    })
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
