//! Entry points: compress and decompress a tensor on the GPU with any policy.

pub use super::alloc::FdsrStats;
use super::config::{BitChoice, CodecOptions, Policy};
use super::format::{Body, Compressed};
use super::{alloc, fdsr_gpu};
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::storage_init;
use crate::gpu::GpuContext;
pub use crate::reference::reuse::ReuseStats;

/// What compressing one tensor measured besides its stored form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodecStats {
    /// Similarity reuse counts (`fdsr` on a 4-D tensor with reuse on).
    pub reuse: Option<ReuseStats>,
    /// The DCT analysis pass (`fdsr` on a 4-D tensor): tile classes, band energies and ranges.
    pub analysis: Option<FdsrStats>,
}

/// Largest magnitude the codec accepts (scale codes stay in f32's normal range).
pub const MAX_MAGNITUDE: f32 = 1.329_228e36; // 2^120

/// Checks that `x` is a valid tensor of `shape`: rank 1..=4, non-empty, finite, not huge.
pub fn validate_input(x: &[f32], shape: &[usize]) -> Result<()> {
    if shape.is_empty() || shape.len() > 4 {
        return Err(FdsrError::InvalidTensor(format!("rank {} (shape {shape:?}) is not in 1..=4", shape.len())));
    }
    let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match numel {
        Some(0) => return Err(FdsrError::InvalidTensor(format!("shape {shape:?} is empty"))),
        Some(n) if n == x.len() => {}
        _ => return Err(FdsrError::InvalidTensor(format!("shape {shape:?} does not hold {} values", x.len()))),
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite() || v.abs() >= MAX_MAGNITUDE) {
        return Err(FdsrError::InvalidTensor(format!("value {} at flat index {i} is not finite or above 2^120", x[i])));
    }
    Ok(())
}

/// Compresses `x` (shape `shape`, row-major, NCHW for rank 4) with `policy`.
pub async fn compress(
    ctx: &GpuContext,
    x: &[f32],
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<Compressed> {
    validate_input(x, shape)?;
    policy.validate()?;
    let input = storage_init(ctx, "fdsr input", bytemuck::cast_slice(x));
    compress_buffer(ctx, &input, shape, policy, opts).await
}

/// Like [`compress`], also returning the per-tensor reuse statistics (hits, candidates, false
/// candidates rejected; `None` unless the policy is `fdsr` on a 4-D tensor with reuse on).
pub async fn compress_with_stats(
    ctx: &GpuContext,
    x: &[f32],
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<(Compressed, Option<ReuseStats>)> {
    validate_input(x, shape)?;
    policy.validate()?;
    let input = storage_init(ctx, "fdsr input", bytemuck::cast_slice(x));
    let (c, stats) = compress_buffer_with_stats(ctx, &input, shape, policy, opts).await?;
    Ok((c, stats.reuse))
}

/// Compresses a tensor already on the device (`STORAGE | COPY_SRC`, f32, finite).
pub async fn compress_buffer(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<Compressed> {
    Ok(compress_buffer_with_stats(ctx, input, shape, policy, opts).await?.0)
}

/// [`compress_buffer`] with what it measured ([`CodecStats`]).
pub async fn compress_buffer_with_stats(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<(Compressed, CodecStats)> {
    let numel: usize = shape.iter().product();
    let mut stats = CodecStats::default();
    let body = match policy {
        Policy::Lossless => Body::Lossless { data: super::lossless_gpu::compress(ctx, input, numel).await? },
        Policy::Uniform { bits } => Body::Uniform(super::uniform_gpu::compress(ctx, input, shape, *bits, opts).await?),
        Policy::Division => Body::Division(super::division_gpu::compress(ctx, input, shape, opts).await?),
        Policy::Fdsr(cfg) if shape.len() == 4 => {
            let (body, reuse, analysis) = fdsr_gpu::compress_with_stats(ctx, input, shape, cfg, opts).await?;
            stats = CodecStats { reuse, analysis: Some(analysis) };
            Body::Fdsr(body)
        }
        Policy::Fdsr(cfg) => {
            let bits = match &cfg.bits {
                BitChoice::Budget(b) => alloc::flat_bits_for_budget(numel, *b)?,
                BitChoice::Fixed(b) => alloc::flat_bits_for_fixed(b),
            };
            Body::Uniform(super::uniform_gpu::compress(ctx, input, shape, bits, opts).await?)
        }
    };
    let c =
        Compressed { shape: shape.to_vec(), seed: opts.seed, tensor_id: opts.tensor_id, rounding: opts.rounding, body };
    Ok((c, stats))
}

/// Decompresses to f32 values in the original shape's row-major order.
pub async fn decompress(ctx: &GpuContext, c: &Compressed) -> Result<Vec<f32>> {
    match &c.body {
        Body::Lossless { data } => super::lossless_gpu::decompress(ctx, data, c.numel()).await,
        Body::Uniform(u) => super::uniform_gpu::decompress(ctx, u, &c.shape).await,
        Body::Division(d) => super::division_gpu::decompress(ctx, d, &c.shape).await,
        Body::Fdsr(f) => fdsr_gpu::decompress(ctx, f, &c.shape).await,
    }
}
