//! The headers that let a web page on any origin use the emulator: CORS for `fetch`,
//! `Timing-Allow-Origin` so Resource Timing (`responseStart`, `nextHopProtocol`, ...) is not
//! zeroed cross-origin, and `Cross-Origin-Resource-Policy` so a cross-origin-isolated page
//! (COOP + COEP `require-corp`, the setting that gives `performance.now()` 5 µs resolution)
//! may load the responses at all.

use hyper::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    HeaderMap, HeaderValue,
};

/// Cap on the `Access-Control-Request-Headers` value echoed back: real lists are a few
/// names long; a longer one is answered with `FALLBACK_ALLOW_HEADERS` instead of being
/// copied into every preflight answer.
pub const MAX_ECHOED_HEADERS_BYTES: usize = 1024;

/// Allowed request headers when the request's list is over the cap: `*` covers every name for
/// requests without credentials except `Authorization`, which must be named.
const FALLBACK_ALLOW_HEADERS: &str = "*, authorization";

/// Response headers a page may read: `Retry-After` for 429 handling, the UI-stream marker,
/// and the emulator's request id (to match a page's measurement with a server record).
const EXPOSE_HEADERS: &str = "Retry-After, x-vercel-ai-ui-message-stream, x-emulator-request-id";

/// How long a browser may cache a preflight answer, in seconds.
const MAX_AGE_S: &str = "600";

/// Adds the headers every response carries when CORS is on.
pub fn add_response_headers(h: &mut HeaderMap) {
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    h.insert("timing-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("cross-origin"),
    );
}

/// Adds the headers of a preflight answer: the methods, the request's own header list
/// echoed (within [`MAX_ECHOED_HEADERS_BYTES`]) and the cache lifetime.
pub fn add_preflight_headers(request: &HeaderMap, h: &mut HeaderMap) {
    add_response_headers(h);
    h.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, GET, OPTIONS"),
    );
    if let Some(asked) = request.get(ACCESS_CONTROL_REQUEST_HEADERS) {
        let allow = if asked.len() <= MAX_ECHOED_HEADERS_BYTES {
            asked.clone()
        } else {
            HeaderValue::from_static(FALLBACK_ALLOW_HEADERS)
        };
        h.insert(ACCESS_CONTROL_ALLOW_HEADERS, allow);
    }
    h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE_S));
}
