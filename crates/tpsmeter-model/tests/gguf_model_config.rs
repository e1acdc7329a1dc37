//! Model hyper-parameters from GGUF metadata: the real SmolLM2 (and Gemma 3 when present)
//! files, and synthetic headers for Qwen2 biases, tied embeddings and the typed errors.

#![allow(clippy::unwrap_used)]

use tpsmeter_model::ModelError;
use tpsmeter_model::config::{Activation, Architecture, ModelConfig, RopeLayout};
use tpsmeter_model::gguf::{GgmlType, GgufFile, GgufWriter, MetadataValue};

/// A header-only model of architecture `arch` (tensors are 1-element placeholders except
/// `token_embd`, whose shape the config reads).
fn synthetic(arch: &str, extra: &[(&str, MetadataValue)], tensors: &[&str]) -> Vec<u8> {
    let k = |s: &str| format!("{arch}.{s}");
    let mut pairs: Vec<(String, MetadataValue)> = vec![
        (
            "general.architecture".into(),
            MetadataValue::String(arch.into()),
        ),
        (k("block_count"), MetadataValue::U32(2)),
        (k("embedding_length"), MetadataValue::U32(64)),
        (k("feed_forward_length"), MetadataValue::U32(128)),
        (k("attention.head_count"), MetadataValue::U32(4)),
        (k("attention.head_count_kv"), MetadataValue::U32(2)),
        (k("context_length"), MetadataValue::U32(256)),
        (
            k("attention.layer_norm_rms_epsilon"),
            MetadataValue::F32(1e-6),
        ),
    ];
    for (key, v) in extra {
        pairs.retain(|(k, _)| k != key);
        pairs.push(((*key).into(), v.clone()));
    }
    let mut w = GgufWriter::new();
    for (key, v) in pairs {
        w.metadata(&key, v);
    }
    w.tensor(
        "token_embd.weight",
        &[64, 10],
        GgmlType::F32,
        vec![0; 64 * 10 * 4],
    )
    .unwrap();
    for t in tensors {
        w.tensor_f32(t, &[1], &[0.0]).unwrap();
    }
    w.to_bytes()
}

fn config(bytes: &[u8]) -> Result<ModelConfig, ModelError> {
    ModelConfig::from_header(&GgufFile::parse(bytes).unwrap().header)
}

#[test]
fn llama_defaults_and_tied_embeddings() {
    let c = config(&synthetic("llama", &[], &[])).unwrap();
    assert_eq!(c.arch, Architecture::Llama);
    assert_eq!((c.n_layers, c.n_embd, c.n_ff), (2, 64, 128));
    assert_eq!(
        (c.n_head, c.n_head_kv, c.head_dim, c.rope_dim),
        (4, 2, 16, 16)
    );
    assert_eq!((c.vocab_size, c.context_length), (10, 256));
    assert_eq!(c.rope_freq_base, 10_000.0);
    assert_eq!(c.rope_layout, RopeLayout::Interleaved);
    assert!(c.tied_embeddings && !c.qkv_bias);
    assert_eq!(c.attention_scale, 0.25);
    let c = config(&synthetic("llama", &[], &["output.weight"])).unwrap();
    assert!(!c.tied_embeddings);
}

#[test]
fn qwen2_has_biases_and_neox_rope() {
    let c = config(&synthetic(
        "qwen2",
        &[("qwen2.rope.freq_base", MetadataValue::F32(1e6))],
        &["blk.0.attn_q.bias"],
    ))
    .unwrap();
    assert!(c.qkv_bias);
    assert_eq!((c.rope_layout, c.rope_freq_base), (RopeLayout::Neox, 1e6));
}

#[test]
fn gemma3_fields() {
    let c = config(&synthetic(
        "gemma3",
        &[
            ("gemma3.attention.key_length", MetadataValue::U32(32)),
            ("gemma3.attention.value_length", MetadataValue::U32(32)),
            ("gemma3.attention.sliding_window", MetadataValue::U32(8)),
        ],
        &[],
    ))
    .unwrap();
    assert_eq!((c.head_dim, c.q_dim(), c.k_dim()), (32, 128, 64));
    assert_eq!(c.activation, Activation::GeluTanh);
    assert_eq!(c.embedding_scale, Some(8.0));
    assert!(c.qk_norm && c.post_norms);
    assert_eq!(c.rope_freq_base, 1e6);
    // Five local layers, then a global one.
    let local: Vec<bool> = (0..12).map(|l| c.is_local_layer(l)).collect();
    assert_eq!(local[..6], [true, true, true, true, true, false]);
    assert_eq!(c.rope_base_for_layer(0), 10_000.0);
    assert_eq!(c.rope_base_for_layer(5), 1e6);
}

#[test]
fn typed_errors_name_the_culprit() {
    match config(&synthetic("mamba", &[], &[])) {
        Err(ModelError::UnsupportedArchitecture { arch, .. }) => {
            assert_eq!(arch, "mamba")
        }
        other => panic!("{other:?}"),
    }
    match config(&synthetic(
        "llama",
        &[("llama.attention.head_count_kv", MetadataValue::U32(3))],
        &[],
    )) {
        Err(ModelError::BadMetadata { key, .. }) => {
            assert_eq!(key, "llama.attention.head_count_kv")
        }
        other => panic!("{other:?}"),
    }
    match config(&synthetic(
        "llama",
        &[("llama.rope.dimension_count", MetadataValue::U32(17))],
        &[],
    )) {
        Err(ModelError::BadMetadata { key, .. }) => {
            assert_eq!(key, "llama.rope.dimension_count")
        }
        other => panic!("{other:?}"),
    }
    let mut w = GgufWriter::new();
    w.metadata(
        "general.architecture",
        MetadataValue::String("llama".into()),
    );
    match ModelConfig::from_header(&GgufFile::parse(&w.to_bytes()).unwrap().header) {
        Err(ModelError::MissingMetadata { key }) => {
            assert_eq!(key, "llama.block_count")
        }
        other => panic!("{other:?}"),
    }
}

fn asset(var: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os(var) {
        Some(p) if std::path::Path::new(&p).exists() => Some(p.into()),
        _ if std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() == Ok("1") => {
            panic!("{var} is not set or missing and TPSMETER_REQUIRE_ASSETS=1")
        }
        _ => {
            eprintln!("skipping: {var} is not set or does not exist");
            None
        }
    }
}

#[test]
fn smollm2_config() {
    let Some(path) = asset("TPSMETER_MODEL") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let c = ModelConfig::from_header(&GgufFile::parse(&bytes).unwrap().header).unwrap();
    assert_eq!(c.arch, Architecture::Llama);
    assert_eq!((c.n_layers, c.n_embd, c.n_ff), (30, 576, 1536));
    assert_eq!((c.n_head, c.n_head_kv, c.head_dim), (9, 3, 64));
    assert_eq!((c.vocab_size, c.context_length), (49152, 8192));
    assert_eq!((c.rope_freq_base, c.rms_eps), (100_000.0, 1e-5));
    assert!(c.tied_embeddings);
}

#[test]
fn gemma3_270m_config() {
    let Some(path) = asset("TPSMETER_GEMMA_MODEL") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let c = ModelConfig::from_header(&GgufFile::parse(&bytes).unwrap().header).unwrap();
    assert_eq!(c.arch, Architecture::Gemma3);
    assert_eq!((c.n_layers, c.n_embd, c.n_ff), (18, 640, 2048));
    assert_eq!((c.n_head, c.n_head_kv, c.head_dim), (4, 1, 256));
    assert_eq!(c.vocab_size, 262_144);
    assert_eq!(c.sliding_window.map(|s| s.window), Some(512));
    assert!(c.tied_embeddings && c.qk_norm);
}
