//! The GPU runtime: buffer pool accounting, reuse and readback.

mod common;

use fdsr::gpu::{read_words, Category};

#[test]
fn pool_counts_live_and_peak_bytes_by_category_and_reuses_buffers() {
    let Some(ctx) = common::gpu() else { return };
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let a = ctx.pool.get(&ctx.device, Category::SavedActivations, 1000, usage);
    let b = ctx.pool.get(&ctx.device, Category::Workspace, 4096, usage);
    let r = ctx.pool.report();
    assert_eq!(r.live[&Category::SavedActivations], 1024, "sizes round up to 256 bytes");
    assert_eq!(r.live[&Category::Workspace], 4096);
    assert_eq!(r.peak_total, 5120);
    drop(a);
    let r = ctx.pool.report();
    assert_eq!(r.live[&Category::SavedActivations], 0);
    assert_eq!(r.peak[&Category::SavedActivations], 1024);
    let c = ctx.pool.get(&ctx.device, Category::Weights, 1024, usage);
    assert_eq!(ctx.pool.report().peak_total, 5120, "the freed buffer is reused, the peak total unchanged");
    ctx.queue.write_buffer(&c, 0, bytemuck::cast_slice(&[7u32, 8, 9]));
    let words = pollster::block_on(read_words(&ctx, &c, 3)).unwrap();
    assert_eq!(words, vec![7, 8, 9]);
    drop((b, c));
    ctx.pool.reset_peaks();
    assert_eq!(ctx.pool.report().peak_total, 0);
}
