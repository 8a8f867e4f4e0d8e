//! [`Pass`]: what a layer, a gate and the quantized-compute helpers need while one forward or
//! backward is recorded. It sits below all three so that none of them imports another for it.

use super::precision::QuantPlan;
use super::saved::{Kind, SavedActivations};
use super::tensor::Tensor;
use crate::error::Result;
use crate::gpu::GpuContext;

/// Everything a layer needs while recording one forward or backward.
pub struct Pass<'a> {
    /// The device.
    pub ctx: &'a GpuContext,
    /// Where the work is recorded.
    pub enc: &'a mut wgpu::CommandEncoder,
    /// The saved-activation store.
    pub saved: &'a mut SavedActivations,
    /// Training (batch statistics, save for backward) or evaluation.
    pub train: bool,
    /// Quantized-compute simulation of this step (`None`: full precision).
    pub quant: Option<&'a QuantPlan>,
    /// In an evaluation pass, `Some(m)` recalibrates batch norm: each normalizes with its batch
    /// statistics and moves its running statistics by `m` (`Trainer::recalibrate_bn`).
    pub recalibrate: Option<f32>,
}

impl<'a> Pass<'a> {
    /// A training pass (batch statistics, saves for the backward).
    pub fn training(
        ctx: &'a GpuContext,
        enc: &'a mut wgpu::CommandEncoder,
        saved: &'a mut SavedActivations,
        quant: Option<&'a QuantPlan>,
    ) -> Self {
        Pass { ctx, enc, saved, train: true, quant, recalibrate: None }
    }

    /// Keeps `t` for the backward of `layer` in `slot` and records its encoding at once, so the
    /// fp32 form lives no longer than the op that saved it needs it.
    pub fn save(&mut self, layer: usize, slot: u8, name: &str, t: &Tensor, kind: Kind) -> Result<()> {
        self.saved.save(layer, slot, name, t, kind);
        self.saved.flush(self.ctx, self.enc)
    }

    /// Takes back what `layer` saved in `slot`, decoded into this pass where it was compressed.
    pub fn load(&mut self, layer: usize, slot: u8) -> Result<Tensor> {
        self.saved.load(self.ctx, self.enc, layer, slot)
    }
}
