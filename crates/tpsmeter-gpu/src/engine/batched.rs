//! [`Batched`]: what a server's scheduler needs of a model that runs several sequences at
//! once, so one scheduler drives the GPU model ([`GpuModel`]) and the CPU one
//! ([`CpuModel`]). Native only: a step here blocks until its ids are sampled.

use crate::cpu::CpuModel;
use crate::error::Result;
use tpsmeter_model::generate::ModelShape;
use tpsmeter_model::sample::SamplerConfig;

use crate::runtime::GpuModel;
use crate::runtime::StepPart;

/// A model with slots, each a sequence with its own cache and sampler (positions per slot and
/// the logits' width are its [`ModelShape`]).
pub trait Batched: ModelShape {
    /// Sequences held at once.
    fn slots(&self) -> usize;
    /// The tokens whose keys and values `slot` holds.
    fn slot_history(&self, slot: usize) -> &[u32];
    /// Makes `slot` hold positions `..start` only and sample with `sampling` from then on
    /// ([`GpuModel::rewind_slot`]).
    fn rewind_slot(&mut self, slot: usize, start: usize, sampling: &SamplerConfig) -> Result<()>;
    /// Runs one step of `parts` and returns the sampled ids, in the order of the parts that
    /// sample ([`GpuModel::submit_mixed`]).
    fn step_slots(&mut self, parts: &[StepPart<'_>]) -> Result<Vec<u32>>;
    /// Forgets what every slot holds.
    fn forget_slots(&mut self);
}

impl Batched for GpuModel {
    fn slots(&self) -> usize {
        GpuModel::slots(self)
    }

    fn slot_history(&self, slot: usize) -> &[u32] {
        GpuModel::slot_history(self, slot)
    }

    fn rewind_slot(&mut self, slot: usize, start: usize, sampling: &SamplerConfig) -> Result<()> {
        GpuModel::rewind_slot(self, slot, start, sampling)
    }

    fn step_slots(&mut self, parts: &[StepPart<'_>]) -> Result<Vec<u32>> {
        if self.submit_mixed(parts)? == 0 {
            return Ok(Vec::new());
        }
        self.read_slots_blocking()
    }

    fn forget_slots(&mut self) {
        GpuModel::forget_slots(self)
    }
}

impl Batched for CpuModel {
    fn slots(&self) -> usize {
        CpuModel::slots(self)
    }

    fn slot_history(&self, slot: usize) -> &[u32] {
        CpuModel::slot_history(self, slot)
    }

    fn rewind_slot(&mut self, slot: usize, start: usize, sampling: &SamplerConfig) -> Result<()> {
        Ok(CpuModel::rewind_slot(self, slot, start, sampling)?)
    }

    fn step_slots(&mut self, parts: &[StepPart<'_>]) -> Result<Vec<u32>> {
        Ok(self.step_parts(parts)?)
    }

    fn forget_slots(&mut self) {
        CpuModel::forget_slots(self)
    }
}
