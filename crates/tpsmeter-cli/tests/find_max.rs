//! `tpsmeter bench --find-max` against a server whose knee is known: the emulator with a
//! capacity of 6 streams (a request beyond them waits for a whole answer, far past the TTFT
//! limit), and one that misses the SLO at the first load. The search's rule itself is
//! unit-tested in the core (`find_max/tests.rs`); here the CLI drives it end to end.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{argv, bench};
use tpsmeter_cli::exit::Status;
use tpsmeter_core::find_max::FindMaxStop;
use tpsmeter_core::plan::LoadLevel;
use tpsmeter_emulator::{Emulator, EmulatorConfig, Schedule};

/// The emulator with `slots` streams at once, each 20 ms to its first token and 12 tokens
/// 10 ms apart: a request that waits for a slot waits ~130 ms.
async fn server(slots: Option<u32>, ttft_ms: u64) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(ttft_ms),
            itl: Duration::from_millis(10),
            output_tokens: 12,
        },
        max_streams: slots,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highest_concurrency_within_the_slo_is_the_servers_capacity() {
    let emu = server(Some(6), 20).await;
    let result = bench(&argv(
        "openai-chat",
        &emu.base_url(),
        &["--find-max", "--slo", "ttft=60ms", "--max-tokens", "12"],
    ))
    .await;
    let report = &result.report;
    let v = report.find_max.as_ref().unwrap();
    let c = LoadLevel::Concurrency;
    let ran: Vec<LoadLevel> = report.levels.iter().map(|l| l.level).collect();
    // Up to 6 streams every request is answered at once; at 7 one in every 7 waits for a
    // slot. Doubling finds 4 → 8, bisection 6 → 7.
    assert_eq!(v.max_load, Some(c(6)), "{}: ran {ran:?}", v.message);
    assert_eq!(v.lowest_failing, Some(c(7)), "{}", v.message);
    assert_eq!(v.stop, FindMaxStop::SloBroken);
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(6), c(7)]);
    assert_eq!(
        report.config.levels, ran,
        "the config records the levels run"
    );
    let cfg = report.config.find_max.unwrap();
    assert_eq!((cfg.start, cfg.attainment_pct), (c(1), 95.0));
    // Every level is kept (the curve), each judged; goodput rose with the load up to 6.
    assert_eq!(v.steps.len(), 6);
    let goodput = |n: u32| {
        let s = v.steps.iter().find(|s| s.level == c(n)).unwrap();
        assert!(s.passed == (n <= 6), "c={n}: {s:?}");
        s.goodput_per_s.unwrap()
    };
    assert!(goodput(6) > goodput(4) && goodput(4) > goodput(2) && goodput(2) > goodput(1));
    // The search ran past the SLO on purpose: a load met it, so the run succeeded.
    assert_eq!(result.status, Status::Ok);
    let table = tpsmeter_cli::output::table::render(report);
    assert!(
        table.contains("Find max (slo_broken): c=6 is the highest load"),
        "{table}"
    );
    assert!(
        table.contains("c=7 ✗") && table.contains("c=6 ✓"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_misses_the_slo_at_the_first_load_has_no_max() {
    let emu = server(None, 80).await;
    let result = bench(&argv(
        "openai-chat",
        &emu.base_url(),
        &["--find-max", "--slo", "ttft=40ms", "--max-tokens", "2"],
    ))
    .await;
    let v = result.report.find_max.as_ref().unwrap();
    assert_eq!(v.stop, FindMaxStop::NeverMet);
    assert_eq!(v.max_load, None);
    assert_eq!(result.report.levels.len(), 1);
    assert_eq!(result.status, Status::SloFailed);
}
