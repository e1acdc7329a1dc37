// Shared by the KV-cache appends: row t of n_tokens rows of kv_dim values goes to cache row
// pos[2t + 1] + pos[2t] (its sequence's first row plus its position: see rope.wgsl for the
// pairs). A sequence holds max_ctx positions; rows at or past that are dropped (the
// generation loop refuses to run past the context limit before it gets here).

struct Params {
    n_tokens: u32,
    kv_dim: u32,
    max_ctx: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;

// The cache row of token t, or 0xffffffff when its position is past the sequence's rows.
fn cache_row(t: u32) -> u32 {
    let at = pos[2u * t];
    if (at >= p.max_ctx) {
        return 0xffffffffu;
    }
    return pos[2u * t + 1u] + at;
}
