//! `tpsmeter`: the native command line. All the work lives in the library
//! (`tpsmeter_cli`); this file parses arguments and turns the outcome into an exit status.

use std::process::ExitCode;

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use tpsmeter_cli::Cli;
use tpsmeter_cli::exit::Status;
use tpsmeter_core::spec::{Field, OptionError, field::suggest};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // A misspelt `bench` option gets the run spec's suggestion, the one `bench()`
            // gives for the same name (`max_tokens` → `maxTokens` there, --max-tokens here).
            if let Some(message) = unknown_bench_option(&e) {
                eprintln!("error: {message}");
                return Status::Usage.into();
            }
            // Help and version go to stdout with status 0; usage errors are status 1 (clap
            // would say 2, which we reserve for failed SLOs).
            let _ = e.print();
            return if e.use_stderr() {
                Status::Usage.into()
            } else {
                Status::Ok.into()
            };
        }
    };
    match tpsmeter_cli::run(cli) {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            Status::Usage.into()
        }
    }
}

/// The run spec's words for an unknown `tpsmeter bench` flag that names one of its options
/// (`--max_tokens`, `--concurency`): the same suggestion `bench()` makes. `None` for other
/// errors and for names the spec cannot place, which clap's own message covers.
fn unknown_bench_option(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument || std::env::args().nth(1).as_deref() != Some("bench")
    {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let name = arg.split('=').next().unwrap_or(arg);
    let field = suggest(name).filter(|f: &Field| f.spec().flag.is_some())?;
    Some(
        OptionError::Unknown {
            name: name.to_owned(),
            suggestion: Some(field),
        }
        .for_cli(),
    )
}
