//! The per-step cost counters (`runtime/cost.rs`) against what the graphs record: a decoded
//! token is the decode graph's dispatches in one compute pass and one submit, writes its
//! position pair and token id (12 bytes) and reads back one id (4 bytes); a prompt chunk is
//! one submit. Guards the figures that `tpsmeter run --json`, the engine bench and the
//! browser's `timings.perTokenCost` report.
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, model_bytes};
use tpsmeter_gpu::runtime::{GpuModel, Phase};
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::options::ModelOptions;

#[test]
fn a_decoded_token_costs_what_its_graph_records() {
    const TEST: &str = "a_decoded_token_costs_what_its_graph_records";
    let Some(bytes) = model_bytes(TEST) else {
        return;
    };
    let Some(ctx) = device(TEST) else {
        return;
    };
    let file = GgufFile::parse(&bytes).unwrap();
    let opts = ModelOptions {
        max_context: 64,
        ..ModelOptions::default()
    };
    let mut m = GpuModel::load(ctx, &file, &opts).unwrap();

    // A 5-token prompt runs as chunks of 4 and 1 tokens, then 8 decoded tokens.
    let before = m.cost_mark();
    let prompt = [1u32, 504, 3458, 282, 260];
    let mut next = m.step_blocking(&prompt, 0).unwrap();
    let decode_from = m.cost_mark();
    const DECODED: usize = 8;
    for pos in prompt.len()..prompt.len() + DECODED {
        next = m.step_blocking(&[next], pos).unwrap();
    }

    let d = m.cost_since(&decode_from).decode.unwrap();
    assert_eq!(d.steps, DECODED as u64);
    assert_eq!(d.dispatches, m.dispatches_per_token() as f64);
    assert_eq!((d.passes, d.submits), (1.0, 1.0), "one pass, one submit");
    // (position, base row) as two u32 and the token id: 12 bytes; the sampler's state is
    // not rewritten on a continuation.
    assert_eq!(d.bytes_written, 12.0);
    assert_eq!(d.bytes_read, 4.0);
    // Every dispatch has its own bind group; consecutive dispatches of one kernel (the
    // same pipeline) set it once, so there are at most as many pipeline changes as
    // dispatches (484 → 334 before the fused decode graph; 183 → 183 after it).
    assert_eq!(d.bind_group_changes, d.dispatches);
    assert!(
        d.pipeline_changes >= 1.0 && d.pipeline_changes <= d.dispatches,
        "pipeline changes {} of {} dispatches",
        d.pipeline_changes,
        d.dispatches
    );
    let ms = d.encode_ms.unwrap();
    assert!(ms > 0.0 && ms < 10_000.0, "encode time {ms} ms");

    // The prompt's chunks: one submit each, the last reading back the first token.
    let r = m.cost_since(&before);
    let p = r.prefill.unwrap();
    assert_eq!(p.steps, 2, "chunks of 4 and 1 tokens");
    assert_eq!(p.submits, 1.0);
    assert_eq!(p.bytes_read, 2.0, "4 bytes over 2 chunks");
    assert_eq!(
        p.bytes_written,
        (8.0 * 5.0 + 4.0 * 5.0 + 16.0 + 4.0 * 5.0) / 2.0
    );
    assert!(p.dispatches > 0.0 && p.encode_ms.unwrap() > 0.0);
    assert_eq!(r.decode.unwrap().steps, DECODED as u64);
    let totals = m.cost_totals(Phase::Prefill);
    assert_eq!(totals.tokens, prompt.len() as u64);

    // The totals since load agree with the model's running counters.
    let s = m.stats();
    let dt = m.cost_totals(Phase::Decode);
    assert_eq!(s.dispatches, dt.dispatches + totals.dispatches);
    assert_eq!(s.submits, dt.submits + totals.submits);
    assert_eq!(s.readback_bytes, dt.bytes_read + totals.bytes_read);
}
