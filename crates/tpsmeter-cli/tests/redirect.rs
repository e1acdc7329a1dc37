//! No redirect is followed with a credential (issue 35): a server on 127.0.0.1 answering a
//! 3xx that points at another host (a listener on 127.0.0.2 that keeps whatever arrives)
//! gets the request's result, a `redirect` error naming where it pointed, and the other host
//! sees nothing: in every wire format, with the key in its API's header, through both HTTP
//! clients (the kernel-stamped one and reqwest, which followed redirects and kept
//! `x-api-key` and `x-goog-api-key` on the way to another host).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tpsmeter_cli::bench::http::client::{Client, build};
use tpsmeter_cli::bench::http::runner::Runner;
use tpsmeter_core::Api;
use tpsmeter_core::failure::Failure;
use tpsmeter_core::report::ErrorClass;
use tpsmeter_core::request::{RequestSpec, Secret, build_request};
use tpsmeter_emulator::{Emulator, EmulatorConfig};

const KEY: &str = "sk-redirect-7Hq2/Lp9+Xw4=Zt";
const PASSWORD: &str = "pw-redirect-Qx81Lm";

/// What reached the other host: connections, and every byte they carried.
#[derive(Default)]
struct Arrived {
    connections: usize,
    bytes: Vec<u8>,
}

/// A listener on 127.0.0.2, another host to a client of 127.0.0.1, that keeps what arrives
/// and answers 404 (so a client that followed does not wait for its timeout).
async fn target() -> (u16, Arc<Mutex<Arrived>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let arrived = Arc::new(Mutex::new(Arrived::default()));
    let keep = arrived.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            keep.lock().unwrap().connections += 1;
            let keep = keep.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                if let Ok(n) = stream.read(&mut buf).await {
                    keep.lock().unwrap().bytes.extend_from_slice(&buf[..n]);
                }
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    (port, arrived)
}

fn spec(api: Api, base_url: String) -> RequestSpec {
    RequestSpec {
        api,
        base_url,
        model: "m".into(),
        messages: vec![tpsmeter_core::Message::user("Say something.")],
        system: None,
        max_tokens: 4,
        temperature: None,
        api_key: Some(Secret::new(KEY)),
        ignore_eos: false,
    }
}

/// The base URL for `api` on the emulator at `base`, with `prefix` (the override) before
/// the API path: a Vercel AI SDK route is named in full, the others take a base URL.
fn url(base: &str, prefix: &str, api: Api) -> String {
    let route = if api == Api::VercelUi {
        "/api/ui-chat"
    } else {
        ""
    };
    format!("{base}/{prefix}{route}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_follows_a_redirect_to_another_host_in_any_wire_format() {
    let (port, arrived) = target().await;
    let emu = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let clients: [(&str, Client); 2] = [
        ("kernel-stamped", build(Duration::from_secs(10)).unwrap()),
        (
            "reqwest",
            build(Duration::from_secs(10))
                .unwrap()
                .without_kernel_stamps(),
        ),
    ];
    let mut runs = 0;
    for (name, client) in &clients {
        for code in [302, 307] {
            for api in Api::ALL {
                let prefix = format!("fault/redirect:{code}:127.0.0.2:{port}");
                let request =
                    build_request(&spec(api, url(&emu.base_url(), &prefix, api))).unwrap();
                let timeout = Duration::from_secs(10);
                let runner = Runner::new(
                    client.clone(),
                    api,
                    &request,
                    Instant::now(),
                    timeout,
                    timeout,
                )
                .unwrap();
                let outcome = runner.run(&CancellationToken::new(), None).await;
                let what = format!("{name} {code} {api}");
                let failure = outcome
                    .failure
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: ok"));
                assert_eq!(failure.class(), ErrorClass::Redirect, "{what}: {failure:?}");
                assert!(
                    matches!(failure, Failure::Redirect { status: Some(s), .. } if *s == code),
                    "{what}: {failure:?}"
                );
                let message = failure.message();
                assert!(
                    message.contains(&format!("to http://127.0.0.2:{port}/"))
                        && message.contains("not followed"),
                    "{what}: {message}"
                );
                assert_eq!(outcome.http_status, Some(code), "{what}");
                let seen = arrived.lock().unwrap();
                assert_eq!(
                    seen.connections,
                    0,
                    "{what}: the other host got {}",
                    String::from_utf8_lossy(&seen.bytes)
                );
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 2 * 2 * Api::ALL.len());
}

/// Through the whole bench, with the key in the URL too (`user:pass@`, sent as basic auth):
/// the record says `redirect`, names the target host, and holds no credential; nothing
/// reached the target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_bench_records_a_redirect_error_and_sends_nothing_on() {
    let (port, arrived) = target().await;
    let emu = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let host = emu.base_url().replace("http://", "");
    for base in [emu.base_url(), format!("http://alice:{PASSWORD}@{host}")] {
        let prefix = format!("fault/redirect:302:127.0.0.2:{port}");
        let url = url(&base, &prefix, Api::Anthropic);
        let result = common::bench(&common::argv(
            "anthropic",
            &url,
            &["--requests", "2", "--concurrency", "2"],
        ))
        .await;
        let records = common::measured(&result.report);
        assert_eq!(records.len(), 2);
        for r in records {
            let e = r.error.as_ref().unwrap();
            assert_eq!(e.class, ErrorClass::Redirect, "{e:?}");
            assert_eq!(e.http_status, Some(302));
            assert!(
                e.message.contains(&format!("127.0.0.2:{port}")),
                "{}",
                e.message
            );
            assert!(!e.message.contains(&PASSWORD[..8]), "{}", e.message);
        }
    }
    assert_eq!(arrived.lock().unwrap().connections, 0);
}
