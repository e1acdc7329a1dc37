//! Turning the command line into what a run needs: the prompt, the key, the request.

use anyhow::{Context, bail};
use std::hash::{BuildHasher, RandomState};
use std::rc::Rc;
use std::sync::Arc;

use tpsmeter_core::request::{HttpRequest, RequestPlan, RequestSpec, Secret};
use tpsmeter_core::tokens::TokenCounter;
use tpsmeter_core::{BenchOptions, PromptPlan, Slo};

use super::args::BenchArgs;
use super::tokenizer::{self, CliTokenizer};
use crate::prompt;

/// Cap on an API key read from the environment: real keys are well under 1 KiB; a huge
/// value is a mistake (wrong variable) and would only bloat every request.
const MAX_API_KEY_BYTES: usize = 8 * 1024;

/// Everything a run needs besides the network.
#[derive(Debug)]
pub struct Setup {
    /// The settings, as the core (and the browser) takes them.
    pub options: BenchOptions,
    pub spec: RequestSpec,
    /// Every request's URL and headers, and each one's body (its own prompt).
    pub plan: RequestPlan,
    pub slo: Option<Slo>,
    /// The run's tokenizer (`--tokenizer`), shared with the threads that count answers.
    pub tokenizer: Option<Arc<CliTokenizer>>,
}

impl Setup {
    /// Validates `args`, reads the prompt and the key, builds the request.
    pub fn from_args(args: &BenchArgs) -> anyhow::Result<Setup> {
        let mut options = args.options()?;
        let slo = options.slo()?;
        let api_key = match &args.api_key_env {
            Some(var) => Some(read_key(var)?),
            None => None,
        };
        // The CLI's own `--prompt-file`: read it here and hand the core its text.
        let prompt = prompt::resolve(
            args.prompt.as_deref(),
            args.prompt_file.as_deref(),
            args.input_tokens.map(|l| l.mean),
        )?;
        if args.prompt_file.is_some() {
            options.prompt = Some(prompt);
        }
        let spec = options.request_spec(api_key)?;
        // The run id of the prompts' marks, when no --seed fixes it: std's hasher keys are
        // random per process, which is all a run id needs (no RNG dependency for it).
        let entropy = RandomState::new().hash_one(std::process::id());
        let tokenizer = match &args.tokenizer {
            Some(arg) => Some(Arc::new(tokenizer::load(arg)?)),
            None => None,
        };
        let counter = tokenizer
            .clone()
            .map(|t| Rc::new(t) as Rc<dyn TokenCounter>);
        let mut prompts = PromptPlan::new(&options, args.shard, entropy, counter.as_deref())?;
        if let Some(path) = &args.dataset {
            let dataset = super::dataset::read(path)?;
            prompts = prompts.with_dataset(dataset, &options, args.shard)?;
        }
        let plan = RequestPlan::new(spec.clone(), prompts, counter, false)
            .context("build the request")?
            .with_turns(options.turns);
        Ok(Setup {
            options,
            spec,
            plan,
            slo,
            tokenizer,
        })
    }

    /// The request every request of the run is a copy of (with its own body).
    pub fn request(&self) -> &HttpRequest {
        self.plan.template()
    }
}

/// Reads the key from the variable named `var`. Errors name the variable, never the value.
fn read_key(var: &str) -> anyhow::Result<Secret> {
    let value = match std::env::var(var) {
        Ok(v) => v,
        Err(std::env::VarError::NotPresent) => {
            bail!("--api-key-env {var}: the environment variable {var} is not set")
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("--api-key-env {var}: the value of {var} is not valid UTF-8")
        }
    };
    let value = value.trim();
    if value.is_empty() {
        bail!("--api-key-env {var}: the environment variable {var} is empty");
    }
    if value.len() > MAX_API_KEY_BYTES {
        bail!("--api-key-env {var}: the value is over {MAX_API_KEY_BYTES} bytes");
    }
    Ok(Secret::new(value))
}
