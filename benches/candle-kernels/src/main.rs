//! One-thread matrix × vector speed: tpsmeter-gpu's CPU kernels (`cpu::matrix::matmul`)
//! against candle-core's quantized CPU kernels (`k_quants::GgmlType::vec_dot`, one call per
//! row), on the same GGUF block bytes and the same activation vector.
//!
//! Usage: candle-kernels [LABEL] [REPS]
//!   LABEL: printed with every row (which build this is), REPS: timed products per side.
//!   Waits for the 1-minute load average to drop below 1.2 first, unless NO_WAIT is set.

use std::hint::black_box;
use std::time::{Duration, Instant};

use candle_core::quantized::k_quants::{
    BlockQ4_0, BlockQ4_1, BlockQ4K, BlockQ6K, BlockQ8_0, GgmlType as CandleType,
};
use tpsmeter_gpu::cpu::matrix::{QMatrix, matmul};
use tpsmeter_gpu::cpu::q8::Activations;
use tpsmeter_gpu::cpu::cpu_runtime::{CpuOptions, CpuRuntime};
use tpsmeter_gpu::quant::GgmlType;

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    /// A signed byte in -127..=127 (what quantizers emit).
    fn i8_sym(&mut self) -> u8 {
        ((self.next() % 255) as i32 - 127) as i8 as u8
    }
}

fn f16_bytes(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_le_bytes()
}

#[derive(Clone, Copy, Debug)]
enum Fmt {
    Q4_0,
    Q4_1,
    Q8_0,
    Q4K,
    Q6K,
}

impl Fmt {
    fn name(self) -> &'static str {
        match self {
            Fmt::Q4_0 => "Q4_0",
            Fmt::Q4_1 => "Q4_1",
            Fmt::Q8_0 => "Q8_0",
            Fmt::Q4K => "Q4_K",
            Fmt::Q6K => "Q6_K",
        }
    }
    fn ours(self) -> GgmlType {
        match self {
            Fmt::Q4_0 => GgmlType::Q4_0,
            Fmt::Q4_1 => GgmlType::Q4_1,
            Fmt::Q8_0 => GgmlType::Q8_0,
            Fmt::Q4K => GgmlType::Q4_K,
            Fmt::Q6K => GgmlType::Q6_K,
        }
    }
    /// Weights per block, bytes per block (GGUF layout).
    fn block(self) -> (usize, usize) {
        match self {
            Fmt::Q4_0 => (32, 18),
            Fmt::Q4_1 => (32, 20),
            Fmt::Q8_0 => (32, 34),
            Fmt::Q4K => (256, 144),
            Fmt::Q6K => (256, 210),
        }
    }
    /// One random block in GGUF byte layout, with f16 scales in [0.001, 0.01].
    fn random_block(self, rng: &mut Rng, out: &mut Vec<u8>) {
        let d = |rng: &mut Rng| f16_bytes(rng.uniform(0.001, 0.01));
        match self {
            Fmt::Q4_0 => {
                // d: f16, qs: [u8; 16]
                out.extend(d(rng));
                out.extend((0..16).map(|_| rng.byte()));
            }
            Fmt::Q4_1 => {
                // d: f16, m: f16, qs: [u8; 16]; m about -8·d, as a symmetric-ish block has.
                let dv = rng.uniform(0.001, 0.01);
                out.extend(f16_bytes(dv));
                out.extend(f16_bytes(-8.0 * dv * rng.uniform(0.8, 1.2)));
                out.extend((0..16).map(|_| rng.byte()));
            }
            Fmt::Q8_0 => {
                // d: f16, qs: [i8; 32]
                out.extend(d(rng));
                out.extend((0..32).map(|_| rng.i8_sym()));
            }
            Fmt::Q4K => {
                // d: f16, dmin: f16, scales: [u8; 12] (6-bit scales/mins packed), qs: [u8; 128]
                out.extend(d(rng));
                out.extend(d(rng));
                out.extend((0..12).map(|_| rng.byte()));
                out.extend((0..128).map(|_| rng.byte()));
            }
            Fmt::Q6K => {
                // ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16
                out.extend((0..128).map(|_| rng.byte()));
                out.extend((0..64).map(|_| rng.byte()));
                out.extend((0..16).map(|_| rng.i8_sym()));
                out.extend(d(rng));
            }
        }
    }
}

/// The same bytes as candle blocks (`#[repr(C)]`, GGUF layout; copied, so alignment holds).
fn to_blocks<T: CandleType>(bytes: &[u8], block_bytes: usize) -> Vec<T> {
    assert_eq!(std::mem::size_of::<T>(), block_bytes, "{:?}", T::DTYPE);
    assert_eq!(bytes.len() % block_bytes, 0);
    let n = bytes.len() / block_bytes;
    let mut v: Vec<T> = (0..n).map(|_| T::zeros()).collect();
    // SAFETY: `v` holds exactly `bytes.len()` bytes of plain-old-data blocks (f16/u8/i8/i16/
    // f32 fields, `#[repr(C)]`, no padding: sizes asserted above and in candle), any bit
    // pattern of which is a valid value.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes.len());
    }
    v
}

fn median(v: &mut [Duration]) -> f64 {
    v.sort();
    let n = v.len();
    let m = if n % 2 == 1 {
        v[n / 2].as_secs_f64()
    } else {
        (v[n / 2 - 1].as_secs_f64() + v[n / 2].as_secs_f64()) / 2.0
    };
    m * 1e6
}

struct Row {
    fmt: &'static str,
    rows: usize,
    cols: usize,
    ours_us: f64,
    candle_us: f64,
    max_rel: f64,
    max_rel_rms: f64,
    rows_over: usize,
    ours_err: f64,
    candle_err: f64,
}

/// Candle's f32 expansion of the weights, for an exact reference product.
fn reference<T: CandleType>(blocks: &[T], rows: usize, cols: usize, x: &[f32]) -> Vec<f64> {
    let bpr = cols / T::BLCK_SIZE;
    let mut w = vec![0f32; cols];
    (0..rows)
        .map(|r| {
            T::to_float(&blocks[r * bpr..(r + 1) * bpr], &mut w);
            w.iter().zip(x).map(|(&a, &b)| a as f64 * b as f64).sum()
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn bench<T: CandleType>(
    rt: &CpuRuntime,
    fmt: Fmt,
    rows: usize,
    cols: usize,
    bytes: &[u8],
    x: &[f32],
    warmup: usize,
    reps: usize,
) -> Row {
    let (blen, bbytes) = fmt.block();
    assert_eq!(T::BLCK_SIZE, blen);
    let bpr = cols / blen;
    assert_eq!(bytes.len(), rows * bpr * bbytes);

    // Ours: the matrix and the activations, quantized once.
    let w = QMatrix::new(fmt.ours(), rows, cols, bytes.to_vec()).expect("QMatrix::new");
    let mut acts = Activations::default();
    acts.set(x);
    let acts = [acts];
    let mut out_ours = vec![0f32; rows];

    // Candle: the same bytes as blocks, activations quantized once to the vec-dot type.
    let blocks: Vec<T> = to_blocks(bytes, bbytes);
    let vb = T::VecDotType::BLCK_SIZE;
    let mut ys: Vec<T::VecDotType> = (0..cols / vb).map(|_| T::VecDotType::zeros()).collect();
    T::VecDotType::from_float(x, &mut ys);
    let mut out_candle = vec![0f32; rows];

    let run_ours = |out: &mut [f32]| {
        matmul(rt, black_box(&w), black_box(&acts), out);
    };
    let run_candle = |out: &mut [f32]| {
        let blocks = black_box(&blocks[..]);
        let ys = black_box(&ys[..]);
        for (r, o) in out.iter_mut().enumerate() {
            *o = T::vec_dot(cols, &blocks[r * bpr..(r + 1) * bpr], ys);
        }
    };

    for _ in 0..warmup {
        run_ours(&mut out_ours);
        run_candle(&mut out_candle);
    }
    let (mut t_ours, mut t_candle) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let t = Instant::now();
        run_ours(&mut out_ours);
        t_ours.push(t.elapsed());
        black_box(&out_ours);
        let t = Instant::now();
        run_candle(&mut out_candle);
        t_candle.push(t.elapsed());
        black_box(&out_candle);
    }

    // Same product? Per-row relative difference, and relative to the outputs' RMS (rows
    // whose value is near zero inflate the first).
    let rms = (out_candle.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / rows as f64).sqrt();
    let (mut max_rel, mut max_rel_rms, mut rows_over) = (0f64, 0f64, 0usize);
    for (&a, &b) in out_ours.iter().zip(&out_candle) {
        let (a, b) = (a as f64, b as f64);
        let diff = (a - b).abs();
        let den = a.abs().max(b.abs());
        if den > 0.0 {
            max_rel = max_rel.max(diff / den);
            rows_over += usize::from(diff / den >= 1e-2);
        }
        max_rel_rms = max_rel_rms.max(diff / rms);
    }
    let exact = reference(&blocks, rows, cols, x);
    let err = |o: &[f32]| {
        o.iter()
            .zip(&exact)
            .map(|(&a, &e)| (a as f64 - e).abs() / rms)
            .fold(0f64, f64::max)
    };
    Row {
        fmt: fmt.name(),
        rows,
        cols,
        ours_us: median(&mut t_ours),
        candle_us: median(&mut t_candle),
        max_rel,
        max_rel_rms,
        rows_over,
        ours_err: err(&out_ours),
        candle_err: err(&out_candle),
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn load1() -> f64 {
    loadavg()
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::MAX)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let label = args.next().unwrap_or_else(|| "build".into());
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let warmup = 20;

    println!(
        "# build {label}: cfg avx={} avx2={} fma={} f16c={}; runtime avx2={} fma={}",
        cfg!(target_feature = "avx"),
        cfg!(target_feature = "avx2"),
        cfg!(target_feature = "fma"),
        cfg!(target_feature = "f16c"),
        std::is_x86_feature_detected!("avx2"),
        std::is_x86_feature_detected!("fma"),
    );

    let rt = CpuRuntime::new(CpuOptions {
        threads: Some(1),
        portable: false,
        exact: false,
    })
    .expect("runtime");
    println!("# ours: threads={} simd={}", rt.threads(), rt.simd().name());

    // Wait (up to 10 minutes) for the machine to be quiet enough (not with NO_WAIT set: a
    // quick check of the build and of the results, not a measurement).
    let start = Instant::now();
    while std::env::var_os("NO_WAIT").is_none()
        && load1() >= 1.2
        && start.elapsed() < Duration::from_secs(600)
    {
        eprintln!("# waiting, loadavg {}", loadavg());
        std::thread::sleep(Duration::from_secs(20));
    }
    println!("# loadavg at start of timing: {}", loadavg());

    // SmolLM2-135M's MLP shapes: up/gate 1536×576, down 576×1536. K-quants need columns that
    // are multiples of 256: 576 becomes 512 and 768 for them.
    let cases: &[(Fmt, usize, usize)] = &[
        (Fmt::Q4_0, 1536, 576),
        (Fmt::Q4_0, 576, 1536),
        (Fmt::Q4_1, 1536, 576),
        (Fmt::Q4_1, 576, 1536),
        (Fmt::Q8_0, 1536, 576),
        (Fmt::Q8_0, 576, 1536),
        (Fmt::Q4K, 1536, 512),
        (Fmt::Q4K, 1536, 768),
        (Fmt::Q4K, 576, 1536),
        (Fmt::Q6K, 1536, 512),
        (Fmt::Q6K, 1536, 768),
        (Fmt::Q6K, 576, 1536),
    ];

    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut results = Vec::new();
    // Everything runs on the 1-thread pool's worker, so `matmul` calls no other thread and
    // candle's loop runs on the same core.
    rt.install(|| {
        for &(fmt, rows, cols) in cases {
            let (blen, _) = fmt.block();
            let mut bytes = Vec::new();
            for _ in 0..rows * (cols / blen) {
                fmt.random_block(&mut rng, &mut bytes);
            }
            let x: Vec<f32> = (0..cols).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let r = match fmt {
                Fmt::Q4_0 => bench::<BlockQ4_0>(&rt, fmt, rows, cols, &bytes, &x, warmup, reps),
                Fmt::Q4_1 => bench::<BlockQ4_1>(&rt, fmt, rows, cols, &bytes, &x, warmup, reps),
                Fmt::Q8_0 => bench::<BlockQ8_0>(&rt, fmt, rows, cols, &bytes, &x, warmup, reps),
                Fmt::Q4K => bench::<BlockQ4K>(&rt, fmt, rows, cols, &bytes, &x, warmup, reps),
                Fmt::Q6K => bench::<BlockQ6K>(&rt, fmt, rows, cols, &bytes, &x, warmup, reps),
            };
            results.push(r);
        }
    });
    let end_load = loadavg();

    println!(
        "| build | format | rows×cols | ours µs | candle µs | candle/ours | max rel diff | rows ≥1e-2 | max diff/rms | ours err/rms | candle err/rms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &results {
        println!(
            "| {label} | {} | {}×{} | {:.1} | {:.1} | {:.2} | {:.2e} | {} | {:.2e} | {:.2e} | {:.2e} |",
            r.fmt,
            r.rows,
            r.cols,
            r.ours_us,
            r.candle_us,
            r.candle_us / r.ours_us,
            r.max_rel,
            r.rows_over,
            r.max_rel_rms,
            r.ours_err,
            r.candle_err,
        );
    }
    println!("# loadavg at end of timing: {end_load}");
}
