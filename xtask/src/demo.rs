//! `cargo xtask demo`: the README's main job on its embedded default.
//!
//! Builds the site (`www/`) and serves it with SmolLM2-135M on our own engine (`tpsmeter serve
//! --www`: WGSL kernels through wgpu on a GPU, the CPU backend where the machine has none or
//! only a software adapter) on 127.0.0.1, and prints the URL (the server's log line says
//! which backend runs). With a display it then waits (open the URL; Ctrl-C stops). Headless
//! (no `DISPLAY` / `WAYLAND_DISPLAY`, or `--headless`) it drives the benchmark page in
//! headless Chromium against that server and prints the summary the page shows, then runs
//! `tpsmeter bench` with the same settings against the same server, then against a real
//! llama.cpp `llama-server` on the same model as the peer. Extra arguments replace the bench
//! settings (e.g. `--concurrency 1,4 --requests 8`); the page takes the ones its form has.
//!
//! The first run builds what the page needs first, its three builds at once (the release CLI,
//! the wasm-bindgen CLI, the package's wasm but the CPU engine's relaxed-SIMD twins), and
//! prints the URL as soon as the server answers. What the page can open without builds in
//! the background at the lowest priority: llama.cpp's server, which only the headless
//! comparison needs, and the relaxed-SIMD twins, after which the package and the site are
//! built again and the served site replaced (until then the demo runs the plain-SIMD build
//! and says why). Headless, the summary waits for both.

use crate::background::Background;
use crate::sh::{self, repo_root};
use crate::{assets, pkg, www};
use anyhow::{Context, Result, bail};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills a server however the demo ends.
pub(crate) struct Server(pub(crate) Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The bench settings of both runs: small enough that our engine on a CPU rasteriser
/// (~20 tok/s) finishes in a couple of minutes, and two concurrency levels to show queueing.
const DEFAULT_BENCH_ARGS: &[&str] = &[
    "--concurrency",
    "1,2",
    "--requests",
    "8",
    "--warmup",
    "1",
    "--max-tokens",
    "64",
    "--prompt",
    BENCH_PROMPT,
];

/// The benchmarks' prompt: a short creative task, answered at length by a small model.
pub(crate) const BENCH_PROMPT: &str =
    "Write a short story about a lighthouse keeper who finds a message in a bottle.";

pub fn run(args: &[String]) -> Result<()> {
    let headless = args.iter().any(|a| a == "--headless")
        || (std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none());
    let extra: Vec<String> = args
        .iter()
        .filter(|a| *a != "--headless")
        .cloned()
        .collect();
    let started = Instant::now();
    assets::demo_downloads()?;
    // The model is first needed by the server, after the builds: downloaded beside them
    // (the builds' first seconds are cargo's own downloads, with cores idle).
    let model_download = std::thread::spawn(assets::fetch_model);
    // llama.cpp is the last comparison's peer and nothing else's: headless, it builds at the
    // lowest priority while the site is built and run (a few % of a core once the Rust
    // builds are done); with a display there is no comparison, so it is not built at all.
    let llama = headless
        .then(|| Background::spawn_job("demo-llama.log", assets::build_demo_llama))
        .transpose()?;
    let model = assets::model_path();
    // The page's three builds at once, each in a target directory of its own: the release
    // CLI (which serves it), the wasm-bindgen CLI, and five of the package's seven wasm
    // builds (in two lanes; the relaxed-SIMD twins come after the URL). One after the other,
    // each left a core idle through its serial tail (a crate's codegen, a fat LTO, a link);
    // together they keep both busy. The package and the site need the wasm-bindgen CLI and
    // the wasm, not the release CLI, so they are finished while it may still compile (on a
    // bare machine it was the last build, and wasm-bindgen, wasm-opt and Vite waited ~190 s
    // for it). The package's directories are this run's until the site is built (another
    // `cargo xtask pkg` or `www` would empty them under it); the deferred job takes the lock
    // again.
    let lock = sh::exclusive("pkg-build")?;
    let (tpsmeter, site) = std::thread::scope(|scope| -> Result<_> {
        let cli = scope.spawn(release_cli);
        let bindgen = scope.spawn(|| crate::tools::wasm_bindgen_cli(None));
        let compiled = pkg::compile_first();
        let bindgen = bindgen
            .join()
            .unwrap_or_else(|_| bail!("the wasm-bindgen CLI's thread panicked"));
        let site = compiled.and_then(|compiled| {
            bindgen?;
            pkg::finish_first(&compiled)?;
            www::build_site()
        });
        let tpsmeter = cli
            .join()
            .unwrap_or_else(|_| bail!("the release build's thread panicked"));
        Ok((tpsmeter?, site?))
    })?;
    drop(lock);
    model_download
        .join()
        .unwrap_or_else(|_| bail!("the model download's thread panicked"))
        .context("downloading the model")?;

    let port = free_port()?;
    let ours = start(
        Command::new(&tpsmeter)
            .arg("serve")
            .arg("--model")
            .arg(&model)
            .arg("--www")
            .arg(&site)
            .args(["--port", &port.to_string()]),
        port,
        "tpsmeter serve",
    )?;
    let url = format!("http://127.0.0.1:{port}/");
    println!(
        "\n== tpsmeter's site and its own engine (tpsmeter serve --backend auto) serving {}",
        model.display()
    );
    println!("   benchmark page: {url}");
    println!("   local-inference demo (in your browser: WebGPU, else the CPU): {url}demo.html");
    println!("   OpenAI-compatible API: {url}v1/chat/completions");
    println!(
        "   (ready {:.0} s after `cargo xtask demo` started)",
        started.elapsed().as_secs_f64()
    );
    // What the page does not need to open: the CPU engine's relaxed-SIMD twins. They build
    // now at the lowest priority, then the package and the site again, which replaces the
    // served one; until then a browser with relaxed SIMD runs the plain build and the demo
    // says so.
    let rest = Background::spawn_job("demo-deferred.log", |bg| {
        let _lock = sh::exclusive("pkg-build")?;
        let deferred = pkg::compile_deferred(Some(bg))?;
        pkg::finish_deferred(&deferred, Some(bg))?;
        www::rebuild_site(Some(bg)).map(drop)
    })?;
    println!(
        "   (the CPU engine's relaxed-SIMD builds are compiling in the background: until they \
         are done the demo runs its plain-SIMD build; log in {})",
        crate::tools::target_dir()
            .join("demo-deferred.log")
            .display()
    );
    if !headless {
        println!("\nOpen the page in a browser; Ctrl-C stops the server.");
        // Watched from a thread that takes the job only once it has ended; if the server
        // ends first, the job is taken back here and dropped, which stops its command.
        let rest = std::sync::Arc::new(std::sync::Mutex::new(Some(rest)));
        let watched = rest.clone();
        std::thread::spawn(move || {
            let job = loop {
                std::thread::sleep(Duration::from_millis(500));
                let Ok(mut slot) = watched.lock() else { return };
                match slot.as_ref().map(Background::is_finished) {
                    // Taken back: the server has ended.
                    None => return,
                    Some(false) => {}
                    Some(true) => break slot.take(),
                }
            };
            match job.map(Background::join) {
                Some(Ok(())) => println!(
                    "\n(the relaxed-SIMD builds are in and the site is rebuilt: reload the \
                     page, {:.0} s after `cargo xtask demo` started)",
                    started.elapsed().as_secs_f64()
                ),
                Some(Err(e)) => eprintln!(
                    "\nthe relaxed-SIMD builds failed (the page keeps its plain-SIMD \
                     build): {e:#}"
                ),
                None => {}
            }
        });
        let mut ours = ours;
        let status = ours.0.wait()?;
        if let Ok(mut slot) = rest.lock() {
            drop(slot.take());
        }
        bail!("tpsmeter serve exited with {status}");
    }

    println!("\n== the benchmark page, run in headless Chromium against that server");
    let root = repo_root();
    let mut drive = Command::new("node");
    drive
        .current_dir(&root)
        .arg("www/scripts/drive.mjs")
        .arg(&url)
        .args(if extra.is_empty() {
            page_fields(DEFAULT_BENCH_ARGS)
        } else {
            page_fields(&extra)
        });
    let page = sh::run(&mut drive);

    println!("\n== the CLI (tpsmeter bench), same settings, same server");
    let result = bench(&tpsmeter, port, &extra);
    page?;
    result?;
    if !rest.is_finished() {
        println!("\n(waiting for the CPU engine's relaxed-SIMD builds: see demo-deferred.log)");
    }
    rest.join()
        .context("building the CPU engine's relaxed-SIMD twins and the whole site")?;
    // The rebuilt site, as served: it must open and fetch the relaxed builds it now has.
    check_served_site(port)?;
    drop(ours);

    if let Some(build) = llama {
        if !build.is_finished() {
            println!("\n(waiting for llama.cpp's build to finish: see its log in demo-llama.log)");
        }
        build
            .join()
            .context("building llama.cpp for the comparison")?;
    }
    println!("\n== peer: llama.cpp llama-server (CPU, 2 threads) on the same GGUF");
    let port = free_port()?;
    let llama = llama_server(&model, port, 8, 1024)?;
    let result = bench(&tpsmeter, port, &extra);
    drop(llama);
    println!(
        "\n(the demo took {:.0} s in all)",
        started.elapsed().as_secs_f64()
    );
    result
}

/// Builds the CLI (release) and returns its path.
pub(crate) fn release_cli() -> Result<std::path::PathBuf> {
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    sh::run(Command::new(&cargo).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "tpsmeter-cli",
    ]))?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    Ok(target_dir.join("release").join("tpsmeter"))
}

/// llama.cpp's `llama-server` on `model` (CPU, 2 threads) with `parallel` slots of
/// `context` positions each, so concurrent requests are batched as a deployment would.
pub(crate) fn llama_server(
    model: &Path,
    port: u16,
    parallel: usize,
    context: usize,
) -> Result<Server> {
    start(
        Command::new(assets::llama_bin("llama-server"))
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--parallel", &parallel.to_string()])
            .args([
                "--ctx-size",
                &(parallel * context).to_string(),
                "--threads",
                "2",
            ]),
        port,
        "llama-server",
    )
}

/// The page's form fields (`name=value`, see `www/scripts/drive.mjs`) for the CLI flags it
/// has; the rest are the CLI's alone.
fn page_fields<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (flag, None),
        };
        let field = match name {
            "--concurrency" => "concurrency",
            "--requests" => "requests",
            "--warmup" => "warmup",
            "--max-tokens" => "maxTokens",
            "--prompt" => "prompt",
            "--input-tokens" => "inputTokens",
            "--slo" => "slo",
            _ => continue,
        };
        let Some(value) = inline.or_else(|| it.next().map(str::to_owned)) else {
            break;
        };
        if field == "inputTokens" {
            out.push("promptKind=synthetic".to_owned());
        }
        out.push(format!("{field}={value}"));
    }
    out
}

/// `tpsmeter bench` against the OpenAI-compatible server on `port`.
fn bench(tpsmeter: &Path, port: u16, extra: &[String]) -> Result<()> {
    let mut cmd = Command::new(tpsmeter);
    cmd.args(["bench", "--api", "openai-chat", "--url"]);
    cmd.arg(format!("http://127.0.0.1:{port}"));
    cmd.args(["--model", "SmolLM2-135M-Instruct"]);
    if extra.is_empty() {
        cmd.args(DEFAULT_BENCH_ARGS);
    } else {
        cmd.args(extra);
    }
    sh::run(&mut cmd)
}

pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Spawns a server and waits until its `/health` answers 200 (both servers load the model
/// before they answer it).
pub(crate) fn start(cmd: &mut Command, port: u16, what: &str) -> Result<Server> {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {what}"))?;
    let mut server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if let Some(status) = server.0.try_wait()? {
            bail!("{what} exited early with {status}");
        }
        if health_ok(port) {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("{what} did not become healthy within 300 s on port {port}")
}

/// `GET /health` answers 200 once the model is loaded.
fn health_ok(port: u16) -> bool {
    answers_200(port, "/health")
}

/// Whether `GET path` on 127.0.0.1:`port` answers 200.
fn answers_200(port: u16, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if s.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if n >= 12 && &buf[9..12] == b"200")
}

/// The site `tpsmeter serve` serves once the deferred builds replaced it: its page and
/// each relaxed-SIMD build's wasm (Vite names it `assets/<name>_bg-<hash>.wasm`) answer.
fn check_served_site(port: u16) -> Result<()> {
    if !answers_200(port, "/") {
        bail!("the rebuilt site's page does not answer on port {port}");
    }
    let assets = www::out_dir().join("assets");
    let names: Vec<String> = std::fs::read_dir(&assets)
        .with_context(|| format!("read {}", assets.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    for variant in pkg::DEFERRED {
        let prefix = format!("{variant}_bg-");
        let Some(file) = names
            .iter()
            .find(|n| n.starts_with(&prefix) && n.ends_with(".wasm"))
        else {
            bail!(
                "the rebuilt site has no {prefix}*.wasm in {}",
                assets.display()
            );
        };
        if !answers_200(port, &format!("/assets/{file}")) {
            bail!("the server does not serve the rebuilt site's /assets/{file}");
        }
    }
    println!("\n(the site is whole: the relaxed-SIMD builds are served)");
    Ok(())
}
