//! A response from either of the run's clients (`client.rs`), as the runner reads it.

use std::time::Instant;

use bytes::Bytes;
use tpsmeter_core::Failure;

/// A response whose head has arrived.
#[derive(Debug)]
pub enum Response {
    /// From reqwest (https, proxies): reads are stamped by the runner's clock.
    Reqwest(reqwest::Response),
    /// From the kernel-stamped plain-http client.
    #[cfg(target_os = "linux")]
    Stamped {
        response: hyper::Response<hyper::body::Incoming>,
        /// The connection's receive stamps; `None` when the connector gave none.
        stamps: Option<tpsmeter_arrival::Stamps>,
        /// When the connection was set up.
        setup: Option<std::sync::Arc<crate::bench::http::setup_timing::Setup>>,
    },
}

/// Why an attempt got no response.
#[derive(Debug)]
pub struct SendError {
    pub failure: Failure,
    /// A pooled keep-alive connection the server closed just as we reused it: the server
    /// never saw the request, so it may be sent once more.
    pub stale: bool,
}

impl Response {
    #[cfg(target_os = "linux")]
    pub(crate) fn stamped(response: hyper::Response<hyper::body::Incoming>) -> Self {
        let stamps = response
            .extensions()
            .get::<tpsmeter_arrival::Stamps>()
            .cloned();
        let setup = response
            .extensions()
            .get::<std::sync::Arc<crate::bench::http::setup_timing::Setup>>()
            .cloned();
        Self::Stamped {
            response,
            stamps,
            setup,
        }
    }

    /// When the response's head arrived, for a response handed over at `now`: where the
    /// kernel stamped the read that completed it, that (never after `now`), else `now`.
    /// Read it before the body: a later read moves the stamp on.
    pub fn head_arrival(&self, now: Instant) -> Instant {
        match self {
            Self::Reqwest(_) => now,
            #[cfg(target_os = "linux")]
            Self::Stamped { stamps, .. } => stamps
                .as_ref()
                .and_then(tpsmeter_arrival::Stamps::last)
                .map_or(now, |k| k.min(now)),
        }
    }

    /// How the response's connection was set up, where the client timed it (plain http).
    #[cfg(target_os = "linux")]
    pub fn setup(&self) -> Option<&crate::bench::http::setup_timing::Setup> {
        match self {
            Self::Reqwest(_) => None,
            Self::Stamped { setup, .. } => setup.as_deref(),
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            Self::Reqwest(r) => r.status().as_u16(),
            #[cfg(target_os = "linux")]
            Self::Stamped { response, .. } => response.status().as_u16(),
        }
    }

    pub fn headers(&self) -> &reqwest::header::HeaderMap {
        match self {
            Self::Reqwest(r) => r.headers(),
            #[cfg(target_os = "linux")]
            Self::Stamped { response, .. } => response.headers(),
        }
    }

    pub fn version(&self) -> reqwest::Version {
        match self {
            Self::Reqwest(r) => r.version(),
            #[cfg(target_os = "linux")]
            Self::Stamped { response, .. } => response.version(),
        }
    }

    /// The next piece of the body (`None` at its end) and, where the kernel stamped it, when
    /// its newest bytes arrived.
    pub async fn chunk(&mut self) -> Result<Option<(Bytes, Option<Instant>)>, Failure> {
        match self {
            Self::Reqwest(r) => r
                .chunk()
                .await
                .map(|c| c.map(|b| (b, None)))
                .map_err(|e| crate::bench::http::failure::from_reqwest(&e)),
            #[cfg(target_os = "linux")]
            Self::Stamped {
                response, stamps, ..
            } => loop {
                use http_body_util::BodyExt;
                let Some(frame) = response.body_mut().frame().await else {
                    return Ok(None);
                };
                let frame =
                    frame.map_err(|e| crate::bench::http::failure::from_hyper(&e, false))?;
                // Trailers carry no tokens.
                if let Ok(data) = frame.into_data() {
                    return Ok(Some((data, stamps.as_ref().and_then(|s| s.last()))));
                }
            },
        }
    }
}
