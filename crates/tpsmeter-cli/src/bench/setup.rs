//! Turning the command line into what a run needs: the prompt, the key, the request.

use anyhow::{Context, bail};
use tpsmeter_core::Slo;
use tpsmeter_core::request::{HttpRequest, RequestSpec, Secret, build_request};

use super::args::BenchArgs;
use crate::prompt;

/// Cap on an API key read from the environment: real keys are well under 1 KiB; a huge
/// value is a mistake (wrong variable) and would only bloat every request.
const MAX_API_KEY_BYTES: usize = 8 * 1024;

/// Everything a run needs besides the network.
#[derive(Debug)]
pub struct Setup {
    pub spec: RequestSpec,
    pub request: HttpRequest,
    pub slo: Option<Slo>,
}

impl Setup {
    /// Validates `args`, reads the prompt and the key, builds the request.
    pub fn from_args(args: &BenchArgs) -> anyhow::Result<Setup> {
        args.validate()?;
        let prompt = prompt::resolve(
            args.prompt.as_deref(),
            args.prompt_file.as_deref(),
            args.input_tokens,
        )?;
        let api_key = match &args.api_key_env {
            Some(var) => Some(read_key(var)?),
            None => None,
        };
        let slo = match &args.slo {
            Some(s) => Some(Slo::parse(s).context("--slo")?),
            None => None,
        };
        let spec = RequestSpec {
            api: args.api,
            base_url: args.url.clone(),
            model: args.model.clone(),
            prompt,
            system: args.system.clone(),
            max_tokens: args.max_tokens,
            temperature: args.temperature,
            api_key,
            ignore_eos: args.ignore_eos,
        };
        let request = build_request(&spec).context("build the request")?;
        Ok(Setup { spec, request, slo })
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
