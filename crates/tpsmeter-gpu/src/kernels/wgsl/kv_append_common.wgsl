// Shared by the KV-cache appends: n_tokens rows of kv_dim values go to rows pos[0].. of a
// static cache of max_ctx rows; rows past max_ctx are dropped (the generation loop refuses to
// run past the context limit before it gets here).

struct Params {
    n_tokens: u32,
    kv_dim: u32,
    max_ctx: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
