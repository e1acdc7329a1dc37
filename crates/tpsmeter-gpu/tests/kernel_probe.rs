//! The adapter probe: its read kernels against their CPU twin (exact: the fold is integer
//! arithmetic), for both read patterns and sizes that do and do not divide evenly, and a
//! small probe run giving sane figures.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Rng, gpu, gpu_test};
use tpsmeter_gpu::gpu::GpuContext;
use tpsmeter_gpu::probe::{ProbeOptions, ReadPattern, fold_reference, probe, read_dispatch};

async fn check(ctx: &GpuContext, pattern: ReadPattern, n_vec4: u32, invocations: u32) {
    let mut rng = Rng::new(u64::from(n_vec4) * 31 + u64::from(invocations));
    let data: Vec<[u32; 4]> = (0..n_vec4)
        .map(|_| std::array::from_fn(|_| rng.next_u64() as u32))
        .collect();
    let buf = ctx
        .storage_from_bytes("data", bytemuck::cast_slice(&data))
        .unwrap();
    let out = ctx
        .storage_zeroed("out", u64::from(invocations) * 4)
        .unwrap();
    let d = read_dispatch(ctx, pattern, &buf, &out, n_vec4, invocations);
    tpsmeter_gpu::kernels::dispatch::run(ctx, &[&d]);
    let got: Vec<u32> = ctx
        .read_vec_async(&out, invocations as usize)
        .await
        .unwrap();
    let want = fold_reference(&data, pattern, invocations);
    assert_eq!(want.len(), got.len());
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{pattern:?} n={n_vec4} inv={invocations}: out[{i}] = {} on the GPU, {} on the CPU",
            got[i], want[i]
        );
    }
}

#[gpu_test]
async fn read_kernels_match_the_cpu_twin() {
    let Some(ctx) = gpu("read_kernels_match_the_cpu_twin").await else {
        return;
    };
    for pattern in [ReadPattern::Contiguous, ReadPattern::Strided] {
        // Even split, a remainder, fewer vec4s than invocations, a non-multiple of 4.
        for (n, inv) in [(4096, 64), (4099, 64), (50, 128), (1001, 192)] {
            check(ctx, pattern, n, inv).await;
        }
    }
}

#[gpu_test]
async fn a_small_probe_gives_positive_finite_figures() {
    let Some(ctx) = gpu("a_small_probe_gives_positive_finite_figures").await else {
        return;
    };
    let mut clock = common::now_ms;
    let opts = ProbeOptions {
        bytes: 4 << 20,
        reads_per_submit: 2,
        trials: 3,
        dispatches: 20,
    };
    let r = probe(ctx, &mut clock, &opts).await.unwrap();
    for v in [
        r.read_gb_per_s,
        r.contiguous_gb_per_s,
        r.strided_gb_per_s,
        r.submit_readback_ms,
    ] {
        assert!(v.is_finite() && v > 0.0, "{r:?}");
    }
    assert!(r.dispatch_us.is_finite() && r.dispatch_us >= 0.0);
    assert_eq!(r.read_bytes, 4 << 20);
    assert_eq!(
        r.read_gb_per_s,
        r.contiguous_gb_per_s.max(r.strided_gb_per_s)
    );
    // A 100 MB model at this bandwidth.
    let ceiling = r.ceiling_tokens_per_s(100_000_000);
    assert!((ceiling - r.read_gb_per_s * 10.0).abs() < 1e-9 * ceiling.max(1.0));
}
