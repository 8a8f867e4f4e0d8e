//! Quantized-compute simulation at the conv and linear layers (FracTrain style): their input
//! activation and (unless the policy says `weights=0`) weight are fake-quantized to the step's
//! forward bits (nearest rounding), their output gradient to its backward bits (stochastic
//! rounding); gradients pass straight through. Layers with a DFQ gate take their bits per input
//! from it (`engine::gate`).

use super::ops;
use super::pass::Pass;
use super::tensor::Tensor;
use crate::error::Result;

/// The forward operands of layer `name`: `x` and, where quantized, a quantized copy of `w`
/// (`None`: use `w` itself).
pub fn forward_operands(p: &mut Pass<'_>, name: &str, x: Tensor, w: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
    let Some(q) = p.quant else { return Ok((x, None)) };
    let Some(bits) = q.forward_bits(name) else { return Ok((x, None)) };
    let xq = ops::fake_quant(p.ctx, p.enc, &x, bits, None)?;
    Ok((xq, weight(p, name, w)?))
}

/// A quantized copy of the weight `w` of layer `name` at its forward bits, `None` where weights
/// stay fp32 (full precision or `weights=0`).
pub fn weight(p: &mut Pass<'_>, name: &str, w: &Tensor) -> Result<Option<Tensor>> {
    match p.quant.filter(|q| q.weights).and_then(|q| q.forward_bits(name)) {
        Some(bits) => Ok(Some(ops::fake_quant(p.ctx, p.enc, w, bits, None)?)),
        None => Ok(None),
    }
}

/// The output gradient of layer `name` as its backward computes with it.
pub fn output_grad(p: &mut Pass<'_>, name: &str, dy: Tensor) -> Result<Tensor> {
    match p.quant.and_then(|q| q.backward_bits(name).map(|b| (b, q.seed))) {
        Some(((bits, stream), seed)) => ops::fake_quant(p.ctx, p.enc, &dy, bits, Some((seed, stream))),
        None => Ok(dy),
    }
}
