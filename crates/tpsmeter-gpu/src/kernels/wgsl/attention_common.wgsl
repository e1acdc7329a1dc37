// Shared by the attention kernels: parameters and the position of the batch's first token.
// Token t of a batch sits at position pos[0] + t and sees keys 0 ..= pos[0] + t (the last
// `window` of them when window > 0).

struct Params {
    n_tokens: u32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_ctx: u32,
    window: u32, // 0: no sliding window
    scale: f32,
    // Keys per chunk of the split decode kernels (attention_cpu.wgsl `split` / `combine`).
    chunk: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;

// The keys query token t of the batch sees: [start, end) (causal, optional sliding window).
fn visible(t: u32) -> vec2<u32> {
    let end = min(pos[0] + t + 1u, p.max_ctx);
    var start = 0u;
    if (p.window > 0u && end > p.window) {
        start = end - p.window;
    }
    return vec2<u32>(start, end);
}
