//! The adapter probe: the roofline every TPS figure is read against.
//!
//! In a few seconds it measures what bounds decode on this adapter: the streaming-read
//! bandwidth (GB/s) with the read pattern its kernel profile uses (contiguous per invocation
//! on CPU rasterisers, coalesced on GPUs; both are measured and the better is the ceiling),
//! the cost of one more dispatch in a command buffer, and the latency of a submit with a
//! 4-byte readback (what every decoded token pays once). A decode rate is then stated as a
//! share of `bandwidth ÷ bytes read per token`, which no published figure does.
//!
//! Times come from the caller's clock (ms), as in generation: `Instant` natively,
//! `performance.now()` on the web, where the wall clock is all there is (timestamp queries
//! are an optional feature). Each figure is the median of several trials.

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::{Dispatch, encode_pass};
use crate::kernels::source::ShaderId;
use crate::runtime::readback::TokenReadback;

const WORKGROUP: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    chunk: u32,
    n: u32,
    _pad: [u32; 2],
}

/// How the read kernel walks the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPattern {
    /// Invocation `i` reads its own contiguous chunk (CPU rasterisers).
    Contiguous,
    /// Invocation `i` reads `i`, `i + T`, ... for `T` invocations (GPUs: coalesced).
    Strided,
}

/// How much to measure.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Bytes streamed per read dispatch (capped by the adapter's binding limit).
    pub bytes: u64,
    /// Read dispatches per timed submit.
    pub reads_per_submit: u32,
    /// Timed submits per figure (the median is reported).
    pub trials: u32,
    /// Dispatches in the command buffer whose extra cost gives the per-dispatch figure.
    pub dispatches: u32,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            bytes: 64 << 20,
            reads_per_submit: 4,
            trials: 5,
            dispatches: 200,
        }
    }
}

/// What the probe measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ProbeReport {
    /// Adapter name.
    pub adapter: String,
    /// Best streaming-read bandwidth, GB/s (10^9 bytes per second).
    pub read_gb_per_s: f64,
    /// The pattern that gave it.
    pub read_pattern: &'static str,
    /// Bandwidth of each pattern, GB/s: (contiguous, strided).
    pub contiguous_gb_per_s: f64,
    pub strided_gb_per_s: f64,
    /// Bytes read per dispatch.
    pub read_bytes: u64,
    /// Extra cost of one more dispatch in a command buffer, µs.
    pub dispatch_us: f64,
    /// One submit of one tiny dispatch plus a 4-byte readback, ms.
    pub submit_readback_ms: f64,
}

impl ProbeReport {
    /// The decode rate the bandwidth allows when each token reads `bytes_per_token` bytes:
    /// the roofline, tokens per second.
    pub fn ceiling_tokens_per_s(&self, bytes_per_token: u64) -> f64 {
        if bytes_per_token == 0 {
            return f64::INFINITY;
        }
        self.read_gb_per_s * 1e9 / bytes_per_token as f64
    }
}

/// The read kernel's grid for `pattern`: (invocations, `chunk` parameter).
fn layout(pattern: ReadPattern, n_vec4: u32, invocations: u32) -> (u32, u32) {
    match pattern {
        ReadPattern::Contiguous => (invocations, n_vec4.div_ceil(invocations)),
        ReadPattern::Strided => (invocations, invocations),
    }
}

/// Invocations of the read kernel: enough to fill a CPU rasteriser's threads with long
/// contiguous runs, or a GPU's cores with coalesced wavefronts.
fn invocations(pattern: ReadPattern) -> u32 {
    match pattern {
        ReadPattern::Contiguous => 64 * WORKGROUP,
        ReadPattern::Strided => 1024 * WORKGROUP,
    }
}

/// The CPU twin of the read kernels: what `out[i]` holds after a read of `data` (vec4s as
/// four u32 each) with `pattern` over `invocations` invocations.
pub fn fold_reference(data: &[[u32; 4]], pattern: ReadPattern, invocations: u32) -> Vec<u32> {
    let n = data.len() as u32;
    let (inv, chunk) = layout(pattern, n, invocations);
    let fold = |v: &[u32; 4]| (v[0] ^ v[1]).wrapping_add(v[2] ^ v[3]);
    (0..inv)
        .map(|i| {
            let indices: Box<dyn Iterator<Item = u32>> = match pattern {
                ReadPattern::Contiguous => {
                    let start = i.saturating_mul(chunk).min(n);
                    Box::new(start..start.saturating_add(chunk).min(n))
                }
                ReadPattern::Strided => Box::new((i..n).step_by(chunk.max(1) as usize)),
            };
            indices
                .map(|j| fold(&data[j as usize]))
                .fold(0u32, u32::wrapping_add)
        })
        .collect()
}

/// A read of `data` (a storage buffer of `n_vec4` `vec4<u32>`) into `out` (one u32 per
/// invocation).
pub fn read_dispatch(
    ctx: &GpuContext,
    pattern: ReadPattern,
    data: &wgpu::Buffer,
    out: &wgpu::Buffer,
    n_vec4: u32,
    invocations: u32,
) -> Dispatch {
    let (inv, chunk) = layout(pattern, n_vec4, invocations);
    let entry = match pattern {
        ReadPattern::Contiguous => "read_contiguous",
        ReadPattern::Strided => "read_strided",
    };
    ctx.prepare(
        ShaderId::Probe,
        entry,
        defines(),
        &Params {
            chunk,
            n: n_vec4,
            _pad: [0; 2],
        },
        &[(1, data), (2, out)],
        ctx.grid(inv.div_ceil(WORKGROUP)),
    )
}

fn defines() -> Defines {
    Defines {
        workgroup: WORKGROUP,
        ..Defines::default()
    }
}

/// Runs `dispatches` and copies 4 bytes of `sync` out in one command buffer, then waits for
/// them: the engine's own per-token path (one submit, one staging buffer made once, 4 bytes
/// mapped), so `submit_readback_ms` is what each decoded token pays.
async fn submit_and_wait(
    ctx: &GpuContext,
    readback: &TokenReadback,
    dispatches: &[&Dispatch],
    sync: &wgpu::Buffer,
) -> Result<()> {
    let mut enc = ctx.encoder("probe");
    encode_pass(&mut enc, "probe", dispatches);
    readback.encode(&mut enc, sync);
    ctx.submit(enc);
    readback.read(ctx).await.map(drop)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Measures the adapter of `ctx` (see the module docs). `clock` reads milliseconds.
pub async fn probe(
    ctx: &GpuContext,
    clock: &mut dyn FnMut() -> f64,
    opts: &ProbeOptions,
) -> Result<ProbeReport> {
    let trials = opts.trials.max(1);
    // Whole vec4s, within one binding.
    let bytes = opts.bytes.min(ctx.max_binding()).max(16) / 16 * 16;
    let n_vec4 = u32::try_from(bytes / 16).unwrap_or(u32::MAX);
    let words: Vec<u32> = (0..n_vec4 * 4)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    let data = ctx.storage_from_bytes("probe data", bytemuck::cast_slice(&words))?;
    drop(words);
    let most = invocations(ReadPattern::Strided);
    let out = ctx.storage_zeroed("probe out", u64::from(most) * 4)?;
    let readback = TokenReadback::new(ctx, 1);

    let bandwidth = |pattern: ReadPattern| {
        let d = read_dispatch(ctx, pattern, &data, &out, n_vec4, invocations(pattern));
        (pattern, d)
    };
    let reads = [
        bandwidth(ReadPattern::Contiguous),
        bandwidth(ReadPattern::Strided),
    ];
    let mut gbps = [0.0f64; 2];
    for (k, (_, d)) in reads.iter().enumerate() {
        let batch: Vec<&Dispatch> = (0..opts.reads_per_submit.max(1)).map(|_| d).collect();
        // Warm-up: pipeline creation and first-touch costs are not bandwidth.
        submit_and_wait(ctx, &readback, &batch, &out).await?;
        let mut rates = Vec::new();
        for _ in 0..trials {
            let t0 = clock();
            submit_and_wait(ctx, &readback, &batch, &out).await?;
            let ms = clock() - t0;
            rates.push(bytes as f64 * batch.len() as f64 / (ms * 1e-3) / 1e9);
        }
        gbps[k] = median(rates);
    }

    let touch = ctx.prepare(
        ShaderId::Probe,
        "touch",
        defines(),
        &Params {
            chunk: 0,
            n: 0,
            _pad: [0; 2],
        },
        &[(1, &data), (2, &out)],
        [1, 1, 1],
    );
    let many: Vec<&Dispatch> = (0..opts.dispatches.max(2)).map(|_| &touch).collect();
    submit_and_wait(ctx, &readback, &many, &out).await?;
    let (mut one_ms, mut many_ms) = (Vec::new(), Vec::new());
    for _ in 0..trials.max(3) {
        let t0 = clock();
        submit_and_wait(ctx, &readback, &[&touch], &out).await?;
        one_ms.push(clock() - t0);
        let t0 = clock();
        submit_and_wait(ctx, &readback, &many, &out).await?;
        many_ms.push(clock() - t0);
    }
    let submit_readback_ms = median(one_ms);
    let dispatch_us =
        ((median(many_ms) - submit_readback_ms) / (many.len() - 1) as f64 * 1e3).max(0.0);

    let (pattern, best) = if gbps[0] >= gbps[1] {
        ("contiguous", gbps[0])
    } else {
        ("strided", gbps[1])
    };
    Ok(ProbeReport {
        adapter: ctx.info.name.clone(),
        read_gb_per_s: best,
        read_pattern: pattern,
        contiguous_gb_per_s: gbps[0],
        strided_gb_per_s: gbps[1],
        read_bytes: bytes,
        dispatch_us,
        submit_readback_ms,
    })
}

/// Native: [`probe`] on the calling thread, timed with `Instant`.
#[cfg(not(target_arch = "wasm32"))]
pub fn probe_blocking(ctx: &GpuContext, opts: &ProbeOptions) -> Result<ProbeReport> {
    let start = std::time::Instant::now();
    let mut clock = || start.elapsed().as_secs_f64() * 1e3;
    pollster::block_on(probe(ctx, &mut clock, opts))
}
