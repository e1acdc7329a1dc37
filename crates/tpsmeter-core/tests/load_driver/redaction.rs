//! What a server echoes back (the key in an error body, a header, an event) never lands in
//! a record.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Regression (issue 24): a server that echoed the key in its 401 body, its `Retry-After`
/// header, an in-stream error event or a finish reason got it stored in the record, and
/// from there printed on the terminal, written to `--json` and kept in IndexedDB.
#[test]
fn records_never_hold_the_key_a_server_echoed() {
    const KEY: &str = "sk-echo-Zq8/Wx+Vb7=Nm6Lk5";
    let url_key = "sk-echo-Zq8%2FWx%2BVb7%3DNm6Lk5";
    let o = options(|o| {
        o.requests = Some(5);
    });
    let spec = o
        .request_spec(Some(tpsmeter_core::request::Secret::new(KEY)))
        .unwrap();
    let mut d = LoadDriver::new(&o, Redactor::for_spec(&spec)).unwrap();
    let (_, _) = simulate(&mut d, |t, start| {
        let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, start);
        let end = start + 5.0;
        match t.id {
            0 => {
                ex.on_response(401, None);
                let body = format!(
                    r#"{{"error":{{"message":"Invalid API key provided: Bearer {KEY}"}}}}"#
                );
                ex.on_bytes(start + 1.0, body.as_bytes());
                ex.on_body_end(end);
            }
            1 => {
                ex.on_response(429, Some(&format!("Bearer {}", &KEY[..20])));
                ex.on_body_end(end);
            }
            2 => {
                ex.on_response(200, None);
                let event = format!(
                    "data: {{\"error\":{{\"message\":\"bad key {url_key}\",\"code\":\"{KEY}\"}}}}\n\n"
                );
                ex.on_bytes(start + 1.0, event.as_bytes());
                ex.on_body_end(end);
            }
            3 => {
                ex.on_response(200, None);
                let line = format!(
                    "data: {{\"choices\":[{{\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"{KEY}\"}}]}}\n\ndata: [DONE]\n\n"
                );
                ex.on_bytes(start + 1.0, line.as_bytes());
            }
            _ => {
                ex.on_response(503, None);
                let masked = format!("key {}***{}", &KEY[..10], &KEY[KEY.len() - 8..]);
                ex.on_bytes(start + 1.0, masked.as_bytes());
                ex.on_body_end(end);
            }
        }
        (ex.into_outcome(), end)
    });
    let (_, records) = d.into_parts();
    assert_eq!(records.len(), 5);
    for r in &records {
        let json = r.to_json_line();
        for w in KEY
            .as_bytes()
            .windows(8)
            .chain(url_key.as_bytes().windows(8))
        {
            let w = std::str::from_utf8(w).unwrap();
            assert!(!json.contains(w), "record {} holds {w:?}: {json}", r.id);
        }
    }
    // The records still say what happened, with the key replaced.
    let messages: Vec<&str> = records
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| e.message.as_str()))
        .collect();
    assert!(
        messages[0].contains("Invalid API key provided: Bearer REDACTED"),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Retry-After: Bearer REDACTED")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("bad key REDACTED")),
        "{messages:?}"
    );
}

/// Regression (issue 35): `complete` redacted the record before it copied the outcome's HTTP
/// version in, so a version string quoting the key (in the browser it comes from the page's
/// Resource Timing, which a server's ALPN answer shapes) reached the record, and the run's
/// list of versions, unredacted.
#[test]
fn an_http_version_holding_the_key_is_redacted() {
    const KEY: &str = "sk-ver-Yt7/Qp+Lm4=Hs2Dc9";
    let o = options(|o| o.requests = Some(1));
    let spec = o
        .request_spec(Some(tpsmeter_core::request::Secret::new(KEY)))
        .unwrap();
    let mut d = LoadDriver::new(&o, Redactor::for_spec(&spec)).unwrap();
    let (_, _) = simulate(&mut d, |_, start| {
        let (mut outcome, end) = stream(start, 2);
        outcome.http_version = Some(format!("h2 {}", &KEY[..16]));
        (outcome, end)
    });
    assert_eq!(d.http_versions(), ["h2 REDACTED"]);
    let (_, records) = d.into_parts();
    assert_eq!(records[0].http_version.as_deref(), Some("h2 REDACTED"));
}
