// Shared by the attention kernels: parameters and per query token a (position, cache row
// base) pair (see rope.wgsl). Token t sits at position pos[2t] of its sequence, whose keys
// occupy cache rows pos[2t + 1] .. + max_ctx, and sees keys 0 ..= pos[2t] (the last `window`
// of them when window > 0). A prefill chunk's tokens share one base; a batched decode step's
// tokens each have their own.

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
    let end = min(pos[2u * t] + 1u, p.max_ctx);
    var start = 0u;
    if (p.window > 0u && end > p.window) {
        start = end - p.window;
    }
    return vec2<u32>(start, end);
}

// The cache row of token t's sequence's position 0.
fn base_row(t: u32) -> u32 {
    return pos[2u * t + 1u];
}
