//! One streaming request, timed as its bytes arrive.
//!
//! Timing rules (see ARCHITECTURE.md, path 1): one monotonic origin (`Instant`) per run;
//! the request's start is stamped when the HTTP stack pulls its body to write it
//! (`sent_at.rs`), the wait from the hand-over to then kept apart as `queue_ms`; every body read
//! is stamped, before any parsing, with when its bytes arrived where the kernel says so
//! (plain http on Linux, `stamped_http.rs`), else the moment the client hands it over, then
//! given to the core's [`Exchange`] (parser, timeline and the rules that end a request, shared
//! with the browser). Nothing heavier than a clock read happens between the read completing
//! and the runner's own stamp.
//!
//! Beside the outcome, the runner reports the parts of the wait before the first byte it
//! could time ([`RecordExtras`]): the server wait, from the body's pull to the response
//! head's arrival (kernel-stamped on plain http), and on plain http the name lookup and TCP
//! handshake this request waited for (`setup_timing.rs`). reqwest (https, proxies) does not
//! say when its connections were set up, so there those two stay unknown and the set-up
//! remains inside `queue_ms`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::time::timeout_at;
use tokio_util::sync::CancellationToken;
use tpsmeter_core::request::HttpRequest;
use tpsmeter_core::{Api, Exchange, Failure, Outcome, RecordExtras};

use crate::bench::http::client::Client;
use crate::bench::http::failure::{error_chain, from_reqwest};
use crate::bench::http::response::{Response, SendError};
use crate::bench::http::sent_at::StampedBody;
use bytes::Bytes;

/// A response to come.
type Sending<'a> = Pin<Box<dyn Future<Output = Result<Response, SendError>> + Send + 'a>>;

/// The cell a request's send time lands in when the HTTP stack pulls its body.
type Written = Option<Arc<OnceLock<Instant>>>;

/// The cell the connection set-up begun for a request lands in (plain http on Linux).
#[cfg(target_os = "linux")]
type Begun = Option<Arc<OnceLock<Arc<crate::bench::http::setup_timing::Setup>>>>;
#[cfg(not(target_os = "linux"))]
type Begun = Option<std::convert::Infallible>;

/// Sends one prepared request and times its stream. Cheap to share between tasks.
#[derive(Debug)]
pub struct Runner {
    prepared: Prepared,
    api: Api,
    origin: Instant,
    timeout: Duration,
    idle_timeout: Duration,
}

impl Runner {
    /// Prepares the request once; every run sends a clone of it. `origin` is the run's one
    /// monotonic clock origin.
    pub fn new(
        client: Client,
        api: Api,
        http: &HttpRequest,
        origin: Instant,
        timeout: Duration,
        idle_timeout: Duration,
    ) -> anyhow::Result<Arc<Runner>> {
        let request = to_reqwest(client.reqwest(), http)?;
        Ok(Arc::new(Runner {
            prepared: Prepared::new(&client, request)?,
            api,
            origin,
            timeout,
            idle_timeout,
        }))
    }

    /// Milliseconds since the run's origin.
    pub fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1000.0
    }

    /// The run's clock origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Where body reads get their stamps, for the report's environment notes.
    pub fn stamp_source(&self) -> &'static str {
        match self.prepared {
            Prepared::Reqwest { .. } => {
                "each body read stamped when reqwest's Response::chunk() returns it"
            }
            #[cfg(target_os = "linux")]
            Prepared::Stamped { .. } => {
                "each body read stamped with the kernel's receive time (SO_TIMESTAMPNS) of \
                 its newest bytes, capped at when hyper's body returns it"
            }
        }
    }

    /// Starts one attempt (with `body` instead of the prepared one, when given): the
    /// response to come, and the cell the request's send time lands in when the HTTP stack
    /// pulls its body (`None` for a request without a body).
    fn start(&self, body: Option<&Bytes>) -> Result<(Sending<'_>, Written, Begun), Failure> {
        match &self.prepared {
            Prepared::Reqwest { client, request } => {
                // The body is in memory, so cloning cannot fail; a failure here would be a
                // bug in the request builder, reported as a failed request, not a panic.
                let Some(mut request) = request.try_clone() else {
                    return Err(Failure::Connection {
                        message: "request body cannot be cloned".into(),
                    });
                };
                if let Some(body) = body {
                    *request.body_mut() = Some(reqwest::Body::from(body.clone()));
                }
                let (request, written) = stamped(request);
                let sending = client.execute(request);
                let sending = Box::pin(async move {
                    sending.await.map(Response::Reqwest).map_err(|e| SendError {
                        stale: !e.is_timeout() && is_stale_connection(&e),
                        failure: from_reqwest(&e),
                    })
                });
                Ok((sending, written, None))
            }
            #[cfg(target_os = "linux")]
            Prepared::Stamped { client, template } => {
                let begun = Arc::new(OnceLock::new());
                let (sending, written) = client.send(template, body, begun.clone());
                let sending = Box::pin(async move {
                    sending.await.map(Response::stamped).map_err(|e| SendError {
                        stale: is_stale_connection(&e),
                        failure: crate::bench::http::failure::from_hyper(&e, e.is_connect()),
                    })
                });
                Ok((sending, Some(written), Some(begun)))
            }
        }
    }

    /// Sends the request (with `body`, this request's own, instead of the prepared one when
    /// given) and reads the stream to its end, a failure or cancellation.
    pub async fn run(&self, cancel: &CancellationToken, body: Option<Bytes>) -> Outcome {
        self.run_timed(cancel, body, None).await.0
    }

    /// [`Runner::run`], with the parts of the wait before the first byte that were timed;
    /// the outcome keeps the first `keep_answer` bytes of the answer, when given (a later
    /// step needs them: see [`tpsmeter_core::answer`]).
    pub async fn run_timed(
        &self,
        cancel: &CancellationToken,
        body: Option<Bytes>,
        keep_answer: Option<usize>,
    ) -> (Outcome, RecordExtras) {
        let mut extras = RecordExtras::default();
        let outcome = self.run_into(cancel, body, keep_answer, &mut extras).await;
        (outcome, extras)
    }

    async fn run_into(
        &self,
        cancel: &CancellationToken,
        body: Option<Bytes>,
        keep_answer: Option<usize>,
        extras: &mut RecordExtras,
    ) -> Outcome {
        let mut attempt = 0;
        let (response, mut exchange, first_byte_deadline) = loop {
            attempt += 1;
            let (sending, written, begun) = match self.start(body.as_ref()) {
                Ok(started) => started,
                Err(f) => return Outcome::failed_at(self.now_ms(), self.now_ms(), f),
            };
            let sent = Instant::now();
            let mut exchange = Exchange::new(self.api, self.ms_at(sent));
            // The answer text, when a later step needs it: a tokenizer re-counts it when the
            // server sends no usage, and a multi-turn run sends it back. A string push per
            // read, next to the parse, up to the cap.
            if let Some(cap) = keep_answer {
                exchange.keep_answer(cap);
            }
            let first_byte_deadline = tokio::time::Instant::from_std(sent + self.timeout);
            let response = tokio::select! {
                biased;
                () = cancel.cancelled() => return self.end(exchange, Failure::Cancelled),
                r = timeout_at(first_byte_deadline, sending) => r,
            };
            let now = Instant::now();
            // The request's start on the wire, where the HTTP stack saw it (see `sent_at`).
            let written = written.as_deref().and_then(OnceLock::get).copied();
            if let Some(at) = written {
                exchange.on_sent(self.ms_at(at));
            }
            *extras = match &response {
                Ok(Ok(r)) => timed_parts(r, sent, written, now),
                Ok(Err(_)) => unanswered_parts(&begun, sent, None, now),
                // No answer in time: the server's wait is all the time since the request
                // went out, if it did.
                Err(_) => unanswered_parts(&begun, sent, written, now),
            };
            match response {
                Err(_elapsed) => {
                    exchange.on_timeout(self.now_ms(), self.timeout_s(), self.idle_timeout_s());
                    return exchange.into_outcome();
                }
                // A pooled keep-alive connection the server closed just as we reused it
                // (llama-server closes idle connections after 5 s): the server never saw
                // the request, so send it once more on a fresh connection, timed afresh.
                Ok(Err(e)) if attempt == 1 && e.stale => continue,
                Ok(Err(e)) => return self.end(exchange, e.failure),
                Ok(Ok(r)) => break (r, exchange, first_byte_deadline),
            }
        };
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        exchange.on_response(response.status(), retry_after.as_deref());
        // A redirect ends the request: neither client follows one (see `client`).
        if let Some(location) = response.headers().get(reqwest::header::LOCATION) {
            exchange.on_location(&String::from_utf8_lossy(location.as_bytes()));
        }
        exchange.set_http_version(&format!("{:?}", response.version()));
        self.read_body(response, exchange, first_byte_deadline, cancel)
            .await
    }

    /// Reads the body into `exchange` until it ends. After the protocol's end marker the
    /// request is complete; the rest of the body is still drained (so the connection can
    /// be reused), and a stall or reset then loses nothing.
    async fn read_body(
        &self,
        mut response: Response,
        mut exchange: Exchange,
        first_byte_deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> Outcome {
        // Both waits are made once per request, not once per read: a fresh `cancelled()`
        // registers with the token and a fresh timeout with the timer wheel, each behind a
        // lock every stream shares, and at concurrency 100 the last stream of a burst waited
        // for 100 such rounds before its read was stamped. The timer stays armed for the
        // deadline it was set to while bytes move `deadline` later; when it fires early it is
        // re-armed for what is left, and only a deadline earlier than the armed one (the
        // idle timeout after the first bytes, when it is shorter than the timeout to the
        // first byte) re-arms it at once.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        let timer = tokio::time::sleep_until(first_byte_deadline);
        tokio::pin!(timer);
        let mut deadline = first_byte_deadline;
        // The last stamp given: kernel stamps are converted to the monotonic clock one by
        // one, and a stream's stamps must not go backwards by that conversion's jitter.
        let mut last_stamp = self.origin;
        loop {
            let read = tokio::select! {
                biased;
                () = &mut cancelled => return self.end(exchange, Failure::Cancelled),
                r = response.chunk() => Some(r),
                () = &mut timer => None,
            };
            // The stamp: taken as soon as the read completes, before anything else.
            let at = Instant::now();
            let t = self.ms_at(at);
            let done = exchange.is_ended();
            let Some(read) = read else {
                if tokio::time::Instant::from_std(at) < deadline {
                    timer.as_mut().reset(deadline);
                    continue;
                }
                if !done {
                    exchange.on_timeout(t, self.timeout_s(), self.idle_timeout_s());
                }
                break;
            };
            match read {
                Err(_) | Ok(None) if done => break,
                Err(failure) => {
                    exchange.on_read_error(t, failure);
                    break;
                }
                Ok(None) => {
                    exchange.on_body_end(t);
                    break;
                }
                Ok(Some((bytes, arrived))) => {
                    if !bytes.is_empty() {
                        deadline = tokio::time::Instant::from_std(at + self.idle_timeout);
                        if deadline < timer.deadline() {
                            timer.as_mut().reset(deadline);
                        }
                    }
                    // When the bytes arrived, where the kernel says; never after our own
                    // stamp (a read that hyper made after handing this one over) nor before
                    // the previous one.
                    last_stamp = arrived.map_or(at, |k| k.min(at)).max(last_stamp);
                    exchange.on_bytes(self.ms_at(last_stamp), &bytes);
                    // A failed request's remaining body is of no use: stop reading.
                    if exchange.failure().is_some() {
                        break;
                    }
                }
            }
        }
        exchange.into_outcome()
    }

    fn end(&self, mut exchange: Exchange, failure: Failure) -> Outcome {
        exchange.fail(self.now_ms(), failure);
        exchange.into_outcome()
    }

    fn timeout_s(&self) -> f64 {
        self.timeout.as_secs_f64()
    }

    fn idle_timeout_s(&self) -> f64 {
        self.idle_timeout.as_secs_f64()
    }

    fn ms_at(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64() * 1000.0
    }
}

/// What `response` tells of the wait before its head: the server wait from `written` (the
/// body's pull) to the head's arrival, and on plain http the connection set-up that fell
/// after `handed_over`. Taken before any body read.
fn timed_parts(
    response: &Response,
    handed_over: Instant,
    written: Option<Instant>,
    now: Instant,
) -> RecordExtras {
    let head = response.head_arrival(now);
    let mut extras = RecordExtras {
        wait_ms: written.map(|w| head.saturating_duration_since(w).as_secs_f64() * 1000.0),
        ..RecordExtras::default()
    };
    #[cfg(target_os = "linux")]
    if let Some(setup) = response.setup() {
        let waited = setup.waited_since(handed_over, now);
        extras.dns_ms = Some(waited.dns_ms);
        extras.connect_ms = Some(waited.connect_ms);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = handed_over;
    extras
}

/// What a request that got no response (a timeout, a failed connect) can still tell: the
/// set-up begun for it, until `now` where a step had not finished, and, when it went out
/// (`written`), the wait since.
fn unanswered_parts(
    begun: &Begun,
    handed_over: Instant,
    written: Option<Instant>,
    now: Instant,
) -> RecordExtras {
    let mut extras = RecordExtras {
        wait_ms: written.map(|w| now.saturating_duration_since(w).as_secs_f64() * 1000.0),
        ..RecordExtras::default()
    };
    #[cfg(target_os = "linux")]
    if let Some(setup) = begun.as_ref().and_then(|b| b.get()) {
        let waited = setup.waited_since(handed_over, now);
        extras.dns_ms = Some(waited.dns_ms);
        extras.connect_ms = Some(waited.connect_ms);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (begun, handed_over);
    extras
}

/// `request` with its in-memory body replaced by one that stamps when the HTTP stack pulls
/// it, and that stamp's cell (`None` for a request without a body).
fn stamped(mut request: reqwest::Request) -> (reqwest::Request, Written) {
    let Some(data) = request
        .body()
        .and_then(reqwest::Body::as_bytes)
        .map(bytes::Bytes::copy_from_slice)
    else {
        return (request, None);
    };
    let (body, written) = StampedBody::new(data);
    *request.body_mut() = Some(reqwest::Body::wrap(body));
    (request, Some(written))
}

/// Whether `e` is hyper's report of a reused connection that the server had closed before
/// our request reached it (nothing was received, so a retry cannot duplicate work).
/// Both clients report it through hyper's error, somewhere in the chain.
fn is_stale_connection(e: &(dyn std::error::Error + 'static)) -> bool {
    error_chain(e).contains("connection closed before message completed")
}

/// What every attempt sends, and through which client.
#[derive(Debug)]
enum Prepared {
    Reqwest {
        client: reqwest::Client,
        request: reqwest::Request,
    },
    #[cfg(target_os = "linux")]
    Stamped {
        // Boxed: hyper-util's client struct is twice the size of the reqwest variant.
        client: Box<crate::bench::http::stamped_http::StampedClient>,
        template: crate::bench::http::stamped_http::Template,
    },
}

impl Prepared {
    /// `request` through the kernel-stamped client where it serves the URL, else reqwest.
    fn new(client: &Client, request: reqwest::Request) -> anyhow::Result<Self> {
        #[cfg(target_os = "linux")]
        if let Some(stamped) = client.stamped_for(request.url()) {
            return Ok(Prepared::Stamped {
                template: crate::bench::http::stamped_http::Template::from_reqwest(&request)?,
                client: Box::new(stamped.clone()),
            });
        }
        Ok(Prepared::Reqwest {
            client: client.reqwest().clone(),
            request,
        })
    }
}

/// Converts the core's plain request description into a reqwest request.
fn to_reqwest(client: &reqwest::Client, http: &HttpRequest) -> anyhow::Result<reqwest::Request> {
    use anyhow::Context;
    let method = reqwest::Method::from_bytes(http.method.as_bytes())
        .with_context(|| format!("invalid HTTP method {:?}", http.method))?;
    let builder = client.request(method, http.url.as_str());
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &http.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("invalid header name {name:?}"))?;
        // The error must not echo the value: it may be the API key.
        let mut v = reqwest::header::HeaderValue::from_str(value.as_str()).map_err(|_| {
            anyhow::anyhow!("the value of header {name} is not a valid header value")
        })?;
        // Sensitive values are left out of reqwest's and hyper's Debug output too.
        v.set_sensitive(value.is_sensitive());
        headers.append(name, v);
    }
    let builder = builder.headers(headers);
    // Don't use `with_context` showing the headers: one of them may carry the API key.
    builder
        .body(http.body.clone())
        .build()
        .context("build the HTTP request (check --url)")
}
