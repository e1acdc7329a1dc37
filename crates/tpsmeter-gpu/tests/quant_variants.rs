//! CPU dequantizers against llama.cpp on real tensors.
//!
//! The SmolLM2 file (Q4_1 + Q8_0 + F32) is requantized with llama.cpp's `llama-quantize
//! --allow-requantize --pure` into one file per format; each variant is then expanded by
//! llama.cpp itself to F32. Two checks per format:
//! 1. exact twin: our dequantization of the variant equals llama.cpp's F32 expansion of the
//!    same file (both compute `d * q (+ m)` in f32; tolerance 1e-6 relative for operation
//!    order);
//! 2. quantization error: the variant's weights are within a few steps of the F32 variant of
//!    the original (the step is read from each block: `d` for the legacy formats, `d * scale`
//!    for the K formats); the bound per format is stated at the bottom of this file. This
//!    check does not trust llama.cpp's own decoder.
//!
//! Variants are cached in `$TPSMETER_VARIANTS_DIR` (default `~/.cache/tpsmeter/variants`),
//! named `<model stem>.<TYPE>.gguf` and `<model stem>.<TYPE>.F32.gguf`, created on demand and
//! written through a temporary name so concurrent test runs never see half a file.

#![allow(clippy::unwrap_used)]

mod llama_support;

use llama_support::{asset, model_stem, quantize, variants_dir};
use std::path::PathBuf;
use tpsmeter_model::gguf::{GgmlType, GgufFile, TensorInfo};

struct Assets {
    model: PathBuf,
    bin: PathBuf,
}

fn assets() -> Option<Assets> {
    Some(Assets {
        model: asset("TPSMETER_MODEL")?,
        bin: asset("TPSMETER_LLAMA_BIN")?,
    })
}

impl Assets {
    fn variant(&self, ty: &str) -> PathBuf {
        let q = variants_dir().join(format!("{}.{ty}.gguf", model_stem(&self.model)));
        quantize(&self.bin, &self.model, &q, ty)
    }

    fn f32_of(&self, ty: &str) -> PathBuf {
        let q = self.variant(ty);
        let f = q.with_extension("F32.gguf");
        quantize(&self.bin, &q, &f, "F32")
    }
}

/// Step of the quantization grid at weight `i` of tensor `info` (bytes of the whole tensor).
fn step_at(info: &TensorInfo, bytes: &[u8], i: usize) -> f32 {
    let ty = info.ty;
    let block = &bytes[i / ty.block_len() * ty.block_bytes()..][..ty.block_bytes()];
    let f16 = |at: usize| {
        half::f16::from_le_bytes([block[at], block[at + 1]])
            .to_f32()
            .abs()
    };
    let within = i % ty.block_len();
    match ty {
        GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q4_1 | GgmlType::Q5_1 => {
            f16(0)
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let s = within / 32;
            let sc = &block[4..16];
            let scale = if s < 4 {
                sc[s] & 63
            } else {
                (sc[s + 4] & 0x0f) | ((sc[s - 4] >> 6) << 4)
            };
            // The minimum is quantized too (6 bits of dmin): half a dmin step adds to it.
            f16(0) * f32::from(scale) + f16(2) / 2.0
        }
        GgmlType::Q6_K => f16(208) * f32::from((block[192 + within / 16] as i8).unsigned_abs()),
        GgmlType::F16 => 0.0,
        other => panic!("no step for {other}"),
    }
}

/// Checks every tensor of type `ty` in the variant; returns how many were checked.
fn check_format(a: &Assets, name: &str, ty: GgmlType, max_steps: f32) -> usize {
    let variant = std::fs::read(a.variant(name)).unwrap();
    let expanded = std::fs::read(a.f32_of(name)).unwrap();
    let base = std::fs::read(a.variant("F32")).unwrap();
    let (variant, expanded, base) = (
        GgufFile::parse(&variant).unwrap(),
        GgufFile::parse(&expanded).unwrap(),
        GgufFile::parse(&base).unwrap(),
    );
    let mut checked = 0;
    let mut worst_ratio = 0.0f32;
    for info in variant.header.tensors.iter().filter(|t| t.ty == ty) {
        let ours = variant.dequantize(&info.name).unwrap();
        let theirs = expanded.dequantize(&info.name).unwrap();
        for (i, (&o, &t)) in ours.iter().zip(&theirs).enumerate() {
            assert!(
                (o - t).abs() <= 1e-6 * t.abs() + 1e-30,
                "{name} {}: weight {i} is {o}, llama.cpp expands it to {t}",
                info.name
            );
        }
        let bytes = variant.bytes_of(info).unwrap();
        let reference = base.dequantize(&info.name).unwrap();
        for (i, (&o, &r)) in ours.iter().zip(&reference).enumerate() {
            let step = step_at(info, bytes, i);
            let tol = step * max_steps + 1e-3 * r.abs() + 1e-6;
            assert!(
                (o - r).abs() <= tol,
                "{name} {}: weight {i} is {o}, original {r}, step {step}",
                info.name
            );
            if step > 0.0 {
                worst_ratio = worst_ratio.max((o - r).abs() / step);
            }
        }
        checked += 1;
    }
    eprintln!("{name}: {checked} {ty} tensors; worst error {worst_ratio:.3} steps");
    checked
}

#[test]
fn original_q4_1_and_q8_0_match_llama_cpp_expansion() {
    let Some(a) = assets() else { return };
    let model = std::fs::read(&a.model).unwrap();
    let model = GgufFile::parse(&model).unwrap();
    let f32s = std::fs::read(a.variant("F32")).unwrap();
    let f32s = GgufFile::parse(&f32s).unwrap();
    let mut seen = [0usize; 3];
    for info in &model.header.tensors {
        let ours = model.dequantize(&info.name).unwrap();
        let theirs = f32s.dequantize(&info.name).unwrap();
        for (i, (&o, &t)) in ours.iter().zip(&theirs).enumerate() {
            assert!(
                (o - t).abs() <= 1e-6 * t.abs() + 1e-30,
                "{} ({}): weight {i} is {o}, llama.cpp says {t}",
                info.name,
                info.ty
            );
        }
        match info.ty {
            GgmlType::Q4_1 => seen[0] += 1,
            GgmlType::Q8_0 => seen[1] += 1,
            GgmlType::F32 => seen[2] += 1,
            _ => {}
        }
    }
    assert_eq!(seen, [210, 1, 61]);
}

macro_rules! format_test {
    ($test:ident, $name:literal, $ty:expr, $min:expr, $steps:expr) => {
        #[test]
        fn $test() {
            let Some(a) = assets() else { return };
            let checked = check_format(&a, $name, $ty, $steps);
            assert!(checked >= $min, "only {checked} {} tensors", $name);
        }
    };
}

// SmolLM2's rows are 576 or 1536 wide: K formats (256-weight blocks) apply only to the 30
// ffn_down tensors (1536 = 6 × 256); llama-quantize falls back for the others.
//
// Error bounds in steps of each block's grid, as llama.cpp's quantizers give them:
// - asymmetric formats (Q4_1, Q5_1) and Q8_0 round to nearest: half a step, plus f16
//   rounding of the scale and minimum (0.6);
// - symmetric Q4_0/Q5_0 put the block's extreme on the grid's negative end, so the opposite
//   extreme may clamp one level short: one step (1.05);
// - Q4_K/Q5_K quantize the sub-block scales and minimums to 6 bits, re-rounding the weights
//   against the quantized pair (1.25);
// - Q6_K searches each 16-weight scale for least weighted RMS error, accepting clipped
//   outliers, then stores the scale in 8 bits relative to the block's largest (4.5).
// F16's "step" is zero: only its rounding (1e-3 relative) is allowed.
format_test!(f16_matches_llama_cpp, "F16", GgmlType::F16, 211, 0.0);
format_test!(q8_0_matches_llama_cpp, "Q8_0", GgmlType::Q8_0, 211, 0.6);
format_test!(q4_0_matches_llama_cpp, "Q4_0", GgmlType::Q4_0, 211, 1.05);
format_test!(q4_1_matches_llama_cpp, "Q4_1", GgmlType::Q4_1, 211, 0.6);
format_test!(q5_0_matches_llama_cpp, "Q5_0", GgmlType::Q5_0, 211, 1.05);
format_test!(q5_1_matches_llama_cpp, "Q5_1", GgmlType::Q5_1, 211, 0.6);
format_test!(q4_k_matches_llama_cpp, "Q4_K", GgmlType::Q4_K, 30, 1.25);
format_test!(q5_k_matches_llama_cpp, "Q5_K", GgmlType::Q5_K, 30, 1.25);
format_test!(q6_k_matches_llama_cpp, "Q6_K", GgmlType::Q6_K, 30, 4.5);
