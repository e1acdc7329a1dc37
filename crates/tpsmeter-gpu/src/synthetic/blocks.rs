//! Seeded random weights in GGML's block formats, with a chosen spread: the scales of each
//! block are set so the dequantized values have about the standard deviation asked for.

use half::f16;
use tpsmeter_model::ModelError;

use crate::error::{GpuError, Result};
use tpsmeter_model::quant::GgmlType;

/// xorshift64*: fast, seeded, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Zero is xorshift's fixed point.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// `n` values uniform in [-std·√3, std·√3) (standard deviation `std`).
    pub fn values(&mut self, n: u64, std: f32) -> Vec<f32> {
        let half_width = std * 3f32.sqrt();
        (0..n)
            .map(|_| (self.unit() * 2.0 - 1.0) * half_width)
            .collect()
    }

    /// Fills `out` with random bytes.
    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

/// `n` weights of type `ty` (n a whole number of blocks) with values of spread about `std`.
pub fn random(rng: &mut Rng, ty: GgmlType, n: u64, std: f32) -> Result<Vec<u8>> {
    let len = usize::try_from(n)
        .ok()
        .map(|n| ty.row_bytes(n))
        .transpose()?
        .ok_or(GpuError::from(ModelError::LimitExceeded {
            what: "synthetic tensor elements".into(),
            value: n,
            limit: usize::MAX as u64,
        }))?;
    let mut out = vec![0u8; len];
    rng.fill(&mut out);
    let block = ty.block_bytes();
    let scale = |rng: &mut Rng, per_unit: f32| {
        // Scales vary by ±25 % from block to block, as real ones do.
        let d = std / per_unit * (0.75 + 0.5 * rng.unit());
        f16::from_f32(d).to_le_bytes()
    };
    match ty {
        GgmlType::F32 => {
            for (c, v) in out.chunks_exact_mut(4).zip(rng.values(n, std)) {
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        GgmlType::F16 => {
            for (c, v) in out.chunks_exact_mut(2).zip(rng.values(n, std)) {
                c.copy_from_slice(&f16::from_f32(v).to_le_bytes());
            }
        }
        // d·(q − 8), q uniform in 0..16: standard deviation 4.6·d.
        GgmlType::Q4_0 => {
            for b in out.chunks_exact_mut(block) {
                b[..2].copy_from_slice(&scale(rng, 4.6));
            }
        }
        // d·q + m with m = −7.5·d: centred, standard deviation 4.6·d.
        GgmlType::Q4_1 => {
            for b in out.chunks_exact_mut(block) {
                let d = scale(rng, 4.6);
                let m = -7.5 * f16::from_le_bytes(d).to_f32();
                b[..2].copy_from_slice(&d);
                b[2..4].copy_from_slice(&f16::from_f32(m).to_le_bytes());
            }
        }
        // d·q, q uniform in −128..128: standard deviation 73.9·d.
        GgmlType::Q8_0 => {
            for b in out.chunks_exact_mut(block) {
                b[..2].copy_from_slice(&scale(rng, 73.9));
            }
        }
        // d·s·(q − 32), q uniform in 0..64 (std 18.5), sub-block scales s in 8..16.
        GgmlType::Q6_K => {
            for b in out.chunks_exact_mut(block) {
                for s in &mut b[192..208] {
                    *s = 8 + (*s % 8);
                }
                let d = scale(rng, 18.5 * 11.5);
                b[208..210].copy_from_slice(&d);
            }
        }
        other => {
            return Err(GpuError::from(ModelError::UnsupportedGgmlType {
                ty: other,
            }));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every type's values come out with about the spread asked for.
    #[test]
    fn blocks_dequantize_to_the_spread_asked_for() {
        for ty in [
            GgmlType::F16,
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q8_0,
            GgmlType::Q6_K,
        ] {
            let n = 256 * 64;
            let bytes = random(&mut Rng::new(3), ty, n, 0.05).unwrap();
            let mut v = vec![0f32; n as usize];
            tpsmeter_model::quant::dequantize(ty, &bytes, &mut v).unwrap();
            let mean = v.iter().sum::<f32>() / v.len() as f32;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / v.len() as f32;
            let std = var.sqrt();
            assert!(mean.abs() < 0.01, "{ty:?}: mean {mean}");
            assert!((0.04..0.06).contains(&std), "{ty:?}: std {std}");
        }
    }
}
