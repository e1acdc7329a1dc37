//! Activations quantized to 8 bits in blocks of 32, as llama.cpp's CPU backend does before a
//! quantized dot product (`block_q8_1`): the weights' integer codes then multiply the
//! activations' in integer arithmetic, and one float multiply per block applies both scales.

/// Activation values per block.
pub const Q8_LEN: usize = 32;

/// 32 activations as `d * qs[i]`, with `s = d * Σ qs` for the formats whose weights carry a
/// minimum (Q4_1, Q5_1, the K-quants' mins).
#[derive(Clone, Copy, Debug, Default)]
pub struct Q8Block {
    pub d: f32,
    pub s: f32,
    pub qs: [i8; Q8_LEN],
}

/// One token's activations: as f32 (for float weights and the generic path) and quantized
/// (for the integer kernels), `x.len()` a multiple of [`Q8_LEN`] or no blocks at all.
#[derive(Clone, Debug, Default)]
pub struct Activations {
    pub x: Vec<f32>,
    pub q8: Vec<Q8Block>,
}

impl Activations {
    /// Fills from `x`, quantizing it when its length is whole blocks.
    pub fn set(&mut self, x: &[f32]) {
        self.x.clear();
        self.x.extend_from_slice(x);
        self.q8.clear();
        if x.len().is_multiple_of(Q8_LEN) {
            self.q8.extend(x.chunks_exact(Q8_LEN).map(quantize_block));
        }
    }
}

/// Quantizes 32 values to the nearest of 255 steps of `max |x| / 127`.
#[inline]
pub fn quantize_block(x: &[f32]) -> Q8Block {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
    let mut b = Q8Block {
        d,
        ..Default::default()
    };
    let mut sum = 0i32;
    for (q, &v) in b.qs.iter_mut().zip(x) {
        // |v * inv| ≤ 127 (+ rounding of the division): in range of i8 after clamping.
        *q = (v * inv).round().clamp(-127.0, 127.0) as i8;
        sum += i32::from(*q);
    }
    b.s = d * sum as f32;
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_round_trips_within_half_a_step() {
        let x: Vec<f32> = (0..32)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.173)
            .collect();
        let b = quantize_block(&x);
        for (q, v) in b.qs.iter().zip(&x) {
            assert!((f32::from(*q) * b.d - v).abs() <= b.d * 0.5 + 1e-6);
        }
        let sum: f32 = b.qs.iter().map(|&q| f32::from(q)).sum::<f32>() * b.d;
        assert!((b.s - sum).abs() < 1e-4);
        assert_eq!(quantize_block(&[0.0; 32]).qs, [0; 32]);
    }
}
