//! Drivers of `shaders/ops_optim.wgsl`: SGD (momentum, Nesterov, L2 weight decay) and AdamW steps
//! over one tensor, in place, with PyTorch's semantics — one parameter, or the optimizer's arena
//! of all of them in one dispatch (weight decay on a leading range only).

use super::{dummy, expect_shape, groups};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform};
use crate::gpu::GpuContext;
pub use crate::reference::nn_train::{AdamParams, SgdParams};

/// Mirror of `OptimParams` in `shaders/ops_optim.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OptimParams {
    /// Number of values.
    pub n: u32,
    /// 1 for Nesterov momentum.
    pub nesterov: u32,
    /// 1 when SGD keeps a momentum buffer.
    pub use_buf: u32,
    /// Values `[0, decayed)` take weight decay `wd`, the rest none.
    pub decayed: u32,
    /// Learning rate.
    pub lr: f32,
    /// SGD momentum.
    pub momentum: f32,
    /// Weight decay.
    pub wd: f32,
    /// Adam β1.
    pub beta1: f32,
    /// Adam β2.
    pub beta2: f32,
    /// Adam ε.
    pub eps: f32,
    /// `1 − β1^step`.
    pub bc1: f32,
    /// `sqrt(1 − β2^step)`.
    pub bc2_sqrt: f32,
}

/// One SGD step: `g = grad + wd·param; buf = momentum·buf + g;
/// param −= lr·(nesterov ? g + momentum·buf : buf)`. `momentum_buf` (zeros before the first
/// step) may be `None` only when `momentum` is 0.
pub fn sgd_step(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    param: &Tensor,
    grad: &Tensor,
    momentum_buf: Option<&Tensor>,
    h: SgdParams,
) -> Result<()> {
    sgd_step_split(ctx, enc, (param, grad, momentum_buf), h, param.numel())
}

/// [`sgd_step`] with weight decay on the first `decayed` values only (the others as with a
/// weight decay of 0, bit for bit): one dispatch over many parameters laid out in one arena.
pub fn sgd_step_split(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (param, grad, momentum_buf): (&Tensor, &Tensor, Option<&Tensor>),
    h: SgdParams,
    decayed: usize,
) -> Result<()> {
    expect_shape(grad, param.shape(), "sgd gradient")?;
    if let Some(b) = momentum_buf {
        expect_shape(b, param.shape(), "sgd momentum buffer")?;
    } else if h.momentum != 0.0 {
        return Err(FdsrError::InvalidConfig(format!("sgd momentum {} needs a momentum buffer", h.momentum)));
    }
    let p = OptimParams {
        n: param.numel() as u32,
        nesterov: u32::from(h.nesterov),
        use_buf: u32::from(momentum_buf.is_some()),
        decayed: decayed.min(param.numel()) as u32,
        lr: h.lr,
        momentum: h.momentum,
        wd: h.weight_decay,
        ..Default::default()
    };
    let g = groups(param.numel(), "sgd")?;
    let (pb, d1, d2) = (uniform(ctx, "sgd_step", &p), dummy(ctx), dummy(ctx));
    let m = momentum_buf.unwrap_or(&d1);
    dispatch(ctx, enc, "ops_optim", "sgd_step", &[&pb, param, grad, m, &d2], g)
}

/// One AdamW step: `param −= lr·wd·param`, then Adam with bias-corrected moments `m`, `v`
/// (zeros before step 1).
pub fn adamw_step(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    param: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    h: AdamParams,
) -> Result<()> {
    adamw_step_split(ctx, enc, [param, grad, m, v], h, param.numel())
}

/// [`adamw_step`] with weight decay on the first `decayed` values only (see [`sgd_step_split`]).
pub fn adamw_step_split(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    [param, grad, m, v]: [&Tensor; 4],
    h: AdamParams,
    decayed: usize,
) -> Result<()> {
    expect_shape(grad, param.shape(), "adamw gradient")?;
    expect_shape(m, param.shape(), "adamw first moment")?;
    expect_shape(v, param.shape(), "adamw second moment")?;
    if h.step == 0 {
        return Err(FdsrError::InvalidConfig("adamw step is 1-based, got 0".into()));
    }
    let step = i32::try_from(h.step).unwrap_or(i32::MAX);
    let p = OptimParams {
        n: param.numel() as u32,
        decayed: decayed.min(param.numel()) as u32,
        lr: h.lr,
        wd: h.weight_decay,
        beta1: h.beta1,
        beta2: h.beta2,
        eps: h.eps,
        bc1: (1.0 - f64::from(h.beta1).powi(step)) as f32,
        bc2_sqrt: (1.0 - f64::from(h.beta2).powi(step)).sqrt() as f32,
        ..Default::default()
    };
    let g = groups(param.numel(), "adamw")?;
    let pb = uniform(ctx, "adamw_step", &p);
    dispatch(ctx, enc, "ops_optim", "adamw_step", &[&pb, param, grad, m, v], g)
}
