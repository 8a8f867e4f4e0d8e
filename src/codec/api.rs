//! Entry points of the file path: compress host values or a device tensor into a host
//! [`Compressed`] with any policy, and decompress one (through the device-resident kernels; see
//! [`super::file`]). Training keeps stored forms on the device instead ([`super::resident`]).

use super::file;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::storage_init;
use crate::gpu::GpuContext;
use crate::rules::config::{CodecOptions, Policy};
use crate::rules::format::Compressed;
pub use file::{CodecStats, FdsrStats, ReuseStats};

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
    file::compress(ctx, input, shape, policy, opts).await
}

/// Decompresses to f32 values in the original shape's row-major order.
pub async fn decompress(ctx: &GpuContext, c: &Compressed) -> Result<Vec<f32>> {
    file::decompress(ctx, c).await
}
