//! When each plain-http connection was set up (name lookup, TCP handshake), carried with it
//! so that every request learns how much of that set-up it waited for.
//!
//! The stamped client's connector (`stamped_http.rs`) times its own call: when it began,
//! when the name resolved (the resolver below notes it; an IP address needs no lookup) and
//! when the handshake completed. The times ride in hyper-util's connection extras
//! ([`SetupStream`]), which its client copies into every response on the connection, the
//! way the receive [`tpsmeter_arrival::Stamps`] do. A request then counts only the part of
//! the set-up after it was handed to the client ([`Setup::waited_since`]): all of it for a
//! connection opened for it, none for a reused keep-alive one (k6 reports 0 there too), and
//! the rest for a connection another request had begun when this one took it from the pool.
//!
//! A full listen backlog shows here: the server's kernel drops the SYN of a connection it
//! has no room for, and ours sends it again 1 s, then 3 s ... later, all inside the
//! handshake.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::dns::{GaiAddrs, GaiResolver, Name};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tpsmeter_arrival::StampedStream;

/// When one connection's set-up steps happened, noted as they happen. Shared (an `Arc`)
/// between the connector, the connection's extras and the request that began it.
#[derive(Debug)]
pub struct Setup {
    /// The connector was called.
    started: Instant,
    /// The name resolved (at `started` for an IP address, which needs no lookup).
    resolved: OnceLock<Instant>,
    /// The TCP handshake completed (as the runtime saw it: when the connector's task ran).
    connected: OnceLock<Instant>,
}

/// The parts of a connection's set-up one request waited for, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waited {
    pub dns_ms: f64,
    pub connect_ms: f64,
}

tokio::task_local! {
    /// The set-up begun while the request whose future this task polls was waiting: the
    /// record of a request that got no response (a timeout during a stalled handshake) can
    /// still say where its time went.
    static BEGUN: Arc<OnceLock<Arc<Setup>>>;
}

impl Setup {
    /// A set-up starting now; `needs_lookup` false for an IP address.
    pub fn start(needs_lookup: bool) -> Arc<Setup> {
        let started = Instant::now();
        let resolved = OnceLock::new();
        if !needs_lookup {
            let _ = resolved.set(started);
        }
        Arc::new(Setup {
            started,
            resolved,
            connected: OnceLock::new(),
        })
    }

    /// Notes the end of the name lookup.
    pub fn resolved_now(&self) {
        let _ = self.resolved.set(Instant::now());
    }

    /// Notes the end of the handshake.
    pub fn connected_now(&self) {
        let _ = self.connected.set(Instant::now());
    }

    /// Tells the request being polled, if it asked ([`with_begun`]), that this set-up
    /// began on its behalf (only the first one counts).
    pub fn announce(self: &Arc<Self>) {
        let _ = BEGUN.try_with(|cell| cell.set(self.clone()));
    }

    /// The parts of the set-up that fell after `handed_over`, when the request was given to
    /// the client (see the module docs); a step not finished counts until `now`.
    pub fn waited_since(&self, handed_over: Instant, now: Instant) -> Waited {
        let part = |from: Instant, to: Instant| {
            to.saturating_duration_since(from.max(handed_over))
                .as_secs_f64()
                * 1000.0
        };
        let resolved = self.resolved.get().copied();
        Waited {
            dns_ms: part(self.started, resolved.unwrap_or(now)),
            connect_ms: resolved.map_or(0.0, |r| {
                part(r, self.connected.get().copied().unwrap_or(now))
            }),
        }
    }
}

/// Runs `request` so that a set-up its client begins for it lands in `begun`.
pub fn with_begun<F: Future>(
    begun: Arc<OnceLock<Arc<Setup>>>,
    request: F,
) -> impl Future<Output = F::Output> {
    BEGUN.scope(begun, request)
}

/// hyper-util's resolver (`getaddrinfo` on a blocking thread), noting when its lookup
/// ended. One per connect: the note is that connection's.
#[derive(Debug, Clone)]
pub struct TimedResolver {
    gai: GaiResolver,
    setup: Arc<Setup>,
}

impl TimedResolver {
    /// A resolver whose lookup's end is noted in `setup`.
    pub fn new(setup: Arc<Setup>) -> Self {
        Self {
            gai: GaiResolver::new(),
            setup,
        }
    }
}

impl tower_service::Service<Name> for TimedResolver {
    type Response = GaiAddrs;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<GaiAddrs, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        self.gai.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let lookup = self.gai.call(name);
        let setup = self.setup.clone();
        Box::pin(async move {
            let addrs = lookup.await;
            setup.resolved_now();
            addrs
        })
    }
}

/// A kernel-stamped connection that also carries its [`Setup`].
#[derive(Debug)]
pub struct SetupStream {
    io: StampedStream,
    setup: Arc<Setup>,
}

impl SetupStream {
    pub fn new(io: StampedStream, setup: Arc<Setup>) -> Self {
        Self { io, setup }
    }
}

impl Connection for SetupStream {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.setup.clone())
    }
}

impl Read for SetupStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for SetupStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn setup(started: Instant, resolved: Option<Instant>, connected: Option<Instant>) -> Setup {
        let s = Setup {
            started,
            resolved: OnceLock::new(),
            connected: OnceLock::new(),
        };
        resolved.map(|t| s.resolved.set(t));
        connected.map(|t| s.connected.set(t));
        s
    }

    #[test]
    fn a_request_waits_for_the_set_up_after_its_hand_over_only() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let done = setup(at(10), Some(at(15)), Some(at(1015)));
        let now = at(5000);
        // Opened for this request: all of it.
        assert_eq!(
            done.waited_since(at(10), now),
            Waited {
                dns_ms: 5.0,
                connect_ms: 1000.0
            }
        );
        // Begun for another request; this one came during the handshake.
        assert_eq!(done.waited_since(at(515), now).connect_ms, 500.0);
        assert_eq!(done.waited_since(at(515), now).dns_ms, 0.0);
        // A reused connection: nothing.
        assert_eq!(
            done.waited_since(at(2000), now),
            Waited {
                dns_ms: 0.0,
                connect_ms: 0.0
            }
        );
        // A handshake still going when the request gave up counts until then.
        let stalled = setup(at(10), Some(at(10)), None);
        assert_eq!(stalled.waited_since(at(10), at(3010)).connect_ms, 3000.0);
        let looking_up = setup(at(10), None, None);
        assert_eq!(
            looking_up.waited_since(at(10), at(60)),
            Waited {
                dns_ms: 50.0,
                connect_ms: 0.0
            }
        );
    }

    #[test]
    fn a_set_up_is_announced_to_the_request_polled_only() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let begun = Arc::new(OnceLock::new());
        let s = Setup::start(false);
        rt.block_on(with_begun(begun.clone(), async { s.announce() }));
        assert!(begun.get().is_some_and(|b| Arc::ptr_eq(b, &s)));
        // Outside any request: nobody to tell, and no panic.
        Setup::start(true).announce();
    }
}
