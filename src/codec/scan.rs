//! GPU exclusive prefix sum of u32 (tile sizes to bit offsets), recorded into an encoder.

use crate::error::Result;
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::{Category, GpuContext, STORAGE_USAGE};

/// Uniform parameters of `shaders/scan.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ScanParams {
    /// Number of elements.
    pub n: u32,
    /// Padding.
    pub _pad: [u32; 3],
}

/// Records an in-place exclusive prefix sum over the first `n` words of `data`. The block sums
/// are pooled workspace, back in the pool once recorded (the device keeps what it still reads).
pub fn record_scan(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, data: &dyn Bindable, n: u32) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let blocks = n.div_ceil(256);
    let params = uniform(ctx, "scan", &ScanParams { n, _pad: [0; 3] });
    let sums = ctx.pool.get(&ctx.device, Category::Workspace, u64::from(blocks) * 4, STORAGE_USAGE);
    dispatch(ctx, enc, "scan", "scan_blocks", &[&params, data, &sums], blocks.div_ceil(64))?;
    if blocks > 1 {
        record_scan(ctx, enc, &sums, blocks)?;
        dispatch(ctx, enc, "scan", "add_offsets", &[&params, data, &sums], blocks)?;
    }
    Ok(())
}
