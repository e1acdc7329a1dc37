//! The GPU forward pass against the plain-Rust f32 reference on the same dequantizers:
//! logits at every position of a 32-token prompt within a relative L2 error of 1e-3, both
//! token by token (the decode graph) and as prefill batches (the matrix-matrix graph, in
//! chunks of several sizes).
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, model_bytes, rel_l2};
use tpsmeter_gpu::engine::{GpuModel, ModelOptions};
use tpsmeter_gpu::gguf::GgufFile;
use tpsmeter_gpu::reference::ReferenceModel;
use tpsmeter_gpu::tokenizer::{Tokenizer, TokenizerSpec};

/// The bound on the relative L2 error of the logits.
const MAX_REL_L2: f64 = 1e-3;
const PROMPT_TOKENS: usize = 32;

const TEXT: &str = "The quick brown fox jumps over the lazy dog. In 1905, Albert Einstein \
published four papers that changed physics: on the photoelectric effect, Brownian motion, \
special relativity and the equivalence of mass and energy.";

#[test]
fn gpu_logits_match_the_cpu_reference_at_every_position() {
    const TEST: &str = "gpu_logits_match_the_cpu_reference_at_every_position";
    let Some(bytes) = model_bytes(TEST) else {
        return;
    };
    let Some(ctx) = device(TEST) else { return };
    let file = GgufFile::parse(&bytes).unwrap();
    let tok =
        Tokenizer::from_spec(&TokenizerSpec::from_gguf(&file.header.metadata).unwrap()).unwrap();
    let ids = tok.encode(TEXT, true).unwrap();
    assert!(
        ids.len() >= PROMPT_TOKENS,
        "prompt has only {} tokens",
        ids.len()
    );
    let ids = &ids[..PROMPT_TOKENS];

    let reference = ReferenceModel::load(&file).unwrap();
    let mut cache = reference.new_cache(PROMPT_TOKENS);
    let want = reference.forward_tokens(ids, &mut cache).unwrap();

    let opts = ModelOptions {
        max_context: 256,
        ..Default::default()
    };
    let mut gpu = GpuModel::load(ctx, &file, &opts).unwrap();

    // Decode graph: one token at a time.
    let mut worst = 0f64;
    for (p, &t) in ids.iter().enumerate() {
        gpu.step_blocking(&[t], p).unwrap();
        let got = gpu.read_logits().unwrap();
        let err = rel_l2(&got, &want[p]);
        worst = worst.max(err);
        assert!(
            err <= MAX_REL_L2,
            "decode position {p}: relative L2 error {err:e}"
        );
    }
    eprintln!("decode: worst relative L2 error over {PROMPT_TOKENS} positions {worst:e}");

    // Prefill graphs: the whole prompt at once (one 32-token chunk), then in pieces that do
    // not start at position 0 and split into chunks of 1 to 16 tokens; the last logits of
    // each piece are checked.
    gpu.step_blocking(ids, 0).unwrap();
    let err = rel_l2(&gpu.read_logits().unwrap(), &want[PROMPT_TOKENS - 1]);
    assert!(
        err <= MAX_REL_L2,
        "prefill of {PROMPT_TOKENS}: relative L2 error {err:e}"
    );
    let mut start = 0;
    for len in [3, 5, 8, 16] {
        let end = start + len;
        gpu.step_blocking(&ids[start..end], start).unwrap();
        let err = rel_l2(&gpu.read_logits().unwrap(), &want[end - 1]);
        assert!(
            err <= MAX_REL_L2,
            "prefill {start}..{end}: relative L2 error {err:e}"
        );
        start = end;
    }
    assert_eq!(start, PROMPT_TOKENS);
    let stats = gpu.stats();
    assert_eq!(
        stats.readback_bytes,
        4 * (PROMPT_TOKENS as u64 + 5),
        "4 bytes per step"
    );
}
