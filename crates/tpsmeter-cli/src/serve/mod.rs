//! `tpsmeter serve`: an OpenAI-compatible HTTP server in front of tpsmeter's own engine (on
//! the GPU, or the CPU with `--backend cpu`), so `tpsmeter bench` (or any OpenAI client, or
//! a browser page the user allows with `--allowed-origin`) can measure it.
//!
//! Endpoints: `POST /v1/chat/completions`, `POST /v1/completions` (streamed with
//! `"stream": true`, usage with `stream_options.include_usage`), `GET /v1/models`,
//! `GET /health`. Requests in flight are decoded together as one batch (continuous batching:
//! a request joins at the next step and leaves when done), up to `--parallel` of them; more
//! wait in arrival order, and the wait is reported apart (`timings.queue_ms`).
//!
//! With `--www DIR` it also serves a built web site (the project's page) from DIR and the
//! loaded GGUF at `/models/<file name>`, so the page and its in-browser engine run on the
//! API's own origin: any GET/HEAD that is not an API route is a file of DIR (see `site.rs`),
//! and every response carries the headers that make the page cross-origin isolated
//! (COOP/COEP) and locked down (nosniff, no referrer, a CSP on HTML). Site files carry no
//! CORS headers: they are for this origin only.
//!
//! Every request must be addressed to a name that cannot be rebound to this machine by a web
//! page, and a browser's request must come from the server's own origin or one the user
//! allowed (see `access.rs`), so a page elsewhere can neither read the model nor run
//! completions.
//!
//! Built on hyper 1 (the HTTP implementation under axum, reqwest and most of the Rust
//! ecosystem; already the workspace's server stack through the emulator): four routes need
//! no framework.
//!
//! Its parts: `args.rs` (the flags), `listen.rs` (the connection loop and its limits),
//! `access.rs` (which Host names and Origins are served), `http.rs` (routes, CORS, body
//! reading: the server's HTTP face), `complete.rs` (a completion request from body to
//! stream), `encode.rs` (a prompt's ids within bounded work), `openai.rs` (the wire
//! format), `worker.rs` and `scheduler.rs` (the model thread and its batching), `site.rs`
//! (`--www`).

mod access;
pub mod api_error;
mod args;
mod body;
mod complete;
mod encode;
mod http;
mod listen;
pub mod openai;
mod scheduler;
mod site;
mod worker;
mod write_timeout;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use self::access::Access;
pub use self::args::{DEFAULT_STEP_TOKENS, ServeArgs};
pub use self::http::MAX_BODY_BYTES;
pub use self::listen::{MAX_CONNECTIONS, READ_TIMEOUT, WRITE_TIMEOUT};
use self::site::Site;
use self::worker::{KvPlan, Placement, Worker};
use crate::exit::Status;

pub(crate) struct Shared {
    worker: Worker,
    /// The Host names and Origins served besides the built-in ones.
    access: Access,
    /// Prompt encodes running at once: one per core (see `complete.rs`).
    encodes: Arc<Semaphore>,
    /// The web site, with `--www`.
    site: Option<Site>,
    /// The id `/v1/models` lists (the file name without `.gguf`).
    model_id: String,
    next_id: AtomicU64,
}

/// Runs `tpsmeter serve` until Ctrl-C.
pub fn run(args: ServeArgs) -> anyhow::Result<Status> {
    let model_id = args
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local".into());
    // Before the model loads (seconds to minutes): a wrong --www fails at once.
    let site = args
        .www
        .as_deref()
        .map(|dir| Site::open(dir, Some(&args.model)))
        .transpose()?;
    let plan = KvPlan {
        slots: usize::from(args.parallel),
        context: args.context,
        budget_bytes: args.kv_budget_mib << 20,
        join_window: std::time::Duration::from_secs_f64(args.join_window_ms / 1e3),
        step_tokens: usize::from(args.step_tokens),
    };
    anyhow::ensure!(
        args.step_tokens > args.parallel,
        "--step-tokens {} must be above --parallel {}: a step carries the next token of every \
         running request and at least one prompt token",
        args.step_tokens,
        args.parallel
    );
    let placement = Placement {
        choice: args.backend,
        adapter: args.adapter.clone(),
        threads: args.threads.map(usize::from),
        portable: args.portable_kernels,
    };
    let worker = Worker::start(args.model.clone(), plan, placement)?;
    eprintln!(
        "loaded {} ({}) on {}: {} requests at once, {} positions each",
        worker.model_name, model_id, worker.adapter, worker.slots, worker.context
    );
    if let Some(span) = &worker.span {
        eprintln!(
            "no token stands for more than {} bytes: prompts of more than {} bytes are \
             refused before they are encoded",
            span.max_bytes,
            worker.context.saturating_sub(1) * span.max_bytes
        );
    }
    // The name the server was asked to listen on is one its clients use.
    let mut hosts = args.allowed_hosts.clone();
    if let Ok(h) = access::parse_allowed_host(&args.host)
        && h != "*"
    {
        hosts.push(h);
    }
    let shared = Arc::new(Shared {
        worker,
        access: Access::new(&hosts, &args.allowed_origins),
        encodes: Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        )),
        site,
        model_id,
        next_id: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let addr: SocketAddr = format!("{}:{}", args.host, args.port)
            .parse()
            .or_else(|_| {
                std::net::ToSocketAddrs::to_socket_addrs(&(args.host.as_str(), args.port))?
                    .next()
                    .ok_or_else(|| std::io::Error::other(format!("cannot resolve {}", args.host)))
            })?;
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        eprintln!("listening on http://{local}");
        if shared.site.is_some() {
            eprintln!("site: http://{local}/");
        }
        tokio::select! {
            r = serve(listener, shared) => r,
            _ = tokio::signal::ctrl_c() => Ok(Status::Interrupted),
        }
    })
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) -> anyhow::Result<Status> {
    listen::accept(listener, WRITE_TIMEOUT, move |req| {
        http::handle(req, shared.clone())
    })
    .await
}
