//! The HTTP server: accepts connections on 127.0.0.1 and answers each request with a
//! [`ScheduledBody`], after splitting the per-request [`Overrides`] off the path and with the
//! [`cors`] headers unless they are off for the server or the request.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, LOCATION, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioTimer;
use serde_json::json;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tpsmeter_core::Api;

use crate::body::{Recording, RequestRecord, ScheduledBody};
use crate::clock;
use crate::config::{EmulatorConfig, Fault};
use crate::cors;
use crate::overrides::{Overrides, diagnose_not_found};
use crate::plan::plan;
use crate::request::{self, MAX_REQUEST_BYTES, Route};
use crate::wire::Wire;
use tpsmeter_arrival::{Departures, StampedStream, Stamps};

/// Counters shared by the server's tasks.
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) connections: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) open_streams: AtomicU64,
}

/// What the server and its bodies share.
#[derive(Debug)]
pub struct Shared {
    pub(crate) cfg: EmulatorConfig,
    pub(crate) stats: Counters,
    pub(crate) records: Mutex<Vec<Recording>>,
    /// The stream slots of each capacity in use (`max_streams`), shared by the requests
    /// that ask for the same one.
    slots: Mutex<HashMap<u32, Arc<Semaphore>>>,
}

impl Shared {
    /// A slot of a server with `n` of them: at once when one is free, else when a stream
    /// ends. Returns it and whether the request had to wait.
    async fn slot(&self, n: u32) -> (Option<OwnedSemaphorePermit>, bool) {
        let semaphore = match self.slots.lock() {
            Ok(mut slots) => slots
                .entry(n)
                .or_insert_with(|| Arc::new(Semaphore::new(n as usize)))
                .clone(),
            // A panicked holder: serve without a limit rather than not at all.
            Err(_) => return (None, false),
        };
        if let Ok(p) = semaphore.clone().try_acquire_owned() {
            return (Some(p), false);
        }
        (semaphore.acquire_owned().await.ok(), true)
    }
}

/// A snapshot of the server's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerStats {
    /// TCP connections accepted.
    pub connections: u64,
    /// Requests answered (any route, any status).
    pub requests_served: u64,
    /// Streamed bodies not yet finished or dropped.
    pub open_streams: u64,
}

/// A running emulator on 127.0.0.1. Dropping it stops accepting and aborts every connection.
#[derive(Debug)]
pub struct Emulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Emulator {
    /// Binds 127.0.0.1:`cfg.port` and serves in the current tokio runtime.
    pub async fn start(cfg: EmulatorConfig) -> anyhow::Result<Emulator> {
        let listener = listen(cfg.port, cfg.backlog)
            .await
            .with_context(|| format!("binding 127.0.0.1:{}", cfg.port))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            cfg,
            stats: Counters::default(),
            records: Mutex::new(Vec::new()),
            slots: Mutex::new(HashMap::new()),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Emulator {
            addr,
            shared,
            accept,
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash: append an API's path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters now.
    pub fn stats(&self) -> ServerStats {
        let c = &self.shared.stats;
        ServerStats {
            connections: c.connections.load(Ordering::Relaxed),
            requests_served: c.requests.load(Ordering::Relaxed),
            open_streams: c.open_streams.load(Ordering::Relaxed),
        }
    }

    /// Takes the records of the responses finished so far (empty unless
    /// [`EmulatorConfig::record`]), in order of completion.
    pub fn take_records(&self) -> Vec<RequestRecord> {
        self.shared
            .records
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
            .into_iter()
            .map(Recording::finish)
            .collect()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection task.
        self.accept.abort();
    }
}

/// A listener on 127.0.0.1:`port`, with `backlog` when given.
async fn listen(port: u16, backlog: Option<u32>) -> std::io::Result<TcpListener> {
    let Some(backlog) = backlog else {
        return TcpListener::bind(("127.0.0.1", port)).await;
    };
    let socket = TcpSocket::new_v4()?;
    // As tokio's own bind does: a restarted emulator gets its port back at once.
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    socket.listen(backlog)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    let mut pause = shared.cfg.accept_pause;
    let interval = shared.cfg.accept_interval;
    loop {
        while conns.try_join_next().is_some() {}
        let Ok((stream, _)) = listener.accept().await else {
            // EMFILE and the like: the client will see refused/slow connects; keep serving.
            tokio::task::yield_now().await;
            continue;
        };
        // Small writes at their scheduled time must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        conns.spawn(async move {
            // Transmit stamps cost a read of the error queue per write: only when recording.
            let (io, arrivals, departures) = if shared.cfg.record {
                StampedStream::with_departures(stream)
            } else {
                let (io, arrivals) = StampedStream::new(stream);
                (io, arrivals, Departures::default())
            };
            let service = service_fn(move |req| {
                handle(req, arrivals.clone(), departures.clone(), shared.clone())
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(io, service)
                .await;
        });
        // A slow or busy server: what is not accepted waits in the backlog, or for its
        // SYN's retry when the backlog is full.
        let hold = std::mem::take(&mut pause).max(interval);
        if !hold.is_zero() {
            tokio::time::sleep(hold).await;
        }
    }
}

fn json_response(status: StatusCode, body: impl Into<bytes::Bytes>) -> Response<ScheduledBody> {
    let mut r = Response::new(ScheduledBody::full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A 400 whose JSON body says why, in the `{"error": {"message", "type"}}` shape most
/// clients already read.
fn bad_request(message: &str) -> Response<ScheduledBody> {
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
    json_response(StatusCode::BAD_REQUEST, body.to_string())
}

async fn handle(
    req: Request<Incoming>,
    arrivals: Stamps,
    departures: Departures,
    shared: Arc<Shared>,
) -> Result<Response<ScheduledBody>, Infallible> {
    // The kernel's stamp of the request's first packet (see `tpsmeter_arrival`), else now.
    let now = Instant::now();
    let arrival = arrivals.take_first().map_or(now, |at| {
        tokio::time::Instant::from_std(at.min(now.into_std()))
    });
    let id = shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let split = Overrides::split(req.uri().path());
    // A request with a malformed prefix still gets CORS headers (when the server has them
    // on), so that a page can read the 400's reason instead of seeing a CORS failure.
    let cors = shared.cfg.cors && split.as_ref().map_or(true, |(o, _)| !o.no_cors);
    if req.method() == Method::OPTIONS {
        // Answered whatever the path: a preflight that failed would hide the real answer
        // (a 404, a 400 with its reason) behind a CORS error.
        let mut r = Response::new(ScheduledBody::full(bytes::Bytes::new()));
        *r.status_mut() = StatusCode::NO_CONTENT;
        if cors {
            cors::add_preflight_headers(req.headers(), r.headers_mut());
        }
        return Ok(r);
    }
    let mut response = match split {
        Ok((overrides, path)) => {
            // Owned: `req` moves into `respond` and `path` borrows its URI.
            let path = path.to_owned();
            let r = respond(req, &path, &overrides, arrival, id, departures, shared).await;
            // The request's body was read by now, perhaps in reads after its head's: their
            // stamps are not the next request's arrival.
            let _ = arrivals.take_first();
            r
        }
        Err(e) => bad_request(&format!("{e:#}")),
    };
    if cors {
        cors::add_response_headers(response.headers_mut());
    }
    Ok(response)
}

/// The response to a request for `path` (the overrides already split off).
async fn respond(
    req: Request<Incoming>,
    path: &str,
    overrides: &Overrides,
    arrival: Instant,
    id: u64,
    departures: Departures,
    shared: Arc<Shared>,
) -> Response<ScheduledBody> {
    let (api, path_model) = match request::route(req.method(), path) {
        Route::Stream(api, model) => (api, model),
        Route::Models => {
            return json_response(
                StatusCode::OK,
                r#"{"object":"list","data":[{"id":"emulator","object":"model","created":0,"owned_by":"tpsmeter"}]}"#,
            );
        }
        Route::Health => return json_response(StatusCode::OK, r#"{"status":"ok"}"#),
        Route::NotFound => {
            return match diagnose_not_found(overrides, path) {
                Some(reason) => bad_request(&reason),
                None => json_response(StatusCode::NOT_FOUND, r#"{"error":"not found"}"#),
            };
        }
        Route::MethodNotAllowed => {
            return json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                r#"{"error":"method not allowed"}"#,
            );
        }
    };
    // Read before the body takes the request: `/echo-key` quotes it back in every error.
    let echo = overrides
        .echo_key
        .then(|| crate::echo::credential(req.headers(), req.uri().query()))
        .flatten();
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                r#"{"error":"request body too large or unreadable"}"#,
            );
        }
    };
    let cfg = overrides.apply(&shared.cfg);
    match &cfg.fault {
        Fault::Status { code, body } => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return match &echo {
                Some(c) => json_response(
                    status,
                    json!({"error": {"message": crate::echo::message(c), "type": "invalid_request_error"}})
                        .to_string(),
                ),
                None => json_response(status, body.clone()),
            };
        }
        Fault::Redirect { code, to } => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::FOUND);
            let mut r = json_response(status, r#"{"moved":true}"#);
            if let Ok(location) = HeaderValue::from_str(&format!("http://{to}{path}")) {
                r.headers_mut().insert(LOCATION, location);
            }
            return r;
        }
        Fault::RateLimited { retry_after_s } => {
            let message = echo.as_deref().map_or_else(
                || "Rate limit reached (emulated)".to_owned(),
                crate::echo::message,
            );
            let mut r = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"error": {"message": message, "type": "rate_limit_error", "code": "rate_limit_exceeded"}})
                    .to_string(),
            );
            let retry_after = echo
                .as_deref()
                .and_then(|c| HeaderValue::from_str(&crate::echo::header_value(c)).ok())
                .unwrap_or_else(|| HeaderValue::from(*retry_after_s));
            r.headers_mut().insert(RETRY_AFTER, retry_after);
            return r;
        }
        _ => {}
    }
    // Beyond the server's capacity the request waits for a stream to end, and its schedule
    // starts when it gets the slot; one that got a slot at once keeps its arrival stamp.
    let (slot, waited) = match cfg.max_streams {
        Some(n) => shared.slot(n).await,
        None => (None, false),
    };
    let mut base = if waited { Instant::now() } else { arrival };
    if let Fault::SlowHeaders(delay) = cfg.fault {
        base += delay;
        tokio::time::sleep_until(base).await;
    }
    let parsed = request::parse(api, path_model, &body);
    let mut wire = Wire::new(parsed.clone(), id);
    if let Some(c) = &echo {
        wire.set_error_message(crate::echo::message(c));
    }
    let steps = plan(&cfg, &parsed, &mut wire);
    let record = cfg.record.then(|| {
        let r = RequestRecord {
            id,
            arrival_ns: clock::instant_ns(arrival.into_std()),
            model: parsed.model.clone(),
            ..RequestRecord::default()
        };
        Recording::new(r, departures)
    });
    let content_type = wire.content_type();
    let mut body = ScheduledBody::stream(wire, steps, base, record, shared.clone());
    if let Some(slot) = slot {
        body.hold(slot);
    }
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert("x-emulator-request-id", HeaderValue::from(id));
    if api == Api::VercelUi {
        // As the AI SDK's `createUIMessageStreamResponse` sends them: the protocol marker
        // clients detect the format by, and nginx's switch that turns off proxy buffering.
        h.insert(
            "x-vercel-ai-ui-message-stream",
            HeaderValue::from_static("v1"),
        );
        h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    r
}
