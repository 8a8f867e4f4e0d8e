//! Layers: each op's forward and backward together, with the state it saves made explicit
//! (through [`SavedActivations`](super::saved::SavedActivations)) and its parameters visited by name.

use super::gate::Gate;
use super::gemm::{self, ConvGeom};
use super::ops;
use super::param::{Init, Param};
pub use super::pass::Pass;
use super::precision::{DfqPlan, QuantPlan};
use super::quantized;
use super::saved::{Derivation, Kind};
use super::tensor::{Sign, Tensor};
use crate::data::synthetic::SplitMix64;
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;

/// A layer of a model.
pub trait Layer {
    /// Records the forward pass of `x`; in training it saves what backward needs.
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor>;
    /// Records the backward pass: writes parameter gradients and returns the input gradient
    /// (`None` where nothing upstream needs it, i.e. below the first conv).
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>>;
    /// Visits parameters and buffers.
    fn visit(&self, f: &mut dyn FnMut(&Param));
    /// Visits parameters and buffers mutably.
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param));
    /// Visits the DFQ gate slot of every conv layer inside, with the layer's name.
    fn gates(&mut self, _f: &mut dyn FnMut(&str, &mut Option<Gate>)) {}
}

/// Hands out layer ids (saved-activation keys) and seeds parameters while a model is built.
pub struct Builder<'a> {
    /// The device.
    pub ctx: &'a GpuContext,
    /// Initialization randomness.
    pub rng: SplitMix64,
    next_id: usize,
}

impl<'a> Builder<'a> {
    /// A builder whose parameters are drawn from `seed`.
    pub fn new(ctx: &'a GpuContext, seed: u64) -> Self {
        Builder { ctx, rng: SplitMix64::new(seed), next_id: 0 }
    }
    pub(crate) fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }
}

/// 2-D convolution without bias (each is followed by batch norm), square kernel.
pub struct Conv2d {
    id: usize,
    name: String,
    weight: Param,
    stride: usize,
    pad: usize,
    input_grad: bool,
    geom: Option<ConvGeom>,
    /// The quantized weight of the last training forward (its backward uses it).
    wq: Option<Tensor>,
    /// The DFQ gate picking this layer's bits per input, where the policy has one.
    gate: Option<Gate>,
}

impl Conv2d {
    /// `cin → cout` with a `k×k` kernel; `input_grad = false` for a first layer.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        b: &mut Builder<'_>,
        name: &str,
        cin: usize,
        cout: usize,
        k: usize,
        stride: usize,
        pad: usize,
        input_grad: bool,
    ) -> Result<Self> {
        let init = Init::KaimingNormal { fan_in: cin * k * k };
        let weight = Param::trainable(b.ctx, format!("{name}.weight"), &[cout, cin, k, k], init, true, &mut b.rng)?;
        let (id, name) = (b.id(), name.to_string());
        Ok(Conv2d { id, name, weight, stride, pad, input_grad, geom: None, wq: None, gate: None })
    }

    /// The backward of a gated layer (it has an input gradient): output gradient and input at
    /// the gate's bits, then the gate's own gradient from the input gradient.
    fn gated_backward(
        &mut self,
        p: &mut Pass<'_>,
        dy: Tensor,
        (gate, q, d, _): &mut Gated<'_>,
    ) -> Result<Option<Tensor>> {
        let g = self.geom.ok_or_else(|| no_forward(&self.weight.name))?;
        let stream = q.backward_bits(&self.name).map_or(0, |b| b.1);
        let x = p.load(self.id, 0)?;
        let dy = gate.output_grad(p, &dy, d, (q.seed, stream))?;
        let xq = gate.requantize(p, &x, d)?;
        gemm::conv2d_backward_weight(p.ctx, p.enc, &g, &dy, &xq, self.weight.grad()?)?;
        let w = self.wq.as_ref().unwrap_or(&self.weight.value);
        let dx = gemm::conv2d_backward_data(p.ctx, p.enc, &g, &dy, w)?;
        gate.backward(p, &x, &dx, d)?;
        Ok(Some(dx))
    }

    /// The gate (taken out) and its plan, where the step's plan gates this layer.
    fn take_gate<'q>(&mut self, p: &Pass<'q>) -> Result<Option<Gated<'q>>> {
        let Some((q, (d, stream))) = p.quant.and_then(|q| Some((q, q.gate(&self.name)?))) else { return Ok(None) };
        let gate = self.gate.take().ok_or_else(|| {
            FdsrError::InvalidConfig(format!(
                "{} is gated by the precision policy but has no gate installed",
                self.name
            ))
        })?;
        Ok(Some((gate, q, d, stream)))
    }
}

/// A conv layer's gate with the step's plan, its options and its noise stream.
type Gated<'q> = (Gate, &'q QuantPlan, &'q DfqPlan, u32);

impl Layer for Conv2d {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        // The conv's input and what is saved for backward: both the quantized input, except
        // under a gate, which quantizes per input and keeps the raw input (backward quantizes
        // it again, and the gate's gradient needs it).
        let (input, keep, wq) = match self.take_gate(p)? {
            Some((mut gate, q, d, stream)) => {
                let xq = gate.forward(p, &x, d, (q.seed, stream));
                self.gate = Some(gate);
                (xq?, x, quantized::weight(p, &self.name, &self.weight.value)?)
            }
            None => {
                let (xq, wq) = quantized::forward_operands(p, &self.name, x, &self.weight.value)?;
                (xq.clone(), xq, wq)
            }
        };
        let w = wq.as_ref().unwrap_or(&self.weight.value);
        let y = gemm::conv2d_forward(p.ctx, p.enc, &input, w, None, self.stride, self.pad)?;
        if p.train {
            self.wq = wq;
            self.geom = Some(ConvGeom::of(keep.shape(), self.weight.value.shape(), self.stride, self.pad)?);
            p.save(self.id, 0, &format!("{}.input", self.name), &keep, Kind::Dense)?;
        }
        Ok(y)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        if let Some(mut gated) = self.take_gate(p)? {
            let dx = self.gated_backward(p, dy, &mut gated);
            self.gate = Some(gated.0);
            return dx;
        }
        let g = self.geom.ok_or_else(|| no_forward(&self.weight.name))?;
        let x = p.load(self.id, 0)?;
        let dy = quantized::output_grad(p, &self.name, dy)?;
        gemm::conv2d_backward_weight(p.ctx, p.enc, &g, &dy, &x, self.weight.grad()?)?;
        drop(x);
        if !self.input_grad {
            return Ok(None);
        }
        let w = self.wq.as_ref().unwrap_or(&self.weight.value);
        Ok(Some(gemm::conv2d_backward_data(p.ctx, p.enc, &g, &dy, w)?))
    }
    fn gates(&mut self, f: &mut dyn FnMut(&str, &mut Option<Gate>)) {
        f(&self.name, &mut self.gate);
    }
    fn visit(&self, f: &mut dyn FnMut(&Param)) {
        f(&self.weight);
        if let Some(g) = &self.gate {
            g.visit(f);
        }
    }
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        f(&mut self.weight);
        if let Some(g) = &mut self.gate {
            g.visit_mut(f);
        }
    }
}

fn no_forward(name: &str) -> FdsrError {
    FdsrError::InvalidConfig(format!("backward of {name} before any training forward"))
}

/// Fully connected layer with bias: `[batch, inputs] → [batch, outputs]`.
pub struct Linear {
    id: usize,
    name: String,
    weight: Param,
    bias: Param,
    /// A never-recycled buffer of ones for the bias gradient (written once, so no upload can
    /// race with recorded work) and its length.
    ones: Option<(wgpu::Buffer, usize)>,
    /// The quantized weight of the last training forward (its backward uses it).
    wq: Option<Tensor>,
}

impl Linear {
    /// `inputs → outputs`, PyTorch's default initialization.
    pub fn new(b: &mut Builder<'_>, name: &str, inputs: usize, outputs: usize) -> Result<Self> {
        let init = Init::Uniform { fan_in: inputs };
        let weight = Param::trainable(b.ctx, format!("{name}.weight"), &[outputs, inputs], init, true, &mut b.rng)?;
        let bias = Param::trainable(b.ctx, format!("{name}.bias"), &[outputs], init, false, &mut b.rng)?;
        Ok(Linear { id: b.id(), name: name.to_string(), weight, bias, ones: None, wq: None })
    }
}

impl Layer for Linear {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        let (x, wq) = quantized::forward_operands(p, &self.name, x, &self.weight.value)?;
        let w = wq.as_ref().unwrap_or(&self.weight.value);
        let y = gemm::linear_forward(p.ctx, p.enc, &x, w, Some(&self.bias.value))?;
        if p.train {
            self.wq = wq;
            p.save(self.id, 0, &format!("{}.input", self.name), &x, Kind::Dense)?;
        }
        Ok(y)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        let x = p.load(self.id, 0)?;
        let dy = quantized::output_grad(p, &self.name, dy)?;
        gemm::linear_backward_weight(p.ctx, p.enc, &dy, &x, self.weight.grad()?)?;
        let rows = dy.shape()[0];
        if self.ones.as_ref().is_none_or(|o| o.1 < rows) {
            let ones =
                crate::gpu::kernel::storage_init(p.ctx, "linear ones", bytemuck::cast_slice(&vec![1.0f32; rows]));
            self.ones = Some((ones, rows));
        }
        let (ones, len) = self.ones.as_ref().ok_or_else(|| no_forward(&self.bias.name))?;
        gemm::column_sums(p.ctx, p.enc, &dy, (ones, *len), self.bias.grad()?)?;
        let w = self.wq.as_ref().unwrap_or(&self.weight.value);
        Ok(Some(gemm::linear_backward_data(p.ctx, p.enc, &dy, w)?))
    }
    fn visit(&self, f: &mut dyn FnMut(&Param)) {
        f(&self.weight);
        f(&self.bias);
    }
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        f(&mut self.weight);
        f(&mut self.bias);
    }
}

/// Batch normalization over (N, H, W) per channel, with running statistics for evaluation, and
/// optionally the ReLU that follows it fused into the same passes (its mask saved under its own
/// slot, as a separate ReLU layer would).
pub struct BatchNorm2d {
    id: usize,
    name: String,
    gamma: Param,
    beta: Param,
    running_mean: Param,
    running_var: Param,
    stats: Option<ops::BnSaved>,
    /// The fused ReLU's saved-activation slot and the length of its last mask.
    relu: Option<(usize, usize)>,
}

impl BatchNorm2d {
    /// Over `channels` channels: gamma 1, beta 0, running mean 0 and variance 1.
    pub fn new(b: &mut Builder<'_>, name: &str, channels: usize) -> Result<Self> {
        let c = [channels];
        Ok(BatchNorm2d {
            id: b.id(),
            name: name.to_string(),
            gamma: Param::trainable(b.ctx, format!("{name}.weight"), &c, Init::Constant(1.0), false, &mut b.rng)?,
            beta: Param::trainable(b.ctx, format!("{name}.bias"), &c, Init::Constant(0.0), false, &mut b.rng)?,
            running_mean: Param::buffer(b.ctx, format!("{name}.running_mean"), &c, 0.0)?,
            running_var: Param::buffer(b.ctx, format!("{name}.running_var"), &c, 1.0)?,
            stats: None,
            relu: None,
        })
    }

    /// Batch norm followed by a ReLU, in one layer (the same slots as the two layers).
    pub fn with_relu(b: &mut Builder<'_>, name: &str, channels: usize) -> Result<Self> {
        let mut bn = Self::new(b, name, channels)?;
        bn.relu = Some((b.id(), 0));
        Ok(bn)
    }
}

impl Layer for BatchNorm2d {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        let bn = ops::BnParams {
            gamma: &self.gamma.value,
            beta: &self.beta.value,
            running_mean: &self.running_mean.value,
            running_var: &self.running_var.value,
            momentum: p.recalibrate.unwrap_or(ops::BN_MOMENTUM),
        };
        if !p.train {
            return match p.recalibrate {
                None => ops::batchnorm_eval_forward(p.ctx, p.enc, &x, &bn, self.relu.is_some()),
                Some(_) => ops::batchnorm_recalibrate_forward(p.ctx, p.enc, &x, &bn, self.relu.is_some()),
            };
        }
        let (y, stats, mask) = ops::batchnorm_train_forward(p.ctx, p.enc, &x, &bn, self.relu.is_some())?;
        p.save(self.id, 0, &format!("{}.input", self.name), &x, Kind::Dense)?;
        self.stats = Some(stats.clone());
        match (&mut self.relu, mask) {
            (Some((id, len)), Some(mask)) => {
                *len = mask.len;
                p.save(*id, 0, &format!("relu{id}.mask"), &mask.words, Kind::Packed)?;
                let beta = self.beta.value.clone();
                let d = Derivation { source: (self.id, 0), saved: stats, beta, mask: ((*id, 0), mask.len), pool: None };
                p.saved.derivable(&y, d);
                Ok(y.with_sign(Sign::Masked(Box::new(mask.words))))
            }
            _ => Ok(y),
        }
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        // Kept (not taken): the probe runs a second backward of the same forward.
        let stats = self.stats.clone().ok_or_else(|| no_forward(&self.gamma.name))?;
        let mask = match self.relu {
            Some((id, len)) => Some(ops::BitMask { words: p.load(id, 0)?, len }),
            None => None,
        };
        let x = p.load(self.id, 0)?;
        let grads = (self.gamma.grad()?, self.beta.grad()?);
        let dx = ops::batchnorm_backward(p.ctx, p.enc, (dy, &x), &stats, mask.as_ref(), grads)?;
        Ok(Some(dx))
    }
    fn visit(&self, f: &mut dyn FnMut(&Param)) {
        [&self.gamma, &self.beta, &self.running_mean, &self.running_var].into_iter().for_each(f);
    }
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        [&mut self.gamma, &mut self.beta, &mut self.running_mean, &mut self.running_var].into_iter().for_each(f);
    }
}
