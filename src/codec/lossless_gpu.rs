//! GPU driver of `lossless`: the f32 bit patterns verbatim. Compressing reads the words back
//! (in pieces no larger than one storage binding); decompressing validates them, and [`upload`]
//! puts them back on the device.

use crate::error::{FdsrError, Result};
use crate::gpu::kernel::storage_init;
use crate::gpu::{read_buffer, GpuContext};

/// Reads the `numel` f32 values of `input` (`COPY_SRC`) back as their bit patterns.
///
/// Like the reference, only finite values are accepted.
pub async fn compress(ctx: &GpuContext, input: &wgpu::Buffer, numel: usize) -> Result<Vec<u32>> {
    let bytes = numel as u64 * 4;
    if input.size() < bytes {
        return Err(FdsrError::InvalidTensor(format!(
            "input buffer of {} bytes cannot hold {numel} f32 values",
            input.size()
        )));
    }
    let piece = (ctx.max_binding_bytes() / 4).max(1) * 4;
    let mut data = Vec::with_capacity(numel);
    let mut offset = 0;
    while offset < bytes {
        let size = piece.min(bytes - offset);
        data.extend(bytemuck::pod_collect_to_vec::<u8, u32>(&read_buffer(ctx, input, offset, size).await?));
        offset += size;
    }
    if let Some(i) = data.iter().position(|&b| !f32::from_bits(b).is_finite()) {
        return Err(FdsrError::InvalidTensor(format!("value {} at index {i} is not finite", f32::from_bits(data[i]))));
    }
    Ok(data)
}

/// Checks that `data` holds exactly `numel` finite values.
fn validate(data: &[u32], numel: usize) -> Result<()> {
    if data.len() != numel {
        return Err(FdsrError::Corrupt(format!("{} values stored for {numel} expected", data.len())));
    }
    match data.iter().position(|&b| !f32::from_bits(b).is_finite()) {
        Some(i) => Err(FdsrError::Corrupt(format!("stored value at index {i} is not finite"))),
        None => Ok(()),
    }
}

/// The `numel` stored values as f32 (the words are the values: no device work is needed).
pub async fn decompress(_ctx: &GpuContext, data: &[u32], numel: usize) -> Result<Vec<f32>> {
    validate(data, numel)?;
    Ok(data.iter().map(|&b| f32::from_bits(b)).collect())
}

/// The `numel` stored values in a new device buffer (`STORAGE | COPY_SRC | COPY_DST`).
pub fn upload(ctx: &GpuContext, data: &[u32], numel: usize) -> Result<wgpu::Buffer> {
    validate(data, numel)?;
    Ok(storage_init(ctx, "lossless values", bytemuck::cast_slice(data)))
}
