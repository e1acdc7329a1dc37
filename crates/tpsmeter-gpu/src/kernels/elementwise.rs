//! Elementwise ops: residual add (in place), SwiGLU and GELU-tanh gated units.

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

/// Values per invocation: contiguous runs suit CPU-type adapters, and 4 costs GPUs nothing.
const PER_INVOCATION: u32 = 4;
const WORKGROUP: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    /// Gated units: 0 for gate and up in two tensors, else values per token of each, in
    /// one row of `2 * width` (gate first).
    width: u32,
    _pad: [u32; 2],
}

/// Which elementwise op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GluKind {
    /// `silu(gate) * up` (llama, qwen2).
    SwiGlu,
    /// `gelu_tanh(gate) * up` (gemma).
    GeluTanh,
}

fn defines(t: &Tensor) -> Defines {
    Defines {
        act: t.dtype,
        workgroup: WORKGROUP,
        rows: PER_INVOCATION,
        ..Defines::default()
    }
}

fn groups(ctx: &GpuContext, n: usize) -> [u32; 3] {
    ctx.grid((n as u32).div_ceil(PER_INVOCATION * WORKGROUP))
}

/// `dst[i] += src[i]` for `n` values.
#[derive(Debug, Clone)]
pub struct Add {
    dispatch: Dispatch,
}

impl Add {
    /// Prepares `dst += src` over the first `n` values.
    pub fn new(ctx: &GpuContext, src: &Tensor, dst: &Tensor, n: usize) -> Result<Self> {
        src.expect("add", "src", n, src.dtype)?;
        dst.expect("add", "dst", n, src.dtype)?;
        let p = Params {
            n: n as u32,
            width: 0,
            _pad: [0; 2],
        };
        Ok(Add {
            dispatch: ctx.prepare(
                ShaderId::Elementwise,
                "add",
                defines(src),
                &p,
                &[(1, &src.buffer), (2, &dst.buffer)],
                groups(ctx, n),
            ),
        })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}

/// `out[i] = act(gate[i]) * up[i]` for `n` values.
#[derive(Debug, Clone)]
pub struct Glu {
    dispatch: Dispatch,
}

impl Glu {
    /// Prepares the gated unit over the first `n` values.
    pub fn new(
        ctx: &GpuContext,
        kind: GluKind,
        gate: &Tensor,
        up: &Tensor,
        out: &Tensor,
        n: usize,
    ) -> Result<Self> {
        const OP: &str = "glu";
        gate.expect(OP, "gate", n, gate.dtype)?;
        up.expect(OP, "up", n, gate.dtype)?;
        out.expect(OP, "out", n, gate.dtype)?;
        Ok(Self::prepare(ctx, kind, gate, up, out, n, 0))
    }

    /// The gated unit over `n_tokens` rows of `gate_up`, each `width` gate values then
    /// `width` up values (a fused gate/up matmul's output), into `[n_tokens, width]`.
    pub fn packed(
        ctx: &GpuContext,
        kind: GluKind,
        gate_up: &Tensor,
        out: &Tensor,
        n_tokens: usize,
        width: usize,
    ) -> Result<Self> {
        const OP: &str = "glu";
        let n = n_tokens * width;
        gate_up.expect(OP, "gate_up", 2 * n, gate_up.dtype)?;
        out.expect(OP, "out", n, gate_up.dtype)?;
        Ok(Self::prepare(ctx, kind, gate_up, gate_up, out, n, width))
    }

    fn prepare(
        ctx: &GpuContext,
        kind: GluKind,
        gate: &Tensor,
        up: &Tensor,
        out: &Tensor,
        n: usize,
        width: usize,
    ) -> Self {
        let entry = match kind {
            GluKind::SwiGlu => "swiglu",
            GluKind::GeluTanh => "gelu_glu",
        };
        let p = Params {
            n: n as u32,
            width: width as u32,
            _pad: [0; 2],
        };
        Glu {
            dispatch: ctx.prepare(
                ShaderId::Elementwise,
                entry,
                defines(gate),
                &p,
                &[(1, &gate.buffer), (3, &up.buffer), (4, &out.buffer)],
                groups(ctx, n),
            ),
        }
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
