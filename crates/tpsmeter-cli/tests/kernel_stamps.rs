//! Plain http on Linux: a body read is stamped with when its bytes arrived, not when the
//! runner's task got to run (`stamped_http.rs`).
//!
//! The client runs on a one-thread runtime that the test blocks for 40 ms while the whole
//! response arrives; a stamp taken by the runner when it reads lands after the block (the
//! reqwest path, checked as the peer), the kernel's lands within the server's write.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tpsmeter_arrival::StampedStream;
use tpsmeter_cli::bench::http::runner::Runner;
use tpsmeter_core::Api;
use tpsmeter_core::request::{RequestSpec, build_request};

const BLOCK: Duration = Duration::from_millis(40);

const BODY: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":\"stop\"}]}\n\n\
                    data: [DONE]\n\n";

/// Reads one request (head and `content-length` body) from `reader`.
fn read_request(reader: &mut BufReader<TcpStream>) {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "client hung up");
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
}

fn write_response(stream: &mut TcpStream) {
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    stream.write_all(response.as_bytes()).unwrap();
}

/// The kernel turns receive stamps on for the whole stack in deferred work after the first
/// socket asks, so a fresh process's first packets may carry none: wait until a probe
/// connection's bytes are stamped, and keep it open so stamping stays on.
async fn stamping_on() -> (TcpStream, StampedStream) {
    use hyper_util::rt::TokioIo;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (reader, _) = listener.accept().await.unwrap();
    let (reader, stamps) = StampedStream::new(reader);
    let mut reader = TokioIo::new(reader);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        writer.write_all(b"x").unwrap();
        let mut buf = [0u8; 16];
        let _ = tokio::io::AsyncReadExt::read(&mut reader, &mut buf)
            .await
            .unwrap();
        if stamps.last().is_some() {
            return (writer, reader.into_inner());
        }
        tokio::task::yield_now().await;
    }
    panic!("the kernel never stamped a received packet");
}

/// Runs one request through `client` while the runtime is blocked from the moment the
/// request is in until `BLOCK` after the whole response was written. Returns the content
/// chunks' stamps and the write's bracket, in ms since the run's origin, and the runner's
/// stamp source.
fn stamps_through(
    client: tpsmeter_cli::bench::http::client::Client,
) -> (Vec<f64>, (f64, f64), &'static str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let _probe = stamping_on().await;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (got_request, request_seen) = tokio::sync::oneshot::channel::<()>();
        let (blocking, runtime_blocked) = mpsc::channel::<()>();
        let (written, write_done) = mpsc::channel::<(Instant, Instant)>();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut stream = stream;
            read_request(&mut reader);
            got_request.send(()).unwrap();
            runtime_blocked.recv().unwrap();
            let before = Instant::now();
            write_response(&mut stream);
            let after = Instant::now();
            written.send((before, after)).unwrap();
            // The response is complete (content-length): closing loses nothing.
        });
        // Blocks the runtime's only thread from the moment the request is in until 40 ms
        // after the whole response was written: the runner cannot read before then.
        let blocker = tokio::spawn(async move {
            request_seen.await.unwrap();
            blocking.send(()).unwrap();
            let bracket = write_done.recv().unwrap();
            std::thread::sleep(BLOCK);
            bracket
        });

        let spec = RequestSpec {
            api: Api::OpenaiChat,
            base_url: format!("http://127.0.0.1:{port}"),
            model: "m".into(),
            messages: vec![tpsmeter_core::Message::user("Say something.")],
            system: None,
            max_tokens: 2,
            temperature: None,
            api_key: None,
            ignore_eos: false,
        };
        let request = build_request(&spec).unwrap();
        let timeout = Duration::from_secs(30);
        let origin = Instant::now();
        let runner =
            Runner::new(client, Api::OpenaiChat, &request, origin, timeout, timeout).unwrap();
        let outcome = runner.run(&CancellationToken::new(), None).await;
        let (before, after) = blocker.await.unwrap();
        let source = runner.stamp_source();
        drop(runner);
        server.join().unwrap();

        assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
        let ms = |at: Instant| (at - origin).as_secs_f64() * 1000.0;
        let chunks: Vec<f64> = outcome
            .timeline
            .content_chunks()
            .iter()
            .map(|c| c.t_ms)
            .collect();
        assert!(!chunks.is_empty(), "no content chunk");
        (chunks, (ms(before), ms(after)), source)
    })
}

fn client() -> tpsmeter_cli::bench::http::client::Client {
    tpsmeter_cli::bench::http::client::build(Duration::from_secs(30)).unwrap()
}

#[test]
fn a_read_is_stamped_when_its_bytes_arrived_not_when_the_runner_ran() {
    let (chunks, (before, after), source) = stamps_through(client());
    assert!(source.contains("SO_TIMESTAMPNS"), "{source}");
    for t in chunks {
        assert!(
            t >= before - 1.0 && t <= after + 5.0,
            "chunk stamped at {t:.3} ms, written {before:.3}..{after:.3} ms, read after {:.3} ms",
            after + BLOCK.as_secs_f64() * 1000.0
        );
    }
}

/// The peer: through reqwest the same reads are stamped when the runner gets them, after the
/// block. This is what the test above tells apart.
#[test]
fn through_reqwest_the_same_reads_are_stamped_after_the_block() {
    let (chunks, (_, after), source) = stamps_through(client().without_kernel_stamps());
    assert!(!source.contains("SO_TIMESTAMPNS"), "{source}");
    for t in chunks {
        assert!(
            t >= after + BLOCK.as_secs_f64() * 1000.0 - 1.0,
            "chunk stamped at {t:.3} ms, before the runtime could run ({after:.3} ms + 40)"
        );
    }
}
