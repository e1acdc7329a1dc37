//! The flags of `tpsmeter serve`.

use std::path::PathBuf;

use crate::run::BackendChoice;

/// Arguments of `tpsmeter serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// GGUF model file (Llama family).
    #[arg(long)]
    pub model: PathBuf,
    /// TCP port.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on. Requests must name it, localhost, an IP address or an
    /// --allowed-host in their Host header.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Also answer requests addressed to this host name (the Host header). Without it the
    /// server answers only localhost, *.localhost, IP addresses and --host, so that a web
    /// page cannot reach it through a name of its own pointed at this machine (DNS
    /// rebinding). Repeatable; `*` answers any name.
    #[arg(long = "allowed-host", value_name = "NAME", value_parser = super::access::parse_allowed_host)]
    pub allowed_hosts: Vec<String>,
    /// Let web pages from this origin (scheme, host and port, as in https://bench.example
    /// or http://127.0.0.1:5173) call the API and read its answers (CORS). Pages on other
    /// origins are refused (403), except the server's own (the --www site). Requests
    /// without an Origin (curl, tpsmeter bench, scripts) are not concerned. Repeatable;
    /// `null` allows sandboxed frames and file: pages, `*` any page at all.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", value_parser = super::access::parse_allowed_origin)]
    pub allowed_origins: Vec<String>,
    /// KV cache positions per request.
    #[arg(long, default_value_t = tpsmeter_model::options::DEFAULT_MAX_CONTEXT)]
    pub context: usize,
    /// Requests decoded together (continuous batching); more wait in a queue.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=tpsmeter_model::options::MAX_SLOTS as i64))]
    pub parallel: u16,
    /// Most MiB the KV cache may take for all requests together: positions per request
    /// shrink to fit it.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub kv_budget_mib: u64,
    /// After a request ends while others run, wait up to this many milliseconds for a new
    /// one before the next step, so that a client sending its next request right away joins
    /// that step instead of waiting a whole step more (0: never wait).
    #[arg(long, default_value_t = 5.0, value_parser = join_window_ms)]
    pub join_window_ms: f64,
    /// Most tokens one engine step runs: the next token of every running request, then
    /// chunks of new prompts, oldest first, up to this many (chunked prefill). Larger steps
    /// prefill a burst of new requests sooner but make the running streams wait longer per
    /// token. At least --parallel + 1.
    #[arg(long, default_value_t = DEFAULT_STEP_TOKENS, value_parser = clap::value_parser!(u16).range(2..=tpsmeter_gpu::runtime::PREFILL_CHUNK as i64))]
    pub step_tokens: u16,
    /// Use the first GPU adapter whose name contains this (implies the GPU backend).
    #[arg(long)]
    pub adapter: Option<String>,
    /// Where the model runs: `gpu`, `cpu`, or `auto` (the GPU when a hardware adapter is
    /// there, else the CPU: no adapter, or only a software one such as lavapipe). Both batch
    /// the requests in flight the same way.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CPU backend threads, 1 to 256 (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// CPU backend: the portable kernels instead of this machine's hand-written SIMD ones
    /// (AVX2): the arithmetic of the browser's CPU backend, step for step, so that a seeded
    /// request samples the same tokens here and in a browser.
    #[arg(long)]
    pub portable_kernels: bool,
    /// Also serve this built web site (a directory with an index.html), and the model file
    /// under /models/ by its file name, on the API's origin, cross-origin isolated.
    #[arg(long, value_name = "DIR")]
    pub www: Option<PathBuf>,
}

/// `--step-tokens` by default: the largest step the prefill graphs hold. Measured on lavapipe
/// (SmolLM2-135M, 8 new requests at once at --parallel 8), against 32: see `cargo xtask
/// serve-bench --burst`.
pub const DEFAULT_STEP_TOKENS: u16 = tpsmeter_gpu::runtime::PREFILL_CHUNK as u16;

/// `--join-window-ms`: 0 to 1000 ms (a longer wait would stall every running stream).
fn join_window_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of milliseconds from 0 to 1000"
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::join_window_ms;

    #[test]
    fn join_window_takes_milliseconds_from_0_to_1000() {
        assert_eq!(join_window_ms("0"), Ok(0.0));
        assert_eq!(join_window_ms("2.5"), Ok(2.5));
        assert_eq!(join_window_ms("1000"), Ok(1000.0));
        for bad in ["-1", "1000.1", "NaN", "inf", "5ms", ""] {
            let e = join_window_ms(bad).unwrap_err();
            assert!(e.contains("0 to 1000"), "{bad}: {e}");
        }
    }
}
