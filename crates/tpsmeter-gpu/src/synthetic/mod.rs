//! Synthetic models: a GGUF with the exact architecture, shapes and quantization types of a
//! real model, and seeded random weights, built through the crate's GGUF writer.
//!
//! Why: a model's speed depends on its shapes and weight formats, not on its values, so a
//! synthetic file measures what the real one would (`tpsmeter run --synthetic NAME[:QUANT]`)
//! without downloading it: on a machine with no network (the GPU pack, `cargo xtask
//! gpu-pack`), in tests, and for a user sizing a model before fetching it. Its text is noise,
//! so every report marks it `synthetic`, and no correctness gate applies to it.
//!
//! The tensor types follow llama.cpp's quantizer for a file of type QUANT (`Q4_0`, `Q4_1`,
//! `Q8_0` or `F16`): every layer matrix in QUANT, norms in F32, and the embedding (which
//! these tied-embedding models also use as the output head) in Q6_K where its rows are whole
//! super-blocks of 256, else Q8_0 (F16 and Q8_0 files keep their own type). The weights are
//! scaled so activations stay finite (each matrix's values have a standard deviation of
//! about 1/sqrt(inputs)), so the kernels do the same arithmetic a real model's do.
//!
//! The tokenizer is byte-level BPE over the model's vocabulary size (the 256 byte symbols,
//! one merge, an end-of-text token and numbered filler tokens): what the output head and the
//! sampler see is the real vocabulary's width.
//!
//! What it does not do: copy any real model's values or tokenizer, or make text that means
//! anything.

mod blocks;
mod shapes;

pub use shapes::{SHAPES, Shape};

use crate::error::{GpuError, Result};
use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::{GgufWriter, MetadataArray, MetadataValue};
use tpsmeter_model::quant::GgmlType;
use tpsmeter_model::tensors::{self, LayerTensor as L};

use blocks::Rng;

/// Metadata key that marks a synthetic file, so that any tool reading it can say so.
pub const SYNTHETIC_KEY: &str = "tpsmeter.synthetic";

/// File types a synthetic model can have.
pub const QUANTS: [&str; 4] = ["Q4_0", "Q4_1", "Q8_0", "F16"];

/// A parsed `NAME[:QUANT]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSpec {
    pub shape: &'static Shape,
    /// The layer matrices' type.
    pub quant: GgmlType,
}

impl SyntheticSpec {
    /// Parses `NAME[:QUANT]` (QUANT defaults to Q4_1), case-insensitively.
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, quant) = spec.split_once(':').unwrap_or((spec, "Q4_1"));
        let shape = Shape::find(name.trim()).ok_or_else(|| {
            GpuError::from(ModelError::InvalidOption {
                option: "synthetic",
                reason: format!(
                    "no synthetic model {name:?}; known: {}",
                    SHAPES.map(|s| s.name).join(", ")
                ),
            })
        })?;
        let quant = match quant.trim().to_ascii_uppercase().as_str() {
            "Q4_0" => GgmlType::Q4_0,
            "Q4_1" => GgmlType::Q4_1,
            "Q8_0" => GgmlType::Q8_0,
            "F16" => GgmlType::F16,
            other => {
                return Err(GpuError::from(ModelError::InvalidOption {
                    option: "synthetic",
                    reason: format!("no quantization {other:?}; known: {}", QUANTS.join(", ")),
                }));
            }
        };
        Ok(Self { shape, quant })
    }

    /// `NAME:QUANT`, as reports print it.
    pub fn label(&self) -> String {
        format!("{}:{:?}", self.shape.name, self.quant)
    }

    /// The embedding's (and tied output head's) type, as llama.cpp's quantizer picks it.
    pub fn embedding_type(&self) -> GgmlType {
        match self.quant {
            GgmlType::F16 | GgmlType::Q8_0 => self.quant,
            _ if self.shape.n_embd.is_multiple_of(256) => GgmlType::Q6_K,
            _ => GgmlType::Q8_0,
        }
    }

    /// The GGUF file's bytes, weights drawn from `seed`.
    pub fn build(&self, seed: u64) -> Result<Vec<u8>> {
        let s = self.shape;
        let mut w = GgufWriter::new();
        metadata(&mut w, self, seed);
        let mut rng = Rng::new(seed);
        let e = s.n_embd as u64;
        let q = (s.n_head * s.head_dim) as u64;
        let kv = (s.n_head_kv * s.head_dim) as u64;
        let ff = s.n_ff as u64;
        // The embedding's rows are looked up, not summed over: values of about unit size.
        matrix(
            &mut w,
            &mut rng,
            tensors::TOKEN_EMBD,
            e,
            s.vocab as u64,
            self.embedding_type(),
            1.0,
        )?;
        let ones = |n: u64| vec![1.0f32; n as usize];
        for l in 0..s.n_layers {
            w.tensor_f32(&L::AttnNorm.name(l), &[e], &ones(e))?;
            for (weight, bias, rows) in [
                (L::AttnQ, L::AttnQBias, q),
                (L::AttnK, L::AttnKBias, kv),
                (L::AttnV, L::AttnVBias, kv),
            ] {
                matrix(&mut w, &mut rng, &weight.name(l), e, rows, self.quant, 0.0)?;
                if s.qkv_bias {
                    w.tensor_f32(&bias.name(l), &[rows], &rng.values(rows, 0.02))?;
                }
            }
            if s.sliding_window.is_some() {
                let hd = s.head_dim as u64;
                w.tensor_f32(&L::AttnQNorm.name(l), &[hd], &ones(hd))?;
                w.tensor_f32(&L::AttnKNorm.name(l), &[hd], &ones(hd))?;
                w.tensor_f32(&L::PostAttentionNorm.name(l), &[e], &ones(e))?;
                w.tensor_f32(&L::PostFfwNorm.name(l), &[e], &ones(e))?;
            }
            matrix(
                &mut w,
                &mut rng,
                &L::AttnOutput.name(l),
                q,
                e,
                self.quant,
                0.0,
            )?;
            w.tensor_f32(&L::FfnNorm.name(l), &[e], &ones(e))?;
            for (tensor, cols, rows) in
                [(L::FfnGate, e, ff), (L::FfnUp, e, ff), (L::FfnDown, ff, e)]
            {
                matrix(
                    &mut w,
                    &mut rng,
                    &tensor.name(l),
                    cols,
                    rows,
                    self.quant,
                    0.0,
                )?;
            }
        }
        w.tensor_f32(tensors::OUTPUT_NORM, &[e], &ones(e))?;
        Ok(w.to_bytes())
    }
}

/// Whether GGUF `metadata` says it is a synthetic model.
pub fn is_synthetic(metadata: &tpsmeter_model::gguf::Metadata) -> bool {
    metadata.contains(SYNTHETIC_KEY)
}

/// A `rows` x `cols` matrix (GGUF dims `[cols, rows]`) of `ty` with values of standard
/// deviation `std`, or 1/sqrt(cols) when `std` is 0.
fn matrix(
    w: &mut GgufWriter,
    rng: &mut Rng,
    name: &str,
    cols: u64,
    rows: u64,
    ty: GgmlType,
    std: f32,
) -> Result<()> {
    let std = if std > 0.0 {
        std
    } else {
        1.0 / (cols as f32).sqrt()
    };
    let bytes = blocks::random(rng, ty, cols * rows, std)?;
    w.tensor(name, &[cols, rows], ty, bytes)?;
    Ok(())
}

fn metadata(w: &mut GgufWriter, spec: &SyntheticSpec, seed: u64) {
    let s = spec.shape;
    let a = s.arch;
    let u32v = |v: usize| MetadataValue::U32(v as u32);
    let str = |v: &str| MetadataValue::String(v.to_owned());
    w.metadata("general.architecture", str(a))
        .metadata(
            "general.name",
            str(&format!("synthetic {} (seed {seed})", spec.label())),
        )
        .metadata(SYNTHETIC_KEY, MetadataValue::Bool(true))
        .metadata(&format!("{a}.block_count"), u32v(s.n_layers))
        .metadata(&format!("{a}.context_length"), u32v(s.context))
        .metadata(&format!("{a}.embedding_length"), u32v(s.n_embd))
        .metadata(&format!("{a}.feed_forward_length"), u32v(s.n_ff))
        .metadata(&format!("{a}.attention.head_count"), u32v(s.n_head))
        .metadata(&format!("{a}.attention.head_count_kv"), u32v(s.n_head_kv))
        .metadata(&format!("{a}.attention.key_length"), u32v(s.head_dim))
        .metadata(&format!("{a}.attention.value_length"), u32v(s.head_dim))
        .metadata(&format!("{a}.rope.dimension_count"), u32v(s.head_dim))
        .metadata(
            &format!("{a}.rope.freq_base"),
            MetadataValue::F32(s.rope_base),
        )
        .metadata(
            &format!("{a}.attention.layer_norm_rms_epsilon"),
            MetadataValue::F32(s.rms_eps),
        )
        .metadata(&format!("{a}.vocab_size"), u32v(s.vocab));
    if let Some(window) = s.sliding_window {
        w.metadata(&format!("{a}.attention.sliding_window"), u32v(window));
    }
    let (tokens, types) = vocabulary(s.vocab);
    w.metadata("tokenizer.ggml.model", str("gpt2"))
        .metadata("tokenizer.ggml.pre", str(s.pre))
        .metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(MetadataArray::String(tokens)),
        )
        .metadata(
            "tokenizer.ggml.token_type",
            MetadataValue::Array(MetadataArray::I32(types)),
        )
        .metadata(
            "tokenizer.ggml.merges",
            MetadataValue::Array(MetadataArray::String(vec!["\u{120} t".to_owned()])),
        )
        .metadata("tokenizer.ggml.bos_token_id", MetadataValue::U32(EOT))
        .metadata("tokenizer.ggml.eos_token_id", MetadataValue::U32(EOT))
        .metadata("tokenizer.ggml.add_bos_token", MetadataValue::Bool(false));
}

/// Id of the end-of-text token.
const EOT: u32 = 256;

/// GPT-2's byte-level symbols (ids 0..256), `<|endoftext|>`, the merge's result `Ġt`, then
/// fillers `Ġt2`, `Ġt3`, ... up to `vocab` entries; token types (1 normal, 3 control).
fn vocabulary(vocab: usize) -> (Vec<String>, Vec<i32>) {
    let mut tokens: Vec<String> = byte_symbols().into_iter().map(String::from).collect();
    tokens.push("<|endoftext|>".to_owned());
    tokens.push("\u{120}t".to_owned());
    let mut i = 2;
    while tokens.len() < vocab {
        tokens.push(format!("\u{120}t{i}"));
        i += 1;
    }
    tokens.truncate(vocab);
    let types = (0..tokens.len())
        .map(|id| if id == EOT as usize { 3 } else { 1 })
        .collect();
    (tokens, types)
}

/// GPT-2's map of the 256 byte values to printable characters.
fn byte_symbols() -> Vec<char> {
    let mut direct: Vec<u32> = (u32::from('!')..=u32::from('~')).collect();
    direct.extend(0xA1..=0xAC);
    direct.extend(0xAE..=0xFF);
    let mut extra = 0;
    (0u32..256)
        .map(|b| {
            let c = if direct.contains(&b) {
                b
            } else {
                extra += 1;
                255 + extra
            };
            char::from_u32(c).unwrap_or('?')
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tpsmeter_model::config::ModelConfig;
    use tpsmeter_model::gguf::GgufFile;

    #[test]
    fn specs_parse_and_refuse_with_the_known_names() {
        let s = SyntheticSpec::parse("smollm2-135m").unwrap();
        assert_eq!((s.shape.name, s.quant), ("SmolLM2-135M", GgmlType::Q4_1));
        let s = SyntheticSpec::parse("Qwen2.5-0.5B:q8_0").unwrap();
        assert_eq!(s.quant, GgmlType::Q8_0);
        assert_eq!(s.label(), "Qwen2.5-0.5B:Q8_0");
        let e = SyntheticSpec::parse("gpt-5").unwrap_err().to_string();
        assert!(
            e.contains("SmolLM2-135M") && e.contains("Qwen2.5-1.5B"),
            "{e}"
        );
        let e = SyntheticSpec::parse("SmolLM2-135M:Q3_K")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Q4_1"), "{e}");
    }

    #[test]
    fn the_embedding_type_follows_llama_cpp() {
        let t = |s: &str| SyntheticSpec::parse(s).unwrap().embedding_type();
        // 576 is not a multiple of 256: Q8_0; 2048 is: Q6_K.
        assert_eq!(t("SmolLM2-135M:Q4_1"), GgmlType::Q8_0);
        assert_eq!(t("Llama-3.2-1B:Q4_1"), GgmlType::Q6_K);
        assert_eq!(t("Llama-3.2-1B:Q8_0"), GgmlType::Q8_0);
    }

    #[test]
    fn gpt2_byte_symbols_are_256_distinct() {
        let s = byte_symbols();
        let set: std::collections::HashSet<_> = s.iter().collect();
        assert_eq!(set.len(), 256);
        assert_eq!(s[usize::from(b'A')], 'A');
        assert_eq!(s[usize::from(b' ')], '\u{120}');
    }

    #[test]
    fn a_synthetic_file_reads_back_with_the_real_shapes() {
        for spec in ["SmolLM2-135M:Q4_0", "Gemma-3-270M:Q8_0", "Qwen2.5-0.5B"] {
            let spec = SyntheticSpec::parse(spec).unwrap();
            let bytes = spec.build(7).unwrap();
            let file = GgufFile::parse(&bytes).unwrap();
            let cfg = ModelConfig::from_header(&file.header).unwrap();
            let s = spec.shape;
            assert_eq!(
                (
                    cfg.n_layers,
                    cfg.n_embd,
                    cfg.n_head,
                    cfg.n_head_kv,
                    cfg.head_dim
                ),
                (s.n_layers, s.n_embd, s.n_head, s.n_head_kv, s.head_dim)
            );
            assert_eq!((cfg.n_ff, cfg.vocab_size), (s.n_ff, s.vocab));
            assert_eq!(cfg.qkv_bias, s.qkv_bias);
            assert_eq!(cfg.sliding_window.is_some(), s.sliding_window.is_some());
            assert!(is_synthetic(&file.header.metadata));
            let q = file.header.tensor("blk.0.ffn_down.weight").unwrap();
            assert_eq!(q.ty, spec.quant);
        }
        // The same seed, the same bytes; another seed, other weights.
        let spec = SyntheticSpec::parse("SmolLM2-135M").unwrap();
        let bytes = spec.build(7).unwrap();
        assert_eq!(spec.build(7).unwrap(), bytes);
        assert_ne!(spec.build(8).unwrap(), bytes);
    }
}
