//! `tpsmeter run`: generate text with a local GGUF model (tpsmeter's own engine,
//! `tpsmeter-gpu`) on the GPU or the CPU, streaming it to stdout, then report prefill and
//! decode speed and which backend ran, and why.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use serde::Serialize;
use tpsmeter_gpu::cpu::{CpuModel, CpuOptions};
use tpsmeter_gpu::engine::{Backend, Engine};
use tpsmeter_gpu::gpu::{ContextOptions, GpuContext};
use tpsmeter_model::chat::ChatMessage;
use tpsmeter_model::generate::{CancelToken, GenerateParams, Generation, StopReason};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

use crate::exit::Status;

/// Arguments of `tpsmeter run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// GGUF model file (Llama family: SmolLM2, TinyLlama, Llama 3.2, Qwen2).
    #[arg(
        long,
        required_unless_present = "synthetic",
        conflicts_with = "synthetic"
    )]
    pub model: Option<PathBuf>,
    /// Instead of a file, a synthetic model `NAME[:QUANT]`: a real model's exact shapes and
    /// tensor types with seeded random weights, built in memory (SmolLM2-135M, Gemma-3-270M,
    /// SmolLM2-360M, Qwen2.5-0.5B, Llama-3.2-1B, Qwen2.5-1.5B; Q4_0, Q4_1 (default), Q8_0,
    /// F16). Its speed is the real model's; its text is noise, and the report says
    /// `synthetic`.
    #[arg(long, value_name = "NAME[:QUANT]")]
    pub synthetic: Option<String>,
    /// Seed of a synthetic model's weights.
    #[arg(long, default_value_t = 1, requires = "synthetic")]
    pub synthetic_seed: u64,
    /// The prompt.
    #[arg(long)]
    pub prompt: String,
    /// Wrap the prompt as a user message in the model's chat template.
    #[arg(long)]
    pub chat: bool,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Seed of the sampler's random stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Top-k cut (0: none).
    #[arg(long, default_value_t = 40)]
    pub top_k: u32,
    /// Top-p (nucleus) cut (1: off).
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    /// KV cache positions.
    #[arg(long, default_value_t = tpsmeter_model::options::DEFAULT_MAX_CONTEXT)]
    pub context: usize,
    /// Use the first GPU adapter whose name contains this (implies the GPU backend).
    #[arg(long)]
    pub adapter: Option<String>,
    /// Where the forward pass runs: `gpu`, `cpu`, or `auto` (the GPU when a hardware adapter
    /// is there, else the CPU: no adapter, or only a software one such as lavapipe).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CPU backend threads, 1 to 256 (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// CPU backend: the portable kernels instead of this machine's hand-written SIMD ones
    /// (AVX2): the arithmetic of the browser's CPU backend, step for step, to compare with
    /// it; and the SIMD kernels' gain, measured.
    #[arg(long)]
    pub portable_kernels: bool,
    /// Print one JSON object (text and figures) instead of streaming text.
    #[arg(long)]
    pub json: bool,
    /// Keep generating past end-of-generation tokens, to exactly `--max-tokens` (benchmarks).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Generations run first and thrown away (their prompt cache too): a benchmark's
    /// figures after caches and clocks have settled. The load compiles every pipeline
    /// already, so the first answer needs none.
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    /// GPU backend: decode steps kept submitted ahead of the id read back (1 ..= 4), each
    /// step reading its token where the one before sampled it; default: the adapter's
    /// (docs/performance.md, "Steps in flight").
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=tpsmeter_gpu::runtime::MAX_IN_FLIGHT as i64))]
    pub in_flight: Option<u8>,
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Auto,
    Gpu,
    Cpu,
}

/// The backend a run uses, and why.
#[derive(Debug)]
pub enum Picked {
    Gpu(Arc<GpuContext>),
    /// The CPU, with the reason (`--backend cpu`, or what `auto` found).
    Cpu(String),
}

/// Resolves `--backend` (and `--adapter`, which asks for a GPU).
pub fn pick_backend(choice: BackendChoice, adapter: Option<String>) -> anyhow::Result<Picked> {
    match (choice, adapter.is_some()) {
        (BackendChoice::Cpu, _) => Ok(Picked::Cpu("--backend cpu".into())),
        (BackendChoice::Gpu, _) | (BackendChoice::Auto, true) => {
            Ok(Picked::Gpu(open_device(adapter)?))
        }
        (BackendChoice::Auto, false) => match open_device(None) {
            Ok(ctx) if ctx.is_software() => Ok(Picked::Cpu(format!(
                "the only GPU adapter is a software one ({}), slower than the CPU backend",
                ctx.info.name
            ))),
            Ok(ctx) => Ok(Picked::Gpu(ctx)),
            Err(e) => Ok(Picked::Cpu(format!("no GPU adapter: {e:#}"))),
        },
    }
}

/// Speed figures of one generation.
#[derive(Debug, Clone, Serialize)]
pub struct RunFigures {
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    /// Seconds from submitting the prompt to the first token (prefill included).
    pub ttft_s: f64,
    /// Prompt tokens per second of TTFT.
    pub prefill_tps: f64,
    /// Tokens after the first per second between the first and the last token.
    pub decode_tps: Option<f64>,
    /// Mean seconds between consecutive tokens.
    pub mean_itl_s: Option<f64>,
}

impl RunFigures {
    pub fn from_generation(g: &Generation) -> Self {
        let first = g.token_times.first().copied().unwrap_or(g.end);
        let ttft = (first - g.start).max(0.0);
        let computed = g.prompt_tokens - g.reused_tokens;
        let n = g.token_times.len();
        let span = g.token_times.last().map(|l| l - first).unwrap_or(0.0);
        let (decode_tps, itl) = if n >= 2 && span > 0.0 {
            (Some((n - 1) as f64 / span), Some(span / (n - 1) as f64))
        } else {
            (None, None)
        };
        Self {
            prompt_tokens: g.prompt_tokens,
            generated_tokens: n,
            ttft_s: ttft,
            prefill_tps: if ttft > 0.0 {
                computed as f64 / ttft
            } else {
                0.0
            },
            decode_tps,
            mean_itl_s: itl,
        }
    }
}

/// Where a load spent its time, in milliseconds, and what its compilation made.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadFigures {
    /// Reading the file (or building a synthetic model).
    pub read_ms: f64,
    /// Parsing it and uploading the weights (the GPU) or copying them (the CPU).
    pub upload_ms: f64,
    /// Preparing every graph and compiling its pipelines (0 on the CPU).
    pub compile_ms: f64,
    /// Running each pipeline once, so drivers that finish compiling at first use do so now.
    pub prime_ms: f64,
    pub pipelines: usize,
    pub shader_modules: usize,
    pub graphs: usize,
}

impl LoadFigures {
    /// `read_ms`, and the rest from a load that took `load_ms` in all and compiled as
    /// `report` says (`None`: compiled nothing).
    fn new(
        read_ms: f64,
        load_ms: f64,
        report: Option<tpsmeter_gpu::runtime::CompileReport>,
    ) -> Self {
        let r = report.unwrap_or_default();
        Self {
            read_ms,
            upload_ms: (load_ms - r.compile_ms - r.prime_ms).max(0.0),
            compile_ms: r.compile_ms,
            prime_ms: r.prime_ms,
            pipelines: r.pipelines,
            shader_modules: r.shader_modules,
            graphs: r.graphs,
        }
    }
}

/// Opens the default (or named) adapter and loads the model at `path`.
pub fn load_engine(path: &Path, context: usize, adapter: Option<String>) -> anyhow::Result<Engine> {
    let bytes = std::fs::read(path).with_context(|| format!("reading model {}", path.display()))?;
    let opts = ModelOptions {
        max_context: context,
        ..Default::default()
    };
    load_engine_with(&bytes, path, opts, open_device(adapter)?)
}

/// The default (or named) adapter's device.
pub fn open_device(adapter: Option<String>) -> anyhow::Result<Arc<GpuContext>> {
    Ok(Arc::new(GpuContext::new_blocking(&ContextOptions {
        adapter_name: adapter,
        ..Default::default()
    })?))
}

/// [`load_engine`] from the file's bytes (read from `path`) with any options, on `ctx`.
pub fn load_engine_with(
    bytes: &[u8],
    path: &Path,
    opts: ModelOptions,
    ctx: Arc<GpuContext>,
) -> anyhow::Result<Engine> {
    Engine::load(ctx, bytes, &opts).with_context(|| format!("loading {}", path.display()))
}

/// Runs `tpsmeter run`.
pub fn run(args: RunArgs) -> anyhow::Result<Status> {
    let read = Instant::now();
    let (bytes, path) = model_bytes(&args)?;
    let read_ms = read.elapsed().as_secs_f64() * 1e3;
    let opts = ModelOptions {
        max_context: args.context,
        ..Default::default()
    };
    match pick_backend(args.backend, args.adapter.clone())? {
        Picked::Gpu(ctx) => {
            let loading = Instant::now();
            let mut engine = load_engine_with(&bytes, &path, opts, ctx)?;
            let load = LoadFigures::new(
                read_ms,
                loading.elapsed().as_secs_f64() * 1e3,
                engine.model().compile_report(),
            );
            drop(bytes);
            if let Some(k) = args.in_flight {
                engine.model_mut().set_in_flight(usize::from(k));
            }
            let in_flight = engine.model().in_flight();
            let prompt = prompt_ids(&engine, &args)?;
            warm_up(&mut engine, &args, &prompt)?;
            let mark = engine.model().cost_mark();
            let g = measure(&mut engine, &args, &prompt)?;
            let cost = engine.model().cost_since(&mark);
            let info = &engine.model().context().info;
            let backend =
                serde_json::json!({ "kind": "gpu", "adapter": info.name, "in_flight": in_flight });
            report(
                &args,
                engine.name(),
                engine.is_synthetic(),
                &g,
                Ran {
                    on: &info.name.clone(),
                    backend,
                    load: &load,
                },
                |out| {
                    // Which device and driver the figures are from (a GPU machine also lists
                    // lavapipe), and per decoded token and prompt chunk what the host did to
                    // run them (docs/performance.md).
                    out["adapter_info"] = serde_json::json!({
                        "backend": format!("{:?}", info.backend),
                        "device_type": format!("{:?}", info.device_type),
                        "driver": info.driver,
                        "driver_info": info.driver_info,
                    });
                    out["per_token_cost"] = serde_json::to_value(cost.decode).unwrap_or_default();
                    out["prefill_cost"] = serde_json::to_value(cost.prefill).unwrap_or_default();
                },
            )?;
            if !args.json
                && let Some(c) = cost.decode
            {
                eprintln!("per decoded token: {c}");
            }
        }
        Picked::Cpu(why) => {
            let cpu = CpuOptions {
                threads: args.threads.map(usize::from),
                portable: args.portable_kernels,
                ..Default::default()
            };
            let loading = Instant::now();
            let mut engine: Engine<CpuModel> = Engine::load_cpu(&bytes, &opts, cpu)
                .with_context(|| format!("loading {}", path.display()))?;
            let load = LoadFigures::new(read_ms, loading.elapsed().as_secs_f64() * 1e3, None);
            drop(bytes);
            let prompt = prompt_ids(&engine, &args)?;
            warm_up(&mut engine, &args, &prompt)?;
            let g = measure(&mut engine, &args, &prompt)?;
            let m = engine.model();
            let label = format!("the CPU ({} threads, {})", m.threads(), m.simd().name());
            let backend = serde_json::json!({
                "kind": "cpu",
                "threads": m.threads(),
                "simd": m.simd().name(),
                "why": why,
                "resident_bytes": m.resident_bytes(),
            });
            report(
                &args,
                engine.name(),
                engine.is_synthetic(),
                &g,
                Ran {
                    on: &label,
                    backend,
                    load: &load,
                },
                |_| {},
            )?;
            if !args.json {
                eprintln!("backend: {label}: {why}");
            }
        }
    }
    Ok(Status::Ok)
}

/// The model's bytes (read from `--model`, or built from `--synthetic`) and a name for
/// messages.
fn model_bytes(args: &RunArgs) -> anyhow::Result<(Vec<u8>, PathBuf)> {
    match (&args.model, &args.synthetic) {
        (_, Some(spec)) => {
            let spec = tpsmeter_gpu::synthetic::SyntheticSpec::parse(spec)?;
            let bytes = spec
                .build(args.synthetic_seed)
                .with_context(|| format!("building synthetic {}", spec.label()))?;
            Ok((bytes, PathBuf::from(format!("synthetic {}", spec.label()))))
        }
        (Some(path), None) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading model {}", path.display()))?;
            Ok((bytes, path.clone()))
        }
        (None, None) => anyhow::bail!("--model or --synthetic is required"),
    }
}

/// The prompt's ids, through the chat template with `--chat`.
fn prompt_ids<M: Backend>(engine: &Engine<M>, args: &RunArgs) -> anyhow::Result<Vec<u32>> {
    Ok(if args.chat {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .ok();
        engine.encode_chat(&[ChatMessage::new("user", args.prompt.clone())], now)?
    } else {
        engine.encode(&args.prompt)?
    })
}

fn sampling(args: &RunArgs) -> SamplerConfig {
    SamplerConfig {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        seed: args.seed,
        ..Default::default()
    }
}

fn params(args: &RunArgs) -> GenerateParams {
    GenerateParams {
        max_tokens: args.max_tokens,
        ignore_eos: args.ignore_eos,
        ..Default::default()
    }
}

/// `--warmup` generations, thrown away.
fn warm_up<M: Backend>(
    engine: &mut Engine<M>,
    args: &RunArgs,
    prompt: &[u32],
) -> anyhow::Result<()> {
    for _ in 0..args.warmup {
        let t0 = Instant::now();
        let mut clock = move || t0.elapsed().as_secs_f64();
        engine.generate(
            prompt,
            &params(args),
            &sampling(args),
            &CancelToken::new(),
            &mut clock,
            &mut |_: &tpsmeter_model::generate::TokenEvent| {},
        )?;
        // Else the measured run would reuse this run's prompt from the KV cache and its
        // prefill figure would count tokens it never computed.
        engine.forget_cache();
    }
    Ok(())
}

/// The measured generation, streamed to stdout unless `--json`.
fn measure<M: Backend>(
    engine: &mut Engine<M>,
    args: &RunArgs,
    prompt: &[u32],
) -> anyhow::Result<Generation> {
    let t0 = Instant::now();
    let mut clock = move || t0.elapsed().as_secs_f64();
    let stdout = std::io::stdout();
    let json = args.json;
    let mut on_event = |ev: &tpsmeter_model::generate::TokenEvent| {
        if !json {
            let mut out = stdout.lock();
            let _ = out.write_all(ev.text.as_bytes());
            let _ = out.flush();
        }
    };
    Ok(engine.generate(
        prompt,
        &params(args),
        &sampling(args),
        &CancelToken::new(),
        &mut clock,
        &mut on_event,
    )?)
}

/// Where a generation ran: the adapter or CPU in words, the backend's JSON, and the load.
struct Ran<'a> {
    on: &'a str,
    backend: serde_json::Value,
    load: &'a LoadFigures,
}

/// Prints the figures: one JSON document with `--json` (`extra` adds the backend's own
/// fields), else a summary line on stderr after the streamed text. A `synthetic` model (the
/// file's mark, however it was made) is said to be one either way.
fn report(
    args: &RunArgs,
    model: &str,
    synthetic: bool,
    g: &Generation,
    ran: Ran<'_>,
    extra: impl FnOnce(&mut serde_json::Value),
) -> anyhow::Result<()> {
    let Ran { on, backend, load } = ran;
    let figures = RunFigures::from_generation(g);
    if args.json {
        let mut out = serde_json::json!({
            "model": model,
            "synthetic": synthetic,
            "adapter": on,
            "backend": backend,
            "text": g.text,
            "tokens": g.tokens,
            "stop": stop_name(g.stop),
            "figures": figures,
            "load": load,
        });
        extra(&mut out);
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!();
        if synthetic {
            eprintln!(
                "synthetic model: random weights, so the text is noise; the speed is the real model's"
            );
        }
        eprintln!(
            "{} prompt tokens, {} generated on {on} | TTFT {:.1} ms | prefill {:.1} tok/s | decode {} tok/s | mean ITL {} ms | stop: {}",
            figures.prompt_tokens,
            figures.generated_tokens,
            figures.ttft_s * 1e3,
            figures.prefill_tps,
            figures
                .decode_tps
                .map_or("n/a".into(), |v| format!("{v:.1}")),
            figures
                .mean_itl_s
                .map_or("n/a".into(), |v| format!("{:.1}", v * 1e3)),
            stop_name(g.stop),
        );
        let compiled = if load.pipelines > 0 {
            format!(
                " | compile {:.0} ms ({} pipelines, {} graphs) + prime {:.0} ms",
                load.compile_ms, load.pipelines, load.graphs, load.prime_ms
            )
        } else {
            String::new()
        };
        eprintln!(
            "load: read {:.0} ms | upload {:.0} ms{compiled}",
            load.read_ms, load.upload_ms
        );
    }
    Ok(())
}

/// A short name of why generation ended (OpenAI's `finish_reason` vocabulary where it fits).
pub fn stop_name(s: StopReason) -> &'static str {
    match s {
        StopReason::EndOfGeneration { .. } | StopReason::StopString { .. } => "stop",
        StopReason::MaxTokens | StopReason::ContextFull => "length",
        StopReason::Cancelled => "cancelled",
    }
}
