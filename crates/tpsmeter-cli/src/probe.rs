//! `tpsmeter probe`: the adapter's roofline (streaming-read GB/s, per-dispatch cost, and
//! submit-plus-readback latency), measured in a few seconds; with `--model`, the decode
//! ceiling that bandwidth allows for that model.

use std::path::PathBuf;

use tpsmeter_gpu::gpu::{ContextOptions, GpuContext};
use tpsmeter_gpu::probe::{ProbeOptions, probe_blocking};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::GgufFile;

use crate::exit::Status;

/// Arguments of `tpsmeter probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Use the first GPU adapter whose name contains this.
    #[arg(long)]
    pub adapter: Option<String>,
    /// MiB streamed per read dispatch (capped by the adapter's binding limit).
    #[arg(long, default_value_t = 64)]
    pub mib: u64,
    /// Also state the decode ceiling for this GGUF model (bytes of weights read per token).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tpsmeter probe`.
pub fn run(args: ProbeArgs) -> anyhow::Result<Status> {
    let ctx = GpuContext::new_blocking(&ContextOptions {
        adapter_name: args.adapter,
        ..Default::default()
    })?;
    let opts = ProbeOptions {
        bytes: args.mib << 20,
        ..ProbeOptions::default()
    };
    let report = probe_blocking(&ctx, &opts)?;
    let per_token = match &args.model {
        Some(path) => Some(model_bytes_per_token(path)?),
        None => None,
    };
    if args.json {
        let mut out = serde_json::to_value(&report)?;
        if let (Some(b), Some(obj)) = (per_token, out.as_object_mut()) {
            obj.insert("model_bytes_per_token".into(), b.into());
            obj.insert(
                "decode_ceiling_tokens_per_s".into(),
                report.ceiling_tokens_per_s(b).into(),
            );
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "adapter            {} ({:?})",
            report.adapter, ctx.info.backend
        );
        println!(
            "streaming read     {:.2} GB/s ({}; contiguous {:.2}, strided {:.2}; {} MiB per dispatch)",
            report.read_gb_per_s,
            report.read_pattern,
            report.contiguous_gb_per_s,
            report.strided_gb_per_s,
            report.read_bytes >> 20
        );
        println!("per dispatch       {:.1} µs", report.dispatch_us);
        println!("submit + readback  {:.3} ms", report.submit_readback_ms);
        if let Some(b) = per_token {
            println!(
                "decode ceiling     {:.1} tok/s for {:.1} MB of weights read per token",
                report.ceiling_tokens_per_s(b),
                b as f64 / 1e6
            );
        }
    }
    Ok(Status::Ok)
}

/// Bytes of weights one decoded token reads: every layer matrix and the output head, as
/// stored (the figure the engine reports as `weight_bytes_per_token`).
fn model_bytes_per_token(path: &PathBuf) -> anyhow::Result<u64> {
    let bytes = std::fs::read(path)?;
    let file = GgufFile::parse(&bytes)?;
    let cfg = ModelConfig::from_header(&file.header)?;
    let mut total = 0u64;
    for info in &file.header.tensors {
        let matrix = info.dims.iter().filter(|&&d| d > 1).count() >= 2;
        let is_layer = info.name.starts_with("blk.");
        let head = info.name == "output.weight"
            || (cfg.tied_embeddings && info.name == "token_embd.weight");
        if matrix && (is_layer || head) {
            total += info.n_bytes;
        }
    }
    Ok(total)
}
