//! The report schema: JSON round trip, one-line records, CSV quoting, and that no
//! credential reaches a report.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use std::collections::BTreeMap;

use tpsmeter_core::event::{FinishReason, StreamEvent, Usage};
use tpsmeter_core::level_summary::PhaseSummary;
use tpsmeter_core::report::csv::{COLUMNS, to_csv, write_table};
use tpsmeter_core::report::{
    Environment, ErrorClass, ErrorRecord, LevelReport, MAX_ERROR_MESSAGE_CHARS, PromptSource,
    RedactedUrl, RunConfig, SCHEMA_VERSION, ShardInfo, ToolInfo, Warning, redact_url,
};
use tpsmeter_core::{
    Api, CacheBust, CoreError, LoadLevel, Report, RequestRecord, RequestSpec, Secret, Slo,
    Timeline, build_request,
};

const KEY: &str = "sk-THIS-MUST-NOT-LEAK-0123456789";

fn ok_record(id: u64) -> RequestRecord {
    // Dyadic timestamps keep every derived float exactly representable in JSON.
    let mut t = Timeline::new(0.5);
    t.on_bytes(8.0, 64);
    t.on_chunk(8.0, &[StreamEvent::ReasoningDelta { text: "hm".into() }]);
    t.on_chunk(16.0, &[StreamEvent::ContentDelta { text: "Hi".into() }]);
    t.on_chunk(
        32.5,
        &[
            StreamEvent::ContentDelta { text: "!".into() },
            StreamEvent::Finish {
                reason: FinishReason::Other("eos, \"custom\"".into()),
            },
            StreamEvent::Usage(Usage {
                input_tokens: Some(3),
                output_tokens: Some(3),
                reasoning_tokens: Some(1),
                server_decode_ms: Some(24.0),
                server_prefill_ms: None,
                cached_input_tokens: None,
            }),
        ],
    );
    t.finish(64.5);
    RequestRecord::from_timeline(
        id,
        LoadLevel::Concurrency(4),
        false,
        &t,
        Some(200),
        None,
        true,
    )
}

fn failed_record(id: u64) -> RequestRecord {
    let mut t = Timeline::new(1.0);
    t.finish(2.0);
    let mut e = ErrorRecord::new(
        ErrorClass::RateLimited,
        "429 Too Many Requests\nbody: {\"error\": \"slow down, please\"}",
    );
    e.http_status = Some(429);
    e.retry_after_s = Some(2.5);
    RequestRecord::from_timeline(
        id,
        LoadLevel::Concurrency(4),
        true,
        &t,
        Some(429),
        Some(e),
        false,
    )
}

fn report(url: &str) -> Report {
    let requests = vec![ok_record(0), failed_record(1)];
    let summary = PhaseSummary::from_records(&requests, 0.0, 1000.0, None);
    Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "tpsmeter".into(),
            version: "0.1.0".into(),
        },
        config: RunConfig {
            api: Api::Gemini,
            url: RedactedUrl::new(url),
            model: "gemini-x".into(),
            levels: vec![LoadLevel::Concurrency(4)],
            requests: Some(2),
            duration_s: None,
            max_duration_s: None,
            rate_per_s: None,
            seed: None,
            max_tokens: Some(64),
            prompt: PromptSource::Synthetic {
                input_tokens: 128,
                input_tokens_stdev: None,
                tokenizer: None,
            },
            cache_bust: Some(CacheBust::Prefix),
            shared_prefix_tokens: None,
            prompt_run_id: Some("3f9a1c2b".into()),
            warmup: 1,
            timeout_s: Some(30.0),
            slo: Some(Slo::parse("ttft=500ms,tpot=50ms").unwrap()),
            workload: None,
            turns: None,
            ramp_up_s: None,
            find_max: None,
        },
        environment: Environment {
            os: "linux".into(),
            arch: "x86_64".into(),
            cpu_count: Some(2),
            tool_version: "0.1.0".into(),
            notes: BTreeMap::from([("http".to_string(), "HTTP/1.1".to_string())]),
            browser: None,
        },
        levels: vec![LevelReport {
            level: LoadLevel::Concurrency(4),
            summary,
        }],
        requests,
        warnings: vec![Warning {
            code: "tab_hidden".into(),
            message: "the tab was hidden for 3 ms".into(),
        }],
        clock_origin_unix_ms: Some(1_767_225_600_000.5),
        turns: Vec::new(),
        shard: Some(ShardInfo {
            index: 1,
            count: 3,
            start_at_unix_ms: Some(1_767_225_600_000.0),
        }),
        find_max: None,
    }
}

#[test]
fn report_round_trips_through_json() {
    let r = report("http://127.0.0.1:8080/v1");
    let json = r.to_json();
    assert!(json.contains("\"schema_version\": 2"));
    let back = Report::from_json(&json).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.requests[0].metrics.output_tokens, 3);
}

#[test]
fn other_schema_versions_are_rejected_by_name() {
    let json = report("http://h/v1")
        .to_json()
        .replace("\"schema_version\": 2", "\"schema_version\": 1");
    assert_eq!(
        Report::from_json(&json),
        Err(CoreError::UnsupportedSchemaVersion {
            found: 1,
            supported: 2
        })
    );
    assert!(matches!(
        Report::from_json("{"),
        Err(CoreError::MalformedJson { .. })
    ));
}

#[test]
fn request_record_is_one_json_line_and_round_trips() {
    for r in [ok_record(0), failed_record(1)] {
        let line = r.to_json_line();
        assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
        let back: RequestRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, r);
    }
    let line = failed_record(1).to_json_line();
    assert!(line.contains("\"class\":\"rate_limited\""), "{line}");
    assert!(
        ok_record(0)
            .to_json_line()
            .contains("\"token_source\":\"usage\"")
    );
}

#[test]
fn error_classes_serialise_to_their_documented_names() {
    for c in ErrorClass::ALL {
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            format!("\"{}\"", c.as_str())
        );
    }
    assert_eq!(ErrorClass::Http4xx.as_str(), "http_4xx");
    assert_eq!(ErrorClass::TimeoutFirstByte.as_str(), "timeout_first_byte");
}

#[test]
fn csv_quotes_commas_quotes_and_newlines() {
    let mut browser = ok_record(0);
    browser.queue_ms = Some(1.5);
    browser.http_version = Some("h2".into());
    browser.tab_hidden = Some(false);
    browser.connect_ms = Some(1003.5);
    browser.wait_ms = Some(4.0);
    let records = [browser, failed_record(1)];
    let csv = to_csv(&records);
    let lines: Vec<&str> = csv.split('\n').collect();
    assert_eq!(lines[0], COLUMNS.join(","));
    // The custom finish reason holds a comma and quotes: quoted, quotes doubled.
    assert!(
        lines[1].contains(",\"eos, \"\"custom\"\"\","),
        "{}",
        lines[1]
    );
    assert!(lines[1].starts_with("0,concurrency,4,false,0.5,8,16,64.5,7.5,15.5,7.5,64,3,usage,"));
    // The error message spans two lines inside one quoted field.
    assert!(csv.contains(",rate_limited,\"429 Too Many Requests\nbody: {\"\"error\"\": \"\"slow down, please\"\"}\",2.5,"));
    // The browser's columns come next to last, then the wait before the first byte: a
    // record without them leaves them empty.
    assert!(
        lines[1].ends_with(",,,1.5,h2,false,,1003.5,,4"),
        "{}",
        lines[1]
    );
    assert!(csv.ends_with(",2.5,,,,,,,,,\n"), "{csv}");
    // Parsed back by an independent reader, every row has every column.
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.len() == COLUMNS.len()));
    let col = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
    assert_eq!(&rows[0][col("finish_reason")], "eos, \"custom\"");
    assert_eq!(&rows[0][col("server_decode_tps")], "125");
    assert_eq!(&rows[1][col("ttft_ms")], "");
    assert_eq!(&rows[1][col("http_status")], "429");
    assert_eq!(&rows[1][col("warmup")], "true");
    assert_eq!(&rows[0][col("http_version")], "h2");
    assert_eq!(&rows[0][col("connect_ms")], "1003.5");
    // A painted request fills the paint columns.
    let mut t = Timeline::new(0.0);
    t.on_chunk(8.0, &[StreamEvent::ContentDelta { text: "ab".into() }]);
    t.on_chunk(12.0, &[StreamEvent::ContentDelta { text: "c".into() }]);
    t.on_paint(10.0, 2);
    t.on_paint(20.0, 1);
    t.finish(24.0);
    let painted =
        RequestRecord::from_timeline(2, LoadLevel::Rate(2.0), false, &t, Some(200), None, false);
    let csv = to_csv(&[painted]);
    let row = csv::Reader::from_reader(csv.as_bytes())
        .records()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        (&row[col("ttfp_ms")], &row[col("painted_tps")]),
        ("10", "100")
    );
}

#[test]
fn csv_read_back_and_written_as_a_table_is_the_same_text() {
    // The page imports an exported CSV as rows of text and writes them back out: the same
    // bytes as the export, whatever the cells hold.
    let csv = to_csv(&[ok_record(0), failed_record(1)]);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(csv.as_bytes());
    let mut table = reader.records().map(Result::unwrap);
    let header = table.next().unwrap();
    let rows: Vec<Vec<String>> = table
        .map(|r| r.iter().map(str::to_string).collect())
        .collect();
    assert_eq!(write_table(&header, rows.into_iter()), csv);
    // Rows of other lengths (an older export's columns) are written as they are.
    assert_eq!(
        write_table(["a", "b"], [vec!["1"], vec!["x,y", "", "3"]].into_iter()),
        "a,b\n1\n\"x,y\",,3\n"
    );
    // A record of one empty field is quoted, or a reader would skip it as a blank line.
    let one = write_table(["a"], [vec![""], vec!["\r"]].into_iter());
    assert_eq!(one, "a\n\"\"\n\"\r\"\n");
    let read: Vec<csv::StringRecord> = csv::Reader::from_reader(one.as_bytes())
        .records()
        .map(Result::unwrap)
        .collect();
    assert_eq!(read.len(), 2);
}

#[test]
fn redact_url_removes_credentials() {
    assert_eq!(
        redact_url(&format!(
            "https://me:{KEY}@api.example.com/v1beta/models/m:streamGenerateContent?alt=sse&key={KEY}#x"
        )),
        "https://api.example.com/v1beta/models/m:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        redact_url(&format!("http://h/v1?api_key={KEY}")),
        "http://h/v1"
    );
    assert_eq!(
        redact_url(&format!("http://h/v1?x-api-key={KEY}&n=2")),
        "http://h/v1?n=2"
    );
    // A hand-edited report cannot smuggle a key back in.
    let u: RedactedUrl = serde_json::from_str(&format!("\"http://h/?token={KEY}\"")).unwrap();
    assert_eq!(u.as_str(), "http://h/");
}

#[test]
fn a_report_never_contains_the_api_key() {
    // The key as a request spec carries it (in a header), and as a user may paste it into
    // the URL they pass on the command line (userinfo, Gemini-style `?key=`).
    let pasted = format!("https://user:{KEY}@generativelanguage.example.com/v1beta?key={KEY}");
    let spec = RequestSpec {
        api: Api::Gemini,
        base_url: "https://generativelanguage.example.com".into(),
        model: "gemini-x".into(),
        messages: vec![tpsmeter_core::Message::user("hello")],
        system: None,
        max_tokens: 16,
        temperature: None,
        api_key: Some(Secret::new(KEY)),
        ignore_eos: false,
    };
    let http = build_request(&spec).unwrap();
    let mut r = report(&http.url);
    r.config.url = RedactedUrl::new(&pasted);
    r.environment
        .notes
        .insert("url".into(), redact_url(&pasted));
    let json = r.to_json();
    assert!(!json.contains(KEY), "{json}");
    assert!(!to_csv(&r.requests).contains(KEY));
    assert!(!format!("{r:?}").contains(KEY));
    assert!(!format!("{:?}", RedactedUrl::new(&http.url)).contains(KEY));
}

#[test]
fn error_messages_are_capped() {
    let long = "é".repeat(MAX_ERROR_MESSAGE_CHARS + 50);
    let e = ErrorRecord::new(ErrorClass::Http5xx, &long);
    // The cap counts characters, and cutting never splits a multi-byte one.
    assert_eq!(e.message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1); // + the ellipsis
    assert!(e.message.ends_with('…'));
    let short = ErrorRecord::new(ErrorClass::Other, "boom");
    assert_eq!(short.message, "boom");
}
