//! The HTTP clients every benchmark request goes through.
//!
//! - **https, or any proxy configured**: reqwest, with rustls and the `ring` provider (no
//!   cmake or nasm to build, unlike aws-lc), the platform's certificate verifier, HTTP/2
//!   negotiated by ALPN. A body read is stamped by the runner when it gets it.
//! - **plain http without a proxy, on Linux**: hyper-util's client on connections whose
//!   reads keep the kernel's receive stamp (`stamped_http.rs`), HTTP/1.1, one connection per
//!   in-flight request. A body read is stamped with when its bytes arrived.
//!
//! Neither client follows a redirect: a 3xx is the request's result, a `redirect` error
//! naming the `Location`. reqwest's default policy would follow up to ten, and on a
//! cross-host one it drops `Authorization` but keeps `x-api-key` and `x-goog-api-key`, so an
//! Anthropic or Gemini key would go to whatever host a server names. A benchmark should name
//! the final URL anyway rather than add a redirect's round trip to every TTFT.
//!
//! No overall request timeout here: the runner enforces `--timeout` (to the first byte) and
//! `--idle-timeout` (between bytes) itself, because a whole-request timeout would cut long
//! healthy streams.

use std::time::Duration;

use anyhow::Context;

/// The `user-agent` of every request.
pub const USER_AGENT: &str = concat!("tpsmeter/", env!("CARGO_PKG_VERSION"));

/// The clients of one run. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    reqwest: reqwest::Client,
    #[cfg(target_os = "linux")]
    stamped: Option<crate::bench::http::stamped_http::StampedClient>,
}

impl Client {
    /// The reqwest client (https, proxies, and everything when kernel stamps are off).
    pub fn reqwest(&self) -> &reqwest::Client {
        &self.reqwest
    }

    /// This client with every request through reqwest, stamped by the runner's clock: the
    /// timing benchmark's peer for the kernel-stamped path.
    #[must_use]
    pub fn without_kernel_stamps(self) -> Self {
        Self {
            #[cfg(target_os = "linux")]
            stamped: None,
            ..self
        }
    }

    /// The kernel-stamped client, when it serves `url`: plain http without credentials in
    /// the URL (reqwest turns those into basic auth; the stamped client leaves them to it).
    #[cfg(target_os = "linux")]
    pub(crate) fn stamped_for(
        &self,
        url: &reqwest::Url,
    ) -> Option<&crate::bench::http::stamped_http::StampedClient> {
        let plain = url.scheme() == "http" && url.username().is_empty() && url.password().is_none();
        self.stamped.as_ref().filter(|_| plain)
    }
}

/// Builds the run's clients. `connect_timeout` bounds TCP + TLS set-up.
pub fn build(connect_timeout: Duration) -> anyhow::Result<Client> {
    install_crypto_provider();
    let reqwest = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        // A stamp is taken when a read completes: Nagle's algorithm on our side would only
        // delay the request, and idle pooled connections should be reused across levels.
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .user_agent(USER_AGENT)
        // Never follow a redirect (see the module docs): the credential would go along.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("build the HTTP client")?;
    Ok(Client {
        reqwest,
        // reqwest honours the proxy variables; the stamped client does not, so with one set
        // plain http goes through reqwest too.
        #[cfg(target_os = "linux")]
        stamped: (!proxy_configured())
            .then(|| crate::bench::http::stamped_http::StampedClient::new(connect_timeout)),
    })
}

/// Whether the environment names a proxy that reqwest would use for plain http.
#[cfg(target_os = "linux")]
fn proxy_configured() -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// rustls needs one process-wide crypto provider; installing twice is harmless (the second
/// call reports the first is already there, which is what we want).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
