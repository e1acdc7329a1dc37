//! `tpsmeter synthetic`: writes a synthetic model's GGUF (a real model's shapes and tensor
//! types, seeded random weights; `tpsmeter_gpu::synthetic`) to a file, for tools that read
//! files (llama.cpp's `llama-bench` on the same bytes our engine runs, in the GPU pack).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use tpsmeter_gpu::synthetic::{SHAPES, SyntheticSpec};

use crate::exit::Status;

/// Arguments of `tpsmeter synthetic`.
#[derive(Debug, clap::Args)]
pub struct SyntheticArgs {
    /// `NAME[:QUANT]` (QUANT: Q4_0, Q4_1 (default), Q8_0, F16); `--list` prints the names.
    #[arg(required_unless_present = "list")]
    pub spec: Option<String>,
    /// Where to write the GGUF file.
    #[arg(long, required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Seed of the weights (`run --synthetic-seed` builds the same bytes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the known models with their sizes and exit.
    #[arg(long)]
    pub list: bool,
}

/// Runs `tpsmeter synthetic`.
pub fn run(args: &SyntheticArgs) -> anyhow::Result<Status> {
    if args.list {
        for s in SHAPES {
            println!(
                "{:<14} {:<7} {:>5.0}M parameters, {} layers, width {}, vocabulary {}",
                s.name,
                s.arch,
                s.parameters() as f64 / 1e6,
                s.n_layers,
                s.n_embd,
                s.vocab
            );
        }
        return Ok(Status::Ok);
    }
    let (Some(spec), Some(out)) = (&args.spec, &args.out) else {
        anyhow::bail!("a NAME[:QUANT] and --out are required");
    };
    let spec = SyntheticSpec::parse(spec)?;
    let bytes = spec.build(args.seed)?;
    let mut f =
        std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    f.write_all(&bytes)
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote synthetic {} (seed {}): {} bytes to {}",
        spec.label(),
        args.seed,
        bytes.len(),
        out.display()
    );
    Ok(Status::Ok)
}
