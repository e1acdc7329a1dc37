//! The HTTP client every benchmark request goes through.
//!
//! rustls with the `ring` provider (no cmake or nasm to build, unlike aws-lc), the
//! platform's certificate verifier, HTTP/2 negotiated by ALPN on https (plain http stays on
//! HTTP/1.1, one connection per in-flight request). No overall request timeout here: the
//! runner enforces `--timeout` (to the first byte) and `--idle-timeout` (between bytes)
//! itself, because a whole-request timeout would cut long healthy streams.

use std::time::Duration;

use anyhow::Context;

/// Builds the shared client. `connect_timeout` bounds TCP + TLS set-up.
pub fn build(connect_timeout: Duration) -> anyhow::Result<reqwest::Client> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        // A stamp is taken when a read completes: Nagle's algorithm on our side would only
        // delay the request, and idle pooled connections should be reused across levels.
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .user_agent(concat!("tpsmeter/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("build the HTTP client")
}

/// rustls needs one process-wide crypto provider; installing twice is harmless (the second
/// call reports the first is already there, which is what we want).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
