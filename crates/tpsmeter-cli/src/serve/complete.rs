//! A completion request, from its body to its answer: parse, encode the prompt off the async
//! threads (one encode per core at once, within the bounds of `encode.rs`), queue the job on
//! the GPU worker, then stream its events as SSE (or collect them for a non-streamed
//! answer).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};

use super::Shared;
use super::api_error::ApiError;
use super::body::ChannelBody;
use super::http::{error, json, read_body, refuse, response};
use super::openai::{self, Api, Meta, SSE_DONE, sse};
use super::worker::{Event, Job, check_prompt_length, encode_prompt};
use super::write_timeout::WriteStall;

/// A stream whose connection has had a write waiting this long (its client does not read)
/// stops generating, and its slot goes to the next request: a client that holds a slot
/// must read. Short next to the connection's own [`super::listen::WRITE_TIMEOUT`] (30 s),
/// which then closes it; long next to any wait a reading client causes, as a stream's
/// pieces are small and a live client's socket drains in milliseconds.
pub const STREAM_STALL: Duration = Duration::from_secs(2);

pub(super) async fn complete(
    api: Api,
    req: Request<Incoming>,
    shared: &Shared,
) -> Response<ChannelBody> {
    // Set by the connection loop; absent only where a test calls this directly.
    let stall = req.extensions().get::<Arc<WriteStall>>().cloned();
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return refuse(&e),
    };
    let parsed = match openai::parse(api, &body) {
        Ok(p) => p,
        Err(e) => return refuse(&e),
    };
    drop(body);
    let context = shared.worker.context;
    let span = shared.worker.span.clone();
    let prompt = parsed.prompt;
    let now = parsed.now_unix_seconds;
    // Refused by its length, it waits for no encode slot.
    if let Err(e) = check_prompt_length(&prompt, context, span.as_deref()) {
        return refuse(&e);
    }
    // One encode per core at once: each holds memory 100 to 400 times its text (bounded
    // by `encode.rs`), and the blocking pool would otherwise run one per connection.
    let Ok(permit) = shared.encodes.clone().acquire_owned().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    // Encoding runs off the async threads (a long prompt takes milliseconds) and off the
    // GPU thread (whose every millisecond delays all streams).
    let prompts = shared.worker.prompts.clone();
    let encoded = tokio::task::spawn_blocking(move || {
        let ids = encode_prompt(&prompt, &prompts, context, span.as_deref(), now);
        drop(permit);
        ids
    })
    .await;
    let ids = match encoded {
        Ok(Ok(ids)) => ids,
        Ok(Err(e)) => return refuse(&e),
        Err(e) => {
            return refuse(&ApiError::status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "encode_failed",
                format!("encoding the prompt failed: {e}"),
            ));
        }
    };
    let n = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let meta = Meta {
        api,
        id: format!(
            "{}-tpsmeter-{n}",
            if api == Api::Chat { "chatcmpl" } else { "cmpl" }
        ),
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        model: shared.model_id.clone(),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let job = Job {
        prompt: ids,
        params: parsed.params,
        sampling: parsed.sampling,
        events: tx,
        arrived: std::time::Instant::now(),
    };
    if let Err(e) = shared.worker.submit(job) {
        return error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
    }
    if !parsed.stream {
        let mut text = String::new();
        while let Some(ev) = rx.recv().await {
            match ev {
                Event::Text(t) => text.push_str(&t),
                Event::Done(s) => return json(StatusCode::OK, &meta.full(&text, &s)),
                // Requests were checked before they were queued: what fails now is the
                // server's (a lost device), not the client's.
                Event::Failed(e) => {
                    return refuse(&ApiError::status(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "generation_failed",
                        e,
                    ));
                }
            }
        }
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the GPU worker dropped the request",
        );
    }
    let (body, out) = ChannelBody::channel();
    let include_usage = parsed.include_usage;
    tokio::spawn(async move {
        let send = |s: String| out.send(Bytes::from(s)).is_ok();
        if let Some(c) = meta.role_chunk() {
            if !send(sse(&c)) {
                return;
            }
        }
        while let Some(ev) = rx.recv().await {
            let ok = match ev {
                Event::Text(t) => send(sse(&meta.text_chunk(&t))),
                Event::Done(s) => {
                    let mut ok = send(sse(&meta.finish_chunk(&s)));
                    if include_usage {
                        ok = ok && send(sse(&meta.usage_chunk(&s)));
                    }
                    let _ = ok && send(SSE_DONE.into());
                    return;
                }
                Event::Failed(e) => {
                    let v = serde_json::json!({"error": {"message": e, "type": "server_error"}});
                    let _ = send(sse(&v)) && send(SSE_DONE.into());
                    return;
                }
            };
            // A closed body (client gone) drops `rx`, which the worker sees as a cancel; so
            // does a client that has left a write waiting past `STREAM_STALL`.
            if !ok || stall.as_ref().is_some_and(|s| s.waited() > STREAM_STALL) {
                return;
            }
        }
    });
    let mut r = response(StatusCode::OK, "text/event-stream", body);
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
