//! The transport's split of the wait before the first byte, onto the record.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn transport_timing_parts_reach_the_record_and_split_the_clients_queue() {
    let o = options(|o| o.requests = Some(3));
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let mut done = Vec::new();
    for extras in [
        // The CLI: the timeline's queue (hand-over → sent, 50 ms) holds the set-up.
        RecordExtras {
            dns_ms: Some(5.0),
            connect_ms: Some(30.0),
            wait_ms: Some(12.0),
            ..RecordExtras::default()
        },
        // The browser: its queue comes without the set-up already.
        RecordExtras {
            queue_ms: Some(3.0),
            connect_ms: Some(30.0),
            tls_ms: Some(8.0),
            ..RecordExtras::default()
        },
        // Nonsense from a page is dropped, not recorded.
        RecordExtras {
            connect_ms: Some(f64::NAN),
            wait_ms: Some(-1.0),
            ..RecordExtras::default()
        },
    ] {
        let Action::Start(ticket) = d.next(0.0).unwrap() else {
            panic!("a start");
        };
        let (mut outcome, end) = stream(0.0, 2);
        if extras.queue_ms.is_none() && extras.dns_ms.is_some() {
            let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, 0.0);
            ex.on_sent(50.0);
            ex.on_response(200, None);
            ex.on_bytes(
                70.0,
                b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            );
            ex.on_bytes(71.0, b"data: [DONE]\n\n");
            outcome = ex.into_outcome();
        }
        done.push(d.complete(&ticket, outcome, extras, end).clone());
    }
    let cli = &done[0];
    assert_eq!(
        (cli.dns_ms, cli.connect_ms, cli.tls_ms, cli.wait_ms),
        (Some(5.0), Some(30.0), None, Some(12.0))
    );
    assert_eq!(cli.queue_ms, Some(15.0), "50 ms less the 35 ms of set-up");
    let page = &done[1];
    assert_eq!((page.queue_ms, page.tls_ms), (Some(3.0), Some(8.0)));
    assert_eq!((done[2].connect_ms, done[2].wait_ms), (None, None));
    let line = cli.to_json_line();
    assert!(
        line.contains("\"connect_ms\":30.0") && !line.contains("tls_ms"),
        "{line}"
    );
}
