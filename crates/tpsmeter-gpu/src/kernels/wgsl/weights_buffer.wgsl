// Weights in storage buffers (real GPUs): the format files read them through these accessors.
// An entry point's layout holds only the bindings its format touches.
@group(0) @binding(2) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> ws: array<u32>;
@group(0) @binding(5) var<storage, read> wa: array<u32>;

fn wq_at(i: u32) -> vec4<u32> {
    return wq[i];
}
fn ws_at(i: u32) -> u32 {
    return ws[i];
}
fn wa_at(i: u32) -> u32 {
    return wa[i];
}
