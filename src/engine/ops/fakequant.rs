//! Driver of `shaders/fakequant.wgsl`: per-tensor min/max fake quantization (quantize, then
//! dequantize into a new tensor) on the GPU, the mirror of `reference::fakequant::fake_quant`.
//! Everything is recorded into the encoder; nothing is read back.

use super::groups;
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform};
use crate::gpu::{Category, GpuContext};

/// Mirror of `FqParams` in `shaders/fakequant.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct FqParams {
    n: u32,
    bits: u32,
    seed: u32,
    stream: u32,
    stochastic: u32,
    partials: u32,
    _a: u32,
    _b: u32,
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
    if !(2..=16).contains(&bits) {
        return Err(FdsrError::InvalidConfig(format!("fake quantization to {bits} bits: expected 2..=16")));
    }
    let n = x.numel();
    if n == 0 {
        return Err(FdsrError::InvalidTensor(format!("fake quantization of an empty tensor {:?}", x.shape())));
    }
    let g = groups(n, "fake quantization")?;
    let partials = n.div_ceil(super::WG).min(MAX_PARTIALS);
    let (seed, stream) = rng.unwrap_or((0, 0));
    let p = FqParams {
        n: n as u32,
        bits,
        seed,
        stream,
        stochastic: u32::from(rng.is_some()),
        partials: partials as u32,
        ..Default::default()
    };
    let y = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let scratch = Tensor::uninit(ctx, &[2 * MAX_PARTIALS + 2], Category::Workspace);
    let pb = uniform(ctx, "fake_quant", &p);
    let binds = [&pb, x.buffer(), y.buffer(), scratch.buffer()];
    dispatch(ctx, enc, "fakequant", "minmax_partial", &binds, partials as u32)?;
    dispatch(ctx, enc, "fakequant", "minmax_final", &binds, 1)?;
    dispatch(ctx, enc, "fakequant", "fake_quant", &binds, g)?;
    Ok(y.with_sign(x.sign().clone()))
}
