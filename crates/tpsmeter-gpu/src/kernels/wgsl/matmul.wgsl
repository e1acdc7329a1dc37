// Matrix-matrix product for prefill: y[t, r] (+)= sum_c W[r, c] x[t, c], W quantized.
// A workgroup computes a tile of WG rows x ROWS tokens. Per 32-wide step of the inner
// dimension the workgroup stages the tokens' inputs in workgroup memory (one vec4 per
// invocation and pass), each invocation dequantizes its row's sub-block once and reuses it
// for every token of the tile.

var<workgroup> xs: array<vec4<f32>, ROWS * 8u>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = wid.x * WG + lid;
    let t0 = wid.y * ROWS;
    let r = min(row, p.rows - 1u);
    var acc: array<f32, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        for (var i = lid; i < ROWS * 8u; i += WG) {
            let t = min(t0 + i / 8u, p.n_tokens - 1u);
            xs[i] = x_at((t * p.nsub + s) * 8u + i % 8u);
        }
        workgroupBarrier();
        let w = decode(r, s);
        for (var t = 0u; t < ROWS; t++) {
            var d = 0.0;
            for (var k = 0u; k < 8u; k++) {
                d += dot(w.v[k], xs[t * 8u + k]);
            }
            acc[t] += d;
        }
        workgroupBarrier();
    }
    if (row < p.rows) {
        for (var t = 0u; t < ROWS; t++) {
            if (t0 + t < p.n_tokens) {
                let o = (t0 + t) * p.y_stride + p.row_offset + row;
                var v = acc[t];
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}
