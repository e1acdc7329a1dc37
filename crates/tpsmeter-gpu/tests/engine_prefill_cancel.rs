//! A long prompt stops within one chunk once its generation is cancelled (SmolLM2): the
//! chunks are submitted one at a time, the cancel token read before each.
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, model_bytes};
use tpsmeter_gpu::runtime::{GpuModel, PREFILL_CHUNK};
use tpsmeter_model::generate::CancelToken;
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::options::ModelOptions;

/// Four full chunks.
const PROMPT: usize = 4 * PREFILL_CHUNK;

fn load(test: &str) -> Option<GpuModel> {
    let bytes = model_bytes(test)?;
    let ctx = device(test)?;
    let file = GgufFile::parse(&bytes).unwrap();
    let opts = ModelOptions {
        max_context: PROMPT + 8,
        ..ModelOptions::default()
    };
    Some(GpuModel::load(ctx, &file, &opts).unwrap())
}

fn prompt(vocab: usize) -> Vec<u32> {
    (0..PROMPT)
        .map(|i| (100 + i * 37 % 1000) as u32 % vocab as u32)
        .collect()
}

/// Before: every chunk of a prompt was submitted at once, so an abort could not stop the
/// rest (an abort 1.5 s into a long prompt on SwiftShader ended the stream 3 s later). A
/// token cancelled before the prompt (as by another thread while the first chunk runs) lets
/// exactly the first chunk be submitted; uncancelled, the chunked path submits all four and
/// samples the same id as the all-at-once path.
#[test]
fn a_cancelled_long_prompt_submits_only_its_first_chunk() {
    const TEST: &str = "a_cancelled_long_prompt_submits_only_its_first_chunk";
    let Some(mut m) = load(TEST) else { return };
    let ids = prompt(m.config().vocab_size);

    let cancel = CancelToken::new();
    let from_another_thread = cancel.clone();
    std::thread::spawn(move || from_another_thread.cancel())
        .join()
        .unwrap();
    let before = m.stats().submits;
    let got = pollster::block_on(m.step_cancellable(&ids, 0, &cancel)).unwrap();
    assert_eq!(got, None, "a cancelled prompt sampled a token");
    assert_eq!(
        m.stats().submits - before,
        1,
        "chunks submitted after the cancel"
    );

    let before = m.stats().submits;
    let chunked = pollster::block_on(m.step_cancellable(&ids, 0, &CancelToken::new()))
        .unwrap()
        .unwrap();
    assert_eq!(m.stats().submits - before, 4);
    let at_once = m.step_blocking(&ids, 0).unwrap();
    assert_eq!(chunked, at_once, "chunk by chunk sampled another id");
}
