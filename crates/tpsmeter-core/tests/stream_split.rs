//! Property: however a body is split into network chunks, the parser yields the same events
//! as when it is fed the whole body at once. Random chunkings of every golden stream, and of
//! synthetic streams that put CR/LF pairs and multi-byte characters at awkward places.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "golden/support.rs"]
mod support;

use proptest::prelude::*;
use support::{GOLDEN, body, run_chunks, run_cuts};
use tpsmeter_core::{Api, StreamEvent};

/// Cut points as fractions of the body length, turned into sorted byte offsets.
fn cuts_for(len: usize, fractions: &[f64]) -> Vec<usize> {
    let mut cuts: Vec<usize> = fractions
        .iter()
        .map(|f| ((len as f64) * f) as usize)
        .collect();
    cuts.sort_unstable();
    cuts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_chunking_of_golden_streams_changes_nothing(
        which in 0..GOLDEN.len(),
        fractions in prop::collection::vec(0.0f64..1.0, 0..40),
    ) {
        let (stem, api, _) = GOLDEN[which];
        let body = body(stem, api);
        let whole = run_chunks(api, &[&body]);
        let split = run_cuts(api, &body, &cuts_for(body.len(), &fractions));
        prop_assert_eq!(split, whole, "{}", stem);
    }

    #[test]
    fn line_endings_and_multibyte_text_survive_any_split(
        texts in prop::collection::vec("[a-zé€👋\\\\ ]{0,12}", 1..12),
        ending in prop::sample::select(vec!["\n", "\r", "\r\n"]),
        fractions in prop::collection::vec(0.0f64..1.0, 0..30),
    ) {
        let mut body = String::from("\u{feff}");
        for text in &texts {
            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
            body.push_str(&format!(": ping{ending}data: {chunk}{ending}{ending}"));
        }
        body.push_str(&format!("data: [DONE]{ending}{ending}"));
        let body = body.into_bytes();
        let want: Vec<StreamEvent> = texts
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| StreamEvent::ContentDelta { text: t.clone() })
            .chain([StreamEvent::Done])
            .collect();
        let (events, result) = run_cuts(Api::OpenaiChat, &body, &cuts_for(body.len(), &fractions));
        prop_assert!(result.is_ok(), "{:?}", result);
        prop_assert_eq!(events, want);
    }

    #[test]
    fn ndjson_survives_any_split(
        texts in prop::collection::vec("[a-zé€👋 ]{1,12}", 1..12),
        crlf in any::<bool>(),
        fractions in prop::collection::vec(0.0f64..1.0, 0..30),
    ) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let mut body = String::new();
        for text in &texts {
            body.push_str(&format!("{}{ending}{ending}", serde_json::json!({"response": text, "done": false})));
        }
        body.push_str(r#"{"response":"","done":true,"eval_count":3}"#);
        let body = body.into_bytes();
        let whole = run_chunks(Api::OllamaGenerate, &[&body]);
        let split = run_cuts(Api::OllamaGenerate, &body, &cuts_for(body.len(), &fractions));
        prop_assert!(whole.1.is_ok());
        prop_assert_eq!(whole.0.len(), texts.len() + 3);
        prop_assert_eq!(split, whole);
    }
}
