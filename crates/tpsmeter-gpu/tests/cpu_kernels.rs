//! The CPU backend's matrix kernels against the f32 oracle: for every block format, random
//! rows (with sane scales) times random activations, through `QMatrix` and `matmul`, with the
//! AVX2 build (where the CPU has it) and the portable one, one token and a prompt chunk.
//!
//! Two oracles. The tight one multiplies the expanded weights with the activations exactly as
//! the kernels see them (their 8-bit codes and scales, or their float rounding), so the only
//! difference left is f32 summation order (`1e-5·Σ|w·x̂|`): a wrong scale, offset or code
//! fails it. The other is the plain f32 product, under a bound on what rounding the
//! activations may cost.
//!
//! That bound is derived rather than tuned: integer formats multiply activations rounded to 8
//! bits (step `d = max|x| / 127` per block of 32, or of 256 for the K-quants), so each
//! weight's product moves by at most `|w|·d/2`, plus, for 32-blocks whose scale is kept as
//! f16 as llama.cpp keeps it, `|w|·127·d·2⁻¹¹` (and the f16 block sum for formats with a
//! minimum); F16 and BF16 weights multiply activations rounded to their type. Every format
//! also gets the f32 summation term `1e-5·Σ|w_i·x_i|`. The SIMD build of the portable
//! kernels runs the same arithmetic in the same order as the baseline one, so they must agree
//! bit for bit (the hand-written AVX2 kernels only sum in another order: they are held to the
//! oracle), and one token must give what it gives inside a chunk of tokens.
//!
//! The same tests run in headless Chromium (`cargo xtask browser-test --kernels`), where the
//! SIMD build is the wasm `simd128` one the browser's CPU backend runs: its hand-written
//! Q4_0, Q4_1 and Q8_0 rows (`cpu/simd128.rs`) keep the portable order of float operations,
//! so they too must agree with the portable build bit for bit. They run twice there: as the
//! plain build and with `--features relaxed-simd`, whose Q4 rows use relaxed SIMD's 8-bit
//! dot (exact on their operands, so held to the same bit-for-bit rule).
#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use proptest::prelude::*;
use tpsmeter_gpu::cpu::matrix::{QMatrix, matmul};
use tpsmeter_gpu::cpu::q8::Activations;
use tpsmeter_gpu::cpu::{CpuOptions, CpuRuntime, Simd};
use tpsmeter_model::ModelError;
use tpsmeter_model::quant::{GgmlType, dequantize};

/// Every format with a kernel of its own, and one (Q2_K... none dequantizable without) that
/// takes the generic block-to-f32 path: all formats the crate can expand.
fn formats() -> Vec<GgmlType> {
    GgmlType::ALL
        .into_iter()
        .filter(|t| t.can_dequantize())
        .collect()
}

/// Byte offsets of the f16 scales in one block of `ty` (random bytes there could be NaN or
/// huge): they are overwritten with sane values.
fn f16_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        GgmlType::Q6_K => &[208],
        _ => &[],
    }
}

/// A tiny deterministic generator (the test's inputs come from proptest's seed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// `rows` random rows of `cols` weights of `ty`.
fn random_matrix(ty: GgmlType, rows: usize, cols: usize, rng: &mut Rng) -> QMatrix {
    let row_bytes = ty.row_bytes(cols).unwrap();
    let mut bytes: Vec<u8> = (0..rows * row_bytes).map(|_| rng.next() as u8).collect();
    match ty {
        GgmlType::F32 => {
            for c in bytes.chunks_exact_mut(4) {
                c.copy_from_slice(&(rng.unit() * 0.5).to_le_bytes());
            }
        }
        GgmlType::F16 => {
            for c in bytes.chunks_exact_mut(2) {
                c.copy_from_slice(&half::f16::from_f32(rng.unit() * 0.5).to_le_bytes());
            }
        }
        GgmlType::BF16 => {
            for c in bytes.chunks_exact_mut(2) {
                c.copy_from_slice(&half::bf16::from_f32(rng.unit() * 0.5).to_le_bytes());
            }
        }
        _ => {
            for block in bytes.chunks_exact_mut(ty.block_bytes()) {
                for &at in f16_fields(ty) {
                    let v = half::f16::from_f32(rng.unit() * 0.02);
                    block[at..at + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    QMatrix::new(ty, rows, cols, bytes).unwrap()
}

/// The oracle: the row expanded to f32, multiplied in f64; the bound on how far rounding
/// the activations as llama.cpp does may move it (module docs); and the magnitude for the
/// summation term.
fn oracle(w: &QMatrix, r: usize, x: &[f32]) -> (f64, f64, f64) {
    const F16_EPS: f64 = 1.0 / 2048.0;
    let mut row = vec![0f32; w.cols];
    dequantize(w.ty, w.row(r), &mut row).unwrap();
    let (w64, x64): (Vec<f64>, Vec<f64>) = (
        row.iter().map(|&v| f64::from(v)).collect(),
        x.iter().map(|&v| f64::from(v)).collect(),
    );
    let dot: f64 = w64.iter().zip(&x64).map(|(w, x)| w * x).sum();
    let magnitude: f64 = w64.iter().zip(&x64).map(|(w, x)| (w * x).abs()).sum();
    let amax = |xs: &[f64]| xs.iter().fold(0f64, |m, v| m.max(v.abs()));
    let rounding = match w.ty {
        GgmlType::F32 => 0.0,
        GgmlType::F16 => magnitude * F16_EPS,
        GgmlType::BF16 => magnitude / 256.0,
        GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => w64
            .chunks(256)
            .zip(x64.chunks(256))
            .map(|(ws, xs)| ws.iter().map(|w| w.abs()).sum::<f64>() * amax(xs) / 127.0 / 2.0)
            .sum(),
        ty => {
            // 32-weight blocks: codes on the exact scale, the scale then kept as f16; for
            // formats with a minimum `m`, the block's activation sum kept as f16 too.
            let block_bytes = ty.block_bytes();
            let with_min = matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1);
            w64.chunks(32)
                .zip(x64.chunks(32))
                .zip(w.row(r).chunks_exact(block_bytes))
                .map(|((ws, xs), block)| {
                    let step = amax(xs) / 127.0;
                    let m = if with_min {
                        f64::from(half::f16::from_le_bytes([block[2], block[3]]).to_f32()).abs()
                    } else {
                        0.0
                    };
                    let sum_x: f64 = xs.iter().map(|v| v.abs()).sum();
                    ws.iter().map(|w| w.abs() + m).sum::<f64>() * step * (0.5 + 127.0 * F16_EPS)
                        + m * (16.0 * step + (sum_x + 16.0 * step) * F16_EPS)
                })
                .sum()
        }
    };
    (dot, rounding, magnitude)
}

/// The tight oracle: the row expanded to f32 times the activations as the kernels see them
/// (8-bit codes times their scale, or rounded to the weights' float type), in f64, with the
/// f16 block sum where a format with a minimum uses it; and the magnitude `Σ|w·x̂|`. The
/// kernels compute exactly this up to f32 summation order, so a wrong scale, offset or code
/// shows as an error many times the summation term.
fn tight_oracle(w: &QMatrix, r: usize, x: &[f32]) -> (f64, f64) {
    let mut row = vec![0f32; w.cols];
    dequantize(w.ty, w.row(r), &mut row).unwrap();
    let mut a = Activations::default();
    a.set(x);
    let seen: Vec<f64> = match w.ty {
        GgmlType::F32 => x.iter().map(|&v| f64::from(v)).collect(),
        GgmlType::F16 => x
            .iter()
            .map(|&v| f64::from(half::f16::from_f32(v).to_f32()))
            .collect(),
        GgmlType::BF16 => x
            .iter()
            .map(|&v| f64::from(half::bf16::from_f32(v).to_f32()))
            .collect(),
        GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => a
            .q8k
            .iter()
            .flat_map(|b| b.qs.iter().map(move |&q| f64::from(b.d) * f64::from(q)))
            .collect(),
        _ => {
            a.q8.iter()
                .flat_map(|b| b.qs.iter().map(move |&q| f64::from(b.d) * f64::from(q)))
                .collect()
        }
    };
    let mut dot = 0f64;
    let mut magnitude = 0f64;
    for (&w, &x) in row.iter().zip(&seen) {
        dot += f64::from(w) * x;
        magnitude += (f64::from(w) * x).abs();
    }
    if matches!(w.ty, GgmlType::Q4_1 | GgmlType::Q5_1) {
        // The minimum meets the block's f16 sum, not the sum of the rounded activations.
        for ((block, b), xs) in w
            .row(r)
            .chunks_exact(w.ty.block_bytes())
            .zip(&a.q8)
            .zip(seen.chunks(32))
        {
            let m = f64::from(half::f16::from_le_bytes([block[2], block[3]]).to_f32());
            dot += m * (f64::from(b.s) - xs.iter().sum::<f64>());
        }
    }
    (dot, magnitude)
}

fn runtime(portable: bool) -> CpuRuntime {
    CpuRuntime::new(CpuOptions {
        threads: Some(2),
        portable,
        ..Default::default()
    })
    .unwrap()
}

/// `matmul` for `tokens` activation rows.
fn product(rt: &CpuRuntime, w: &QMatrix, xs: &[Vec<f32>]) -> Vec<f32> {
    let acts: Vec<Activations> = xs
        .iter()
        .map(|x| {
            let mut a = Activations::default();
            a.set(x);
            a
        })
        .collect();
    let mut out = vec![0f32; xs.len() * w.rows];
    rt.install(|| matmul(rt, w, &acts, &mut out));
    out
}

fn check_format(ty: GgmlType, seed: u64, tokens: usize) {
    // Two blocks of 256 per row (every format's rows hold whole blocks).
    check_shape(ty, seed, tokens, 512);
}

/// [`check_format`] on rows of `cols` weights, and enough rows to be split over both threads.
fn check_shape(ty: GgmlType, seed: u64, tokens: usize, cols: usize) {
    let mut rng = Rng(seed | 1);
    let rows = 70;
    let w = random_matrix(ty, rows, cols, &mut rng);
    let xs: Vec<Vec<f32>> = (0..tokens)
        .map(|_| {
            (0..cols)
                .map(|i| rng.unit() * if i % 97 == 0 { 8.0 } else { 1.0 })
                .collect()
        })
        .collect();
    let simd = runtime(false);
    let plain = runtime(true);
    let got = product(&simd, &w, &xs);
    let got_plain = product(&plain, &w, &xs);
    // Q4_0, Q4_1, Q8_0, Q4_K and Q6_K have hand-written AVX2 kernels (eight float partial sums): those
    // differ from the portable build by summation order, and both are held to the oracle.
    let hand_written = simd.simd() == Simd::Avx2
        && matches!(
            ty,
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0 | GgmlType::Q4_K | GgmlType::Q6_K
        );
    if !hand_written {
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            got_plain.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{ty}: {} and portable builds differ",
            simd.simd().name()
        );
    }
    for (t, x) in xs.iter().enumerate() {
        // A token alone gives what it gave inside the chunk.
        let alone = product(&simd, &w, std::slice::from_ref(x));
        for r in 0..rows {
            let v = got[t * rows + r];
            assert_eq!(
                v.to_bits(),
                alone[r].to_bits(),
                "{ty} row {r}: chunk vs one token"
            );
            let (exact, magnitude) = tight_oracle(&w, r, x);
            let close = 1e-5 * magnitude + 1e-6;
            for (build, v) in [("simd", v), ("portable", got_plain[t * rows + r])] {
                assert!(
                    (f64::from(v) - exact).abs() <= close,
                    "{ty} {build} token {t} row {r}: got {v}, the same rounding gives {exact}, \
                     summation bound {close}"
                );
            }
            let (want, rounding, magnitude) = oracle(&w, r, x);
            let bound = rounding + 1e-5 * magnitude + 1e-6;
            for (build, v) in [("simd", v), ("portable", got_plain[t * rows + r])] {
                assert!(
                    (f64::from(v) - want).abs() <= bound,
                    "{ty} {build} token {t} row {r}: got {v}, want {want}, bound {bound}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn every_format_matches_the_f32_oracle(seed in any::<u64>(), tokens in 1usize..5) {
        for ty in formats() {
            check_format(ty, seed, tokens);
        }
    }
}

/// Float rows of any width (their GGML block is one weight, so a 48-wide F32 model is
/// valid): the kernels take them 32 at a time and must count the short last group too. They
/// once dropped it, and such a model gave all-zero logits on the CPU.
#[test]
fn float_rows_of_any_width_count_every_weight() {
    for ty in [GgmlType::F32, GgmlType::F16, GgmlType::BF16] {
        for cols in [1, 17, 48, 100] {
            for tokens in [1, 3] {
                check_shape(ty, 0x5eed + cols as u64, tokens, cols);
            }
        }
    }
}

#[test]
fn the_simd_build_is_taken_where_the_cpu_has_it() {
    let simd = runtime(false).simd();
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        simd == Simd::Avx2,
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    );
    // In the browser: the kernels compiled for wasm SIMD (a browser without it refuses the
    // module, so there is no run-time check to make).
    #[cfg(target_arch = "wasm32")]
    {
        assert_eq!(simd, Simd::Simd128);
        let build = if cfg!(feature = "relaxed-simd") {
            "simd128+relaxed"
        } else {
            "simd128"
        };
        assert_eq!(simd.name(), build);
    }
    assert_eq!(runtime(true).simd(), Simd::Portable);
    let _ = simd;
}

#[test]
fn a_matrix_of_the_wrong_size_is_a_typed_error() {
    // The CPU crate's error, as the engine names it.
    let err =
        tpsmeter_gpu::GpuError::from(QMatrix::new(GgmlType::Q4_1, 2, 64, vec![0; 79]).unwrap_err());
    assert!(
        matches!(
            err,
            tpsmeter_gpu::GpuError::Model(ModelError::QuantLength {
                expected_bytes: 80,
                got_bytes: 79,
                ..
            })
        ),
        "{err}"
    );
    let zero = CpuRuntime::new(CpuOptions {
        threads: Some(0),
        ..Default::default()
    })
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(
        zero.contains("0 threads") && !zero.contains("above the limit"),
        "{zero}"
    );
    assert!(
        CpuRuntime::new(CpuOptions {
            threads: Some(100_000),
            ..Default::default()
        })
        .is_err()
    );
}
