// Quantized embedding lookup: out[t, :] = scale * dequantize(row tokens[t]) for the rows
// held by this weight part (a table over the binding limit is split by rows; each part's
// dispatch skips tokens it does not hold). One invocation per 32-element sub-block.

struct Params {
    n_tokens: u32,
    nsub: u32,      // 32-element sub-blocks per row
    row_start: u32, // first row held by this part
    rows: u32,      // rows held by this part
    scale: f32,     // 1, or sqrt(dim) for gemma
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> ws: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<act>;

fn lo4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}
fn hi4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}
fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w << 24u, w << 16u, w << 8u, w)) >> vec4<u32>(24u));
}

// Returns (local block index, output base) or a block index of 0xffffffff when this
// invocation has nothing to do.
fn locate(gid: vec3<u32>) -> vec2<u32> {
    let s = gid.x;
    let t = gid.y;
    if (s >= p.nsub || t >= p.n_tokens) {
        return vec2<u32>(0xffffffffu, 0u);
    }
    let tok = tokens[t];
    if (tok < p.row_start || tok >= p.row_start + p.rows) {
        return vec2<u32>(0xffffffffu, 0u);
    }
    return vec2<u32>((tok - p.row_start) * p.nsub + s, (t * p.nsub + s) * 32u);
}

fn store4(o: u32, v: vec4<f32>) {
    out[o] = act(v.x * p.scale);
    out[o + 1u] = act(v.y * p.scale);
    out[o + 2u] = act(v.z * p.scale);
    out[o + 3u] = act(v.w * p.scale);
}

@compute @workgroup_size(WG)
fn q8_0(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = locate(gid);
    if (l.x == 0xffffffffu) {
        return;
    }
    let d = unpack2x16float(ws[l.x >> 1u])[l.x & 1u];
    for (var h = 0u; h < 2u; h++) {
        let q = wq[2u * l.x + h];
        for (var k = 0u; k < 4u; k++) {
            store4(l.y + 16u * h + 4u * k, d * i8x4(q[k]));
        }
    }
}

@compute @workgroup_size(WG)
fn q4_1(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = locate(gid);
    if (l.x == 0xffffffffu) {
        return;
    }
    let dm = unpack2x16float(ws[l.x]);
    let q = wq[l.x];
    for (var k = 0u; k < 4u; k++) {
        store4(l.y + 4u * k, dm.x * lo4(q[k]) + dm.y);
        store4(l.y + 16u + 4u * k, dm.x * hi4(q[k]) + dm.y);
    }
}

@compute @workgroup_size(WG)
fn q4_0(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = locate(gid);
    if (l.x == 0xffffffffu) {
        return;
    }
    let d = unpack2x16float(ws[l.x >> 1u])[l.x & 1u];
    let q = wq[l.x];
    for (var k = 0u; k < 4u; k++) {
        store4(l.y + 4u * k, d * (lo4(q[k]) - 8.0));
        store4(l.y + 16u + 4u * k, d * (hi4(q[k]) - 8.0));
    }
}

@compute @workgroup_size(WG)
fn f16w(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = locate(gid);
    if (l.x == 0xffffffffu) {
        return;
    }
    for (var i = 0u; i < 4u; i++) {
        let q = wq[4u * l.x + i];
        store4(l.y + 8u * i, vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)));
        store4(l.y + 8u * i + 4u, vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
    }
}

@compute @workgroup_size(WG)
fn f32w(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = locate(gid);
    if (l.x == 0xffffffffu) {
        return;
    }
    for (var i = 0u; i < 8u; i++) {
        store4(l.y + 4u * i, bitcast<vec4<f32>>(wq[8u * l.x + i]));
    }
}
