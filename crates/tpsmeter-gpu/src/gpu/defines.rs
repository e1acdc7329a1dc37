//! The typed set of shader defines that specialise a WGSL kernel.
//!
//! WGSL has no preprocessor. Instead of pasting strings into shaders ad hoc, every kernel
//! module starts with a prelude rendered from this one struct: `enable` directives, the
//! activation type alias and a few `const`s. Pipelines are cached by (shader, entry point,
//! defines), so two kernels with equal defines share one compiled module.

use std::fmt::Write as _;

/// Storage type of activations and the KV cache. Arithmetic is f32 inside kernels (but for the
/// tiled matmul's products, see [`Defines::arith`]);
/// f16 halves the bytes moved where the adapter has `shader-f16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DType {
    /// 32-bit float: available on every adapter (SwiftShader has no `shader-f16`).
    #[default]
    F32,
    /// 16-bit float: needs `wgpu::Features::SHADER_F16`.
    F16,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
        }
    }

    fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
        }
    }
}

/// log2 of the width of every weight texture: 4096 texels fits WebGPU's default
/// `maxTextureDimension2D` (8192) with room, and is wide enough that a 128 MiB tensor needs
/// only 2048 rows of 16-byte texels.
pub const TEX_SHIFT: u32 = 12;

/// Compile-time parameters of one kernel instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Defines {
    /// Storage type of activations (`act` in WGSL).
    pub act: DType,
    /// Elements per quantization block or tile edge, kernel-specific (`BLOCK`).
    pub block: u32,
    /// Invocations per workgroup (`WG`).
    pub workgroup: u32,
    /// Rows handled per invocation (CPU-type variants) or per workgroup (GPU variants) (`ROWS`).
    pub rows: u32,
    /// Whether the kernel may use subgroup operations (native only; needs `Features::SUBGROUP`).
    pub subgroups: bool,
    /// log2 of the texel width of weight textures (`TEX_SHIFT`, `TEX_W`); unused by kernels
    /// that read weights from storage buffers.
    pub tex_shift: u32,
    /// Length in vec4s of an input vector bound as a uniform array (`X_VEC4S`); WGSL needs a
    /// fixed size there. Unused when the input is a storage buffer.
    pub x_vec4s: u32,
    /// Tokens per invocation of the CPU-type matmul and the tiled matmul (`TOK`).
    pub tokens: u32,
    /// Type of the tiled matmul's workgroup tiles and per-sub-block products (`mt` in WGSL):
    /// f16 where the adapter has `shader-f16` (half the workgroup memory and loads, twice
    /// the arithmetic rate on many GPUs), f32 everywhere else. Sums across sub-blocks stay
    /// f32 either way.
    pub arith: DType,
    /// Matvec: an RMSNorm of the input folded into the kernel (`NORM`).
    pub norm: bool,
    /// Matvec: a gated unit in the epilogue, 0 none, 1 SwiGLU, 2 GELU-tanh (`GLU`); each
    /// output then pairs a gate row with its up row, so `OUTS` is `ROWS / 2`.
    pub glu: u32,
}

impl Default for Defines {
    fn default() -> Self {
        Defines {
            act: DType::F32,
            block: 32,
            workgroup: 64,
            rows: 1,
            subgroups: false,
            tex_shift: TEX_SHIFT,
            x_vec4s: 1,
            tokens: 1,
            arith: DType::F32,
            norm: false,
            glu: 0,
        }
    }
}

impl Defines {
    /// Same defines with another activation type.
    pub fn with_act(mut self, act: DType) -> Self {
        self.act = act;
        self
    }

    /// The WGSL prelude for these defines: directives first (WGSL requires them before any
    /// declaration), then the `act` alias and constants.
    pub fn prelude(&self) -> String {
        let mut s = String::with_capacity(256);
        if self.act == DType::F16 || self.arith == DType::F16 {
            s.push_str("enable f16;\n");
        }
        // No `enable subgroups;`: naga 30 rejects the directive and instead allows subgroup
        // builtins whenever the device has `Features::SUBGROUP` (native only; wgpu does not
        // expose subgroups on the web, so the web never gets a subgroup variant).
        // Writing into a String cannot fail.
        let _ = writeln!(s, "alias act = {};", self.act.wgsl());
        let _ = writeln!(s, "alias mt = {};", self.arith.wgsl());
        let _ = writeln!(s, "const BLOCK: u32 = {}u;", self.block);
        let _ = writeln!(s, "const WG: u32 = {}u;", self.workgroup);
        let _ = writeln!(s, "const ROWS: u32 = {}u;", self.rows);
        let _ = writeln!(s, "const TEX_SHIFT: u32 = {}u;", self.tex_shift);
        let _ = writeln!(s, "const TEX_W: u32 = {}u;", 1u32 << self.tex_shift);
        let _ = writeln!(s, "const X_VEC4S: u32 = {}u;", self.x_vec4s.max(1));
        let _ = writeln!(s, "const TOK: u32 = {}u;", self.tokens.max(1));
        let _ = writeln!(s, "const NORM: bool = {};", self.norm);
        let _ = writeln!(s, "const GLU: u32 = {}u;", self.glu);
        let outs = if self.glu != 0 {
            self.rows / 2
        } else {
            self.rows
        };
        let _ = writeln!(s, "const OUTS: u32 = {}u;", outs.max(1));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelude_puts_directives_first_and_renders_every_define() {
        let d = Defines {
            act: DType::F16,
            block: 256,
            workgroup: 16,
            rows: 4,
            subgroups: true,
            tex_shift: 12,
            x_vec4s: 144,
            tokens: 8,
            arith: DType::F32,
            norm: true,
            glu: 1,
        };
        let p = d.prelude();
        assert!(p.starts_with("enable f16;\n"), "{p}");
        for needle in [
            "alias act = f16;",
            "alias mt = f32;",
            "BLOCK: u32 = 256u",
            "WG: u32 = 16u",
            "ROWS: u32 = 4u",
            "TEX_W: u32 = 4096u",
            "X_VEC4S: u32 = 144u",
            "TOK: u32 = 8u",
            "NORM: bool = true",
            "GLU: u32 = 1u",
            "OUTS: u32 = 2u",
        ] {
            assert!(p.contains(needle), "missing {needle} in {p}");
        }
        assert!(!Defines::default().prelude().contains("enable"));
        let arith_only = Defines {
            arith: DType::F16,
            ..Defines::default()
        };
        assert!(arith_only.prelude().starts_with("enable f16;\n"));
    }
}
