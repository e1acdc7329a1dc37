// Shared part of the fused dequantize kernels (matvec, matmul, embedding lookup): y = W x
// (or y += W x).
// W is row-major, each row a run of 32-element sub-blocks; the format file supplies
// `block_dot(row, s, xb)`, the dot product of sub-block `s` of `row` with the input slice.
// Inputs come through `x_at` (x_storage or x_uniform) and weights through `wq_at`, `ws_at`,
// `wa_at` (weights_buffer or weights_texture): the module picks one file of each pair.

struct Params {
    rows: u32,       // rows of W in this part (a tensor over the binding limit is split by rows)
    nsub: u32,       // 32-element sub-blocks per row
    row_offset: u32, // output index of this part's first row
    accumulate: u32, // 1: add into y (fuses the residual add)
    n_tokens: u32,   // matmul, embed: tokens (rows of x and y)
    y_stride: u32,   // matmul, embed: values per row of y
    scale_bits: u32, // embed only: output scale, f32 bits
    t0: u32,         // matmul_cpu: index in y of the dispatch's first token
    eps: f32,        // matvec with NORM: the RMSNorm's epsilon
    glu_up: u32,     // matvec with GLU: the row of W where the up half starts
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read_write> y: array<act>;

// 32 input values as 8 vec4s, plus their sum (formats with an offset term need it once per
// sub-block, shared by every row that reads the same slice).
struct XB {
    v: array<vec4<f32>, 8>,
    sum: f32,
    // NORM: the sum of squares of the raw input values (before the norm's weight).
    ss: f32,
}

// 32 dequantized weights of one sub-block (matmul decodes once, reuses for many tokens).
struct W32 {
    v: array<vec4<f32>, 8>,
}

fn load_x(s: u32) -> XB {
    return load_x_at(0u, s);
}

/// Sub-block `s` of the input vector that starts at vec4 `row` of `x` (the prefill matmul
/// holds several tokens' inputs one after another), and the sum of its 32 values.
fn load_x_at(row: u32, s: u32) -> XB {
    var xb: XB;
    var tot = vec4<f32>(0.0);
    let base = row + s * 8u;
    for (var i = 0u; i < 8u; i++) {
        let v = x_at(base + i);
        xb.v[i] = v;
        tot += v;
    }
    xb.sum = tot.x + tot.y + tot.z + tot.w;
    return xb;
}

// Low / high nibbles of the 4 bytes of w, as floats in byte order.
fn lo4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}
fn hi4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}
// The 4 bytes of w as unsigned / signed values.
fn u8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(255u));
}
fn i8x4(w: u32) -> vec4<f32> {
    let v = bitcast<vec4<i32>>(vec4<u32>(w << 24u, w << 16u, w << 8u, w)) >> vec4<u32>(24u);
    return vec4<f32>(v);
}

fn write_y(row: u32, v: f32) {
    let o = p.row_offset + row;
    var t = v;
    if (p.accumulate != 0u) {
        t += f32(y[o]);
    }
    y[o] = act(t);
}

// Matvec epilogues. A unit (an invocation on CPU-type adapters, a workgroup on GPUs) owns
// ROWS accumulators and writes OUTS outputs starting at o0: without a GLU, ROWS rows; with
// one, OUTS = ROWS / 2 gate rows and the up rows at the same offsets past `p.glu_up`, so
// that act(gate) * up needs no second pass over memory.

// The weight row accumulator r of the unit whose first output is o0 reads (clamped rather
// than branched: a tail unit recomputes the last row and writes nothing for it).
fn w_row(o0: u32, r: u32) -> u32 {
    if (GLU == 0u || r < OUTS) {
        return min(o0 + r, p.rows - 1u);
    }
    return p.glu_up + min(o0 + r - OUTS, p.rows - 1u);
}

fn glu_silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

fn glu_gelu(v: f32) -> f32 {
    // As elementwise.wgsl: tanh of a large argument overflows exp in some implementations.
    let t = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
    return 0.5 * v * (1.0 + tanh(t));
}

// Output o from its row's sum a (and, with a GLU, its up row's sum b).
fn emit(o: u32, a: f32, b: f32) {
    if (GLU == 0u) {
        write_y(o, a);
    } else if (GLU == 1u) {
        write_y(o, glu_silu(a) * b);
    } else {
        write_y(o, glu_gelu(a) * b);
    }
}
