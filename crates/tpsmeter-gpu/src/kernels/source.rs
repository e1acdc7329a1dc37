//! The WGSL sources, gathered in one `include_str!` table, and the shader ids that name
//! which files make up each module.
//!
//! A module is the prelude rendered from [`Defines`] followed by its files in order. Files
//! are whole kernel families or a shared part of one (the matvec entry points share the
//! format decoders); no string is assembled any other way.

use crate::gpu::defines::Defines;
use crate::gpu::pipelines::Shader;
use crate::kernels::format::WeightFormat;
use crate::kernels::kv::KvStore;
use crate::kernels::qweight::WeightStore;

/// Every WGSL file of the crate, by name.
pub static SOURCES: &[(&str, &str)] = &[
    ("matvec_common", include_str!("wgsl/matvec_common.wgsl")),
    ("matvec_cpu", include_str!("wgsl/matvec_cpu.wgsl")),
    (
        "matvec_gpu_shared",
        include_str!("wgsl/matvec_gpu_shared.wgsl"),
    ),
    (
        "matvec_gpu_subgroup",
        include_str!("wgsl/matvec_gpu_subgroup.wgsl"),
    ),
    ("matvec_f32", include_str!("wgsl/matvec_f32.wgsl")),
    ("matvec_f16", include_str!("wgsl/matvec_f16.wgsl")),
    ("matvec_q4_0", include_str!("wgsl/matvec_q4_0.wgsl")),
    ("matvec_q4_1", include_str!("wgsl/matvec_q4_1.wgsl")),
    ("matvec_q5_0", include_str!("wgsl/matvec_q5_0.wgsl")),
    ("matvec_q8_0", include_str!("wgsl/matvec_q8_0.wgsl")),
    ("matvec_q4_k", include_str!("wgsl/matvec_q4_k.wgsl")),
    ("matvec_q6_k", include_str!("wgsl/matvec_q6_k.wgsl")),
    ("matmul", include_str!("wgsl/matmul.wgsl")),
    ("matmul_tiled", include_str!("wgsl/matmul_tiled.wgsl")),
    ("matmul_split", include_str!("wgsl/matmul_split.wgsl")),
    ("matmul_cpu", include_str!("wgsl/matmul_cpu.wgsl")),
    (
        "matmul_cpu_pairs",
        include_str!("wgsl/matmul_cpu_pairs.wgsl"),
    ),
    ("x_lanes", include_str!("wgsl/x_lanes.wgsl")),
    (
        "matvec_cpu_lanes",
        include_str!("wgsl/matvec_cpu_lanes.wgsl"),
    ),
    ("weights_buffer", include_str!("wgsl/weights_buffer.wgsl")),
    ("weights_texture", include_str!("wgsl/weights_texture.wgsl")),
    ("x_storage", include_str!("wgsl/x_storage.wgsl")),
    ("norm_none", include_str!("wgsl/norm_none.wgsl")),
    ("norm_fold", include_str!("wgsl/norm_fold.wgsl")),
    ("g_uniform", include_str!("wgsl/g_uniform.wgsl")),
    ("g_storage", include_str!("wgsl/g_storage.wgsl")),
    ("x_uniform", include_str!("wgsl/x_uniform.wgsl")),
    ("reduce", include_str!("wgsl/reduce.wgsl")),
    ("rms_norm", include_str!("wgsl/rms_norm.wgsl")),
    ("elementwise", include_str!("wgsl/elementwise.wgsl")),
    ("rope", include_str!("wgsl/rope.wgsl")),
    ("rope_kv", include_str!("wgsl/rope_kv.wgsl")),
    ("rope_kv_buffer", include_str!("wgsl/rope_kv_buffer.wgsl")),
    ("rope_kv_texture", include_str!("wgsl/rope_kv_texture.wgsl")),
    (
        "rope_kv_texture_f16",
        include_str!("wgsl/rope_kv_texture_f16.wgsl"),
    ),
    (
        "kv_append_common",
        include_str!("wgsl/kv_append_common.wgsl"),
    ),
    ("kv_append", include_str!("wgsl/kv_append.wgsl")),
    (
        "kv_append_texture",
        include_str!("wgsl/kv_append_texture.wgsl"),
    ),
    (
        "kv_append_texture_f16",
        include_str!("wgsl/kv_append_texture_f16.wgsl"),
    ),
    ("kv_buffer", include_str!("wgsl/kv_buffer.wgsl")),
    ("kv_texture", include_str!("wgsl/kv_texture.wgsl")),
    ("kv_texture_f16", include_str!("wgsl/kv_texture_f16.wgsl")),
    ("embed", include_str!("wgsl/embed.wgsl")),
    (
        "attention_common",
        include_str!("wgsl/attention_common.wgsl"),
    ),
    ("attention", include_str!("wgsl/attention.wgsl")),
    ("attention_cpu", include_str!("wgsl/attention_cpu.wgsl")),
    ("attention_split", include_str!("wgsl/attention_split.wgsl")),
    ("softmax", include_str!("wgsl/softmax.wgsl")),
    ("sample", include_str!("wgsl/sample.wgsl")),
    ("probe", include_str!("wgsl/probe.wgsl")),
];

/// Looks a file up in [`SOURCES`]. Every name used below is in the table (a unit test
/// builds every shader id).
fn file(name: &str) -> &'static str {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .unwrap_or("")
}

/// Which matvec entry shape a module is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatVecEntry {
    /// Rows per invocation, no barriers (CPU-type adapters).
    Cpu,
    /// The same with inputs loaded through subgroup broadcasts (lavapipe, native only).
    CpuLanes,
    /// Coalesced reads, workgroup-memory tree reduction.
    GpuShared,
    /// Coalesced reads, subgroup reduction (native only).
    GpuSubgroup,
}

/// How a matrix kernel reads its input vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XSource {
    /// A storage buffer of any length and activation type (`x_storage.wgsl`).
    Storage,
    /// A fixed-size f32 uniform array (`x_uniform.wgsl`, CPU-type adapters).
    Uniform,
}

/// Whether a matvec folds an RMSNorm of its input (`norm_fold.wgsl`); the norm's weight is
/// bound beside the input, as a uniform array when the input is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatVecNorm {
    /// The input is used as is (`norm_none.wgsl`).
    None,
    /// `W (x / rms(x) * g)`.
    Fold,
}

/// A WGSL module before specialisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShaderId {
    /// Fused dequantize + matrix-vector product, with an optional folded RMSNorm (the
    /// gated-unit epilogue is a define).
    MatVec(WeightFormat, MatVecEntry, WeightStore, XSource, MatVecNorm),
    /// Tiled dequantize + matrix-matrix product (prefill), workgroup-memory tiles, one row
    /// per invocation (the Gpu profile's kernel before the register-tiled one).
    MatMul(WeightFormat, WeightStore),
    /// The same with a register tile of rows x tokens per invocation.
    MatMulTiled(WeightFormat, WeightStore),
    /// The inner dimension spread over the workgroup's invocations, a rows x tokens tile
    /// per workgroup (real GPUs).
    MatMulSplit(WeightFormat, WeightStore),
    /// Dequantize + matrix-matrix product without barriers, inputs uniform (CPU-type).
    MatMulCpu(WeightFormat, WeightStore),
    /// The same over two uniform ranges of 8 tokens at once, inputs loaded through subgroup
    /// broadcasts (lavapipe, native only).
    MatMulCpuPairs(WeightFormat, WeightStore),
    /// RMSNorm.
    RmsNorm,
    /// Residual add, SwiGLU, GELU-tanh GLU.
    Elementwise,
    /// Rotary position embedding.
    Rope,
    /// RoPE, biases, head norms and the KV append in one dispatch, into a cache store.
    RopeKv(KvStore),
    /// KV-cache append.
    KvAppend,
    /// KV-cache append into a texture.
    KvAppendTexture,
    KvAppendTextureF16,
    /// Quantized embedding lookup.
    Embed(WeightFormat, WeightStore),
    /// Grouped-query attention over the KV cache.
    Attention,
    /// Split along the keys, then combined (GPUs; decode and prefill).
    AttentionSplit,
    /// The same without barriers, online softmax (CPU-type adapters), over a KV cache in
    /// buffers or textures.
    AttentionCpu(KvStore),
    /// Row softmax.
    Softmax,
    /// Token sampling.
    Sample,
    /// The adapter probe's streaming reads and per-dispatch unit.
    Probe,
}

impl Shader for ShaderId {
    fn name(&self) -> &'static str {
        ShaderId::name(self)
    }

    fn source(&self, defines: &Defines) -> String {
        ShaderId::source(self, defines)
    }
}

impl ShaderId {
    /// Label for debugging.
    pub fn name(&self) -> &'static str {
        match self {
            ShaderId::MatVec(..) => "matvec",
            ShaderId::MatMul(..) => "matmul",
            ShaderId::MatMulTiled(..) => "matmul_tiled",
            ShaderId::MatMulSplit(..) => "matmul_split",
            ShaderId::MatMulCpu(..) => "matmul_cpu",
            ShaderId::MatMulCpuPairs(..) => "matmul_cpu_pairs",
            ShaderId::RmsNorm => "rms_norm",
            ShaderId::Elementwise => "elementwise",
            ShaderId::Rope => "rope",
            ShaderId::RopeKv(_) => "rope_kv",
            ShaderId::KvAppend => "kv_append",
            ShaderId::KvAppendTexture => "kv_append_texture",
            ShaderId::KvAppendTextureF16 => "kv_append_texture_f16",
            ShaderId::Embed(..) => "embed",
            ShaderId::Attention => "attention",
            ShaderId::AttentionCpu(_) => "attention_cpu",
            ShaderId::AttentionSplit => "attention_split",
            ShaderId::Softmax => "softmax",
            ShaderId::Sample => "sample",
            ShaderId::Probe => "probe",
        }
    }

    /// The files of this module, in order.
    pub fn files(&self) -> Vec<&'static str> {
        match self {
            ShaderId::MatVec(format, entry, store, xs, norm) => {
                let mut files = vec![
                    "matvec_common",
                    match xs {
                        XSource::Storage => "x_storage",
                        XSource::Uniform => "x_uniform",
                    },
                    store_file(*store),
                    format_file(*format),
                ];
                match (norm, xs) {
                    (MatVecNorm::None, _) => files.push("norm_none"),
                    (MatVecNorm::Fold, XSource::Uniform) => {
                        files.extend(["g_uniform", "norm_fold"])
                    }
                    (MatVecNorm::Fold, XSource::Storage) => {
                        files.extend(["g_storage", "norm_fold"])
                    }
                }
                if *entry == MatVecEntry::CpuLanes {
                    files.push("x_lanes");
                }
                files.push(match entry {
                    MatVecEntry::Cpu => "matvec_cpu",
                    MatVecEntry::CpuLanes => "matvec_cpu_lanes",
                    MatVecEntry::GpuShared => "matvec_gpu_shared",
                    MatVecEntry::GpuSubgroup => "matvec_gpu_subgroup",
                });
                files
            }
            ShaderId::MatMul(format, store) => vec![
                "matvec_common",
                "x_storage",
                store_file(*store),
                format_file(*format),
                "matmul",
            ],
            ShaderId::MatMulTiled(format, store) => vec![
                "matvec_common",
                "x_storage",
                store_file(*store),
                format_file(*format),
                "matmul_tiled",
            ],
            ShaderId::MatMulSplit(format, store) => vec![
                "matvec_common",
                "x_storage",
                store_file(*store),
                format_file(*format),
                "matmul_split",
            ],
            ShaderId::MatMulCpu(format, store) => vec![
                "matvec_common",
                "x_uniform",
                store_file(*store),
                format_file(*format),
                "matmul_cpu",
            ],
            ShaderId::MatMulCpuPairs(format, store) => vec![
                "matvec_common",
                "x_uniform",
                store_file(*store),
                format_file(*format),
                "x_lanes",
                "matmul_cpu_pairs",
            ],
            ShaderId::Attention => vec!["attention_common", "reduce", "attention"],
            ShaderId::AttentionSplit => vec!["attention_common", "reduce", "attention_split"],
            ShaderId::RmsNorm => vec!["reduce", "rms_norm"],
            ShaderId::Softmax => vec!["reduce", "softmax"],
            ShaderId::KvAppend => vec!["kv_append_common", "kv_append"],
            ShaderId::RopeKv(store) => vec!["rope_kv", store.rope_kv_file()],
            ShaderId::KvAppendTexture => vec!["kv_append_common", "kv_append_texture"],
            ShaderId::KvAppendTextureF16 => vec!["kv_append_common", "kv_append_texture_f16"],
            ShaderId::AttentionCpu(store) => vec![
                "attention_common",
                match store {
                    KvStore::Buffer => "kv_buffer",
                    KvStore::Texture => "kv_texture",
                    KvStore::TextureF16 => "kv_texture_f16",
                },
                "attention_cpu",
            ],
            ShaderId::Embed(format, store) => vec![
                "matvec_common",
                "x_storage",
                store_file(*store),
                format_file(*format),
                "embed",
            ],
            other => vec![other.name()],
        }
    }

    /// The full WGSL text for `defines`.
    pub fn source(&self, defines: &Defines) -> String {
        let mut s = defines.prelude();
        for f in self.files() {
            s.push('\n');
            s.push_str(file(f));
        }
        s
    }
}

/// The file declaring the weight bindings and their accessors.
fn store_file(store: WeightStore) -> &'static str {
    match store {
        WeightStore::Buffer => "weights_buffer",
        WeightStore::Texture => "weights_texture",
    }
}

/// The file holding a format's `block_dot` and `decode`.
fn format_file(format: WeightFormat) -> &'static str {
    match format {
        WeightFormat::F32 => "matvec_f32",
        WeightFormat::F16 => "matvec_f16",
        WeightFormat::Q4_0 => "matvec_q4_0",
        WeightFormat::Q4_1 => "matvec_q4_1",
        WeightFormat::Q5_0 => "matvec_q5_0",
        WeightFormat::Q8_0 => "matvec_q8_0",
        WeightFormat::Q4_K => "matvec_q4_k",
        WeightFormat::Q6_K => "matvec_q6_k",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_named_by_a_shader_id_is_in_the_table() {
        let stores = [WeightStore::Buffer, WeightStore::Texture];
        for f in [WeightFormat::F32, WeightFormat::Q4_1, WeightFormat::Q6_K] {
            for e in [
                MatVecEntry::Cpu,
                MatVecEntry::CpuLanes,
                MatVecEntry::GpuShared,
                MatVecEntry::GpuSubgroup,
            ] {
                for (st, xs) in stores.into_iter().zip([XSource::Storage, XSource::Uniform]) {
                    for name in ShaderId::MatVec(f, e, st, xs, MatVecNorm::None)
                        .files()
                        .into_iter()
                        .chain(ShaderId::MatVec(f, e, st, xs, MatVecNorm::Fold).files())
                        .chain(ShaderId::MatMul(f, st).files())
                        .chain(ShaderId::MatMulTiled(f, st).files())
                        .chain(ShaderId::MatMulSplit(f, st).files())
                        .chain(ShaderId::MatMulCpu(f, st).files())
                        .chain(ShaderId::MatMulCpuPairs(f, st).files())
                    {
                        assert!(!file(name).is_empty(), "{name} missing from SOURCES");
                    }
                }
            }
        }
        for id in [
            ShaderId::RmsNorm,
            ShaderId::Elementwise,
            ShaderId::Rope,
            ShaderId::KvAppend,
            ShaderId::Embed(WeightFormat::Q6_K, WeightStore::Texture),
            ShaderId::Attention,
            ShaderId::AttentionSplit,
            ShaderId::AttentionCpu(KvStore::Buffer),
            ShaderId::AttentionCpu(KvStore::Texture),
            ShaderId::AttentionCpu(KvStore::TextureF16),
            ShaderId::KvAppendTexture,
            ShaderId::KvAppendTextureF16,
            ShaderId::RopeKv(KvStore::Buffer),
            ShaderId::RopeKv(KvStore::Texture),
            ShaderId::RopeKv(KvStore::TextureF16),
            ShaderId::Softmax,
            ShaderId::Sample,
            ShaderId::Probe,
        ] {
            for name in id.files() {
                assert!(!file(name).is_empty(), "{name} missing from SOURCES");
            }
        }
    }
}
