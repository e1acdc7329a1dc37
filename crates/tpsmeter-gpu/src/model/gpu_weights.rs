//! The weights of a Llama-family model (Llama, SmolLM2, TinyLlama, Qwen2, Gemma 3) on the GPU.
//!
//! Matrices are uploaded quantized as the file stores them (repacked by
//! [`QWeight::upload`], split by rows where one binding would exceed the adapter's
//! `maxStorageBufferBindingSize`); small vectors (norms, biases) are expanded to f32, which
//! costs a few hundred KiB. Shapes are checked against the configuration so the forward pass
//! can wire dispatches without further checks.
//!
//! Matrices that read the same input are fused at load where their formats match and one
//! binding holds them: q, k and v become one matrix (one matvec per layer instead of three),
//! gate and up another (whose kernel writes the gated unit). Their raw rows are held on the
//! host until the group is complete, at most a few matrices of one layer; a group that cannot
//! fuse (a Q4_K_M file stores some `attn_v` in Q6_K) is uploaded matrix by matrix and each
//! is placed at its columns of the shared output row.

use crate::error::{GpuError, Result};
use std::collections::HashMap;
use tpsmeter_model::ModelError;

use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;
use crate::kernels::{HeadExtras, QWeight, Tensor, WeightFormat};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgmlType, GgufFile, TensorInfo};
use tpsmeter_model::tensors::{self, LayerTensor};

/// One transformer block's weights.
#[derive(Debug)]
pub struct GpuLayer {
    pub attn_norm: Tensor,
    /// The QKV row's matrices: q, k and v as one matrix of `q_dim + k_dim + v_dim` rows, or
    /// each placed at its columns of that row.
    pub qkv: Vec<QWeight>,
    /// Qwen2's q/k/v biases and Gemma 3's q/k head norms, applied by `rope_kv`.
    pub head_extras: Option<HeadExtras>,
    pub wo: QWeight,
    /// Gemma 3's RMSNorm of the attention output before the residual add.
    pub attn_post_norm: Option<Tensor>,
    pub ffn_norm: Tensor,
    pub gate_up: GateUp,
    pub w_down: QWeight,
    /// Gemma 3's RMSNorm of the FFN output before the residual add.
    pub ffn_post_norm: Option<Tensor>,
}

/// The FFN's gate and up matrices.
#[derive(Debug)]
pub enum GateUp {
    /// One matrix, `n_ff` gate rows then `n_ff` up rows, in one part: the decode matvec
    /// writes `act(gate) * up` itself.
    Fused(QWeight),
    /// Two matrices placed at columns `0..n_ff` and `n_ff..2 n_ff` of a `[gate | up]` row.
    Split(QWeight, QWeight),
}

impl GateUp {
    /// The matrices, in order.
    pub fn matrices(&self) -> Vec<&QWeight> {
        match self {
            GateUp::Fused(w) => vec![w],
            GateUp::Split(g, u) => vec![g, u],
        }
    }
}

/// Matrices fused at load: the layer-relative names of their members, in row order.
const QKV: [&str; 3] = [
    tensors::QKV[0].suffix(),
    tensors::QKV[1].suffix(),
    tensors::QKV[2].suffix(),
];
const GATE_UP: [&str; 2] = [tensors::GATE_UP[0].suffix(), tensors::GATE_UP[1].suffix()];

/// A member of a fusable group, held on the host until its group is complete.
#[derive(Debug)]
struct Held {
    format: WeightFormat,
    rows: usize,
    cols: usize,
    dims: Vec<u64>,
    bytes: Vec<u8>,
}

/// A fused matrix and its members' (name, rows, cols, dims), for shape checks at assembly.
type Fused = (QWeight, Vec<(String, usize, usize, Vec<u64>)>);

/// The group a layer matrix belongs to: (`blk.N.`, the group's member names).
fn group_of(name: &str) -> Option<(String, &'static [&'static str])> {
    let rest = name.strip_prefix("blk.")?;
    let (layer, member) = rest.split_once('.')?;
    layer.parse::<usize>().ok()?;
    let prefix = format!("blk.{layer}.");
    [&QKV[..], &GATE_UP[..]]
        .into_iter()
        .find(|g| g.contains(&member))
        .map(|g| (prefix, g))
}

/// Fails unless a matrix of `(rows, cols)` is the `want`ed shape, naming the tensor and its
/// file dims (ggml order, `[cols, rows]`).
fn check_shape(
    name: &str,
    (rows, cols): (usize, usize),
    want: (usize, usize),
    dims: Vec<u64>,
) -> Result<()> {
    if (rows, cols) != want {
        return Err(GpuError::from(ModelError::WrongTensorShape {
            tensor: name.into(),
            expected: vec![want.1 as u64, want.0 as u64],
            found: dims,
        }));
    }
    Ok(())
}

/// All weights of a Llama-family model, resident on one device.
#[derive(Debug)]
pub struct GpuWeights {
    /// `[vocab, n_embd]`, read by the embedding lookup and, when tied, by the output head.
    pub token_embd: QWeight,
    pub layers: Vec<GpuLayer>,
    pub output_norm: Tensor,
    /// `None` when the output head is tied to `token_embd`.
    pub output: Option<QWeight>,
    /// Llama 3.x RoPE frequency factors (`rope_freqs.weight`, `rope_dim / 2` values).
    pub rope_freqs: Option<Tensor>,
}

/// The matrix kernels' name for a GGML tensor type, or an error naming the tensor.
pub fn weight_format(ty: GgmlType, tensor: &str) -> Result<WeightFormat> {
    Ok(match ty {
        GgmlType::F32 => WeightFormat::F32,
        GgmlType::F16 => WeightFormat::F16,
        GgmlType::Q4_0 => WeightFormat::Q4_0,
        GgmlType::Q4_1 => WeightFormat::Q4_1,
        GgmlType::Q5_0 => WeightFormat::Q5_0,
        GgmlType::Q8_0 => WeightFormat::Q8_0,
        GgmlType::Q4_K => WeightFormat::Q4_K,
        GgmlType::Q6_K => WeightFormat::Q6_K,
        other => {
            return Err(GpuError::UnsupportedFormat {
                op: "weight upload",
                format: format!("{other} (tensor {tensor:?})"),
            });
        }
    })
}

/// Tensors as they arrive, in any order, before [`GpuWeights::assemble`] wires them up:
/// matrices uploaded at once (so a streamed download never holds the whole file), vectors
/// (norms, biases, RoPE factors: a few hundred KiB) kept on the host as f32 until their
/// role is known. Whole files and downloads take this one path.
#[derive(Debug, Default)]
pub struct StagedWeights {
    matrices: HashMap<String, (QWeight, Vec<u64>)>,
    vectors: HashMap<String, (Vec<f32>, Vec<u64>)>,
    /// Members of fusable groups waiting for the rest of their group.
    held: HashMap<String, Held>,
    /// Fused groups by their first member's name.
    fused: HashMap<String, Fused>,
}

impl StagedWeights {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one tensor: a vector (one dimension above 1 at most) is dequantized on the host;
    /// a matrix is uploaded quantized as stored. Tensors of more dimensions are not used by
    /// this forward pass and are dropped here (assembly names any it needed).
    pub fn accept(&mut self, ctx: &GpuContext, info: &TensorInfo, bytes: &[u8]) -> Result<()> {
        let name = &info.name;
        let mut dims = info.dims.clone();
        while dims.len() > 2 && dims.last() == Some(&1) {
            dims.pop();
        }
        let first = dims.first().copied().unwrap_or(1);
        if info.n_elements == first {
            let n = usize::try_from(info.n_elements).map_err(|_| {
                GpuError::from(ModelError::LimitExceeded {
                    what: format!("elements of tensor {name:?} on this platform"),
                    value: info.n_elements,
                    limit: usize::MAX as u64,
                })
            })?;
            let values = tpsmeter_model::quant::dequantize_to_vec(info.ty, bytes, n)?;
            self.vectors
                .insert(name.clone(), (values, info.dims.clone()));
        } else if let [cols, rows] = dims[..] {
            let too_big = |v: u64| {
                GpuError::from(ModelError::LimitExceeded {
                    what: format!("dimension of tensor {name:?} on this platform"),
                    value: v,
                    limit: usize::MAX as u64,
                })
            };
            let cols = usize::try_from(cols).map_err(|_| too_big(cols))?;
            let rows = usize::try_from(rows).map_err(|_| too_big(rows))?;
            let format = weight_format(info.ty, name)?;
            if let Some((prefix, group)) = group_of(name) {
                self.held.insert(
                    name.clone(),
                    Held {
                        format,
                        rows,
                        cols,
                        dims: info.dims.clone(),
                        bytes: bytes.to_vec(),
                    },
                );
                return self.fuse_if_complete(ctx, &prefix, group);
            }
            let weight = QWeight::upload(ctx, name, format, rows, cols, bytes)?;
            self.matrices
                .insert(name.clone(), (weight, info.dims.clone()));
        }
        Ok(())
    }

    /// Once every member of a group is held: one matrix of all their rows when they share
    /// a format and width and one part holds it, else each uploaded on its own.
    fn fuse_if_complete(&mut self, ctx: &GpuContext, prefix: &str, group: &[&str]) -> Result<()> {
        let names: Vec<String> = group.iter().map(|m| format!("{prefix}{m}")).collect();
        if !names.iter().all(|n| self.held.contains_key(n)) {
            return Ok(());
        }
        let members: Vec<(String, Held)> = names
            .iter()
            .filter_map(|n| self.held.remove(n).map(|h| (n.clone(), h)))
            .collect();
        let (format, cols) = (members[0].1.format, members[0].1.cols);
        let rows: usize = members.iter().map(|(_, h)| h.rows).sum();
        let alike = members
            .iter()
            .all(|(_, h)| h.format == format && h.cols == cols);
        if alike && QWeight::fits_one_part(ctx, format, rows, cols) {
            let mut bytes = Vec::with_capacity(members.iter().map(|(_, h)| h.bytes.len()).sum());
            for (_, h) in &members {
                bytes.extend_from_slice(&h.bytes);
            }
            let label = format!("{}+", names[0]);
            let weight = QWeight::upload(ctx, &label, format, rows, cols, &bytes)?;
            let shapes = members
                .into_iter()
                .map(|(n, h)| (n, h.rows, h.cols, h.dims))
                .collect();
            self.fused.insert(names[0].clone(), (weight, shapes));
        } else {
            for (n, h) in members {
                self.upload_alone(ctx, n, h)?;
            }
        }
        Ok(())
    }

    /// Uploads a held member as a matrix of its own.
    fn upload_alone(&mut self, ctx: &GpuContext, name: String, h: Held) -> Result<()> {
        let weight = QWeight::upload(ctx, &name, h.format, h.rows, h.cols, &h.bytes)?;
        self.matrices.insert(name, (weight, h.dims));
        Ok(())
    }

    /// The matrices of a group (member names under `prefix`, each `rows[i] x cols`): the
    /// fused one, or each member placed at its columns of the shared output row.
    fn group(
        &mut self,
        ctx: &GpuContext,
        prefix: &str,
        group: &[&str],
        rows: &[usize],
        cols: usize,
    ) -> Result<Vec<QWeight>> {
        let names: Vec<String> = group.iter().map(|m| format!("{prefix}{m}")).collect();
        if let Some((weight, shapes)) = self.fused.remove(&names[0]) {
            for ((name, r, c, dims), &want) in shapes.into_iter().zip(rows) {
                check_shape(&name, (r, c), (want, cols), dims)?;
            }
            return Ok(vec![weight]);
        }
        // A group that never completed (a member is missing) or could not fuse.
        for n in &names {
            if let Some(h) = self.held.remove(n) {
                self.upload_alone(ctx, n.clone(), h)?;
            }
        }
        let width = rows.iter().sum();
        let mut offset = 0;
        let mut out = Vec::with_capacity(names.len());
        for (n, &r) in names.iter().zip(rows) {
            out.push(self.matrix(n, cols, r)?.placed(offset, width));
            offset += r;
        }
        Ok(out)
    }

    fn has(&self, name: &str) -> bool {
        self.matrices.contains_key(name)
            || self.vectors.contains_key(name)
            || self.held.contains_key(name)
    }

    fn missing(name: &str) -> GpuError {
        GpuError::from(ModelError::MissingTensor { name: name.into() })
    }

    /// Matrix `name`, which must be `rows x cols` (ggml dims `[cols, rows]`).
    fn matrix(&mut self, name: &str, cols: usize, rows: usize) -> Result<QWeight> {
        let (weight, dims) = self
            .matrices
            .remove(name)
            .ok_or_else(|| Self::missing(name))?;
        check_shape(name, (weight.rows, weight.cols), (rows, cols), dims)?;
        Ok(weight)
    }

    /// Vector `name` of `len` values, on the host.
    fn host_vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>> {
        let (values, dims) = self
            .vectors
            .remove(name)
            .ok_or_else(|| Self::missing(name))?;
        if values.len() != len {
            return Err(GpuError::from(ModelError::WrongTensorShape {
                tensor: name.into(),
                expected: vec![len as u64],
                found: dims,
            }));
        }
        Ok(values)
    }

    /// Vector `name` of `len` values, uploaded as f32.
    fn vector(&mut self, ctx: &GpuContext, name: &str, len: usize) -> Result<Tensor> {
        Tensor::from_f32(ctx, name, &self.host_vector(name, len)?, DType::F32)
    }
}

impl GpuWeights {
    /// Checks that `cfg` describes a model this forward pass implements.
    pub fn check_config(cfg: &ModelConfig) -> Result<()> {
        let unsupported = |reason: &str| {
            GpuError::from(ModelError::BadMetadata {
                key: "general.architecture".into(),
                reason: format!("{reason}: not implemented by the Llama forward pass"),
            })
        };
        if cfg.head_dim_v != cfg.head_dim {
            return Err(unsupported("value heads wider or narrower than key heads"));
        }
        Ok(())
    }

    /// Uploads every weight `cfg` needs from `file`, tensor by tensor in file order (the
    /// order a download delivers them), then assembles them.
    pub fn upload(ctx: &GpuContext, file: &GgufFile<'_>, cfg: &ModelConfig) -> Result<Self> {
        Self::check_config(cfg)?;
        let mut staged = StagedWeights::new();
        let mut infos: Vec<&TensorInfo> = file.header.tensors.iter().collect();
        infos.sort_by_key(|i| i.offset);
        for info in infos {
            staged.accept(ctx, info, file.bytes_of(info)?)?;
        }
        Self::assemble(ctx, staged, cfg)
    }

    /// Wires staged tensors into the weights `cfg` needs, checking every shape. A tensor the
    /// model needs and `staged` lacks is [`ModelError::MissingTensor`].
    pub fn assemble(
        ctx: &GpuContext,
        mut staged: StagedWeights,
        cfg: &ModelConfig,
    ) -> Result<Self> {
        Self::check_config(cfg)?;
        let st = &mut staged;
        let rope_freqs = if st.has(tensors::ROPE_FREQS) {
            Some(st.vector(ctx, tensors::ROPE_FREQS, cfg.rope_dim / 2)?)
        } else {
            None
        };
        let e = cfg.n_embd;
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            let n = |s: &str| format!("blk.{l}.{s}");
            let biases = if cfg.qkv_bias {
                let mut all = st.host_vector(&LayerTensor::AttnQBias.name(l), cfg.q_dim())?;
                all.extend(st.host_vector(&LayerTensor::AttnKBias.name(l), cfg.k_dim())?);
                all.extend(st.host_vector(&LayerTensor::AttnVBias.name(l), cfg.v_dim())?);
                Some(all)
            } else {
                None
            };
            let norms = if cfg.qk_norm {
                Some((
                    st.host_vector(&LayerTensor::AttnQNorm.name(l), cfg.head_dim)?,
                    st.host_vector(&LayerTensor::AttnKNorm.name(l), cfg.head_dim)?,
                ))
            } else {
                None
            };
            let head_extras = HeadExtras::pack(
                ctx,
                &n("head extras"),
                biases.as_deref(),
                norms.as_ref().map(|(q, k)| (&q[..], &k[..])),
            )?;
            let attn_post_norm = if cfg.post_norms {
                Some(st.vector(ctx, &LayerTensor::PostAttentionNorm.name(l), e)?)
            } else {
                None
            };
            let ffn_post_norm = if cfg.post_norms {
                Some(st.vector(ctx, &LayerTensor::PostFfwNorm.name(l), e)?)
            } else {
                None
            };
            let prefix = n("");
            let qkv = st.group(
                ctx,
                &prefix,
                &QKV,
                &[cfg.q_dim(), cfg.k_dim(), cfg.v_dim()],
                e,
            )?;
            let mut gu = st
                .group(ctx, &prefix, &GATE_UP, &[cfg.n_ff, cfg.n_ff], e)?
                .into_iter();
            let gate_up = match (gu.next(), gu.next()) {
                (Some(gate), Some(up)) => GateUp::Split(gate, up),
                (Some(fused), None) => GateUp::Fused(fused),
                _ => return Err(StagedWeights::missing(&LayerTensor::FfnGate.name(l))),
            };
            layers.push(GpuLayer {
                attn_norm: st.vector(ctx, &LayerTensor::AttnNorm.name(l), e)?,
                qkv,
                head_extras,
                wo: st.matrix(&LayerTensor::AttnOutput.name(l), cfg.q_dim(), e)?,
                attn_post_norm,
                ffn_norm: st.vector(ctx, &LayerTensor::FfnNorm.name(l), e)?,
                gate_up,
                w_down: st.matrix(&LayerTensor::FfnDown.name(l), cfg.n_ff, e)?,
                ffn_post_norm,
            });
        }
        Ok(Self {
            token_embd: st.matrix(tensors::TOKEN_EMBD, e, cfg.vocab_size)?,
            layers,
            output_norm: st.vector(ctx, tensors::OUTPUT_NORM, e)?,
            rope_freqs,
            output: if cfg.tied_embeddings {
                None
            } else {
                Some(st.matrix(tensors::OUTPUT, e, cfg.vocab_size)?)
            },
        })
    }

    /// The output head (tied or not).
    pub fn head(&self) -> &QWeight {
        self.output.as_ref().unwrap_or(&self.token_embd)
    }

    /// Bytes of matrices one decoded token reads: every layer matrix and the output head
    /// (the embedding lookup reads one row, which is negligible).
    pub fn bytes_per_token(&self) -> u64 {
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| {
                l.qkv
                    .iter()
                    .chain(l.gate_up.matrices())
                    .chain([&l.wo, &l.w_down])
                    .map(|w| w.bytes())
                    .sum::<u64>()
            })
            .sum();
        layers + self.head().bytes()
    }
}
