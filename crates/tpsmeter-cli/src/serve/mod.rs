//! `tpsmeter serve`: an OpenAI-compatible HTTP server in front of tpsmeter's own GPU engine,
//! so `tpsmeter bench` (or any OpenAI client, or a browser page: CORS is on) can measure it.
//!
//! Endpoints: `POST /v1/chat/completions`, `POST /v1/completions` (streamed with
//! `"stream": true`, usage with `stream_options.include_usage`), `GET /v1/models`,
//! `GET /health`. Requests in flight are decoded together as one batch (continuous batching:
//! a request joins at the next step and leaves when done), up to `--parallel` of them; more
//! wait in arrival order, and the wait is reported apart (`timings.queue_ms`).
//!
//! With `--www DIR` it also serves a built web site (the project's page) from DIR and the
//! loaded GGUF at `/models/<file name>`, so the page and its in-browser engine run on the
//! API's own origin: any GET/HEAD that is not an API route is a file of DIR (see `site.rs`),
//! and every response carries the headers that make the page cross-origin isolated
//! (COOP/COEP) and locked down (nosniff, no referrer, a CSP on HTML). Site files carry no
//! CORS headers: they are for this origin only, while the API keeps answering any origin.
//!
//! Built on hyper 1 (the HTTP implementation under axum, reqwest and most of the Rust
//! ecosystem; already the workspace's server stack through the emulator): four routes need
//! no framework.

pub mod api_error;
mod body;
pub mod openai;
mod scheduler;
mod site;
mod worker;
mod write_timeout;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use self::api_error::ApiError;
use self::body::ChannelBody;
use self::openai::{Api, Meta, SSE_DONE, sse};
use self::site::Site;
use self::worker::{Event, Job, KvPlan, Worker};
use self::write_timeout::WriteTimeout;
use crate::exit::Status;

/// Largest request body accepted: a prompt filling a 32k context is ~150 KiB of text, and
/// the cap (times [`MAX_CONNECTIONS`]) bounds what clients can make the server buffer. A
/// body announced larger is refused before a byte of it is read.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Connections served at once; one more is answered 503 and closed at once. Each may hold
/// a request body of up to [`MAX_BODY_BYTES`] and hyper's header buffer (~400 KiB), so this
/// bounds the server's memory whatever clients do; requests beyond `--parallel` wait in
/// the queue, which this bounds too.
pub const MAX_CONNECTIONS: usize = 256;

/// A client has this long to send its request headers (slow-header clients hold a
/// connection for nothing) and, separately, its body.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection whose client leaves the server unable to write one byte of its response for
/// this long (it asked for a download or a stream and does not read it) is closed, and its
/// place among the [`MAX_CONNECTIONS`] freed: without this, 256 such clients would shut
/// every other one out for as long as they liked. The clock runs only while a write waits
/// for the client (see `write_timeout.rs`), so a slow generation (the server is the slow
/// one) is never cut, nor a slow download that keeps reading. 30 s: a live client frees
/// room in its socket far more often (a lossy link's retransmissions back off to such
/// gaps only when the link is as good as gone), and the time such clients can hold a
/// place stays short (nginx's `send_timeout`, the same limit, is 60 s).
pub const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Arguments of `tpsmeter serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// GGUF model file (Llama family).
    #[arg(long)]
    pub model: PathBuf,
    /// TCP port.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// KV cache positions per request.
    #[arg(long, default_value_t = tpsmeter_gpu::engine::DEFAULT_MAX_CONTEXT)]
    pub context: usize,
    /// Requests decoded together (continuous batching); more wait in a queue.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=tpsmeter_gpu::engine::MAX_SLOTS as i64))]
    pub parallel: u16,
    /// Most MiB the KV cache may take for all requests together: positions per request
    /// shrink to fit it.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub kv_budget_mib: u64,
    /// After a request ends while others run, wait up to this many milliseconds for a new
    /// one before the next step, so that a client sending its next request right away joins
    /// that step instead of waiting a whole step more (0: never wait).
    #[arg(long, default_value_t = 5.0, value_parser = join_window_ms)]
    pub join_window_ms: f64,
    /// Most tokens one engine step runs: the next token of every running request, then
    /// chunks of new prompts, oldest first, up to this many (chunked prefill). Larger steps
    /// prefill a burst of new requests sooner but make the running streams wait longer per
    /// token. At least --parallel + 1.
    #[arg(long, default_value_t = DEFAULT_STEP_TOKENS, value_parser = clap::value_parser!(u16).range(2..=tpsmeter_gpu::engine::PREFILL_CHUNK as i64))]
    pub step_tokens: u16,
    /// Use the first GPU adapter whose name contains this.
    #[arg(long)]
    pub adapter: Option<String>,
    /// Also serve this built web site (a directory with an index.html), and the model file
    /// under /models/ by its file name, on the API's origin, cross-origin isolated.
    #[arg(long, value_name = "DIR")]
    pub www: Option<PathBuf>,
}

/// `--step-tokens` by default: the largest step the prefill graphs hold. Measured on lavapipe
/// (SmolLM2-135M, 8 new requests at once at --parallel 8), against 32: see `cargo xtask
/// serve-bench --burst`.
pub const DEFAULT_STEP_TOKENS: u16 = tpsmeter_gpu::engine::PREFILL_CHUNK as u16;

/// `--join-window-ms`: 0 to 1000 ms (a longer wait would stall every running stream).
fn join_window_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of milliseconds from 0 to 1000"
        )),
    }
}

struct Shared {
    worker: Worker,
    /// The web site, with `--www`.
    site: Option<Site>,
    /// The id `/v1/models` lists (the file name without `.gguf`).
    model_id: String,
    next_id: AtomicU64,
}

/// Runs `tpsmeter serve` until Ctrl-C.
pub fn run(args: ServeArgs) -> anyhow::Result<Status> {
    let model_id = args
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local".into());
    // Before the model loads (seconds to minutes): a wrong --www fails at once.
    let site = args
        .www
        .as_deref()
        .map(|dir| Site::open(dir, Some(&args.model)))
        .transpose()?;
    let plan = KvPlan {
        slots: usize::from(args.parallel),
        context: args.context,
        budget_bytes: args.kv_budget_mib << 20,
        join_window: std::time::Duration::from_secs_f64(args.join_window_ms / 1e3),
        step_tokens: usize::from(args.step_tokens),
    };
    anyhow::ensure!(
        args.step_tokens > args.parallel,
        "--step-tokens {} must be above --parallel {}: a step carries the next token of every \
         running request and at least one prompt token",
        args.step_tokens,
        args.parallel
    );
    let worker = Worker::start(args.model.clone(), plan, args.adapter.clone())?;
    eprintln!(
        "loaded {} ({}) on {}: {} requests at once, {} positions each",
        worker.model_name, model_id, worker.adapter, worker.slots, worker.context
    );
    let shared = Arc::new(Shared {
        worker,
        site,
        model_id,
        next_id: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let addr: SocketAddr = format!("{}:{}", args.host, args.port)
            .parse()
            .or_else(|_| {
                std::net::ToSocketAddrs::to_socket_addrs(&(args.host.as_str(), args.port))?
                    .next()
                    .ok_or_else(|| std::io::Error::other(format!("cannot resolve {}", args.host)))
            })?;
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        eprintln!("listening on http://{local}");
        if shared.site.is_some() {
            eprintln!("site: http://{local}/");
        }
        tokio::select! {
            r = serve(listener, shared) => r,
            _ = tokio::signal::ctrl_c() => Ok(Status::Interrupted),
        }
    })
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) -> anyhow::Result<Status> {
    accept(listener, WRITE_TIMEOUT, move |req| {
        handle(req, shared.clone())
    })
    .await
}

/// The connection loop: serves each connection accepted on `listener` with `handle`, at
/// most [`MAX_CONNECTIONS`] at once, each with [`READ_TIMEOUT`] for its headers and
/// `write_timeout` for each wait on its client's reading ([`WRITE_TIMEOUT`] but in tests).
/// Returns only on an error of the listener.
async fn accept<H, F>(
    listener: TcpListener,
    write_timeout: std::time::Duration,
    handle: H,
) -> anyhow::Result<Status>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Result<Response<ChannelBody>, Infallible>> + Send + 'static,
{
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors and the like: the listener itself is fine, so keep
            // serving the connections already open and retry shortly.
            Err(e) if is_transient(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = open.clone().try_acquire_owned() else {
            // Answered without reading the request: the client learns why, the server spends
            // nothing more on it.
            tokio::spawn(async move {
                let body = ApiError::status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_connections",
                    format!("the server holds {MAX_CONNECTIONS} connections already; retry later"),
                )
                .body()
                .to_string();
                let head = format!(
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let write = async {
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(body.as_bytes()).await?;
                    stream.shutdown().await?;
                    // A lingering close: closing with the request unread would make the
                    // kernel reset the connection, and a reset can discard the 503 before
                    // the client reads it. Drain a bounded amount for a short while first.
                    let mut sink = [0u8; 4096];
                    let mut left = 64usize << 10;
                    while left > 0 {
                        let n = tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await?;
                        if n == 0 {
                            break;
                        }
                        left = left.saturating_sub(n);
                    }
                    std::io::Result::Ok(())
                };
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
            });
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            // A client that stops reading fails the write hyper waits in, which ends the
            // connection and gives its permit back.
            let io = TokioIo::new(WriteTimeout::new(stream, write_timeout));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .serve_connection(io, service_fn(handle))
                .await;
            drop(permit);
        });
    }
}

/// Accept errors that say nothing about the listener (a descriptor limit, a connection
/// reset before it was accepted).
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e.raw_os_error().is_some_and(|c| c == 23 || c == 24) // ENFILE, EMFILE
}

fn response(
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

fn json(status: StatusCode, v: &serde_json::Value) -> Response<ChannelBody> {
    response(status, "application/json", ChannelBody::full(v.to_string()))
}

fn error(status: StatusCode, message: &str) -> Response<ChannelBody> {
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        _ => "error",
    };
    refuse(&ApiError::status(status, code, message))
}

fn refuse(e: &ApiError) -> Response<ChannelBody> {
    let mut r = json(e.status, &e.body());
    if e.status == StatusCode::PAYLOAD_TOO_LARGE || e.status == StatusCode::REQUEST_TIMEOUT {
        // The rest of the body was never read: the connection cannot carry another request.
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// CORS: echo the Origin (so credentials-free browser pages on any origin can call us),
/// answer preflights with what was asked for. Timing-Allow-Origin too: without it the
/// browser zeroes a cross-origin request's Resource Timing phases, and `bench()` warns
/// `timing_opaque` (it cannot tell queueing and connection setup from server latency).
fn cors(
    origin: Option<HeaderValue>,
    req_headers: Option<HeaderValue>,
    r: &mut Response<ChannelBody>,
) {
    let h = r.headers_mut();
    if let Some(o) = origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o.clone());
        h.insert(HeaderName::from_static("timing-allow-origin"), o);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
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

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<ChannelBody>, Infallible> {
    let origin = req.headers().get(header::ORIGIN).cloned();
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
async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiError> {
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

async fn complete(api: Api, req: Request<Incoming>, shared: &Shared) -> Response<ChannelBody> {
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return refuse(&e),
    };
    let parsed = match openai::parse(api, &body) {
        Ok(p) => p,
        Err(e) => return refuse(&e),
    };
    drop(body);
    // Encoding runs off the async threads (a long prompt takes milliseconds) and off the
    // GPU thread (whose every millisecond delays all streams).
    let prompts = shared.worker.prompts.clone();
    let context = shared.worker.context;
    let prompt = parsed.prompt;
    let encoded = tokio::task::spawn_blocking(move || prompt.encode(&prompts, context)).await;
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
            // A closed body (client gone) drops `rx`, which the worker sees as a cancel.
            if !ok {
                return;
            }
        }
    });
    let mut r = response(StatusCode::OK, "text/event-stream", body);
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
#[path = "stalled_readers_tests.rs"]
mod stalled_readers_tests;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::join_window_ms;

    #[test]
    fn join_window_takes_milliseconds_from_0_to_1000() {
        assert_eq!(join_window_ms("0"), Ok(0.0));
        assert_eq!(join_window_ms("2.5"), Ok(2.5));
        assert_eq!(join_window_ms("1000"), Ok(1000.0));
        for bad in ["-1", "1000.1", "NaN", "inf", "5ms", ""] {
            let e = join_window_ms(bad).unwrap_err();
            assert!(e.contains("0 to 1000"), "{bad}: {e}");
        }
    }
}
