//! The server's HTTP face: who is served (`access.rs`), routes, CORS, the cross-origin
//! isolation of `--www`, reading a request body within its limits, and error answers.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Version};

use super::api_error::ApiError;
use super::body::ChannelBody;
use super::complete::complete;
use super::listen::READ_TIMEOUT;
use super::openai::Api;
use super::{Shared, site};

/// Largest request body accepted: a prompt filling a 32k context is ~150 KiB of text, and
/// the cap (times [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS)) bounds what clients can make the server buffer. A
/// body announced larger is refused before a byte of it is read.
pub const MAX_BODY_BYTES: usize = 1 << 20;

pub(super) fn response(
    status: StatusCode,
    content_type: &'static str,
    body: ChannelBody,
) -> Response<ChannelBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

pub(super) fn json(status: StatusCode, v: &serde_json::Value) -> Response<ChannelBody> {
    response(status, "application/json", ChannelBody::full(v.to_string()))
}

pub(super) fn error(status: StatusCode, message: &str) -> Response<ChannelBody> {
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        _ => "error",
    };
    refuse(&ApiError::status(status, code, message))
}

pub(super) fn refuse(e: &ApiError) -> Response<ChannelBody> {
    let mut r = json(e.status, &e.body());
    if e.status == StatusCode::PAYLOAD_TOO_LARGE || e.status == StatusCode::REQUEST_TIMEOUT {
        // The rest of the body was never read: the connection cannot carry another request.
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// CORS for a request `access.rs` let through: its Origin echoed (it is this server's own
/// or one the user allowed), preflights answered with what they asked for. Timing-Allow-Origin
/// too: without it the browser zeroes a cross-origin request's Resource Timing phases, and
/// `bench()` warns `timing_opaque` (it cannot tell queueing and connection setup from server
/// latency). `Vary: Origin` always: whether the headers are there depends on it.
fn cors(
    origin: Option<HeaderValue>,
    req_headers: Option<HeaderValue>,
    r: &mut Response<ChannelBody>,
) {
    let h = r.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    let Some(o) = origin else {
        return;
    };
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o.clone());
    h.insert(HeaderName::from_static("timing-allow-origin"), o);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        req_headers.unwrap_or(HeaderValue::from_static("authorization, content-type")),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
}

pub(super) async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<ChannelBody>, Infallible> {
    let http11 = req.version() == Version::HTTP_11;
    let origin = match shared.access.check(req.uri(), req.headers(), http11) {
        Ok(allowed) => allowed.origin,
        // Before anything else, the body unread: a page elsewhere gets nothing served and
        // nothing run, and no CORS header tells its script even that much.
        Err(e) => {
            let mut r = refuse(&e);
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            if shared.site.is_some() {
                site::isolate(r.headers_mut());
            }
            return Ok(r);
        }
    };
    let req_headers = req
        .headers()
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned();
    if let Some(www) = &shared.site {
        let path = req.uri().path();
        if matches!(*req.method(), Method::GET | Method::HEAD) && !site::is_api(path) {
            let r = match www.respond(req.method(), path).await {
                Some(r) => r,
                None => {
                    let mut r = error(StatusCode::NOT_FOUND, "not found");
                    site::isolate(r.headers_mut());
                    r
                }
            };
            return Ok(r);
        }
    }
    let mut r = route(req, &shared).await;
    cors(origin, req_headers, &mut r);
    if shared.site.is_some() {
        site::isolate(r.headers_mut());
    }
    Ok(r)
}

async fn route(req: Request<Incoming>, shared: &Shared) -> Response<ChannelBody> {
    let path = req.uri().path().trim_end_matches('/').to_owned();
    match (req.method(), path.as_str()) {
        (&Method::OPTIONS, _) => {
            response(StatusCode::NO_CONTENT, "text/plain", ChannelBody::full(""))
        }
        (&Method::GET, "/health") => json(StatusCode::OK, &serde_json::json!({"status": "ok"})),
        (&Method::GET, "/v1/models" | "/models") => json(
            StatusCode::OK,
            &serde_json::json!({"object": "list", "data": [{
                "id": shared.model_id, "object": "model", "created": 0, "owned_by": "tpsmeter",
            }]}),
        ),
        (&Method::POST, "/v1/chat/completions" | "/chat/completions") => {
            complete(Api::Chat, req, shared).await
        }
        (&Method::POST, "/v1/completions" | "/completions") => {
            complete(Api::Completions, req, shared).await
        }
        (_, "/health" | "/v1/models" | "/v1/chat/completions" | "/v1/completions") => {
            error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        }
        _ => error(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The request's body, within [`MAX_BODY_BYTES`] and [`READ_TIMEOUT`], if it is JSON (or
/// unlabelled, or `text/plain`: a browser's `fetch` of a string sends that, to skip the
/// CORS preflight).
pub(super) async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
        let mime = ct.to_str().unwrap_or("").split(';').next().unwrap_or("");
        let mime = mime.trim().to_ascii_lowercase();
        let json = mime == "application/json" || mime.ends_with("+json") || mime == "text/plain";
        if !json {
            return Err(ApiError::status(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "the body must be JSON (Content-Type: application/json), not {:?}",
                    ct.to_str().unwrap_or("(not text)")
                ),
            ));
        }
    }
    let too_large = || {
        ApiError::status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is over this server's limit of {MAX_BODY_BYTES} bytes"),
        )
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let read = Limited::new(req.into_body(), MAX_BODY_BYTES).collect();
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::invalid(format!("could not read the body: {e}"))),
        Err(_) => Err(ApiError::status(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the body did not arrive within {} s",
                READ_TIMEOUT.as_secs()
            ),
        )),
    }
}
