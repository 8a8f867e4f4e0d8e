//! Asynchronous readback of GPU buffers: the same `async` code natively and on the web.

use super::GpuContext;
use crate::error::{FdsrError, Result};

/// Copies `size` bytes at `offset` of `src` (which needs `COPY_SRC`) to the host.
///
/// `size` and `offset` must be multiples of 4. Awaiting never blocks the browser; natively the
/// device is polled until the copy is mapped.
pub async fn read_buffer(ctx: &GpuContext, src: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("fdsr readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
    enc.copy_buffer_to_buffer(src, offset, &staging, 0, size);
    ctx.submit(enc);
    let (tx, rx) = futures_channel::oneshot::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        // The receiver only disappears if the caller dropped the future; nothing to report then.
        let _ = tx.send(r);
    });
    ctx.transfers.read_back(size);
    ctx.wait_for_device()?;
    rx.await
        .map_err(|_| FdsrError::Readback("map callback dropped".into()))?
        .map_err(|e| FdsrError::Readback(e.to_string()))?;
    let data = staging.slice(..).get_mapped_range().map_err(|e| FdsrError::Readback(e.to_string()))?.to_vec();
    staging.unmap();
    Ok(data)
}

/// Reads a whole buffer of `u32` words.
pub async fn read_words(ctx: &GpuContext, src: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
    let bytes = read_buffer(ctx, src, 0, (words * 4) as u64).await?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}
