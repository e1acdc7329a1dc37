// Register-tiled matrix-matrix product for prefill on real GPUs:
// y[t, r] (+)= sum_c W[r, c] x[t, c], W quantized.
//
// A workgroup of 64 invocations computes a tile of BM = 16 * ROWS rows by BN = 4 * TOK
// tokens. Per 32-wide step of the inner dimension (one sub-block of every format) it stages
// BM dequantized weight sub-blocks and BN input slices in workgroup memory, as `mt` (f16
// where the adapter has shader-f16, else f32); each invocation then computes a ROWS x TOK
// register tile from them: per vec4 of the step ROWS + TOK workgroup loads feed
// ROWS * TOK dot products (the old one-row kernel did 1 + TOK loads for TOK). Invocation
// (i, j) owns rows i, i + 16, ... and tokens j, j + 4, ...: the 16 lanes of a row group read
// 16 different weight rows, whose tile rows are 9 vec4s apart (8 + 1 of padding) so that
// they fall in different banks.
//
// Products and the sum over one sub-block are in `mt`; sums over sub-blocks are f32, so an
// f16 tile loses ~2^-11 relative per sub-block and nothing grows with the row length.

const BM: u32 = 16u * ROWS;
const BN: u32 = 4u * TOK;
// vec4s per staged sub-block row: 8 of values, 1 of padding against bank conflicts.
const PITCH: u32 = 9u;

var<workgroup> wt: array<vec4<mt>, BM * PITCH>;
var<workgroup> xt: array<vec4<mt>, BN * PITCH>;

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let r0 = wid.x * BM;
    let t0 = wid.y * BN;
    let li = lid % 16u;
    let lj = lid / 16u;
    var acc: array<f32, ROWS * TOK>;
    for (var s = 0u; s < p.nsub; s++) {
        // Stage: each invocation dequantizes BM / 64 rows' sub-block s (rows past the end
        // repeat the last row; their results are never written), then the tokens' inputs,
        // one vec4 per invocation and pass, consecutive invocations on consecutive vec4s.
        for (var i = lid; i < BM; i += 64u) {
            let w = decode(min(r0 + i, p.rows - 1u), s);
            for (var k = 0u; k < 8u; k++) {
                wt[i * PITCH + k] = vec4<mt>(w.v[k]);
            }
        }
        for (var i = lid; i < BN * 8u; i += 64u) {
            let t = min(t0 + i / 8u, p.n_tokens - 1u);
            xt[(i / 8u) * PITCH + i % 8u] = vec4<mt>(x_at((t * p.nsub + s) * 8u + i % 8u));
        }
        workgroupBarrier();
        // Zeroed by hand each step: a `var` declared in a loop body should start at zero
        // on every iteration, but on SwiftShader (Chromium) it kept the last step's sums.
        var part: array<mt, ROWS * TOK>;
        for (var i = 0u; i < ROWS * TOK; i++) {
            part[i] = mt(0.0);
        }
        for (var k = 0u; k < 8u; k++) {
            var wv: array<vec4<mt>, ROWS>;
            for (var a = 0u; a < ROWS; a++) {
                wv[a] = wt[(li + 16u * a) * PITCH + k];
            }
            for (var b = 0u; b < TOK; b++) {
                let xv = xt[(lj + 4u * b) * PITCH + k];
                for (var a = 0u; a < ROWS; a++) {
                    part[a * TOK + b] += dot(wv[a], xv);
                }
            }
        }
        for (var i = 0u; i < ROWS * TOK; i++) {
            acc[i] += f32(part[i]);
        }
        workgroupBarrier();
    }
    for (var a = 0u; a < ROWS; a++) {
        let row = r0 + li + 16u * a;
        if (row >= p.rows) {
            continue;
        }
        for (var b = 0u; b < TOK; b++) {
            let t = t0 + lj + 4u * b;
            if (t < p.n_tokens) {
                let o = t * p.y_stride + p.row_offset + row;
                var v = acc[a * TOK + b];
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}
