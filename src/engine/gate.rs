//! The DFQ gate of one conv layer (FracTrain dynamic fractional quantization): its parameters
//! (`{layer}.gate.weight [K, C]`, `{layer}.gate.bias [K]`, zero at the start: every option
//! equally likely), the count of inputs it sent to each option, and what its training forward
//! leaves for the backward. The gate reads the channel means of the layer's input (its gradient
//! does not flow back into them) and picks, per input, the option whose bits quantize that
//! input and, in backward, its output gradient.

use super::ops::{self, Bits, GateState};
use super::param::{Init, Param};
use super::pass::Pass;
use super::precision::DfqPlan;
use super::tensor::Tensor;
use crate::data::synthetic::SplitMix64;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

/// A gate and its step state.
pub struct Gate {
    weight: Param,
    bias: Param,
    /// Training inputs sent to each option since the last read (u32 words).
    pub counts: Tensor,
    /// The choices and the input's range of the last training forward.
    step: Option<(GateState, Tensor)>,
}

impl Gate {
    /// A gate of layer `layer` over `channels` input channels with `options` bit options.
    pub fn new(ctx: &GpuContext, layer: &str, channels: usize, options: usize) -> Result<Gate> {
        let zero = Init::Constant(0.0);
        let rng = &mut SplitMix64::new(0);
        let weight = Param::trainable(ctx, format!("{layer}.gate.weight"), &[options, channels], zero, false, rng)?;
        let bias = Param::trainable(ctx, format!("{layer}.gate.bias"), &[options], zero, false, rng)?;
        let counts = Tensor::from_slice(ctx, &vec![0.0; options], &[options], Category::Workspace)?;
        Ok(Gate { weight, bias, counts, step: None })
    }

    /// Picks the options of the inputs of `x` (with Gumbel noise from `rng` in training) and
    /// returns `x` quantized per input at their forward bits (nearest rounding).
    pub fn forward(&mut self, p: &mut Pass<'_>, x: &Tensor, d: &DfqPlan, rng: (u32, u32)) -> Result<Tensor> {
        let noise = p.train.then_some(rng);
        let (w, b) = (&self.weight.value, &self.bias.value);
        let st = ops::gate_forward(p.ctx, p.enc, x, w, b, &self.counts, d, noise)?;
        let range = ops::min_max(p.ctx, p.enc, x)?;
        let xq = ops::quantize(p.ctx, p.enc, x, &range, Bits::PerInput { choice: &st.choice, opts: &d.fw }, None)?;
        if p.train {
            self.step = Some((st, range));
        }
        Ok(xq)
    }

    fn step(&self) -> Result<&(GateState, Tensor)> {
        self.step
            .as_ref()
            .ok_or_else(|| FdsrError::InvalidConfig(format!("backward of {} before any forward", self.weight.name)))
    }

    /// The quantized input of the last training forward again, from its raw input `x`.
    pub fn requantize(&self, p: &mut Pass<'_>, x: &Tensor, d: &DfqPlan) -> Result<Tensor> {
        let (st, range) = self.step()?;
        ops::quantize(p.ctx, p.enc, x, range, Bits::PerInput { choice: &st.choice, opts: &d.fw }, None)
    }

    /// The output gradient `dy` at each input's backward bits (stochastic rounding from `rng`).
    pub fn output_grad(&self, p: &mut Pass<'_>, dy: &Tensor, d: &DfqPlan, rng: (u32, u32)) -> Result<Tensor> {
        let (st, _) = self.step()?;
        let range = ops::min_max(p.ctx, p.enc, dy)?;
        ops::quantize(p.ctx, p.enc, dy, &range, Bits::PerInput { choice: &st.choice, opts: &d.bw }, Some(rng))
    }

    /// Writes the gate's gradients from the raw input `x` and the gradient `dx` of its
    /// quantized input.
    pub fn backward(&mut self, p: &mut Pass<'_>, x: &Tensor, dx: &Tensor, d: &DfqPlan) -> Result<()> {
        let (st, range) = self.step()?;
        ops::gate_backward(p.ctx, p.enc, x, dx, range, st, d, self.weight.grad()?, self.bias.grad()?)
    }

    /// Visits the gate's parameters.
    pub fn visit(&self, f: &mut dyn FnMut(&Param)) {
        f(&self.weight);
        f(&self.bias);
    }

    /// Visits the gate's parameters mutably.
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        f(&mut self.weight);
        f(&mut self.bias);
    }
}
