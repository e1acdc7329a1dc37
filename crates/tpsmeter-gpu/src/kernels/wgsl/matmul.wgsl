// Matrix-matrix product for prefill: y[t, r] (+)= sum_c W[r, c] x[t, c], W quantized.
// A workgroup computes a tile of WG rows x ROWS tokens. Per 32-wide step of the inner
// dimension the workgroup stages the tokens' inputs in workgroup memory (one vec4 per
// invocation and pass), each invocation dequantizes its row's sub-block once and reuses it
// for every token of the tile.

var<workgroup> xs: array<vec4<f32>, ROWS * 8u>;

// Each step's global loads (the next sub-block's weights and the tokens' inputs) are issued
// before the current step's products, so their latency overlaps the arithmetic and the
// barriers: the loop is latency-bound on real GPUs (an H200 took ~7 us per 32-wide step,
// the same for 192 as for 1536 rows, so the machine was far from full).

// The input vec4 this invocation stages in step s (invocations past ROWS * 8 stage none).
fn x_stage(i: u32, t0: u32, s: u32) -> vec4<f32> {
    let t = min(t0 + i / 8u, p.n_tokens - 1u);
    return x_at((t * p.nsub + s) * 8u + i % 8u);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = wid.x * WG + lid;
    let t0 = wid.y * ROWS;
    let r = min(row, p.rows - 1u);
    var acc: array<f32, ROWS>;
    var w = decode(r, 0u);
    // WG >= ROWS * 8 in every use (64 invocations, 8 tokens): one staged vec4 each at most.
    let stages = lid < ROWS * 8u;
    var xv = vec4<f32>(0.0);
    if (stages) {
        xv = x_stage(lid, t0, 0u);
    }
    for (var s = 0u; s < p.nsub; s++) {
        if (stages) {
            xs[lid] = xv;
        }
        workgroupBarrier();
        let next = min(s + 1u, p.nsub - 1u);
        let wn = decode(r, next);
        if (stages) {
            xv = x_stage(lid, t0, next);
        }
        for (var t = 0u; t < ROWS; t++) {
            var d = 0.0;
            for (var k = 0u; k < 8u; k++) {
                d += dot(w.v[k], xs[t * 8u + k]);
            }
            acc[t] += d;
        }
        w = wn;
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
