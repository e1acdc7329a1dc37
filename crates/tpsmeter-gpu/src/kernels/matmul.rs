//! Dequantize + matrix-matrix product for prefill: `y[t] (+)= W x[t]` for a batch of tokens,
//! dequantizing each weight sub-block once per tile of tokens (instead of once per token, as
//! repeated matvecs would).
//!
//! Real GPUs get [`GpuMatMul::Split`] (`matmul_split.wgsl`): a workgroup per 4 rows by up
//! to 8 tokens, the inner dimension spread over its 64 invocations (32-wide sub-blocks
//! dealt out in turn, as the decode matvecs do) and summed by a tree reduction, so no
//! invocation walks the inner dimension alone. On an H200 (`-- matmul`, 64 tokens, two
//! runs): 0.100/0.084 ms against the row kernel's 0.122/0.130 at 576x576, 0.093/0.094
//! against 0.305/0.304 at 576x1536, 0.046/0.049 against 0.138/0.121 at 192x576, but
//! 0.152/0.164 against 0.120/0.129 at 1536x576, where its 384 x 8 workgroups load each
//! token's inputs 384 times; the engine's 64-token chunk went from 19.1 to 15.7 ms of
//! products, and a batched decode step of 8 sequences from 21 to 6.7 ms.
//! [`GpuMatMul::Rows`] (`matmul.wgsl`) is one
//! row per invocation, 8 tokens per workgroup, the tokens' inputs staged in workgroup
//! memory per 32-wide step, the next step's loads issued before the current step's
//! products: each workgroup walks 18-48 dependent steps at SmolLM2's shapes, so its time
//! does not shrink with the tokens (a batched decode step of 2 cost as much as a 64-token
//! chunk on an H200). [`GpuMatMul::Tiled`]
//! (`matmul_tiled.wgsl`) stages 64 dequantized weight rows and up to 32 tokens' inputs per
//! step and gives each invocation a 4-row by up-to-8-token register tile, in f16 where the
//! adapter has `shader-f16`: 1.9-2.3x faster than `Rows` on lavapipe with the Gpu profile
//! forced, but 3.8x slower on an H200 (0.49 against 0.13 ms for a 64-token 576x576 product,
//! `cargo bench -p tpsmeter-gpu --bench kernels -- matmul`, medians of 5): its 64x32 tiles
//! make 18 workgroups there, and each walks the inner dimension alone. It stays, tested, for
//! the benchmark.
//! No subgroup operations: a register-tiled product shares its operands through workgroup
//! memory, and a subgroup shuffle in its place would need a subgroup size fixed at compile
//! time, which neither Vulkan nor WebGPU promises. CPU-type adapters, where
//! a workgroup barrier costs 5-100x, get `matmul_cpu.wgsl`: several rows per invocation, no
//! barriers, the format's `block_dot` applied to up to 8 tokens per dispatch whose inputs sit
//! in a uniform binding (entry `main8` for groups of 5-8, `main` for 3-4, `main2` for 1-2:
//! a batched decode step of two sequences cost as much as one of four with `main`). Eight slots
//! halve the passes over the weights: at 4 rows per invocation the 64-token prefill's
//! matmuls went from ~940 to ~700 ms on lavapipe, unchanged on SwiftShader (then 16 rows per
//! invocation: see `CPU_ROWS`). Measured and rejected: a decode-once-per-8-
//! tokens version (2.3x slower on SwiftShader, which keeps the 32 decoded floats in memory,
//! 1.5x on lavapipe); a fused four-token `block_dot4` taking four inputs by value (no gain on
//! lavapipe, whose LLVM already shares the unpack between the four inlined calls; 3.6x
//! slower on SwiftShader, which copies the arguments through memory); 16 slots (slower on
//! lavapipe: the accumulators spill).
//!
//! Whole groups of 8 go several to a dispatch (`main_groups`, workgroup z = group), as many
//! as the 64 KiB uniform range holds: 3 for SmolLM2's 576-wide inputs, 1 for its 1536-wide
//! FFN input. lavapipe runs each dispatch to completion at ~60 us of fixed cost, and a
//! 192-row matrix split into 8 dispatches of 2 workgroups kept one of its 2 threads idle: the
//! 64-token prefill's matmuls went from 1,680 dispatches and ~510 ms to 780 and ~346 ms
//! (`-- profile`, medians of 7). Measured and rejected: all 8 groups in one dispatch through
//! 8 uniform bindings picked by a `switch` on the group (2x slower: lavapipe's code for the
//! switch, inside or hoisted out of the dot loop, lost the once-for-all-lanes uniform loads).
//!
//! On lavapipe (natively, with subgroups) whole pairs of groups go to `main_pairs`
//! (`matmul_cpu_pairs.wgsl`): group z of one uniform range and group z of a second range
//! that holds the tokens after the first's, so each weight sub-block is fetched and unpacked
//! once for 16 tokens, and inputs load through the lanes (`x_lanes.wgsl`: llvmpipe runs a
//! scalar load per lane for a uniform value at a loop-dependent offset; found in its JIT code
//! with perf and gdb). Warm 64-token prefill, alternated runs: 127.5 -> 139.1 tok/s (pairs),
//! then 155.7 -> 187.9 (lanes); the 64-token chunk's matmuls 780 -> 480 dispatches.
//! SwiftShader keeps `main_groups`: pairs ran no faster there natively, and in Chromium the
//! kernel tests' matmul cases (a fresh pipeline per shape) lost the device after 190 s
//! instead of passing in 50 s. Measured and rejected: the row loop unrolled by hand (no
//! faster, its accumulators in registers cost spills, 2.4x the compile time).
//!
//! Every range is bound as a whole 64 KiB window where the input runs that far past it
//! ([`input_slack`]; the engine's activations do), so the input's array size is the same
//! for every token count and width: a 64-token chunk compiles 3 matmul pipelines (one per
//! rows choice) instead of 7. lavapipe's first 64-token prompt without Mesa's shader cache:
//! 6.1 s before, 12.5 s with pairs and exact ranges, 5.4 s with windows.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::matvec::{Params, lanes_load_inputs};
use crate::kernels::qweight::{QWeight, WeightPart};
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

/// [`GpuMatMul::Rows`]: rows of W per workgroup (one per invocation).
const TILE_ROWS: u32 = 64;
/// [`GpuMatMul::Rows`]: tokens per workgroup.
const TILE_TOKENS: u32 = 8;
const _: () = assert!(
    TILE_ROWS >= TILE_TOKENS * 8,
    "matmul.wgsl stages one input vec4 per invocation"
);

/// [`GpuMatMul::Tiled`]: rows of the register tile of each invocation (a workgroup covers 16
/// times as many rows). 4 rows by up to 8 tokens is 32 f32 accumulators per invocation, the
/// register budget at which GPU GEMMs usually still run at full occupancy.
const TILED_ROWS: u32 = 4;
/// [`GpuMatMul::Tiled`]: the most tokens of the register tile (a workgroup covers 4 times as
/// many).
const TILED_MAX_TOKENS: u32 = 8;

/// Tokens of the register tile for a product over `n_tokens`: the power of two from 1 to
/// [`GpuMatMul::Split`]: rows per workgroup.
const SPLIT_ROWS: u32 = 4;
/// [`GpuMatMul::Split`]: invocations per workgroup (sub-blocks of the inner dimension in
/// flight at once: 18 of SmolLM2's 576-wide rows, 48 of its 1536-wide ones).
const SPLIT_WORKGROUP: u32 = 64;

/// [`GpuMatMul::Split`]: tokens per workgroup, the power of two up to 8 that covers
/// `n_tokens` (a 2-sequence decode step does not compute 8 tokens' products).
fn split_tokens(n_tokens: usize) -> u32 {
    (n_tokens.clamp(1, 8) as u32).next_power_of_two()
}
const _: () = assert!(
    SPLIT_ROWS * 8 <= SPLIT_WORKGROUP,
    "matmul_split.wgsl writes one output per invocation"
);

/// [`TILED_MAX_TOKENS`] whose workgroup (4 token lanes) covers them, so a 4-token chunk does
/// not compute 32 tokens' products.
fn tiled_tokens(n_tokens: usize) -> u32 {
    let per_lane = n_tokens.div_ceil(4).clamp(1, TILED_MAX_TOKENS as usize) as u32;
    per_lane.next_power_of_two()
}

/// The Gpu profile's prefill kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuMatMul {
    /// One row per invocation, 8 tokens per workgroup (`matmul.wgsl`): each invocation
    /// dequantizes its row's sub-block once for the 8 tokens.
    Rows,
    /// A 4-row register tile per invocation, 64 rows and up to 32 tokens per workgroup
    /// (`matmul_tiled.wgsl`), its tiles and products in the given type. Kept to compare
    /// against (slower on the one real GPU measured).
    Tiled(DType),
    /// 4 rows by up to 8 tokens per workgroup, the inner dimension spread over its
    /// invocations and reduced in workgroup memory (`matmul_split.wgsl`). The engine's.
    Split,
}

impl GpuMatMul {
    /// The kernel the engine uses: [`GpuMatMul::Split`]. Chosen on a real GPU (an H200,
    /// through Vulkan) against the row and tiled kernels; the tiled one won only on
    /// lavapipe with the Gpu profile forced. f16 tiles
    /// (where `shader-f16` is offered) also moved SmolLM2's prefill logits by 2.0e-3
    /// relative L2 from the f64 reference on lavapipe, twice the 1e-3 that every f32 path
    /// of the engine keeps (`gpu_profile_logits_match_the_cpu_reference_at_every_position`),
    /// and ran no faster than f32 tiles on the H200.
    pub fn best(_ctx: &GpuContext) -> Self {
        GpuMatMul::Split
    }
}

/// CPU-type path: rows per invocation, invocations per workgroup, and the most tokens per
/// dispatch (each weight sub-block is fetched once per this many tokens; the inputs of that
/// many tokens must fit the 64 KiB uniform binding; the slots are written out in
/// `matmul_cpu.wgsl`). 16 rows per invocation share each sub-block's token inputs across
/// more weights: warm 64-token prefill (`cargo bench -p tpsmeter-gpu --bench engine --
/// prefill`, medians of 7, three rounds, load ~2) went from 70-77 tok/s at 4 rows to 109-132
/// at 16 on lavapipe (8 rows: 79-100, 32 rows: 117-123), and from 9.0 to 13.7-14.1 on
/// SwiftShader (32 rows: 13.0). [`balanced_rows`] moves it within 12-20 per shape, where that
/// deals the workgroups out more evenly to the adapter's threads.
const CPU_ROWS: u32 = 16;
const CPU_WORKGROUP: u32 = 8;
const CPU_TOKENS: u64 = 8;
/// CPU-type path: the most groups of `CPU_TOKENS` one dispatch takes (`main_groups`, all in
/// one uniform range, so in practice as many as fit 64 KiB). Eight cover a 64-token prefill
/// chunk.
const CPU_MAX_GROUPS: u32 = 8;
const _: () = assert!(
    CPU_TOKENS == 8,
    "matmul_cpu.wgsl writes out 2 token slots (main2), 4 (main) and 8 (main8)"
);

/// The bytes of each uniform range of inputs a CPU-type dispatch binds: 64 KiB (WebGPU's
/// default limit, lavapipe's and SwiftShader's), or the adapter's limit if lower. Where the
/// input tensor runs that far past the range's first token ([`input_slack`]), the range is
/// bound whole, so its size, a constant of the shader, is the same for every token count
/// and input width, and one pipeline per rows choice serves them all: each pipeline costs
/// lavapipe ~1.5 s of LLVM the first time it runs, before Mesa's disk cache has it.
fn cpu_window(ctx: &GpuContext) -> u64 {
    ctx.limits.max_uniform_buffer_binding_size.min(64 << 10)
}

/// The bytes an activation tensor should have past its values so that the matmuls reading
/// it bind whole 64 KiB windows of inputs (one pipeline for every token count): CPU-type
/// adapters only.
pub fn input_slack(ctx: &GpuContext) -> u64 {
    if ctx.profile == AdapterProfile::Cpu {
        cpu_window(ctx)
    } else {
        0
    }
}

/// Rows per invocation for a CPU-type dispatch of `rows` rows and `groups` token groups on
/// `threads` threads: the one from 12 to 20 that finishes soonest when workgroups are dealt to
/// the threads in rounds (a round costs its rows per invocation), ties to [`CPU_ROWS`].
/// 576 rows at 16 make 4.5 workgroups, so one thread ran 3 while the other ran 2: at 18 they
/// make 4. `threads` 0 (unknown) keeps [`CPU_ROWS`].
fn balanced_rows(rows: u32, groups: u32, threads: usize) -> u32 {
    let Ok(threads) = u32::try_from(threads) else {
        return CPU_ROWS;
    };
    if threads == 0 {
        return CPU_ROWS;
    }
    let makespan = |r: u32| {
        let workgroups = rows.div_ceil(r).div_ceil(CPU_WORKGROUP) * groups.max(1);
        u64::from(workgroups.div_ceil(threads)) * u64::from(r)
    };
    (12..=20)
        .min_by_key(|&r| (makespan(r), r.abs_diff(CPU_ROWS)))
        .unwrap_or(CPU_ROWS)
}

/// The tokens one CPU-type dispatch covers: `tokens` from token `t0`, in `groups` groups of
/// `slots` (workgroup z = group) in each of `ranges` uniform ranges (2 for `main_pairs`,
/// whose second range holds the tokens that follow the first's).
struct CpuSpan {
    t0: usize,
    tokens: usize,
    slots: usize,
    groups: usize,
    ranges: usize,
}

impl CpuSpan {
    /// The dispatch of `entry` over this span for one weight part, with the rows per
    /// invocation that suit the part's shape.
    #[allow(clippy::too_many_arguments)] // The op's own operands, passed through.
    fn dispatch(
        &self,
        ctx: &GpuContext,
        w: &QWeight,
        part: &WeightPart,
        x: &Tensor,
        y: &Tensor,
        accumulate: bool,
        entry: &'static str,
    ) -> Dispatch {
        let x_row = (w.cols * 4) as u64;
        let rows = balanced_rows(part.rows as u32, self.groups as u32, ctx.cpu_threads());
        let range_tokens = self.tokens / self.ranges;
        let last_range = (self.t0 + (self.ranges - 1) * range_tokens) as u64 * x_row;
        let range_bytes = if x.buffer.size() >= last_range + cpu_window(ctx) {
            cpu_window(ctx)
        } else {
            range_tokens as u64 * x_row
        };
        let range = |first: usize| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &x.buffer,
                offset: first as u64 * x_row,
                size: std::num::NonZeroU64::new(range_bytes),
            })
        };
        let defines = Defines {
            act: DType::F32,
            workgroup: CPU_WORKGROUP,
            rows,
            x_vec4s: (range_bytes / 16) as u32,
            subgroups: self.ranges == 2,
            tokens: self.slots as u32,
            ..Defines::default()
        };
        let shader = if self.ranges == 2 {
            ShaderId::MatMulCpuPairs(w.format, w.store)
        } else {
            ShaderId::MatMulCpu(w.format, w.store)
        };
        let pipeline = ctx.pipeline(shader, entry, defines);
        let params = ctx.uniform(
            "matmul params",
            &Params::matrix(w, part, accumulate, self.slots, self.t0),
        );
        let mut entries = vec![
            (0, params.as_entire_binding()),
            (1, range(self.t0)),
            (4, y.buffer.as_entire_binding()),
        ];
        if self.ranges == 2 {
            entries.push((6, range(self.t0 + range_tokens)));
        }
        entries.extend(part.entries());
        let invocations = (part.rows as u32).div_ceil(rows);
        let [gx, gy, _] = ctx.grid(invocations.div_ceil(CPU_WORKGROUP));
        Dispatch {
            bind_group: ctx.bind_resources(&pipeline, entries),
            pipeline,
            workgroups: [gx, gy, self.groups as u32],
            label: "matmul",
        }
    }
}

/// A prepared `y = x W^T` over `n_tokens` rows of `x` (`[n_tokens, cols]` → `[n_tokens, rows]`).
#[derive(Debug, Clone)]
pub struct MatMul {
    dispatches: Vec<Dispatch>,
}

impl MatMul {
    /// Checks shapes and builds the dispatches of the kernel that suits the adapter.
    pub fn new(
        ctx: &GpuContext,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
    ) -> Result<Self> {
        Self::with_profile(ctx, ctx.profile, w, x, y, n_tokens, accumulate)
    }

    /// [`MatMul::new`] with the kernel of `profile` (tests run both on one adapter).
    pub fn with_profile(
        ctx: &GpuContext,
        profile: AdapterProfile,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
    ) -> Result<Self> {
        Self::check(ctx, w, x, y, n_tokens)?;
        if profile == AdapterProfile::Cpu && x.dtype == DType::F32 {
            let x_row = (w.cols * 4) as u64;
            let fit = cpu_window(ctx) / x_row;
            let tok = fit.min(CPU_TOKENS) as usize;
            let align = u64::from(ctx.limits.min_uniform_buffer_offset_alignment).max(1);
            if tok >= 1 && (tok as u64 * x_row).is_multiple_of(align) {
                return Self::new_cpu(ctx, w, x, y, n_tokens, accumulate, tok);
            }
        }
        Self::new_gpu(ctx, GpuMatMul::best(ctx), w, x, y, n_tokens, accumulate)
    }

    /// The Gpu profile's dispatches with the kernel `kernel` (benchmarks and tests compare
    /// them on one adapter). Shapes are checked as in [`MatMul::new`].
    pub fn with_gpu_kernel(
        ctx: &GpuContext,
        kernel: GpuMatMul,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
    ) -> Result<Self> {
        Self::check(ctx, w, x, y, n_tokens)?;
        if kernel == GpuMatMul::Tiled(DType::F16) {
            ctx.check_dtype(DType::F16, "matmul f16 tiles")?;
        }
        Self::new_gpu(ctx, kernel, w, x, y, n_tokens, accumulate)
    }

    fn check(ctx: &GpuContext, w: &QWeight, x: &Tensor, y: &Tensor, n_tokens: usize) -> Result<()> {
        const OP: &str = "matmul";
        if n_tokens == 0 {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: "no tokens".into(),
            });
        }
        x.expect(OP, "x", n_tokens * w.cols, x.dtype)?;
        y.expect(OP, "y", n_tokens * w.rows, x.dtype)?;
        ctx.check_dtype(x.dtype, OP)
    }

    /// The workgroup-memory kernels of real GPUs: one dispatch per weight part.
    fn new_gpu(
        ctx: &GpuContext,
        kernel: GpuMatMul,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
    ) -> Result<Self> {
        let (shader, defines, tile_rows, tile_tokens) = match kernel {
            GpuMatMul::Rows => (
                ShaderId::MatMul(w.format, w.store),
                Defines {
                    act: x.dtype,
                    block: 32,
                    workgroup: TILE_ROWS,
                    rows: TILE_TOKENS,
                    ..Defines::default()
                },
                TILE_ROWS,
                TILE_TOKENS,
            ),
            GpuMatMul::Split => {
                let tok = split_tokens(n_tokens);
                (
                    ShaderId::MatMulSplit(w.format, w.store),
                    Defines {
                        act: x.dtype,
                        block: 32,
                        workgroup: SPLIT_WORKGROUP,
                        rows: SPLIT_ROWS,
                        tokens: tok,
                        ..Defines::default()
                    },
                    SPLIT_ROWS,
                    tok,
                )
            }
            GpuMatMul::Tiled(arith) => {
                let tok = tiled_tokens(n_tokens);
                (
                    ShaderId::MatMulTiled(w.format, w.store),
                    Defines {
                        act: x.dtype,
                        block: 32,
                        workgroup: 64,
                        rows: TILED_ROWS,
                        tokens: tok,
                        arith,
                        ..Defines::default()
                    },
                    16 * TILED_ROWS,
                    4 * tok,
                )
            }
        };
        let pipeline = ctx.pipeline(shader, "main", defines);
        let mut dispatches = Vec::with_capacity(w.parts.len());
        for part in &w.parts {
            let params = ctx.uniform(
                "matmul params",
                &Params::matrix(w, part, accumulate, n_tokens, 0),
            );
            let mut entries = vec![
                (0, params.as_entire_binding()),
                (1, x.buffer.as_entire_binding()),
                (4, y.buffer.as_entire_binding()),
            ];
            entries.extend(part.entries());
            let groups_y = (n_tokens as u32).div_ceil(tile_tokens);
            let groups_x = (part.rows as u32).div_ceil(tile_rows);
            if groups_x > ctx.limits.max_compute_workgroups_per_dimension
                || groups_y > ctx.limits.max_compute_workgroups_per_dimension
            {
                return Err(GpuError::ShapeMismatch {
                    op: "matmul",
                    detail: format!("{groups_x}x{groups_y} workgroups exceed the adapter's grid"),
                });
            }
            dispatches.push(Dispatch {
                bind_group: ctx.bind_resources(&pipeline, entries),
                pipeline: pipeline.clone(),
                workgroups: [groups_x, groups_y, 1],
                label: "matmul",
            });
        }
        Ok(MatMul { dispatches })
    }

    /// The CPU-type path: whole groups of `tok` tokens several to a dispatch, then a ragged
    /// last group alone; one dispatch of `matmul_cpu` per weight part, with the tokens'
    /// inputs bound as a uniform range of `x`.
    fn new_cpu(
        ctx: &GpuContext,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
        tok: usize,
    ) -> Result<Self> {
        let x_row = (w.cols * 4) as u64;
        let mut dispatches = Vec::new();
        let mut t0 = 0;
        let fit_groups =
            (cpu_window(ctx) / (x_row * CPU_TOKENS)).min(u64::from(CPU_MAX_GROUPS)) as usize;
        // Whole groups of eight, as many per dispatch as one uniform range holds groups
        // (three for a 576-wide input, one for a 1536-wide one). On lavapipe they go in
        // pairs, group z of two ranges at once (`main_pairs`); elsewhere one range
        // (`main_groups`, at least two groups: one alone is `main8`'s). SwiftShader ran
        // pairs no faster and compiled them much slower.
        let (ranges, entry, min_groups) = if lanes_load_inputs(ctx, CPU_WORKGROUP) {
            (2, "main_pairs", 1)
        } else {
            (1, "main_groups", 2)
        };
        while tok == CPU_TOKENS as usize && fit_groups >= min_groups && n_tokens - t0 >= 2 * tok {
            let groups = ((n_tokens - t0) / (ranges * tok)).min(fit_groups);
            let span = CpuSpan {
                t0,
                tokens: ranges * groups * tok,
                slots: tok,
                groups,
                ranges,
            };
            for part in &w.parts {
                dispatches.push(span.dispatch(ctx, w, part, x, y, accumulate, entry));
            }
            t0 += span.tokens;
        }
        while t0 < n_tokens {
            // A ragged last group gets its own pipeline with fewer token slots (and, where
            // `x` has no slack past its values, a uniform range that ends at its last token).
            let cnt = tok.min(n_tokens - t0);
            // Groups of 5-8 tokens take the 8-slot entry, 3-4 the 4-slot one, 1-2 the
            // 2-slot one (few slots computed for nothing).
            let entry = match cnt {
                5.. => "main8",
                3..=4 => "main",
                _ => "main2",
            };
            let span = CpuSpan {
                t0,
                tokens: cnt,
                slots: cnt,
                groups: 1,
                ranges: 1,
            };
            for part in &w.parts {
                dispatches.push(span.dispatch(ctx, w, part, x, y, accumulate, entry));
            }
            t0 += cnt;
        }
        Ok(MatMul { dispatches })
    }

    /// The dispatches (one per weight part).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}

#[cfg(test)]
mod tests {
    use super::{CPU_ROWS, balanced_rows};

    #[test]
    fn rows_per_invocation_even_out_the_threads() {
        // 576 rows at 16: 36 invocations, 5 workgroups, 3 rounds on 2 threads (48); at 18: 4
        // workgroups, 2 rounds (36), as at 12 (6 workgroups, 3 rounds): the nearer to 16 wins.
        assert_eq!(balanced_rows(576, 1, 2), 18);
        // 192 rows in 3 groups: 12 gives 2 workgroups per group, 3 rounds of 12.
        assert_eq!(balanced_rows(192, 3, 2), 12);
        // 1536 rows in 3 groups: 36 workgroups at 16 already split evenly.
        assert_eq!(balanced_rows(1536, 3, 2), CPU_ROWS);
        // Unknown thread count: the measured default.
        assert_eq!(balanced_rows(576, 1, 0), CPU_ROWS);
        // Never outside 12..=20, whatever the shape.
        for rows in [1, 7, 100, 576, 1536, 49_152] {
            for threads in [1, 2, 3, 8, 64] {
                let r = balanced_rows(rows, 1, threads);
                assert!(
                    (12..=20).contains(&r),
                    "{rows} rows, {threads} threads: {r}"
                );
            }
        }
    }
}
