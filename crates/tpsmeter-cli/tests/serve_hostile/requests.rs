//! Requests that are malformed, absurd or too large: OpenAI's error objects, bodies refused unread.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn malformed_and_absurd_requests_get_openai_errors() {
    let test = "malformed_and_absurd_requests_get_openai_errors";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "2", test);

    let user = r#""messages":[{"role":"user","content":"hi"}]"#;
    let cases: Vec<(String, u16, Option<&str>, Option<&str>)> = vec![
        ("{not json".into(), 400, Some("invalid_json"), None),
        ("\u{0}\u{1}".into(), 400, Some("invalid_json"), None),
        ("[[[[[[[[[[".repeat(100), 400, Some("invalid_json"), None),
        (
            r#"{"messages":"hi"}"#.into(),
            400,
            Some("invalid_json"),
            None,
        ),
        (r#"{"model":"x"}"#.into(), 400, None, Some("messages")),
        (
            format!(r#"{{{user},"temperature":-3}}"#),
            400,
            None,
            Some("temperature"),
        ),
        (
            format!(r#"{{{user},"temperature":1e300}}"#),
            400,
            None,
            Some("temperature"),
        ),
        (format!(r#"{{{user},"top_p":7}}"#), 400, None, Some("top_p")),
        (
            format!(r#"{{{user},"max_tokens":0}}"#),
            400,
            None,
            Some("max_tokens"),
        ),
        (
            format!(r#"{{{user},"max_tokens":-1}}"#),
            400,
            Some("invalid_json"),
            None,
        ),
        (
            format!(r#"{{{user},"max_tokens":99999999999999999999999}}"#),
            400,
            Some("invalid_json"),
            None,
        ),
        (format!(r#"{{{user},"n":5}}"#), 400, None, Some("n")),
    ];
    for (body, want, code, param) in &cases {
        let (status, _, got) = chat(port, body);
        assert_eq!(status, *want, "{body:.80}: {got}");
        let e = error_object(&got);
        if let Some(code) = code {
            assert_eq!(e["code"], *code, "{body:.80}");
        }
        if let Some(param) = param {
            assert_eq!(e["param"], *param, "{body:.80}");
        }
    }
    // Invalid UTF-8 inside a JSON string.
    let mut bad = br#"{"messages":[{"role":"user","content":""#.to_vec();
    bad.extend_from_slice(&[0xff, 0xfe]);
    bad.extend_from_slice(br#""}]}"#);
    let (status, _, got) = request(
        port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}",
            bad.len()
        ),
        &bad,
    );
    assert_eq!(status, 400, "{got}");
    error_object(&got);

    // Wrong content types: 415; JSON, text/plain (a browser's simple request) and none pass.
    for ct in [
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "image/png",
    ] {
        let (status, _, got) = post(port, "/v1/chat/completions", ct, &good_body(false, 2));
        assert_eq!(status, 415, "{ct}: {got}");
        assert_eq!(error_object(&got)["code"], "unsupported_media_type");
    }
    for ct in [
        "application/json; charset=utf-8",
        "text/plain;charset=UTF-8",
    ] {
        let (status, _, got) = post(port, "/v1/chat/completions", ct, &good_body(false, 2));
        assert_eq!(status, 200, "{ct}: {got}");
    }
    let body = good_body(false, 2);
    let (status, _, got) = request(
        port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}",
            body.len()
        ),
        body.as_bytes(),
    );
    assert_eq!(status, 200, "no content type: {got}");

    // Two Host headers, the first a name the server answers to: a 400, not the first taken.
    let (status, _, got) = request(
        port,
        "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nHost: evil.example",
        b"",
    );
    assert_eq!(status, 400, "two Host headers: {got}");
    assert_eq!(error_object(&got)["code"], "host_duplicated", "{got}");

    // Unknown routes and methods.
    let (status, _, got) = request(port, "GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1", b"");
    assert_eq!(status, 404);
    error_object(&got);
    let (status, _, got) = request(
        port,
        "DELETE /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1",
        b"",
    );
    assert_eq!(status, 405);
    error_object(&got);

    // A prompt past the context: a 400 before any answer starts, streamed or not.
    let long = "word ".repeat(4 * CONTEXT);
    for stream in [false, true] {
        let body = serde_json::json!({
            "messages": [{"role": "user", "content": long}],
            "stream": stream,
        })
        .to_string();
        let (status, _, got) = chat(port, &body);
        assert_eq!(status, 400, "stream {stream}: {got:.200}");
        let e = error_object(&got);
        assert_eq!(e["code"], "context_length_exceeded");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains(&CONTEXT.to_string())
        );
    }
    let (status, _, got) = post(
        port,
        "/v1/completions",
        "application/json",
        &serde_json::json!({"prompt": long}).to_string(),
    );
    assert_eq!(status, 400, "{got:.200}");
    assert_eq!(error_object(&got)["code"], "context_length_exceeded");

    // max_tokens far past the context: generation stops at the context ("length"); the
    // last token sampled needs no position of its own.
    let (status, _, got) = chat(
        port,
        &format!(r#"{{{user},"max_tokens":1000000,"temperature":0,"ignore_eos":true}}"#),
    );
    assert_eq!(status, 200, "{got}");
    let v: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
    let used = v["usage"]["total_tokens"].as_u64().unwrap() as usize;
    assert!(
        used <= CONTEXT + 1,
        "{used} tokens in a {CONTEXT}-position context"
    );

    assert_good(port, true);
    assert_alive(&mut server, &log);
}

#[test]
fn oversized_bodies_are_refused_without_being_read() {
    let test = "oversized_bodies_are_refused_without_being_read";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "2", test);

    // Announced at 1 TiB, not one byte sent: the 413 comes back at once (no read timeout).
    let mut s = connect(port);
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        1u64 << 40
    )
    .unwrap();
    let t = Instant::now();
    let (status, head, got) = read_response(&mut s);
    assert_eq!(status, 413, "{got}");
    assert!(
        t.elapsed() < READ_TIMEOUT,
        "the 413 waited {:?}",
        t.elapsed()
    );
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(error_object(&got)["code"], "payload_too_large");

    // Chunked, no length announced: refused once the cap is passed, the rest unread.
    let mut s = connect(port);
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    let chunk = vec![b' '; 64 << 10];
    let mut sent = 0;
    while sent <= MAX_BODY_BYTES {
        if write!(s, "{:x}\r\n", chunk.len()).is_err()
            || s.write_all(&chunk).is_err()
            || s.write_all(b"\r\n").is_err()
        {
            break;
        }
        sent += chunk.len();
    }
    let (status, _, got) = read_response(&mut s);
    assert_eq!(status, 413, "{got}");

    // Just under the cap is read (and refused for what it is: not JSON).
    let body = " ".repeat(MAX_BODY_BYTES - 1) + "x";
    let (status, _, got) = chat(port, &body);
    assert_eq!(status, 400, "{got:.200}");
    assert_eq!(error_object(&got)["code"], "invalid_json");

    assert_good(port, false);
    assert_alive(&mut server, &log);
}
