// Matvec input without a folded norm: the plain sub-block loads of matvec_common.

fn load_xn(s: u32) -> XB {
    return load_x(s);
}

fn norm_lane(i: u32, v: vec4<f32>) -> vec4<f32> {
    return v;
}

fn norm_scale(ss: f32) -> f32 {
    return 1.0;
}
