//! Drivers of `shaders/ops_elementwise.wgsl`: ReLU with a 1-bit saved mask, the mask-aware decode
//! of a ReLU output, the residual add with its gradient accumulation, and the residual add fused
//! with the ReLU that follows it.

use super::{dummy, expect_shape, groups};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, dispatch_with, grid, uniform, Bindable};
use crate::gpu::{Category, GpuContext};

/// Mirror of `EwParams` in `shaders/ops_elementwise.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EwParams {
    /// Number of values.
    pub n: u32,
    /// Number of mask words (`ceil(n / 32)`).
    pub words: u32,
    /// Padding.
    pub _a: u32,
    /// Padding.
    pub _b: u32,
}

/// What ReLU saves for its backward: one bit per value (bit `i` of word `j` is set when value
/// `32j + i` was > 0), u32 words stored in a tensor's buffer.
#[derive(Clone, Debug)]
pub struct BitMask {
    /// `ceil(len / 32)` u32 words (seen as a tensor of as many f32 slots).
    pub words: Tensor,
    /// Number of values the mask covers.
    pub len: usize,
}

impl BitMask {
    /// Whether it is a whole mask of `n` values.
    pub fn covers(&self, n: usize) -> bool {
        self.len == n && self.words.numel() == n.div_ceil(32)
    }
}

fn params(n: usize, what: &str) -> Result<(EwParams, u32)> {
    let g = groups(n, what)?;
    Ok((EwParams { n: n as u32, words: n.div_ceil(32) as u32, ..Default::default() }, g))
}

/// `y = max(x, 0)` and the mask of positive values (in [`Category::SavedActivations`]).
pub fn relu_forward(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: &Tensor) -> Result<(Tensor, BitMask)> {
    let (p, _) = params(x.numel(), "relu")?;
    let y = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let words = Tensor::uninit(ctx, &[p.words as usize], Category::SavedActivations);
    let pb = uniform(ctx, "relu_forward", &p);
    let g = (p.words as usize).div_ceil(super::WG) as u32;
    dispatch(ctx, enc, "ops_elementwise", "relu_forward", &[&pb, &x, &x, &y, &words], g)?;
    Ok((y, BitMask { words, len: x.numel() }))
}

/// The mask of positive values of `x` alone (for a tensor known to be ≥ 0, its zero mask).
pub fn positive_mask(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: &Tensor) -> Result<BitMask> {
    let (p, _) = params(x.numel(), "positive mask")?;
    let words = Tensor::uninit(ctx, &[p.words as usize], Category::SavedActivations);
    let (pb, d) = (uniform(ctx, "positive_mask", &p), dummy(ctx));
    let g = (p.words as usize).div_ceil(super::WG) as u32;
    let binds: [&dyn Bindable; 5] = [&pb, &x, &x, &d, &words];
    dispatch(ctx, enc, "ops_elementwise", "positive_mask", &binds, g)?;
    Ok(BitMask { words, len: x.numel() })
}

/// `dx = dy` where the mask is set, else 0 (`dy` holds as many values as the mask), written over
/// `dy` when no other tensor shares it.
pub fn relu_backward(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, dy: Tensor, mask: &BitMask) -> Result<Tensor> {
    masked(ctx, enc, "relu_backward", dy, mask)
}

/// `max(x, 0)` where the mask is set, else exactly 0: the mask-aware decode of a ReLU output
/// (its zeros come back exact and no decoded value is negative), over `x` when it is unique.
pub fn mask_clamp(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: Tensor, mask: &BitMask) -> Result<Tensor> {
    masked(ctx, enc, "mask_clamp", x, mask)
}

/// Runs the elementwise `entry` of `x` under `mask`: over `x` in place when no other tensor
/// shares its buffer (one activation-sized buffer fewer, the same values), else into a new tensor.
fn masked(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    entry: &'static str,
    x: Tensor,
    mask: &BitMask,
) -> Result<Tensor> {
    if !mask.covers(x.numel()) {
        return Err(FdsrError::InvalidTensor(format!(
            "{entry} of {:?} with a mask of {} values in {:?} words",
            x.shape(),
            mask.len,
            mask.words.shape()
        )));
    }
    let (p, g) = params(x.numel(), entry)?;
    let (pb, d) = (uniform(ctx, entry, &p), dummy(ctx));
    let (gx, gy) = grid(g);
    if x.is_unique() {
        let bufs: [&dyn Bindable; 5] = [&pb, &mask.words, &mask.words, &x, &d];
        dispatch_with(ctx, enc, ("ops_elementwise", entry, &[("IN_PLACE", 1.0)]), &bufs, [gx, gy, 1])?;
        return Ok(x);
    }
    let out = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    dispatch(ctx, enc, "ops_elementwise", entry, &[&pb, &x, &mask.words, &out, &d], g)?;
    Ok(out)
}

/// `a + b` (equal shapes), e.g. a residual connection.
pub fn add(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    expect_shape(b, a.shape(), "add: b")?;
    let (p, g) = params(a.numel(), "add")?;
    let out = Tensor::uninit(ctx, a.shape(), Category::Workspace);
    let (pb, d) = (uniform(ctx, "add", &p), dummy(ctx));
    dispatch(ctx, enc, "ops_elementwise", "add", &[&pb, &a, &b, &out, &d], g)?;
    Ok(out)
}

/// `y = max(a + b, 0)` (equal shapes) and the mask of its positive values, in one pass: what
/// [`add`] then [`relu_forward`] give.
pub fn add_relu(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, a: &Tensor, b: &Tensor) -> Result<(Tensor, BitMask)> {
    expect_shape(b, a.shape(), "add_relu: b")?;
    let (p, g) = params(a.numel(), "add_relu")?;
    let y = Tensor::uninit(ctx, a.shape(), Category::Workspace);
    let words = Tensor::uninit(ctx, &[p.words as usize], Category::SavedActivations);
    let pb = uniform(ctx, "add_relu", &p);
    let binds: [&dyn Bindable; 5] = [&pb, &a, &b, &y, &words];
    dispatch(ctx, enc, "ops_elementwise", "add_relu", &binds, g)?;
    Ok((y, BitMask { words, len: a.numel() }))
}

/// `acc += x` (equal shapes, distinct buffers), e.g. summing the gradients of a tensor used twice.
pub fn add_into(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, acc: &Tensor, x: &Tensor) -> Result<()> {
    expect_shape(x, acc.shape(), "add_into: x")?;
    if acc.overlaps(x) {
        return Err(FdsrError::InvalidTensor(format!(
            "add_into: acc {:?} and x share one buffer (use a copy)",
            acc.shape()
        )));
    }
    let (p, g) = params(acc.numel(), "add_into")?;
    let (pb, d) = (uniform(ctx, "add_into", &p), dummy(ctx));
    dispatch(ctx, enc, "ops_elementwise", "add_into", &[&pb, &x, &x, &acc, &d], g)
}
