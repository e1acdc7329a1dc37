//! Assembling the versioned report (schema from `tpsmeter-core`) at the end of a run.

use tpsmeter_core::report::{
    Environment, LevelReport, PromptSource, RedactedUrl, Report, RequestRecord, RunConfig,
    SCHEMA_VERSION, ToolInfo,
};

use super::args::BenchArgs;
use super::setup::Setup;

/// The report of a run. Holds no secret: the key is not part of [`RunConfig`] and the URL
/// is redacted by construction.
pub fn build(
    args: &BenchArgs,
    setup: &Setup,
    levels: Vec<LevelReport>,
    requests: Vec<RequestRecord>,
    http_versions: &[String],
    interrupted: bool,
) -> Report {
    let prompt = match (&args.prompt_file, args.input_tokens) {
        (Some(path), _) => PromptSource::File {
            path: path.display().to_string(),
            chars: setup.spec.prompt.chars().count() as u64,
        },
        (None, Some(n)) if args.prompt.is_none() => PromptSource::Synthetic {
            input_tokens: u64::from(n),
        },
        _ => PromptSource::Text {
            chars: setup.spec.prompt.chars().count() as u64,
        },
    };
    let config = RunConfig {
        api: args.api,
        url: RedactedUrl::new(&args.url),
        model: args.model.clone(),
        levels: args.levels(),
        requests: args.requests,
        duration_s: args.duration,
        rate_per_s: match args.rate.as_slice() {
            [r] => Some(*r),
            _ => None,
        },
        seed: (!args.rate.is_empty()).then_some(args.seed),
        max_tokens: Some(args.max_tokens),
        prompt,
        warmup: args.warmup,
        timeout_s: Some(args.timeout),
        slo: setup.slo,
    };
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
        "std::time::Instant (monotonic), one origin per run".into(),
    );
    notes.insert(
        "stamp".into(),
        "each body read stamped when reqwest's Response::chunk() returns it".into(),
    );
    notes.insert("http_versions".into(), http_versions.join(","));
    notes.insert("idle_timeout_s".into(), args.idle_timeout.to_string());
    if let Some(cap) = (!args.rate.is_empty()).then_some(args.max_concurrency) {
        notes.insert("max_concurrency".into(), cap.to_string());
    }
    if interrupted {
        notes.insert("interrupted".into(), "true".into());
    }
    Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "tpsmeter".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        config,
        environment,
        levels,
        requests,
    }
}
