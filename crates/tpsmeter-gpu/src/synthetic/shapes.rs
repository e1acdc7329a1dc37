//! The real models a synthetic one copies: their architectures and every dimension that sets
//! a forward pass's work, from each model's GGUF header as llama.cpp's converter writes it.

/// One real model's shapes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// The name `--synthetic` takes (case-insensitive).
    pub name: &'static str,
    /// `general.architecture`.
    pub arch: &'static str,
    pub n_embd: usize,
    pub n_layers: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    /// Width of one attention head.
    pub head_dim: usize,
    pub n_ff: usize,
    pub vocab: usize,
    pub context: usize,
    pub rope_base: f32,
    pub rms_eps: f32,
    /// Query, key and value biases (Qwen2).
    pub qkv_bias: bool,
    /// Gemma 3's sliding window (its layers also carry q/k and post norms).
    pub sliding_window: Option<usize>,
    /// `tokenizer.ggml.pre` of the real model's tokenizer family (its pre-tokenizer regexes).
    pub pre: &'static str,
}

/// The models `--synthetic` knows, smallest first.
pub const SHAPES: [Shape; 6] = [
    Shape {
        name: "SmolLM2-135M",
        arch: "llama",
        n_embd: 576,
        n_layers: 30,
        n_head: 9,
        n_head_kv: 3,
        head_dim: 64,
        n_ff: 1536,
        vocab: 49152,
        context: 8192,
        rope_base: 100_000.0,
        rms_eps: 1e-5,
        qkv_bias: false,
        sliding_window: None,
        pre: "smollm",
    },
    Shape {
        name: "Gemma-3-270M",
        arch: "gemma3",
        n_embd: 640,
        n_layers: 18,
        n_head: 4,
        n_head_kv: 1,
        head_dim: 256,
        n_ff: 2048,
        vocab: 262_144,
        context: 32768,
        rope_base: 1_000_000.0,
        rms_eps: 1e-6,
        qkv_bias: false,
        sliding_window: Some(512),
        pre: "default",
    },
    Shape {
        name: "SmolLM2-360M",
        arch: "llama",
        n_embd: 960,
        n_layers: 32,
        n_head: 15,
        n_head_kv: 5,
        head_dim: 64,
        n_ff: 2560,
        vocab: 49152,
        context: 8192,
        rope_base: 100_000.0,
        rms_eps: 1e-5,
        qkv_bias: false,
        sliding_window: None,
        pre: "smollm",
    },
    Shape {
        name: "Qwen2.5-0.5B",
        arch: "qwen2",
        n_embd: 896,
        n_layers: 24,
        n_head: 14,
        n_head_kv: 2,
        head_dim: 64,
        n_ff: 4864,
        vocab: 151_936,
        context: 32768,
        rope_base: 1_000_000.0,
        rms_eps: 1e-6,
        qkv_bias: true,
        sliding_window: None,
        pre: "qwen2",
    },
    Shape {
        name: "Llama-3.2-1B",
        arch: "llama",
        n_embd: 2048,
        n_layers: 16,
        n_head: 32,
        n_head_kv: 8,
        head_dim: 64,
        n_ff: 8192,
        vocab: 128_256,
        context: 131_072,
        rope_base: 500_000.0,
        rms_eps: 1e-5,
        qkv_bias: false,
        sliding_window: None,
        pre: "llama-bpe",
    },
    Shape {
        name: "Qwen2.5-1.5B",
        arch: "qwen2",
        n_embd: 1536,
        n_layers: 28,
        n_head: 12,
        n_head_kv: 2,
        head_dim: 128,
        n_ff: 8960,
        vocab: 151_936,
        context: 32768,
        rope_base: 1_000_000.0,
        rms_eps: 1e-6,
        qkv_bias: true,
        sliding_window: None,
        pre: "qwen2",
    },
];

impl Shape {
    /// The shape called `name` (case-insensitive).
    pub fn find(name: &str) -> Option<&'static Shape> {
        SHAPES.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Parameters in the matrices and the embedding (what the file's size is made of).
    pub fn parameters(&self) -> u64 {
        let e = self.n_embd as u64;
        let q = (self.n_head * self.head_dim) as u64;
        let kv = (self.n_head_kv * self.head_dim) as u64;
        let per_layer = e * (q + 2 * kv) + q * e + 3 * e * self.n_ff as u64;
        per_layer * self.n_layers as u64 + e * self.vocab as u64
    }
}
