//! Drivers of `shaders/ops_bn.wgsl`: batch norm 2-D per channel over (N, H, W), training forward
//! (batch statistics, running statistics updated in place), eval forward and backward, each with
//! an optional fused ReLU (the forward writes the ReLU output and its 1-bit mask in the same pass
//! as the normalization; the backward applies the mask as it reads the gradient).
//!
//! The per-channel reductions are split into chunks ([`chunking`]) so that a channel's N·H·W
//! values spread over many workgroups: a partial per (chunk, channel), then a fixed-order
//! combination per channel (forward: its own pass; backward: inside each workgroup of the dx
//! pass). Forward: 3 passes (statistics partials, combination, normalize + ReLU + mask);
//! backward: 2 (partials, dx with dgamma and dbeta). With one chunk per channel (a CPU adapter,
//! or a small tensor) the combinations are skipped: 2 passes forward, 1 backward.

use super::{dummy, expect_shape, groups, reducing, BitMask};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch_with, uniform, Bindable, MAX_GROUPS_PER_DIM};
use crate::gpu::Constants;
use crate::gpu::{Category, GpuContext};
pub use crate::reference::nn_train::{BN_EPS, BN_MOMENTUM};

/// Fewest values per chunk (8 per invocation).
pub const MIN_CHUNK: usize = 2048;
/// Most chunks per channel (the combining workgroup takes one per invocation).
pub const MAX_CHUNKS: usize = 256;

/// The shader, with workgroup-memory and with subgroup sums.
const SHADER: [&str; 2] = ["ops_bn", "ops_bn_sg"];

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
    /// 1 when a ReLU is fused (`bn_apply`: 2 re-applies a saved ReLU mask, 3 also clamps at 0).
    pub relu: u32,
    /// Values per chunk of a channel.
    pub chunk: u32,
    /// Chunks per channel.
    pub chunks: u32,
    /// Padding.
    pub _a: [u32; 2],
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
    /// How far the training forward moves the running statistics toward the batch's, in (0, 1]:
    /// [`BN_MOMENTUM`] while training; `b / (seen + b)` for a batch of `b` images after `seen`
    /// makes them the image-weighted mean over a recalibration's batches.
    pub momentum: f32,
}

/// What the training forward saves besides its input: the batch statistics and the scale.
#[derive(Clone, Debug)]
pub struct BnSaved {
    /// `[3, C]`: the batch mean per channel, `1 / sqrt(biased batch variance + eps)`, and gamma
    /// as the forward used it.
    pub stats: Tensor,
}

/// `(chunk, chunks)`: how the `m` values of each of `c` channels are cut for the split
/// reductions — enough chunks for about `target` workgroups (`GpuContext::target_groups`), none
/// under [`MIN_CHUNK`] values, at most [`MAX_CHUNKS`].
pub fn chunking(c: usize, m: usize, target: usize) -> (usize, usize) {
    let most = (m / MIN_CHUNK).clamp(1, MAX_CHUNKS);
    let wanted = target.div_ceil(c.max(1)).clamp(1, most);
    let chunk = m.max(1).div_ceil(wanted);
    (chunk, m.max(1).div_ceil(chunk))
}

fn geometry(ctx: &GpuContext, x: &Tensor, what: &str) -> Result<BnGpuParams> {
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
    let (chunk, chunks) = chunking(c, m, ctx.target_groups());
    Ok(BnGpuParams {
        c: c as u32,
        hw: (h * w) as u32,
        m: m as u32,
        total: x.numel() as u32,
        eps: BN_EPS,
        unbias: (m as f64 / (m as f64 - 1.0)) as f32,
        chunk: chunk as u32,
        chunks: chunks as u32,
        ..Default::default()
    })
}

fn check_params(bn: &BnParams, c: usize) -> Result<()> {
    expect_shape(bn.gamma, &[c], "batch norm gamma")?;
    expect_shape(bn.beta, &[c], "batch norm beta")?;
    expect_shape(bn.running_mean, &[c], "batch norm running mean")?;
    expect_shape(bn.running_var, &[c], "batch norm running var")?;
    if !(bn.momentum > 0.0 && bn.momentum <= 1.0) {
        return Err(FdsrError::InvalidConfig(format!("batch norm momentum {} is not in (0, 1]", bn.momentum)));
    }
    Ok(())
}

/// Binds `x, src0..3, dst0..2` (`None`: an unused slot) and records `entry` over `grid`.
fn record(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    entry: &'static str,
    p: &BnGpuParams,
    reads: [Option<&Tensor>; 5],
    writes: [Option<&Tensor>; 3],
    grid: [u32; 3],
) -> Result<()> {
    record_with(ctx, enc, (entry, &[]), p, reads, writes, grid)
}

/// [`record`] with the entry's override constants.
fn record_with(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (entry, constants): (&'static str, Constants<'_>),
    p: &BnGpuParams,
    reads: [Option<&Tensor>; 5],
    writes: [Option<&Tensor>; 3],
    grid: [u32; 3],
) -> Result<()> {
    let pb = uniform(ctx, entry, p);
    // An unused read slot takes the first bound read (never written by this pass); each unused
    // writable slot its own scratch word (WebGPU forbids aliasing a writable binding).
    let filler: &dyn Bindable = match reads.iter().flatten().next() {
        Some(t) => *t,
        None => &pb,
    };
    let scratch: Vec<Tensor> = writes.iter().filter(|w| w.is_none()).map(|_| dummy(ctx)).collect();
    let mut spare = scratch.iter();
    let mut bufs: Vec<&dyn Bindable> = vec![&pb];
    bufs.extend(reads.iter().map(|r| r.map_or(filler, |t| t as &dyn Bindable)));
    for w in writes {
        bufs.push(match w.or_else(|| spare.next()) {
            Some(t) => t,
            None => filler,
        });
    }
    dispatch_with(ctx, enc, (reducing(ctx, SHADER), entry, constants), &bufs, grid)
}

fn elementwise(p: &BnGpuParams) -> [u32; 3] {
    let (x, y) = crate::gpu::kernel::grid((p.total as usize).div_ceil(super::WG) as u32);
    [x, y, 1]
}

/// `y = gamma·(x − mean)·invstd + beta` (then ReLU and its mask, counted in `mask_category`,
/// when `p.relu`).
fn apply(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (x, bn, s): (&Tensor, &BnParams, &BnSaved),
    p: &BnGpuParams,
    mask_category: Category,
) -> Result<(Tensor, Option<BitMask>)> {
    let y = Tensor::uninit(ctx, x.shape(), Category::Workspace);
    let mask = (p.relu != 0)
        .then(|| BitMask { words: Tensor::uninit(ctx, &[x.numel().div_ceil(32)], mask_category), len: x.numel() });
    let reads = [Some(x), None, Some(bn.beta), Some(&s.stats), None];
    let writes = [Some(&y), mask.as_ref().map(|m| &m.words), None];
    record(ctx, enc, "bn_apply", p, reads, writes, elementwise(p))?;
    Ok((y, mask))
}

/// Training forward of `x [N, C, H, W]`: batch mean and biased variance per channel,
/// `y = gamma·(x − mean)·invstd + beta`, and with `relu` also `y = max(y, 0)` and the mask of
/// its positive values (as [`super::relu_forward`] keeps it); running mean and unbiased variance
/// move by `bn.momentum`. The caller keeps `x` for the backward.
pub fn batchnorm_train_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
    relu: bool,
) -> Result<(Tensor, BnSaved, Option<BitMask>)> {
    batch_forward(ctx, enc, x, bn, relu, Category::SavedActivations)
}

/// The training forward's output alone, for a recalibration pass ([`BnParams::momentum`]):
/// normalized by the batch statistics, running statistics moved, nothing kept (workspace, as
/// an evaluation's outputs).
pub fn batchnorm_recalibrate_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
    relu: bool,
) -> Result<Tensor> {
    Ok(batch_forward(ctx, enc, x, bn, relu, Category::Workspace)?.0)
}

fn batch_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
    relu: bool,
    category: Category,
) -> Result<(Tensor, BnSaved, Option<BitMask>)> {
    let mut p = geometry(ctx, x, "batch norm")?;
    p.relu = u32::from(relu);
    p.momentum = bn.momentum;
    let c = p.c as usize;
    check_params(bn, c)?;
    let s = BnSaved { stats: Tensor::uninit(ctx, &[3, c], category) };
    let finish = [Some(&s.stats), Some(bn.running_mean), Some(bn.running_var)];
    let gamma: Option<&Tensor> = Some(bn.gamma);
    if p.chunks == 1 {
        // One chunk per channel: the partial pass writes the statistics itself.
        let reads = [Some(x), None, None, None, gamma];
        record(ctx, enc, "bn_stats_partial", &p, reads, finish, [1, p.c, 1])?;
    } else {
        let part = Tensor::uninit(ctx, &[c * p.chunks as usize, 2], Category::Workspace);
        let reads = [Some(x), None, None, None, None];
        record(ctx, enc, "bn_stats_partial", &p, reads, [Some(&part), None, None], [p.chunks, p.c, 1])?;
        let reads = [None, Some(&part), None, None, gamma];
        record(ctx, enc, "bn_stats_finish", &p, reads, finish, [p.c, 1, 1])?;
    }
    let (y, mask) = apply(ctx, enc, (x, bn, &s), &p, category)?;
    Ok((y, s, mask))
}

/// The output of a training forward with the fused ReLU, again, from its input `x` (exact or
/// decoded), what that forward saved, its `beta` and its ReLU `mask`: `gamma·(x − mean)·invstd +
/// beta` where the mask is set, else exactly 0 (`clamp`: the kept values also clamped at 0).
/// From an exact `x` it is the forward's output bit for bit. Written over `x` when no other
/// tensor shares its buffer.
pub fn batchnorm_reapply(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: Tensor,
    (saved, beta): (&BnSaved, &Tensor),
    mask: &BitMask,
    clamp: bool,
) -> Result<Tensor> {
    let mut p = geometry(ctx, &x, "batch norm re-apply")?;
    let c = p.c as usize;
    expect_shape(beta, &[c], "batch norm re-apply beta")?;
    expect_shape(&saved.stats, &[3, c], "batch norm re-apply saved statistics")?;
    if !mask.covers(x.numel()) {
        return Err(FdsrError::InvalidTensor(format!(
            "batch norm re-apply of {:?} with a ReLU mask of {} values",
            x.shape(),
            mask.len
        )));
    }
    p.relu = if clamp { 3 } else { 2 };
    let in_place = x.is_unique();
    let y = if in_place { x.clone() } else { Tensor::uninit(ctx, x.shape(), Category::Workspace) };
    let reads = [(!in_place).then_some(&x), None, Some(&mask.words), Some(&saved.stats), Some(beta)];
    let constants = [("IN_PLACE", if in_place { 1.0 } else { 0.0 })];
    record_with(ctx, enc, ("bn_apply", &constants), &p, reads, [Some(&y), None, None], elementwise(&p))?;
    Ok(y)
}

/// Eval forward of `x [N, C, H, W]` with the running statistics (left unchanged), then ReLU
/// when `relu`.
pub fn batchnorm_eval_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    bn: &BnParams,
    relu: bool,
) -> Result<Tensor> {
    let &[_, c, h, w] = x.shape() else {
        return Err(FdsrError::InvalidTensor(format!("batch norm needs an [N, C, H, W] tensor, got {:?}", x.shape())));
    };
    check_params(bn, c)?;
    groups(x.numel(), "batch norm")?;
    let p = BnGpuParams {
        c: c as u32,
        hw: (h * w) as u32,
        m: 1,
        total: x.numel() as u32,
        eps: BN_EPS,
        relu: u32::from(relu),
        ..Default::default()
    };
    let s = BnSaved { stats: Tensor::uninit(ctx, &[3, c], Category::Workspace) };
    let (gx, gy) = crate::gpu::kernel::grid(groups(c, "batch norm")?);
    let reads: [Option<&Tensor>; 5] = [None, Some(bn.running_mean), Some(bn.running_var), None, Some(bn.gamma)];
    record(ctx, enc, "bn_eval_stats", &p, reads, [Some(&s.stats), None, None], [gx, gy, 1])?;
    Ok(apply(ctx, enc, (x, bn, &s), &p, Category::Workspace)?.0)
}

/// Backward of [`batchnorm_train_forward`] from its input `x`, what it saved and, when the ReLU
/// was fused, its `mask` (the gradient `g` is `dy` where the mask is set): writes
/// `dgamma = Σ g·x̂` and `dbeta = Σ g` (`[C]` each, overwritten) and returns
/// `dx = gamma·invstd·(g − mean(g) − x̂·mean(g·x̂))`, written over `dy` when no other tensor
/// shares its buffer.
pub fn batchnorm_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (dy, x): (Tensor, &Tensor),
    saved: &BnSaved,
    mask: Option<&BitMask>,
    (dgamma, dbeta): (&Tensor, &Tensor),
) -> Result<Tensor> {
    let mut p = geometry(ctx, x, "batch norm backward")?;
    let c = p.c as usize;
    expect_shape(&dy, x.shape(), "batch norm backward dy")?;
    expect_shape(&saved.stats, &[3, c], "batch norm backward saved statistics")?;
    expect_shape(dgamma, &[c], "batch norm backward dgamma")?;
    expect_shape(dbeta, &[c], "batch norm backward dbeta")?;
    if let Some(m) = mask {
        if !m.covers(x.numel()) {
            return Err(FdsrError::InvalidTensor(format!(
                "batch norm backward of {:?} with a ReLU mask of {} values",
                x.shape(),
                m.len
            )));
        }
        p.relu = 1;
    }
    let (mk, st) = (mask.map(|m| &m.words), Some(&saved.stats));
    let grid = [p.chunks, p.c, 1];
    // With one chunk per channel the dx pass sums its channel itself.
    let part = (p.chunks > 1).then(|| Tensor::uninit(ctx, &[c * p.chunks as usize, 2], Category::Workspace));
    if let Some(part) = &part {
        let reads = [Some(x), Some(&dy), mk, st, None];
        record(ctx, enc, "bn_backward_partial", &p, reads, [Some(part), None, None], grid)?;
    }
    // dy held by nobody else is overwritten with dx: one activation-sized buffer fewer at the
    // peak of a block's backward (same arithmetic, same bits).
    let in_place = dy.is_unique();
    let dx = if in_place { dy.clone() } else { Tensor::uninit(ctx, x.shape(), Category::Workspace) };
    let reads = [Some(x), (!in_place).then_some(&dy), mk, st, part.as_ref()];
    let writes = [Some(&dx), Some(dgamma), Some(dbeta)];
    let constants = [("IN_PLACE", if in_place { 1.0 } else { 0.0 })];
    record_with(ctx, enc, ("bn_backward_dx", &constants), &p, reads, writes, grid)?;
    Ok(dx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_spread_channels_over_many_workgroups() {
        // cnn at batch 128: 32 channels of 128·32·32 values, 128 channels of 128·8·8.
        let target = crate::gpu::GPU_TARGET_GROUPS;
        for (c, m) in [(32, 131072), (64, 32768), (128, 8192), (16, 131072), (8, 2 * 1024)] {
            let (chunk, chunks) = chunking(c, m, target);
            assert!(chunks <= MAX_CHUNKS && chunk * chunks >= m && chunk * (chunks - 1) < m, "{c}x{m}");
            assert!(chunk >= MIN_CHUNK.min(m), "{c}x{m}: chunk {chunk}");
            assert!(c * chunks >= target.min(c * (m / MIN_CHUNK).max(1)), "{c}x{m}: {chunks} chunks");
            assert_eq!(chunking(c, m, 1), (m, 1), "a CPU adapter keeps one chunk per channel");
        }
        assert_eq!(chunking(32, 131072, target), (2048, 64));
        assert_eq!(chunking(3, 10, target), (10, 1), "a tiny channel is one chunk");
    }
}
