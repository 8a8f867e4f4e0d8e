//! Drivers of `shaders/ops_bn.wgsl`: batch norm 2-D per channel over (N, H, W), training forward
//! (batch statistics, running statistics updated in place), eval forward and backward.

use super::{dummy, expect_shape, groups};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, dispatch_grid, uniform, MAX_GROUPS_PER_DIM};
use crate::gpu::{Category, GpuContext};
pub use crate::reference::nn_train::{BN_EPS, BN_MOMENTUM};

/// Mirror of `BnParams` in `shaders/ops_bn.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BnGpuParams {
    /// Channels.
    pub c: u32,
    /// `H · W`.
    pub hw: u32,
    /// Values per channel, `N · H · W`.
    pub m: u32,
    /// All values, `N · C · H · W`.
    pub total: u32,
    /// Running-statistics momentum.
    pub momentum: f32,
    /// Variance epsilon.
    pub eps: f32,
    /// `m / (m − 1)`: biased to unbiased variance.
    pub unbias: f32,
    /// Padding.
    pub _a: u32,
}

/// The learned parameters and running statistics of one batch norm layer, `[C]` each.
#[derive(Clone, Copy, Debug)]
pub struct BnParams<'a> {
    /// Scale.
    pub gamma: &'a Tensor,
    /// Shift.
    pub beta: &'a Tensor,
    /// Running mean (updated in place by the training forward).
    pub running_mean: &'a Tensor,
    /// Running unbiased variance (updated in place by the training forward).
    pub running_var: &'a Tensor,
}

/// What the training forward saves besides its input: the batch statistics, `[C]` each.
#[derive(Clone, Debug)]
pub struct BnSaved {
    /// Batch mean per channel.
    pub mean: Tensor,
    /// `1 / sqrt(biased batch variance + eps)` per channel.
    pub invstd: Tensor,
}

fn geometry(x: &Tensor, what: &str) -> Result<([usize; 4], BnGpuParams)> {
    let &[n, c, h, w] = x.shape() else {
        return Err(FdsrError::InvalidTensor(format!("{what} needs an [N, C, H, W] tensor, got {:?}", x.shape())));
    };
    if n * h * w < 2 || c == 0 || c > MAX_GROUPS_PER_DIM as usize {
        return Err(FdsrError::InvalidTensor(format!(
            "{what} needs at least 2 values per channel and 1..=65535 channels, got {:?}",
            x.shape()
        )));
    }
    groups(x.numel(), what)?;
    let m = n * h * w;
    let p = BnGpuParams {
        c: c as u32,
        hw: (h * w) as u32,
        m: m as u32,
        total: x.numel() as u32,
        momentum: BN_MOMENTUM,
        eps: BN_EPS,
        unbias: (m as f64 / (m as f64 - 1.0)) as f32,
        _a: 0,
    };
    Ok(([n, c, h, w], p))
}

fn check_params(bn: &BnParams, c: usize) -> Result<()> {
    expect_shape(bn.gamma, &[c], "batch norm gamma")?;
    expect_shape(bn.beta, &[c], "batch norm beta")?;
    expect_shape(bn.running_mean, &[c], "batch norm running mean")?;
    expect_shape(bn.running_var, &[c], "batch norm running var")
}

fn apply(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
    s: &BnSaved,
    p: &BnGpuParams,
) -> Result<Tensor> {
    let y = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let (pb, d1, d2) = (uniform(ctx, "bn_apply", p), dummy(ctx), dummy(ctx));
    let bufs = [
        &pb,
        x.buffer(),
        bn.beta.buffer(),
        bn.gamma.buffer(),
        s.mean.buffer(),
        s.invstd.buffer(),
        d1.buffer(),
        d2.buffer(),
        y.buffer(),
    ];
    dispatch(ctx, enc, "ops_bn", "bn_apply", &bufs, groups(x.numel(), "batch norm")?)?;
    Ok(y)
}

/// Records `entry` (batch or running statistics into `s`) over `grid`.
#[allow(clippy::too_many_arguments)]
fn record_stats(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    entry: &'static str,
    x: &Tensor,
    bn: &BnParams,
    s: &BnSaved,
    p: &BnGpuParams,
    grid: [u32; 3],
) -> Result<()> {
    let (pb, d) = (uniform(ctx, entry, p), dummy(ctx));
    let (rm, rv) = (bn.running_mean.buffer(), bn.running_var.buffer());
    let bufs = [&pb, x.buffer(), x.buffer(), x.buffer(), s.mean.buffer(), s.invstd.buffer(), rm, rv, d.buffer()];
    dispatch_grid(ctx, enc, "ops_bn", entry, &bufs, grid)
}

fn saved(ctx: &GpuContext, c: usize) -> BnSaved {
    BnSaved {
        mean: Tensor::uninit(ctx, &[c], Category::SavedActivations),
        invstd: Tensor::uninit(ctx, &[c], Category::SavedActivations),
    }
}

/// Training forward of `x [N, C, H, W]`: batch mean and biased variance per channel (fixed-order
/// reduction), `y = gamma·(x − mean)·invstd + beta`; running mean and unbiased variance move by
/// [`BN_MOMENTUM`]. The caller keeps `x` for the backward.
pub fn batchnorm_train_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
) -> Result<(Tensor, BnSaved)> {
    let ([_, c, _, _], p) = geometry(x, "batch norm")?;
    check_params(bn, c)?;
    let s = saved(ctx, c);
    record_stats(ctx, enc, "bn_stats", x, bn, &s, &p, [c as u32, 1, 1])?;
    let y = apply(ctx, enc, x, bn, &s, &p)?;
    Ok((y, s))
}

/// Eval forward of `x [N, C, H, W]` with the running statistics (left unchanged).
pub fn batchnorm_eval_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
) -> Result<Tensor> {
    let &[_, c, _, _] = x.shape() else {
        return Err(FdsrError::InvalidTensor(format!("batch norm needs an [N, C, H, W] tensor, got {:?}", x.shape())));
    };
    check_params(bn, c)?;
    groups(x.numel(), "batch norm")?;
    let p = BnGpuParams {
        c: c as u32,
        hw: (x.shape()[2] * x.shape()[3]) as u32,
        m: 1,
        total: x.numel() as u32,
        momentum: BN_MOMENTUM,
        eps: BN_EPS,
        unbias: 1.0,
        _a: 0,
    };
    let s = BnSaved {
        mean: Tensor::uninit(ctx, &[c], Category::Workspace),
        invstd: Tensor::uninit(ctx, &[c], Category::Workspace),
    };
    let (gx, gy) = crate::gpu::kernel::grid(groups(c, "batch norm")?);
    record_stats(ctx, enc, "bn_eval_stats", x, bn, &s, &p, [gx, gy, 1])?;
    apply(ctx, enc, x, bn, &s, &p)
}

/// Backward of [`batchnorm_train_forward`] from its input `x`, the saved statistics and `gamma`:
/// writes `dgamma = Σ dy·x̂` and `dbeta = Σ dy` (`[C]` each, overwritten) and returns
/// `dx = gamma·invstd·(dy − mean(dy) − x̂·mean(dy·x̂))`.
#[allow(clippy::too_many_arguments)]
pub fn batchnorm_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    x: &Tensor,
    saved: &BnSaved,
    gamma: &Tensor,
    dgamma: &Tensor,
    dbeta: &Tensor,
) -> Result<Tensor> {
    let ([_, c, _, _], p) = geometry(x, "batch norm backward")?;
    expect_shape(dy, x.shape(), "batch norm backward dy")?;
    for (t, what) in [
        (&saved.mean, "saved mean"),
        (&saved.invstd, "saved invstd"),
        (gamma, "gamma"),
        (dgamma, "dgamma"),
        (dbeta, "dbeta"),
    ] {
        expect_shape(t, &[c], &format!("batch norm backward {what}"))?;
    }
    let (pb, d) = (uniform(ctx, "bn_backward", &p), dummy(ctx));
    let dx = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let (m, is) = (saved.mean.buffer(), saved.invstd.buffer());
    let bufs = [&pb, x.buffer(), dy.buffer(), gamma.buffer(), m, is, dgamma.buffer(), dbeta.buffer(), d.buffer()];
    dispatch_grid(ctx, enc, "ops_bn", "bn_backward_reduce", &bufs, [c as u32, 1, 1])?;
    let bufs = [&pb, x.buffer(), dy.buffer(), gamma.buffer(), m, is, dgamma.buffer(), dbeta.buffer(), dx.buffer()];
    dispatch(ctx, enc, "ops_bn", "bn_backward_dx", &bufs, groups(x.numel(), "batch norm backward")?)?;
    Ok(dx)
}
