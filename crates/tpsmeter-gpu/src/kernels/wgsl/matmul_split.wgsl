// Matrix-matrix product on GPUs with the inner dimension spread over the workgroup, as the
// decode matvecs do: y[t, r] (+)= sum_c W[r, c] x[t, c], W quantized.
//
// A workgroup owns ROWS rows by TOK tokens. Invocation i takes the 32-wide sub-blocks i,
// i + WG, ... of the inner dimension: per sub-block it loads each token's input slice once
// and takes its dot product with the ROWS rows' sub-blocks (`block_dot`, which unpacks the
// weights where it reads them); a tree reduction in workgroup memory then sums the
// invocations' ROWS x TOK partial sums. No invocation walks the inner dimension alone: the
// row kernel (`matmul.wgsl`) does, 18-48 dependent steps per workgroup at SmolLM2's shapes,
// which made a 64-token chunk's products cost ~19 ms on an H200 and a batched decode step
// of 2 tokens as much as one of 64.

var<workgroup> red: array<f32, WG * ROWS * TOK>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let r0 = wid.x * ROWS;
    let t0 = wid.y * TOK;
    var acc: array<f32, ROWS * TOK>;
    for (var s = lid; s < p.nsub; s += WG) {
        for (var t = 0u; t < TOK; t++) {
            // Tokens past the end repeat the last one (a valid slice); never written.
            let tok = min(t0 + t, p.n_tokens - 1u);
            let xb = load_x_at(tok * p.nsub * 8u, s);
            for (var r = 0u; r < ROWS; r++) {
                acc[r * TOK + t] += block_dot(min(r0 + r, p.rows - 1u), s, xb);
            }
        }
    }
    for (var i = 0u; i < ROWS * TOK; i++) {
        red[i * WG + lid] = acc[i];
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (lid < st) {
            for (var i = 0u; i < ROWS * TOK; i++) {
                red[i * WG + lid] += red[i * WG + lid + st];
            }
        }
        workgroupBarrier();
    }
    // One output per invocation (ROWS * TOK <= WG).
    if (lid < ROWS * TOK) {
        let row = r0 + lid / TOK;
        let tok = t0 + lid % TOK;
        if (row < p.rows && tok < p.n_tokens) {
            let o = tok * p.y_stride + p.row_offset + row;
            var v = red[lid * WG];
            if (p.accumulate != 0u) {
                v += f32(y[o]);
            }
            y[o] = act(v);
        }
    }
}
