// Quantized embedding lookup: y[t, :] = scale * dequantize(row tokens[t]) for any weight
// format, through the format file's `decode` (the one the prefill matmul uses). A table over
// the binding limit is split by rows; each part's dispatch skips tokens it does not hold.
// One invocation per 32-element sub-block of one token's row.

@group(0) @binding(6) var<storage, read> tokens: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    let t = gid.y;
    if (s >= p.nsub || t >= p.n_tokens) {
        return;
    }
    let tok = tokens[t];
    if (tok < p.row_offset || tok >= p.row_offset + p.rows) {
        return;
    }
    let w = decode(tok - p.row_offset, s);
    let scale = bitcast<f32>(p.scale_bits);
    let o = t * p.y_stride + s * 32u;
    for (var i = 0u; i < 8u; i++) {
        let v = w.v[i] * scale;
        y[o + 4u * i] = act(v.x);
        y[o + 4u * i + 1u] = act(v.y);
        y[o + 4u * i + 2u] = act(v.z);
        y[o + 4u * i + 3u] = act(v.w);
    }
}
