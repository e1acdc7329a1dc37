//! A response body fed from a channel, so each generated piece (or file chunk) is written as
//! it arrives.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// A body of whole bytes or of chunks sent through a channel.
#[derive(Debug)]
pub struct ChannelBody {
    full: Option<Bytes>,
    rx: Option<Rx>,
}

/// Generated text is small and must never wait on a slow client (the GPU worker cannot
/// block), so its channel is unbounded; a file is large and its reader should wait for the
/// client instead of buffering the whole file, so its channel is bounded.
#[derive(Debug)]
enum Rx {
    Unbounded(mpsc::UnboundedReceiver<Bytes>),
    Bounded(mpsc::Receiver<Bytes>),
}

impl ChannelBody {
    /// A body of `bytes`, sent at once with a Content-Length.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            full: Some(bytes.into()),
            rx: None,
        }
    }

    /// No body at all: for HEAD, where the headers (Content-Length included) describe a body
    /// that is not sent.
    pub fn empty() -> Self {
        Self {
            full: None,
            rx: None,
        }
    }

    /// A streamed body and the sender that feeds it; it ends when the sender is dropped.
    pub fn channel() -> (Self, mpsc::UnboundedSender<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                full: None,
                rx: Some(Rx::Unbounded(rx)),
            },
            tx,
        )
    }

    /// A streamed body whose sender waits once `chunks` chunks are queued (back-pressure from
    /// the client's reading); it ends when the sender is dropped.
    pub fn bounded(chunks: usize) -> (Self, mpsc::Sender<Bytes>) {
        let (tx, rx) = mpsc::channel(chunks);
        (
            Self {
                full: None,
                rx: Some(Rx::Bounded(rx)),
            },
            tx,
        )
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(b) = self.full.take() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        let next = match self.rx.as_mut() {
            Some(Rx::Unbounded(rx)) => rx.poll_recv(cx),
            Some(Rx::Bounded(rx)) => rx.poll_recv(cx),
            None => return Poll::Ready(None),
        };
        next.map(|o| o.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.full.is_none() && self.rx.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.full, &self.rx) {
            (Some(b), None) => SizeHint::with_exact(b.len() as u64),
            (None, None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
