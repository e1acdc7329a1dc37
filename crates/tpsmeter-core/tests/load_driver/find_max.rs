//! Find-max: the search picks each next level, and the report says where it stopped.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn find_max_chooses_each_next_level_and_the_report_says_where_it_stopped() {
    let o = options(|o| {
        o.slo = Some("ttft=50ms".into());
        o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
        o.warmup = 1;
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    // A server that answers at once up to 4 streams and keeps every request waiting 100 ms
    // beyond (the simulation knows the level, not the server's queue).
    let (starts, max_inflight) = simulate(&mut d, |t, start| {
        let ttft = if t.level.value() <= 4.0 { 10.0 } else { 100.0 };
        stream_after(start, ttft, 5)
    });
    let c = LoadLevel::Concurrency;
    let ran: Vec<LoadLevel> = d.level_reports().iter().map(|l| l.level).collect();
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(6), c(5)]);
    assert_eq!(max_inflight, 8);
    // Each chosen level runs the options' default count (4 × c, at least 8) after its
    // warm-up request, like any listed level.
    assert_eq!(starts.len(), 8 + 8 + 16 + 32 + 24 + 20 + 6);
    let mut report = tpsmeter_core::Report::new(
        o.run_config(
            o.prompt_source(0),
            &tpsmeter_core::PromptPlan::new(&o, None, 1, None).unwrap(),
        )
        .unwrap(),
        tpsmeter_core::report::Environment::default(),
        d.level_reports().to_vec(),
        d.records().to_vec(),
        Vec::new(),
    );
    assert_eq!(
        report.config.levels,
        [c(1)],
        "the config knows only the start"
    );
    d.annotate(&mut report);
    assert_eq!(report.config.levels, ran);
    assert_eq!(report.config.find_max.unwrap().start, c(1));
    let v = report.find_max.as_ref().unwrap();
    assert_eq!(v.max_load, Some(c(4)));
    assert_eq!(v.lowest_failing, Some(c(5)));
    assert_eq!(v.stop, tpsmeter_core::find_max::FindMaxStop::SloBroken);
    assert_eq!(v.steps.len(), 6);
    // The report reads back with its verdict.
    let back = tpsmeter_core::Report::from_json(&report.to_json()).unwrap();
    assert_eq!(back.find_max, report.find_max);
}

type Mutation = fn(&mut BenchOptions);

#[test]
fn find_max_needs_an_slo_one_start_level_and_no_shards() {
    let search = |f: Mutation| {
        let o = options(|o| {
            o.slo = Some("ttft=1s".into());
            o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
            f(o);
        });
        LoadDriver::new_shard(&o, Shard::WHOLE, Redactor::default()).map(|_| ())
    };
    search(|_| {}).unwrap();
    let cases: [(Mutation, &str); 3] = [
        (|o| o.slo = None, "`findMax` needs `slo`"),
        (|o| o.concurrency = vec![1, 2], "give one `concurrency`"),
        (|o| o.rate = vec![1.0, 2.0], "give one `rate`"),
    ];
    for (f, says) in cases {
        let e = search(f).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    let o = options(|o| {
        o.slo = Some("ttft=1s".into());
        o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
    });
    let e = LoadDriver::new_shard(&o, Shard::new(0, 2).unwrap(), Redactor::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot run sharded"), "{e}");
}
