//! Plain-http requests on connections whose reads keep the kernel's receive stamp.
//!
//! At concurrency 100 on two cores, a body read stamped when its task got to run waited for
//! every chunk of the same burst to be parsed first (client p99 error 1.5-3 ms against the
//! emulator's send stamps). Here each connection's socket is read with `recvmsg` and the
//! kernel's `SO_TIMESTAMPNS` stamp of the newest bytes read is kept
//! ([`tpsmeter_arrival::StampedStream`]); the runner takes it for each body frame. The stamp
//! cannot be delayed by anything this process does.
//!
//! reqwest gives no access to its sockets, so plain http goes through hyper-util's client
//! (the one reqwest wraps) with a connector that wraps hyper-util's own TCP connect:
//! HTTP/1.1, a keep-alive pool with reqwest's idle timeout, `TCP_NODELAY`. TLS and proxies
//! stay with reqwest (`client.rs` decides), where the stamp is the runner's clock. Each
//! connection also carries when its name lookup and handshake ended (`setup_timing.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::{Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tpsmeter_arrival::StampedStream;

use crate::bench::http::sent_at::StampedBody;
use crate::bench::http::setup_timing::{Setup, SetupStream, TimedResolver, with_begun};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// hyper-util's HTTP/1.1 client over kernel-stamped connections. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StampedClient {
    inner: Client<Connector, StampedBody>,
}

impl StampedClient {
    /// `connect_timeout` bounds the TCP connect; idle pooled connections close after 90 s.
    pub fn new(connect_timeout: Duration) -> Self {
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_timer(TokioTimer::new())
            .build(Connector { connect_timeout });
        Self { inner }
    }

    /// Starts one request built from `template` (with `body` instead of the template's, when
    /// given): the response to come, and the cell its send time lands in when hyper pulls
    /// the body.
    /// The connection set-up begun for it lands in `begun` (see `setup_timing`).
    pub fn send(
        &self,
        template: &Template,
        body: Option<&Bytes>,
        begun: Arc<OnceLock<Arc<Setup>>>,
    ) -> (
        impl Future<Output = <ResponseFuture as Future>::Output> + use<>,
        Arc<OnceLock<Instant>>,
    ) {
        let (body, written) = StampedBody::new(body.unwrap_or(&template.body).clone());
        let mut request = Request::new(body);
        *request.method_mut() = template.method.clone();
        *request.uri_mut() = template.uri.clone();
        *request.headers_mut() = template.headers.clone();
        (with_begun(begun, self.inner.request(request)), written)
    }
}

/// What every attempt of one prepared request sends.
#[derive(Debug)]
pub struct Template {
    method: hyper::Method,
    uri: Uri,
    headers: hyper::HeaderMap,
    body: Bytes,
}

impl Template {
    /// The request reqwest would send, as parts: method, URL, headers (with reqwest's
    /// default `accept` and our user agent when the request has none) and body.
    pub fn from_reqwest(request: &reqwest::Request) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let uri: Uri = request
            .url()
            .as_str()
            .parse()
            .context("the URL is not a valid HTTP URI (check --url)")?;
        let mut headers = request.headers().clone();
        headers.entry(hyper::header::USER_AGENT).or_insert(
            hyper::header::HeaderValue::from_static(crate::bench::http::client::USER_AGENT),
        );
        headers
            .entry(hyper::header::ACCEPT)
            .or_insert(hyper::header::HeaderValue::from_static("*/*"));
        let body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .map(Bytes::copy_from_slice)
            .unwrap_or_default();
        Ok(Self {
            method: request.method().clone(),
            uri,
            headers,
            body,
        })
    }
}

/// hyper-util's TCP connector, its stream wrapped to keep receive stamps and its set-up
/// times.
#[derive(Debug, Clone)]
struct Connector {
    connect_timeout: Duration,
}

impl tower_service::Service<Uri> for Connector {
    type Response = SetupStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<SetupStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let needs_lookup = uri.host().is_some_and(|h| {
            h.trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_err()
        });
        let setup = Setup::start(needs_lookup);
        setup.announce();
        // A connector of its own per connection, so its resolver notes this connection's
        // lookup (a few small allocations beside a TCP handshake).
        let mut http = HttpConnector::new_with_resolver(TimedResolver::new(setup.clone()));
        http.set_connect_timeout(Some(self.connect_timeout));
        // A stamp is taken when a read completes: Nagle's algorithm on our side would only
        // delay the request.
        http.set_nodelay(true);
        let connecting = http.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            setup.connected_now();
            Ok(SetupStream::new(
                StampedStream::new(io.into_inner()).0,
                setup,
            ))
        })
    }
}
