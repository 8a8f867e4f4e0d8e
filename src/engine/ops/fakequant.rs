//! Driver of `shaders/fakequant.wgsl`: per-tensor min/max fake quantization (quantize, then
//! dequantize into a new tensor) on the GPU, the mirror of `reference::fakequant::fake_quant`.
//! Everything is recorded into the encoder; nothing is read back. The bits are one for the
//! tensor or, for DFQ, per input from a gate's choices; the range can be reused ([`min_max`]).

use super::groups;
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::{Category, GpuContext};

/// Mirror of `FqParams` in `shaders/fakequant.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FqParams {
    n: u32,
    bits: u32,
    seed: u32,
    stream: u32,
    stochastic: u32,
    partials: u32,
    per_sample: u32,
    _b: u32,
    opts: [u32; 4],
}

/// The bits of a fake quantization.
#[derive(Clone, Copy, Debug)]
pub enum Bits<'a> {
    /// One width for the whole tensor.
    All(u32),
    /// Input `n` (the first axis) at `opts[choice[n]]`; `choice` holds u32 words.
    PerInput {
        /// The option of each input.
        choice: &'a Tensor,
        /// Bits of each option (at most 4).
        opts: &'a [u32],
    },
}

/// Most workgroups of the min/max pass (its partials fit one workgroup of the final pass).
const MAX_PARTIALS: usize = 256;

/// `x` quantized to `bits` (2..=16) over its own range and dequantized, as a new tensor with
/// `x`'s shape and sign knowledge (quantization keeps values ≥ 0 and exact zeros of a
/// non-negative tensor). `rng = Some((seed, stream))` rounds stochastically, `None` to nearest.
pub fn fake_quant(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bits: u32,
    rng: Option<(u32, u32)>,
) -> Result<Tensor> {
    let range = min_max(ctx, enc, x)?;
    quantize(ctx, enc, x, &range, Bits::All(bits), rng)
}

/// The range of `x` (its min and max at values 512 and 513 of a new scratch tensor).
pub fn min_max(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: &Tensor) -> Result<Tensor> {
    let n = check(x)?;
    let partials = n.div_ceil(super::WG).min(MAX_PARTIALS);
    let p = FqParams { n: n as u32, partials: partials as u32, bits: 2, ..Default::default() };
    let scratch = Tensor::uninit(ctx, &[2 * MAX_PARTIALS + 2], Category::Workspace);
    let pb = uniform(ctx, "fake_quant range", &p);
    let y = super::dummy(ctx);
    let binds: [&dyn Bindable; 5] = [&pb, &x, &y, &scratch, &x];
    dispatch(ctx, enc, "fakequant", "minmax_partial", &binds, partials as u32)?;
    dispatch(ctx, enc, "fakequant", "minmax_final", &binds, 1)?;
    Ok(scratch)
}

fn check(x: &Tensor) -> Result<usize> {
    let n = x.numel();
    if n == 0 {
        return Err(FdsrError::InvalidTensor(format!("fake quantization of an empty tensor {:?}", x.shape())));
    }
    Ok(n)
}

fn check_bits(bits: u32) -> Result<u32> {
    if !(2..=16).contains(&bits) {
        return Err(FdsrError::InvalidConfig(format!("fake quantization to {bits} bits: expected 2..=16")));
    }
    Ok(bits)
}

/// `x` quantized over `range` (from [`min_max`] of `x` or of the tensor it was computed from)
/// at `bits` and dequantized, as a new tensor like [`fake_quant`]'s.
pub fn quantize(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    range: &Tensor,
    bits: Bits<'_>,
    rng: Option<(u32, u32)>,
) -> Result<Tensor> {
    let n = check(x)?;
    let g = groups(n, "fake quantization")?;
    let (seed, stream) = rng.unwrap_or((0, 0));
    let mut p = FqParams { n: n as u32, seed, stream, stochastic: u32::from(rng.is_some()), ..Default::default() };
    let choice = match bits {
        Bits::All(b) => {
            p.bits = check_bits(b)?;
            x
        }
        Bits::PerInput { choice, opts } => {
            let inputs = x.shape()[0];
            if opts.is_empty() || opts.len() > 4 || choice.numel() != inputs {
                return Err(FdsrError::InvalidConfig(format!(
                    "per-input fake quantization of {:?}: {} options and {} choices",
                    x.shape(),
                    opts.len(),
                    choice.numel()
                )));
            }
            for (o, &b) in p.opts.iter_mut().zip(opts) {
                *o = check_bits(b)?;
            }
            p.per_sample = (n / inputs) as u32;
            choice
        }
    };
    let y = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let pb = uniform(ctx, "fake_quant", &p);
    let binds: [&dyn Bindable; 5] = [&pb, &x, &y, &range, &choice];
    dispatch(ctx, enc, "fakequant", "fake_quant", &binds, g)?;
    Ok(y.with_sign(x.sign().clone()))
}
