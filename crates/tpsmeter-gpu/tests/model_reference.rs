//! The GPU forward pass against the plain-Rust f32 reference on the same dequantizers (its
//! KV cache rounded to f16 where the engine's is f16):
//! logits at every position of a 32-token prompt within a relative L2 error of 1e-3, both
//! token by token (the decode graph) and as prefill batches (the matrix-matrix graph, in
//! chunks of several sizes).
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{
    as_qwen2, device, device_with, model_bytes_from, rel_l2, rewrite_gguf, with_rope_freqs,
};
use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions, GpuContext};
use tpsmeter_gpu::kernels::KvStore;
use tpsmeter_gpu::reference::ReferenceModel;
use tpsmeter_gpu::runtime::GpuModel;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgufFile, MetadataValue};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::tokenizer::{Tokenizer, TokenizerSpec};

/// The bound on the relative L2 error of the logits.
const MAX_REL_L2: f64 = 1e-3;
const PROMPT_TOKENS: usize = 32;

const TEXT: &str = "The quick brown fox jumps over the lazy dog. In 1905, Albert Einstein \
published four papers that changed physics: on the photoelectric effect, Brownian motion, \
special relativity and the equivalence of mass and energy.";

#[test]
fn gpu_logits_match_the_cpu_reference_at_every_position() {
    check(
        "gpu_logits_match_the_cpu_reference_at_every_position",
        "TPSMETER_MODEL",
    );
}

/// Gemma 3: GELU-tanh, QK-norm, post-norms, sliding-window layers with their own RoPE base,
/// scaled embeddings, 256-wide heads and a 262144-token vocabulary (a head split over
/// several bindings).
#[test]
fn gemma3_gpu_logits_match_the_cpu_reference_at_every_position() {
    check(
        "gemma3_gpu_logits_match_the_cpu_reference_at_every_position",
        "TPSMETER_GEMMA_MODEL",
    );
}

/// Gemma 3 with its sliding window cut from 512 to 8 positions (metadata rewritten, weights
/// unchanged), so the 32-token prompt runs its local layers' masks in decode and in every
/// prefill chunk, beside the global layers that see everything.
#[test]
fn gemma3_sliding_window_matches_the_cpu_reference() {
    const TEST: &str = "gemma3_sliding_window_matches_the_cpu_reference";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_GEMMA_MODEL") else {
        return;
    };
    let key = "gemma3.attention.sliding_window";
    let small = rewrite_gguf(
        &bytes,
        |k, _| (k == key).then(|| (k.to_string(), MetadataValue::U32(8))),
        &[],
    );
    let cfg = ModelConfig::from_header(&GgufFile::parse(&small).unwrap().header).unwrap();
    assert_eq!(
        cfg.sliding_window.map(|w| w.window),
        Some(8),
        "{key} not rewritten"
    );
    drop(bytes);
    check_bytes(TEST, small);
}

/// The kernels a real GPU gets (storage-buffer weights, subgroup or shared-memory matvec,
/// tiled matmul, attention with tree reductions), forced on whatever adapter runs the tests:
/// on a machine without a GPU nothing else runs the path GPU users take.
#[test]
fn gpu_profile_logits_match_the_cpu_reference_at_every_position() {
    const TEST: &str = "gpu_profile_logits_match_the_cpu_reference_at_every_position";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_MODEL") else {
        return;
    };
    let opts = ContextOptions {
        profile: Some(AdapterProfile::Gpu),
        ..Default::default()
    };
    let Some(ctx) = device_with(TEST, &opts) else {
        return;
    };
    check_on(ctx, bytes);
}

/// Llama 3.x RoPE frequency factors (`rope_freqs.weight`, added to SmolLM2 with factors
/// from 1 to 8): the GPU divides each pair's angle as the reference does.
#[test]
fn rope_freqs_match_the_cpu_reference() {
    const TEST: &str = "rope_freqs_match_the_cpu_reference";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_MODEL") else {
        return;
    };
    let with = with_rope_freqs(&bytes);
    drop(bytes);
    check_bytes(TEST, with);
}

/// Qwen2: SmolLM2 relabelled as `qwen2` with q/k/v biases added (NEOX RoPE, the bias adds).
#[test]
fn qwen2_biases_match_the_cpu_reference() {
    const TEST: &str = "qwen2_biases_match_the_cpu_reference";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_MODEL") else {
        return;
    };
    let qwen = as_qwen2(&bytes);
    drop(bytes);
    let cfg = ModelConfig::from_header(&GgufFile::parse(&qwen).unwrap().header).unwrap();
    assert!(cfg.qkv_bias, "the relabelled file is not read as Qwen2");
    check_bytes(TEST, qwen);
}

/// Tensors larger than a storage binding, split by rows across bindings: with the limit
/// forced to 8 MiB, SmolLM2's 30 MB Q8_0 embedding (also its output head) goes in four
/// parts, and the logits still match the reference at every position, token by token and in
/// prefill chunks. The GPU profile, whose weights are storage buffers as on real GPUs and in
/// browsers (the CPU profile keeps them in textures, limited by texel counts instead).
#[test]
fn split_weights_match_the_cpu_reference() {
    const TEST: &str = "split_weights_match_the_cpu_reference";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_MODEL") else {
        return;
    };
    let limit = 8u64 << 20;
    let opts = ContextOptions {
        max_binding: Some(limit),
        profile: Some(AdapterProfile::Gpu),
        ..ContextOptions::default()
    };
    let Some(ctx) = device_with(TEST, &opts) else {
        return;
    };
    assert_eq!(ctx.max_binding(), limit);
    let file = GgufFile::parse(&bytes).unwrap();
    let embd = file.header.tensor("token_embd.weight").unwrap().n_bytes;
    assert!(
        embd > 3 * limit,
        "the embedding ({embd} B) must need several parts"
    );
    check_on(ctx, bytes);
}

fn check(test: &str, model_var: &str) {
    let Some(bytes) = model_bytes_from(test, model_var) else {
        return;
    };
    check_bytes(test, bytes);
}

fn check_bytes(test: &str, bytes: Vec<u8>) {
    let Some(ctx) = device(test) else { return };
    check_on(ctx, bytes);
}

fn check_on(ctx: std::sync::Arc<GpuContext>, bytes: Vec<u8>) {
    check_cache(ctx, bytes, false, MAX_REL_L2);
}

/// The bound with the f16 KV cache (CPU-type adapters' default), against a reference that
/// rounds its cache to f16 too: a key or value that the GPU and the reference compute ~1e-6
/// apart can still round to neighbouring f16s (2^-11 relative apart), so the logits move by
/// more than the f32 path's 1e-3; SmolLM2 measured 1.4e-3. A wrong packing or a cache read
/// at the wrong place gives errors of order 1.
const MAX_REL_L2_F16_KV: f64 = 5e-3;

/// The whole check on the engine's default cache, f16 where the adapter is CPU-type: the
/// f32 check above pins the kernels at 1e-3; this one, that storing the cache in f16
/// moves nothing beyond that rounding. (llama.cpp stores f16 too: `model_llamacpp` checks
/// the tokens.)
#[test]
fn f16_kv_cache_logits_match_the_rounding_reference() {
    const TEST: &str = "f16_kv_cache_logits_match_the_rounding_reference";
    let Some(bytes) = model_bytes_from(TEST, "TPSMETER_MODEL") else {
        return;
    };
    let Some(ctx) = device(TEST) else { return };
    if ctx.profile != AdapterProfile::Cpu {
        eprintln!("{TEST}: skipped, the f16 KV cache is the CPU-type adapters' layout");
        return;
    }
    check_cache(ctx, bytes, true, MAX_REL_L2_F16_KV);
}

fn check_cache(ctx: std::sync::Arc<GpuContext>, bytes: Vec<u8>, kv_f16: bool, bound: f64) {
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

    let opts = ModelOptions {
        max_context: 256,
        kv_f16,
        ..Default::default()
    };
    let mut gpu = GpuModel::load(ctx, &file, &opts).unwrap();
    assert_eq!(
        gpu.kv_store() == KvStore::TextureF16,
        kv_f16,
        "the cache store does not follow kv_f16"
    );

    // An engine that stores its cache in f16 is compared with a reference that rounds the
    // same values the same way (as llama.cpp's default cache does), not with an f32 cache.
    let reference = ReferenceModel::load(&file).unwrap();
    let mut cache = reference.new_cache(PROMPT_TOKENS);
    cache.store_f16(gpu.kv_store() == KvStore::TextureF16);
    let want = reference.forward_tokens(ids, &mut cache).unwrap();

    // Decode graph: one token at a time.
    let mut worst = 0f64;
    for (p, &t) in ids.iter().enumerate() {
        gpu.step_blocking(&[t], p).unwrap();
        let got = gpu.read_logits().unwrap();
        let err = rel_l2(&got, &want[p]);
        worst = worst.max(err);
        assert!(
            err <= bound,
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
        err <= bound,
        "prefill of {PROMPT_TOKENS}: relative L2 error {err:e}"
    );
    let mut start = 0;
    for len in [3, 5, 8, 16] {
        let end = start + len;
        gpu.step_blocking(&ids[start..end], start).unwrap();
        let err = rel_l2(&gpu.read_logits().unwrap(), &want[end - 1]);
        assert!(
            err <= bound,
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
