//! Twin of [`crate::kernels::rope_kv`], built from the twins of the ops it fuses.

use crate::kernels::RopeKvConfig;

/// Twin of `rope_kv.wgsl`: for token `t` at `positions[t] = (position, base)`, its row of
/// `qkv` gets `biases`, q's and k's heads their RMSNorm (`norms`), q and k are rotated; q goes
/// to `q_out[t]`, k and v to row `base + position` of `k_cache` / `v_cache` (rows at or past
/// `max_ctx` are dropped). `neox` selects the half-split rotation.
#[allow(clippy::too_many_arguments)] // The kernel's bindings, one argument each.
pub fn rope_kv(
    cfg: &RopeKvConfig,
    neox: bool,
    qkv: &[f32],
    positions: &[(usize, usize)],
    factors: Option<&[f32]>,
    biases: Option<&[f32]>,
    norms: Option<(&[f32], &[f32])>,
    q_out: &mut [f32],
    k_cache: &mut [f32],
    v_cache: &mut [f32],
) {
    let (hd, w) = (cfg.head_dim, cfg.width());
    let (qd, kd) = (cfg.n_heads * hd, cfg.n_kv_heads * hd);
    for (t, &(position, base)) in positions.iter().enumerate() {
        let mut row: Vec<f32> = qkv[t * w..(t + 1) * w].to_vec();
        if let Some(b) = biases {
            super::add(b, &mut row);
        }
        let (q, rest) = row.split_at_mut(qd);
        let (k, v) = rest.split_at_mut(kd);
        let mut q = q.to_vec();
        let mut k = k.to_vec();
        if let Some((qn, kn)) = norms {
            q = super::rms_norm(&q, qn, cfg.n_heads, hd, cfg.eps);
            k = super::rms_norm(&k, kn, cfg.n_kv_heads, hd, cfg.eps);
        }
        for (x, heads) in [(&mut q, cfg.n_heads), (&mut k, cfg.n_kv_heads)] {
            super::rope(
                x,
                1,
                heads,
                hd,
                cfg.rope_dim,
                neox,
                cfg.freq_base,
                cfg.freq_scale,
                position as u32,
                factors,
            );
        }
        q_out[t * qd..(t + 1) * qd].copy_from_slice(&q);
        if position < cfg.max_ctx {
            let r = base + position;
            k_cache[r * kd..(r + 1) * kd].copy_from_slice(&k);
            v_cache[r * kd..(r + 1) * kd].copy_from_slice(v);
        }
    }
}
