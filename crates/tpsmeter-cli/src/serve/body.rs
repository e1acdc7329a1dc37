//! A response body fed from a channel, so each generated piece is written as it arrives.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// A body of whole bytes or of chunks sent through a channel.
#[derive(Debug)]
pub struct ChannelBody {
    full: Option<Bytes>,
    rx: Option<mpsc::UnboundedReceiver<Bytes>>,
}

impl ChannelBody {
    /// A body of `bytes`, sent at once with a Content-Length.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            full: Some(bytes.into()),
            rx: None,
        }
    }

    /// A streamed body and the sender that feeds it; it ends when the sender is dropped.
    pub fn channel() -> (Self, mpsc::UnboundedSender<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                full: None,
                rx: Some(rx),
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
        match self.rx.as_mut() {
            Some(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            None => Poll::Ready(None),
        }
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
