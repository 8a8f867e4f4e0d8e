//! Drivers of `shaders/ops_loss.wgsl`: softmax cross-entropy averaged over the batch, its
//! gradient, and an accumulator of loss and hits that stays on the GPU across steps.

use super::{dummy, expect_shape, groups, reducing, upload_words};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, dispatch_grid, uniform, Bindable};
use crate::gpu::{Category, GpuContext};

/// Largest batch (rows) the loss accepts.
pub const MAX_BATCH: usize = 4096;
/// The shader, with workgroup-memory and with subgroup sums.
const SHADER: [&str; 2] = ["ops_loss", "ops_loss_sg"];

/// Mirror of `LossParams` in `shaders/ops_loss.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LossParams {
    /// Batch size (rows).
    pub b: u32,
    /// Classes (columns).
    pub c: u32,
    /// `b · c`.
    pub total: u32,
    /// Padding.
    pub _a: u32,
}

/// Class labels on the GPU, one u32 per example.
#[derive(Clone, Debug)]
pub struct Labels {
    /// The labels (u32 words seen as a tensor of as many f32 slots).
    pub words: Tensor,
    /// Number of labels.
    pub len: usize,
    /// Largest label (checked against the number of classes).
    pub max: u32,
}

/// What the cross-entropy forward produces.
#[derive(Clone, Debug)]
pub struct LossOut {
    /// `[1]`: mean loss over the batch.
    pub loss: Tensor,
    /// `[1]`: number of rows whose first argmax is the label, as f32.
    pub correct: Tensor,
    /// `[B, C]`: softmax probabilities (what the backward needs).
    pub probs: Tensor,
}

/// Uploads `labels` as u32 words (before the next submitted work).
pub fn upload_labels(ctx: &GpuContext, labels: &[u8]) -> Labels {
    let words: Vec<u32> = labels.iter().map(|&l| u32::from(l)).collect();
    let max = words.iter().copied().max().unwrap_or(0);
    Labels { words: upload_words(ctx, &words, Category::Workspace), len: labels.len(), max }
}

fn params(logits: &[usize], labels: &Labels, what: &str) -> Result<LossParams> {
    let &[b, c] = logits else {
        return Err(FdsrError::InvalidTensor(format!("{what} needs [B, C] logits, got {logits:?}")));
    };
    if b == 0 || c == 0 || b > MAX_BATCH || labels.len != b || labels.max as usize >= c {
        return Err(FdsrError::InvalidTensor(format!(
            "{what} of logits {logits:?} (1..={MAX_BATCH} rows) with {} labels up to {}",
            labels.len, labels.max
        )));
    }
    groups(b * c, what)?;
    Ok(LossParams { b: b as u32, c: c as u32, total: (b * c) as u32, _a: 0 })
}

/// Softmax cross-entropy of `logits [B, C]` against `labels`, mean over the batch (stable
/// log-sum-exp per row, then the rows summed by one workgroup in a fixed order).
pub fn cross_entropy_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    logits: &Tensor,
    labels: &Labels,
) -> Result<LossOut> {
    let p = params(logits.shape(), labels, "cross-entropy")?;
    let b = p.b as usize;
    let probs = Tensor::uninit(ctx, logits.shape(), Category::Workspace);
    let rows = Tensor::uninit(ctx, &[b], Category::Workspace);
    let hits = Tensor::uninit(ctx, &[b], Category::Workspace);
    let loss = Tensor::uninit(ctx, &[1], Category::Workspace);
    let correct = Tensor::uninit(ctx, &[1], Category::Workspace);
    let pb = uniform(ctx, "ce", &p);
    let bufs: [&dyn Bindable; 6] = [&pb, &logits, &labels.words, &probs, &rows, &hits];
    dispatch(ctx, enc, reducing(ctx, SHADER), "ce_rows", &bufs, groups(b, "cross-entropy")?)?;
    let d = dummy(ctx);
    let bufs: [&dyn Bindable; 6] = [&pb, &rows, &hits, &loss, &correct, &d];
    dispatch_grid(ctx, enc, reducing(ctx, SHADER), "ce_reduce", &bufs, [1, 1, 1])?;
    Ok(LossOut { loss, correct, probs })
}

/// Gradient of the mean cross-entropy with respect to the logits: `(probs − onehot) / B`.
pub fn cross_entropy_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    probs: &Tensor,
    labels: &Labels,
) -> Result<Tensor> {
    let p = params(probs.shape(), labels, "cross-entropy backward")?;
    let dx = Tensor::uninit(ctx, probs.shape(), Category::Workspace);
    let (pb, d1, d2) = (uniform(ctx, "ce_backward", &p), dummy(ctx), dummy(ctx));
    let bufs: [&dyn Bindable; 6] = [&pb, &probs, &labels.words, &dx, &d1, &d2];
    dispatch(
        ctx,
        enc,
        reducing(ctx, SHADER),
        "ce_backward",
        &bufs,
        groups(p.total as usize, "cross-entropy backward")?,
    )?;
    Ok(dx)
}

/// `acc [2] += [loss, correct]` on the GPU, so a trainer reads the sums back once per epoch.
pub fn accumulate_metrics(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, out: &LossOut, acc: &Tensor) -> Result<()> {
    expect_shape(acc, &[2], "metrics accumulator")?;
    expect_shape(&out.loss, &[1], "loss")?;
    expect_shape(&out.correct, &[1], "correct count")?;
    let (pb, d1, d2) = (uniform(ctx, "accumulate_metrics", &LossParams::default()), dummy(ctx), dummy(ctx));
    let bufs: [&dyn Bindable; 6] = [&pb, &out.loss, &out.correct, &acc, &d1, &d2];
    dispatch_grid(ctx, enc, reducing(ctx, SHADER), "accumulate_metrics", &bufs, [1, 1, 1])
}
