//! Assembling the versioned report (schema from `tpsmeter-core`) at the end of a run.

use tpsmeter_core::report::{
    Environment, LevelReport, PromptSource, Report, RequestRecord, ShardInfo, Warning,
};

use tpsmeter_core::BenchOptions;

use super::args::BenchArgs;
use super::setup::Setup;

/// The report of a run. Holds no secret: the key is not part of [`tpsmeter_core::report::RunConfig`] and the URL
/// is redacted by construction.
pub fn build(
    args: &BenchArgs,
    setup: &Setup,
    levels: Vec<LevelReport>,
    requests: Vec<RequestRecord>,
    http_versions: &[String],
    interrupted: bool,
    warnings: Vec<Warning>,
) -> anyhow::Result<Report> {
    let chars = setup.spec.prompt_text().chars().count() as u64;
    let prompt = match (&args.prompt_file, setup.plan.prompts().dataset()) {
        (_, Some(dataset)) => dataset.prompt_source(setup.options.tokenizer.clone()),
        (Some(path), None) => PromptSource::File {
            path: path.display().to_string(),
            chars,
        },
        (None, None) => setup.options.prompt_source(chars),
    };
    let config = setup.options.run_config(prompt, setup.plan.prompts())?;
    let mut environment = Environment {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        cpu_count: std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok()),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        ..Environment::default()
    };
    let notes = &mut environment.notes;
    notes.insert(
        "clock".into(),
        "std::time::Instant (monotonic), one origin per run, read with SystemTime \
         (clock_origin_unix_ms)"
            .into(),
    );
    notes.insert("http_versions".into(), http_versions.join(","));
    notes.insert("idle_timeout_s".into(), args.idle_timeout.to_string());
    if let Some(cap) = (!args.rate.is_empty()).then_some(
        args.max_concurrency
            .unwrap_or(BenchOptions::default().max_concurrency),
    ) {
        notes.insert("max_concurrency".into(), cap.to_string());
    }
    if interrupted {
        notes.insert("interrupted".into(), "true".into());
    }
    let start_at_unix_ms = args.start_at.map(|s| s.unix_ms);
    if let Some(t) = start_at_unix_ms {
        notes.insert("start_at_unix_ms".into(), t.to_string());
    }
    let mut report = Report::new(config, environment, levels, requests, warnings);
    report.shard = args.shard.map(|s| ShardInfo {
        index: s.index(),
        count: s.count(),
        start_at_unix_ms,
    });
    Ok(report)
}
