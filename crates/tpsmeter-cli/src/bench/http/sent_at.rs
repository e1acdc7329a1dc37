//! The moment a request's bytes go out, seen from inside the HTTP stack.
//!
//! A request's start stamp taken before it is handed to the client also counts the client's
//! own work: the connection pool, connection set-up, and, at high concurrency, waiting for a
//! runtime worker among a hundred other requests (measured at concurrency 100 on 2 cores:
//! p99 1.3-2.7 ms between the hand-over and the write, p50 6 µs). The body below records
//! when hyper first pulls it, which it does right after encoding the headers and just before
//! the write (HTTP/1.1), or when the stream opens (HTTP/2): the request's start on the wire,
//! as close as a client without its own socket can stamp it.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// A whole request body that stamps the first time it is polled.
#[derive(Debug)]
pub struct StampedBody {
    data: Option<Bytes>,
    sent: Arc<OnceLock<Instant>>,
}

impl StampedBody {
    /// `data` as a body, and the cell its send time lands in.
    pub fn new(data: Bytes) -> (Self, Arc<OnceLock<Instant>>) {
        let sent = Arc::new(OnceLock::new());
        (
            Self {
                data: Some(data),
                sent: sent.clone(),
            },
            sent,
        )
    }
}

impl Body for StampedBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // The stamp first: nothing between the pull and the clock read.
        let now = Instant::now();
        let _ = self.sent.set(now);
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    /// Exact, so hyper sends a Content-Length rather than chunked encoding (some servers
    /// refuse chunked request bodies).
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn the_first_pull_stamps_and_yields_the_bytes_once() {
        let (mut body, sent) = StampedBody::new(Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(body.size_hint().exact(), Some(7));
        assert!(sent.get().is_none(), "stamped before anyone pulled");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = Instant::now();
        let frame = rt.block_on(body.frame()).unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), Bytes::from_static(b"{\"a\":1}"));
        let at = *sent.get().unwrap();
        assert!(at >= before);
        assert!(body.is_end_stream());
        assert!(rt.block_on(body.frame()).is_none());
        assert_eq!(*sent.get().unwrap(), at, "a later pull moved the stamp");
    }
}
