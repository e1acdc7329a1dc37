//! Properties of the CPU reference on tiny seeded random models built with the GGUF writer:
//! the KV cache gives the same logits as recomputation, grouped-query attention equals
//! multi-head attention with duplicated K/V heads, RoPE makes order matter, and misuse gives
//! typed errors.

#![allow(clippy::unwrap_used)]

use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::reference::ReferenceModel;
use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::{GgufFile, GgufWriter, MetadataValue};

const E: usize = 16;
const HD: usize = 4;
const FF: usize = 32;
const VOCAB: usize = 20;
const LAYERS: usize = 2;

/// Deterministic values in [-0.5, 0.5) (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// Rows `[out, in]` of K or V for `kv_heads` heads, where MHA head h copies GQA head h / 2.
fn widen(gqa: &[f32], kv_heads: usize) -> Vec<f32> {
    (0..kv_heads * HD)
        .flat_map(|r| {
            let src = (r / HD / 2) * HD + r % HD;
            gqa[src * E..(src + 1) * E].to_vec()
        })
        .collect()
}

/// A llama model with 4 query heads and `kv_heads` KV heads (2 or 4; with 4 the K/V weights
/// are the 2-head ones duplicated).
fn model(kv_heads: usize) -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut w = GgufWriter::new();
    let md = |w: &mut GgufWriter, k: &str, v: u32| {
        w.metadata(k, MetadataValue::U32(v));
    };
    w.metadata(
        "general.architecture",
        MetadataValue::String("llama".into()),
    );
    md(&mut w, "llama.block_count", LAYERS as u32);
    md(&mut w, "llama.embedding_length", E as u32);
    md(&mut w, "llama.feed_forward_length", FF as u32);
    md(&mut w, "llama.attention.head_count", 4);
    md(&mut w, "llama.attention.head_count_kv", kv_heads as u32);
    md(&mut w, "llama.context_length", 8);
    w.metadata(
        "llama.attention.layer_norm_rms_epsilon",
        MetadataValue::F32(1e-5),
    );
    let (e, ff, v) = (E as u64, FF as u64, VOCAB as u64);
    w.tensor_f32("token_embd.weight", &[e, v], &rng.vec(E * VOCAB))
        .unwrap();
    w.tensor_f32("output_norm.weight", &[e], &[1.0; E]).unwrap();
    for l in 0..LAYERS {
        let n = |s: &str| format!("blk.{l}.{s}");
        w.tensor_f32(&n("attn_norm.weight"), &[e], &rng.vec(E))
            .unwrap();
        w.tensor_f32(&n("attn_q.weight"), &[e, 16], &rng.vec(E * 16))
            .unwrap();
        let (k, vv) = (rng.vec(E * 2 * HD), rng.vec(E * 2 * HD));
        let (k, vv) = if kv_heads == 4 {
            (widen(&k, 4), widen(&vv, 4))
        } else {
            (k, vv)
        };
        let kv = (kv_heads * HD) as u64;
        w.tensor_f32(&n("attn_k.weight"), &[e, kv], &k).unwrap();
        w.tensor_f32(&n("attn_v.weight"), &[e, kv], &vv).unwrap();
        w.tensor_f32(&n("attn_output.weight"), &[16, e], &rng.vec(16 * E))
            .unwrap();
        w.tensor_f32(&n("ffn_norm.weight"), &[e], &rng.vec(E))
            .unwrap();
        w.tensor_f32(&n("ffn_gate.weight"), &[e, ff], &rng.vec(E * FF))
            .unwrap();
        w.tensor_f32(&n("ffn_up.weight"), &[e, ff], &rng.vec(E * FF))
            .unwrap();
        w.tensor_f32(&n("ffn_down.weight"), &[ff, e], &rng.vec(FF * E))
            .unwrap();
    }
    w.to_bytes()
}

fn load(bytes: &[u8]) -> ReferenceModel {
    ReferenceModel::load(&GgufFile::parse(bytes).unwrap()).unwrap()
}

const TOKENS: [u32; 6] = [3, 17, 0, 9, 9, 12];

#[test]
fn kv_cache_reuse_equals_recomputation() {
    let m = load(&model(2));
    let mut cache = m.new_cache(8);
    let all = m.forward_tokens(&TOKENS, &mut cache).unwrap();
    // Re-decode the tail from a truncated cache: same logits, bit for bit.
    cache.truncate(3);
    let tail = m.forward_tokens(&TOKENS[3..], &mut cache).unwrap();
    assert_eq!(all[3..], tail[..]);
    // A fresh cache fed the same prefix agrees too.
    let mut fresh = m.new_cache(8);
    let again = m.forward_tokens(&TOKENS, &mut fresh).unwrap();
    assert_eq!(all, again);
}

#[test]
fn grouped_query_attention_equals_duplicated_heads() {
    let gqa = load(&model(2));
    let mha = load(&model(4));
    assert_eq!((gqa.config.n_head_kv, mha.config.n_head_kv), (2, 4));
    let a = gqa.forward_tokens(&TOKENS, &mut gqa.new_cache(8)).unwrap();
    let b = mha.forward_tokens(&TOKENS, &mut mha.new_cache(8)).unwrap();
    for (pos, (x, y)) in a.iter().zip(&b).enumerate() {
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert!(
                (p - q).abs() <= 1e-5,
                "position {pos} logit {i}: {p} vs {q}"
            );
        }
    }
}

#[test]
fn token_order_matters() {
    let m = load(&model(2));
    let ab = m.forward_tokens(&[3, 17], &mut m.new_cache(8)).unwrap();
    let ba = m.forward_tokens(&[17, 3], &mut m.new_cache(8)).unwrap();
    let diff: f32 = ab[1].iter().zip(&ba[1]).map(|(x, y)| (x - y).abs()).sum();
    assert!(diff > 1e-4, "swapping the prompt left the logits unchanged");
}

#[test]
fn misuse_gives_typed_errors() {
    let m = load(&model(2));
    let mut cache = m.new_cache(2);
    assert!(matches!(
        m.forward(VOCAB as u32, &mut cache),
        Err(GpuError::Model(ModelError::TokenOutOfRange {
            token: 20,
            vocab: 20
        }))
    ));
    m.forward_tokens(&[1, 2], &mut cache).unwrap();
    assert!(matches!(
        m.forward(1, &mut cache),
        Err(GpuError::Model(ModelError::ContextFull {
            position: 2,
            limit: 2
        }))
    ));
}
