//! The `tpsmeter bench` command line, parsed by clap, and its validation into a plan.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use tpsmeter_core::synth::Lengths;
use tpsmeter_core::workload::Workload;
use tpsmeter_core::{Api, CacheBust, Shard};

use super::start_at::{self, StartAt};

/// What `tpsmeter bench --help` prints after the options: exit statuses and policies.
const AFTER_HELP: &str = "\
Exit status:
  0    every SLO held (or none was given); with --find-max, some load met the SLO
  1    usage or set-up error (bad arguments, unreadable prompt file, malformed dataset,
       unwritable output)
  2    an SLO failed: some level's goodput was below 100% of its requests; with
       --find-max, no load met the SLO
  3    some level finished without a single successful request (with --find-max: every
       level)
  130  interrupted by Ctrl-C (the report of what finished is still written)

--find-max: the first level is --concurrency (or --rate; default 1 stream). A level meets
the SLO when at least --slo-attainment percent (95) of its requests succeeded within every
limit. While every level meets it, the load doubles (at most --max-load, 1024), and the
search stops when goodput (requests/s meeting the SLO) rose by --min-gain percent (10) or
less over the best lower load. Once a level misses, the load bisects between the highest
that met the SLO and the lowest that missed, until they are within 10% (or one stream).
More than half of a level's requests failing stops at once; at most --max-levels levels
(12) run. The report's find_max says the highest load that met the SLO, the knee and why
the search stopped (docs/metrics.md, \"Finding the knee\").

Failed requests are recorded with a class (http_4xx, http_5xx, rate_limited, redirect,
connect_refused, dns, connect, timeout_first_byte, stall, truncated, stream_error,
malformed_json, oversized, invalid_utf8, cancelled) and the run goes on. Redirects are
never followed (the API key would go along): point --url at the final address. On HTTP 429 the
Retry-After header is recorded; in closed loop the worker that got it waits that long
(at most 60 s) before its next request, in open loop the schedule goes on regardless.";

/// Benchmark a streaming LLM API: time every streamed chunk, at one or more concurrency
/// levels, and report TTFT, ITL, TPOT, end-to-end latency and tokens per second.
#[derive(Debug, Clone, Args)]
#[command(after_help = AFTER_HELP)]
// Two spellings of one option, the CLI's own. Every rule between options is the core's
// (`tpsmeter_core::spec::rules`), checked in `BenchArgs::options`, so that the CLI and the
// browser refuse the same option sets with the same sentence.
#[command(group(ArgGroup::new("prompt_text").args(["prompt", "prompt_file"])))]
pub struct BenchArgs {
    /// Wire format: openai-chat, openai-completions, openai-responses, anthropic, gemini,
    /// ollama (= ollama-chat), ollama-generate, vercel-ui (a Vercel AI SDK UI message stream;
    /// --url is then the app's chat route, used as is).
    #[arg(long, value_parser = parse_api)]
    pub api: Api,

    /// Base URL of the server, e.g. http://127.0.0.1:8080 or https://api.openai.com
    /// (the API's path is appended; a URL that already ends in it is kept).
    #[arg(long)]
    pub url: String,

    /// Model name sent in the request.
    #[arg(long)]
    pub model: String,

    /// Name of the environment variable holding the API key. The key is read once, kept in
    /// memory only, and never printed or written to any report.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,

    /// Concurrency levels to sweep, comma-separated: each level keeps exactly this many
    /// requests in flight (closed loop). Not with --rate. [default: 1]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: Vec<u32>,

    /// Measured requests per level. Default when neither --requests nor --duration is given:
    /// 4 × the level's concurrency (at least 8).
    #[arg(long)]
    pub requests: Option<u64>,

    /// Run each level for this many seconds instead of a request count; requests started
    /// before the end are allowed to finish.
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,

    /// A time budget for each level run by request count: after this many seconds it starts
    /// no more requests (those in flight finish), and the report warns that it was cut
    /// (max_duration). Not with --duration.
    #[arg(long, value_name = "S")]
    pub max_duration: Option<f64>,

    /// Open loop instead of --concurrency: start requests as a Poisson process at R
    /// requests/s whatever the server's state; a comma-separated list sweeps rates. Latency
    /// counts from the actual send; a request delayed by --max-concurrency is recorded with
    /// its scheduled time.
    #[arg(long, value_name = "R", value_delimiter = ',')]
    pub rate: Vec<f64>,

    /// Open loop: the most requests in flight at once (arrivals beyond it wait). Needs
    /// --rate. [default: 1000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_concurrency: Option<u32>,

    /// Seed for the Poisson arrival schedule (same seed, same schedule; 0 when absent) and
    /// the prompts' run id (same seed, same request bodies; random when absent).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Maximum output tokens per request [default: 256, or the workload's].
    #[arg(long)]
    pub max_tokens: Option<u32>,

    /// A named workload: chat (128 in / 256 out), rag-1k (1,000 / 256), long-10k
    /// (10,000 / 256; Artificial Analysis's input sizes), llmperf (550±150 / 150, LLMPerf's
    /// defaults). Sets the input size (synthesised; exact with --tokenizer) and the output
    /// cap (an explicit --max-tokens wins); the report records it.
    #[arg(long, value_name = "NAME", value_parser = parse_workload)]
    pub workload: Option<Workload>,

    /// Multi-turn chats: each virtual user holds one conversation of N turns; each turn sends
    /// the conversation so far (the model's real answers included) and a new user message.
    /// TTFT, speed and input length are reported per turn. Closed loop only. A conversation
    /// that would pass 4 MiB ends early (reported as conversations_cut); see
    /// docs/workloads.md.
    #[arg(long, value_name = "N")]
    pub turns: Option<u32>,

    /// Prompt text.
    #[arg(long)]
    pub prompt: Option<String>,

    /// Read the prompt from a file.
    #[arg(long, value_name = "F")]
    pub prompt_file: Option<PathBuf>,

    /// Synthesise a prompt of N tokens (common one-token English words). With --tokenizer
    /// the user message is exactly N tokens, mark included; without one it is an estimate
    /// (one token per word, within ~10% for GPT/Llama-style BPE tokenizers, the ~10-token
    /// mark on top). N:SD draws each request's length from a normal distribution with
    /// standard deviation SD (clipped to ±3 SD; seeded by --seed).
    #[arg(long, value_name = "N[:SD]", value_parser = parse_lengths)]
    pub input_tokens: Option<Lengths>,

    /// The model's tokenizer, to count input tokens exactly (and output tokens when the
    /// server sends no usage): a tokenizer.json, a GGUF file (its embedded vocabulary), or a
    /// Hugging Face model id (ORG/NAME) found in the local Hugging Face cache
    /// ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). A tokenizer.json must be
    /// BPE or Unigram, within size limits (docs/workloads.md), and one whose regexes could
    /// backtrack (look-around outside the known models' patterns) is refused. A count over
    /// its time budget (2 s + 4 s/MiB) keeps the stream's estimate (warning count_failed).
    #[arg(long, value_name = "FILE|ORG/NAME")]
    pub tokenizer: Option<String>,

    /// Draw each request's messages from a dataset: JSON Lines with `prompt` or `messages`
    /// (OpenAI's shape) per line, or ShareGPT's JSON (an array of `conversations`; the first
    /// human turn is sent). An entry's `max_tokens` / `output_tokens`, or the length of its
    /// reference answer (~4 characters a token), is that request's output cap. Entries are
    /// drawn without replacement, in a fresh shuffle each time round the file, the same for
    /// the same --seed. A malformed entry is an error naming its line. See docs/datasets.md.
    #[arg(long, value_name = "F")]
    pub dataset: Option<PathBuf>,

    /// `prefix` (default): each request's prompt starts with a mark of its own
    /// (`[run <id> #<n>] `), so no server answers it from a prompt cache; `off`: every
    /// request sends the same prompt (measures the cached case).
    #[arg(long, value_name = "MODE", default_value = "prefix", value_parser = parse_cache_bust)]
    pub cache_bust: CacheBust,

    /// Every request shares N tokens of text before its mark and differs after it: measures
    /// a server's prefix caching on purpose. With --input-tokens T, the first N of the T.
    #[arg(long, value_name = "N")]
    pub shared_prefix: Option<u32>,

    /// Optional system prompt.
    #[arg(long)]
    pub system: Option<String>,

    /// Sampling temperature (left to the server's default when absent).
    #[arg(long)]
    pub temperature: Option<f32>,

    /// Ask the server to ignore end-of-sequence so every answer runs to --max-tokens
    /// (llama.cpp and vLLM honour it; other servers ignore it).
    #[arg(long)]
    pub ignore_eos: bool,

    /// Warm-up requests before each level (at the level's load, up to this many at once):
    /// recorded with `warmup: true` but left out of every summary.
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,

    /// Seconds to wait for the first byte of the response body (connect, send, headers and
    /// the first body chunk) before the request fails as `timeout`.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub timeout: f64,

    /// Seconds without any body bytes, once the stream has started, before the request fails
    /// as `idle_timeout` (a stalled stream).
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub idle_timeout: f64,

    /// Open each closed-loop level's streams spread evenly over this time instead of all at
    /// once (as Locust's spawn rate and k6's ramping stages do): e.g. 10s, 500ms, or plain
    /// seconds. A burst of new connections can overflow a server's listen backlog; the ones
    /// beyond it wait 1 s, 3 s ... for their SYN to be retried (see connect_ms). Applies to
    /// the warm-up and the measured phase of each level alike; the ramp counts inside a
    /// --duration level. Not with --rate, whose arrivals are already spread.
    #[arg(long, value_name = "DURATION", value_parser = parse_ramp_up)]
    pub ramp_up: Option<f64>,

    /// Service-level objectives for goodput, e.g. ttft=500ms,tpot=50ms,itl=200ms,e2e=2s.
    /// The exit status is 2 when any level's goodput is below 100%.
    #[arg(long)]
    pub slo: Option<String>,

    /// Search for the highest load that meets --slo instead of running listed levels: from
    /// the one --concurrency (or --rate) given, double until a level misses the SLO or
    /// goodput stops rising, then bisect (the rule is below).
    #[arg(long, conflicts_with = "shard")]
    pub find_max: bool,

    /// With --find-max: the highest load tried, streams (or requests/s with --rate).
    #[arg(long, value_name = "N", requires = "find_max")]
    pub max_load: Option<f64>,

    /// With --find-max: the most levels run, every level counted (1 to 64).
    #[arg(long, value_name = "N", requires = "find_max")]
    pub max_levels: Option<u32>,

    /// With --find-max: goodput must rise by more than this percentage for the load to keep
    /// doubling.
    #[arg(long, value_name = "PCT", requires = "find_max")]
    pub min_gain: Option<f64>,

    /// With --find-max: the percentage of a level's requests that must meet every SLO for
    /// the level to meet it.
    #[arg(long, value_name = "PCT", requires = "find_max")]
    pub slo_attainment: Option<f64>,

    /// Write the JSON report here. Per-request records are also appended, one JSON object
    /// per line as each request completes, to F.requests.jsonl (see --records).
    #[arg(long, value_name = "F")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per request here.
    #[arg(long, value_name = "F")]
    pub csv: Option<PathBuf>,

    /// Append per-request JSON lines here as requests complete (default: next to --json).
    #[arg(long, value_name = "F")]
    pub records: Option<PathBuf>,

    /// Run shard I of N: one of N machines started together against one target, I from 0
    /// (Kubernetes' JOB_COMPLETION_INDEX). Each takes its share of every level (streams,
    /// and requests in proportion; rate / N) and the report records the shard;
    /// `tpsmeter merge` makes the report of the whole from all N. See docs/distributed.md.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,

    /// Send nothing before this wall-clock time, the start the shards share: RFC 3339
    /// (2026-01-01T12:00:00Z) or Unix seconds. A time more than 2 s past is an error.
    #[arg(long, value_name = "TIME", value_parser = start_at::parse)]
    pub start_at: Option<StartAt>,

    /// With --start-at: when the time has already passed, start at once instead of failing.
    #[arg(long, requires = "start_at")]
    pub allow_late_start: bool,

    /// No progress bars (they are also hidden when stderr is not a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_shard(spec: &str) -> Result<Shard, String> {
    Shard::parse(spec).map_err(|e| e.to_string())
}

/// `10s`, `500ms`, `1.5m` or plain seconds (`10`), in seconds; the core checks the range.
fn parse_ramp_up(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v * scale)
        .ok_or_else(|| {
            format!(
                "{:?} is not a duration: expected e.g. 10s, 500ms, 2m or seconds",
                tpsmeter_core::cap::cap_chars(text, 40)
            )
        })
}

fn parse_lengths(s: &str) -> Result<Lengths, String> {
    Lengths::parse(s).map_err(|e| e.to_string())
}

fn parse_workload(name: &str) -> Result<Workload, String> {
    Workload::parse(name).map_err(|e| e.to_string())
}

fn parse_cache_bust(mode: &str) -> Result<CacheBust, String> {
    CacheBust::parse(mode).map_err(|e| e.to_string())
}

fn parse_api(name: &str) -> Result<Api, String> {
    if name == Api::Local.name() {
        return Err(
            "`local` is the browser's engine (bench({ api: 'local', engine }) in the npm \
             package); to measure the engine natively, use `tpsmeter run`"
                .to_owned(),
        );
    }
    Api::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Api::ALL.iter().map(|a| a.name()).collect();
        format!(
            "unknown API {name:?}; expected one of {}, ollama",
            names.join(", ")
        )
    })
}

impl BenchArgs {
    /// Where per-request JSON lines go: --records, else next to --json.
    pub fn records_path(&self) -> Option<PathBuf> {
        if let Some(p) = &self.records {
            return Some(p.clone());
        }
        self.json.as_ref().map(|j| {
            let mut s = j.clone().into_os_string();
            s.push(".requests.jsonl");
            PathBuf::from(s)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::Parser;
    use tpsmeter_core::load::{LoadLevel, StopCondition};

    #[derive(Debug, Parser)]
    struct Wrap {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(extra: &[&str]) -> Result<BenchArgs, clap::Error> {
        let mut argv = vec![
            "x",
            "--api",
            "openai-chat",
            "--url",
            "http://h",
            "--model",
            "m",
        ];
        argv.extend_from_slice(extra);
        Wrap::try_parse_from(argv).map(|w| w.args)
    }

    #[test]
    fn the_browser_engine_is_refused_with_the_native_alternative() {
        let argv = ["x", "--api", "local", "--url", "http://h", "--model", "m"];
        let e = Wrap::try_parse_from(argv).unwrap_err().to_string();
        assert!(e.contains("tpsmeter run"), "{e}");
    }

    #[test]
    fn concurrency_list_is_comma_separated() {
        let a = parse(&["--concurrency", "1,10,25,50"]).unwrap();
        assert_eq!(a.concurrency, vec![1, 10, 25, 50]);
    }

    /// The message `bench` refuses `extra` with: clap's, or the core's rules'.
    fn refused(extra: &[&str]) -> String {
        match parse(extra) {
            Err(e) => e.to_string(),
            Ok(a) => a.options().unwrap_err().to_string(),
        }
    }

    #[test]
    fn the_core_s_rules_name_the_flags() {
        assert_eq!(
            refused(&["--requests", "3", "--duration", "2"]),
            "--requests and --duration conflict: a level runs for a request count or for a \
             duration; give one"
        );
        assert!(
            refused(&["--prompt", "a", "--input-tokens", "4"])
                .starts_with("--prompt and --input-tokens conflict")
        );
        for (other, flag) in [
            (&["--prompt", "a"][..], "--prompt"),
            (&["--input-tokens", "4"], "--input-tokens"),
            (&["--shared-prefix", "3"], "--shared-prefix"),
            (&["--workload", "chat"], "--workload"),
            (&["--prompt-file", "p"], "--prompt-file"),
        ] {
            let mut a = vec!["--dataset", "d.jsonl"];
            a.extend_from_slice(other);
            let e = refused(&a);
            assert!(
                e.starts_with(&format!("--dataset and {flag} conflict: a dataset gives")),
                "{e}"
            );
        }
        assert!(
            refused(&["--workload", "chat", "--prompt-file", "p"])
                .starts_with("--workload and --prompt-file conflict")
        );
        assert!(refused(&["--prompt", "a", "--prompt-file", "p"]).contains("cannot be used with"));
    }

    #[test]
    fn default_request_count_scales_with_concurrency() {
        let o = parse(&[]).unwrap().options().unwrap();
        assert_eq!(
            o.stop_condition(LoadLevel::Concurrency(1)),
            StopCondition::Requests(8)
        );
        assert_eq!(
            o.stop_condition(LoadLevel::Concurrency(10)),
            StopCondition::Requests(40)
        );
    }

    #[test]
    fn ollama_alias_and_unknown_api() {
        let mut argv = vec!["x", "--api", "ollama", "--url", "u", "--model", "m"];
        assert_eq!(
            Wrap::try_parse_from(&argv).unwrap().args.api,
            Api::OllamaChat
        );
        argv[2] = "openai";
        assert!(Wrap::try_parse_from(&argv).is_err());
    }

    #[test]
    fn validate_rejects_non_finite_and_zero() {
        assert!(parse(&["--timeout", "0"]).unwrap().options().is_err());
        assert!(parse(&["--rate", "inf"]).unwrap().options().is_err());
        assert!(refused(&["--rate", "1", "--concurrency", "2"]).contains("conflict"));
        assert_eq!(
            refused(&["--max-concurrency", "2"]),
            "--max-concurrency needs --rate: it caps the requests in flight of open-loop levels"
        );
        let a = parse(&["--rate", "0.5,2"]).unwrap();
        assert_eq!(
            a.options().unwrap().levels(),
            vec![LoadLevel::Rate(0.5), LoadLevel::Rate(2.0)]
        );
        assert!(parse(&["--requests", "0"]).unwrap().options().is_err());
        assert!(parse(&[]).unwrap().options().is_ok());
    }

    #[test]
    fn shard_is_i_of_n_from_zero_and_bad_ones_are_named() {
        let a = parse(&["--shard", "2/3"]).unwrap();
        assert_eq!(a.shard, Some(Shard::new(2, 3).unwrap()));
        for (spec, says) in [
            ("3/3", "numbered 0 to 2"),
            ("0/0", "at least 1"),
            ("two", "expected I/N"),
            ("1/x", "two whole numbers"),
        ] {
            let e = parse(&["--shard", spec]).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
        }
        assert!(parse(&["--allow-late-start"]).is_err(), "needs --start-at");
        let a = parse(&["--start-at", "2026-01-01T00:00:00Z"]).unwrap();
        assert_eq!(a.start_at.unwrap().unix_ms, 1_767_225_600_000.0);
    }

    #[test]
    fn ramp_up_takes_a_unit_or_seconds() {
        let ramp = |v: &str| parse(&["--ramp-up", v]).map(|a| a.ramp_up);
        assert_eq!(ramp("10s").unwrap(), Some(10.0));
        assert_eq!(ramp("500ms").unwrap(), Some(0.5));
        assert_eq!(ramp("2m").unwrap(), Some(120.0));
        assert_eq!(ramp("3").unwrap(), Some(3.0));
        assert!(ramp("ten").is_err());
        assert!(ramp("-1s").is_err());
        // The core's rules: closed loop only.
        let with_rate = parse(&["--ramp-up", "2s", "--rate", "5"]).unwrap();
        let e = with_rate.options().unwrap_err().to_string();
        assert!(e.contains("ramp-up"), "{e}");
    }

    #[test]
    fn find_max_needs_an_slo_and_its_limits_need_it() {
        assert!(refused(&["--find-max"]).starts_with("--find-max needs --slo"));
        assert!(parse(&["--max-load", "8"]).is_err(), "needs --find-max");
        assert!(parse(&["--find-max", "--slo", "ttft=1s", "--shard", "0/2"]).is_err());
        let a = parse(&[
            "--find-max",
            "--slo",
            "ttft=1s",
            "--max-load",
            "64",
            "--slo-attainment",
            "99",
        ])
        .unwrap();
        let o = a.options().unwrap();
        assert_eq!(o.find_max.unwrap().max_load, Some(64.0));
        let cfg = o.find_max_config().unwrap().unwrap();
        assert_eq!((cfg.max_load, cfg.attainment_pct), (64.0, 99.0));
        let e = parse(&["--find-max", "--slo", "ttft=1s", "--concurrency", "1,2"])
            .unwrap()
            .options()
            .unwrap_err()
            .to_string();
        assert!(e.contains("give one --concurrency"), "{e}");
        assert!(parse(&[]).unwrap().options().unwrap().find_max.is_none());
    }

    #[test]
    fn records_default_next_to_json() {
        let a = parse(&["--json", "out/r.json"]).unwrap();
        assert_eq!(
            a.records_path().unwrap(),
            PathBuf::from("out/r.json.requests.jsonl")
        );
        assert!(parse(&[]).unwrap().records_path().is_none());
    }
}
