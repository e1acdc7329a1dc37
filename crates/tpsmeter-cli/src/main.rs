//! `tpsmeter`: the native command line. All the work lives in the library
//! (`tpsmeter_cli`); this file parses arguments and turns the outcome into an exit status.

use std::process::ExitCode;

use clap::Parser;
use tpsmeter_cli::Cli;
use tpsmeter_cli::exit::Status;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
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
