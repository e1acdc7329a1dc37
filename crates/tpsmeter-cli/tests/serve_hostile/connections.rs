//! Clients that stall, crowd in, overflow the connection cap or leave mid-answer.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn stalled_clients_time_out_while_others_are_served() {
    let test = "stalled_clients_time_out_while_others_are_served";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "2", test);

    // One client stalls inside its headers, one inside its body.
    let mut headers = connect(port);
    headers
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        .unwrap();
    let mut body = connect(port);
    write!(
        body,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"messages\""
    )
    .unwrap();
    let t = Instant::now();
    // Meanwhile, good requests are answered.
    assert_good(port, true);
    assert_good(port, false);
    // The body staller gets a 408; the header staller is disconnected.
    let (status, _, got) = read_response(&mut body);
    assert_eq!(status, 408, "{got}");
    assert_eq!(error_object(&got)["code"], "request_timeout");
    let mut rest = Vec::new();
    let _ = headers.read_to_end(&mut rest);
    let waited = t.elapsed();
    assert!(
        waited >= READ_TIMEOUT - Duration::from_secs(1) && waited < 4 * READ_TIMEOUT,
        "the stalled clients were let go after {waited:?}"
    );
    assert_alive(&mut server, &log);
}

#[test]
fn a_hundred_concurrent_clients_good_and_hostile_are_all_answered() {
    let test = "a_hundred_concurrent_clients_good_and_hostile_are_all_answered";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "4", test);

    // 100 at once: every fifth malformed, every fifth one that leaves mid-stream, the rest
    // good (streamed and not). Each good one is answered in full; each bad one gets its 400.
    let outcomes: Vec<(usize, u16, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..100)
            .map(|i| {
                s.spawn(move || match i % 5 {
                    0 => {
                        let (status, _, got) = chat(port, r#"{"messages": [ oops"#);
                        (i, status, error_object(&got)["code"] == "invalid_json")
                    }
                    1 => {
                        let mut c = connect(port);
                        let body = good_body(true, 200);
                        write!(
                            c,
                            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .unwrap();
                        let mut first = [0u8; 16];
                        let n = c.read(&mut first).unwrap();
                        let _ = c.shutdown(Shutdown::Both);
                        (i, 200, n > 0)
                    }
                    k => {
                        let stream = k % 2 == 0;
                        let (status, _, got) = chat(port, &good_body(stream, 4));
                        let complete = if stream {
                            got.contains("data: [DONE]")
                        } else {
                            serde_json::from_str::<Value>(&got)
                                .is_ok_and(|v| v["choices"][0]["message"]["content"].is_string())
                        };
                        (i, status, complete)
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, status, ok) in &outcomes {
        let want = if i % 5 == 0 { 400 } else { 200 };
        assert_eq!(*status, want, "client {i}");
        assert!(ok, "client {i}: incomplete answer");
    }
    assert_good(port, true);
    assert_alive(&mut server, &log);
}

#[test]
fn connections_past_the_cap_get_503_and_the_server_recovers() {
    let test = "connections_past_the_cap_get_503_and_the_server_recovers";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "2", test);
    // Every connection the server holds, each proven accepted by a whole request on it
    // (keep-alive: the connection stays open and counted afterwards).
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut c = connect(port);
            c.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 512];
            let n = c.read(&mut buf).unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
            c
        })
        .collect();
    let (status, head, got) = chat(port, &good_body(false, 2));
    assert_eq!(status, 503, "{got}");
    assert!(head.contains("retry-after"), "{head}");
    assert_eq!(error_object(&got)["code"], "too_many_connections");
    drop(held);
    // Their slots come back as the server sees them close.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, _) = chat(port, &good_body(false, 2));
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "connections never freed");
        std::thread::yield_now();
    }
    assert_alive(&mut server, &log);
}

#[test]
fn a_whole_answer_whose_client_left_stops_generating() {
    let test = "a_whole_answer_whose_client_left_stops_generating";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve(&model, "1", test);
    // A long non-streamed answer on the only slot, its client gone once the request is sent.
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": CONTEXT,
        "ignore_eos": true,
        "temperature": 0,
    })
    .to_string();
    let mut c = connect(port);
    write!(
        c,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    drop(c);
    // The next request's wait for the slot is a small part of the ~240 tokens the first
    // had left (its own inter-token time is the unit).
    let (status, _, got) = chat(port, &good_body(false, 2));
    assert_eq!(status, 200, "{got}");
    let v: Value = serde_json::from_str(&got).unwrap();
    let queued = v["timings"]["queue_ms"].as_f64().unwrap();
    // Two tokens: the decode time is one inter-token gap.
    let itl = v["timings"]["predicted_ms"].as_f64().unwrap();
    assert!(
        itl > 0.0 && queued < 40.0 * itl,
        "the second request queued {queued} ms behind an abandoned answer (ITL {itl} ms)"
    );
    assert_alive(&mut server, &log);
}

/// A stream whose client never reads (a 1 KiB receive buffer, nothing read) used to hold
/// its slot until the connection's write timeout (30 s) cut it: a normal request behind it
/// waited 38 s. Its generation must stop once its writes have waited a short while
/// (`STREAM_STALL`, 2 s), and the slot go to the next request.
#[test]
fn a_stream_whose_client_never_reads_gives_its_slot_back() {
    let test = "a_stream_whose_client_never_reads_gives_its_slot_back";
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (mut server, port, log) = serve_with(&model, "1", 4096, test);
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": 4000,
        "ignore_eos": true,
        "temperature": 0,
        "stream": true,
    })
    .to_string();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(1024).unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    socket.connect(&addr.into()).unwrap();
    let mut stalled: TcpStream = socket.into();
    write!(
        stalled,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Its head read (the stream has the only slot), nothing more from here on; the next
    // request queues behind it.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stalled.read(&mut byte).unwrap(),
            1,
            "the stream ended in its head"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let start = Instant::now();
    let (status, _, got) = chat(port, &good_body(false, 2));
    assert_eq!(status, 200, "{got}");
    let v: Value = serde_json::from_str(&got).unwrap();
    let queued_s = v["timings"]["queue_ms"].as_f64().unwrap() / 1000.0;
    // Filling what the socket queues (16 KiB unsent: `NOTSENT_LOWAT`, at a few KiB/s of
    // tokens) and the 2 s bound take seconds; the 4,000 tokens would take minutes, the
    // write timeout 30 s more.
    assert!(
        queued_s < 20.0,
        "the next request queued {queued_s:.1} s behind a stream nobody reads (answered after \
         {:.1} s)",
        start.elapsed().as_secs_f64()
    );
    drop(stalled);
    assert_alive(&mut server, &log);
}
