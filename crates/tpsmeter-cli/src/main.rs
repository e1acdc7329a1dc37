//! `tpsmeter`: the native command line.

use clap::Parser;

/// Measure tokens per second of streaming LLM APIs and of local models.
#[derive(Debug, Parser)]
#[command(name = "tpsmeter", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
