//! The GPU runtime: buffer pool accounting, reuse, readback, and the prefix sum.

mod common;

use fdsr::codec::scan::record_scan;
use fdsr::gpu::kernel::{storage_init, submit};
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

/// The exclusive prefix sum against the host's, at sizes of one to three levels of block sums
/// (256 values per block), in place in a range of a larger buffer as the fdsr tile offsets use it.
#[test]
fn scan_matches_the_host_at_every_level() {
    let Some(ctx) = common::gpu() else { return };
    for n in [1usize, 255, 256, 257, 65_536, 70_001] {
        let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 26).collect();
        let lead = 64usize; // words before the scanned range (256 bytes: a storage offset alignment)
        let words: Vec<u32> = std::iter::repeat_n(9, lead).chain(data.iter().copied()).collect();
        let buf = storage_init(&ctx, "scan test", bytemuck::cast_slice(&words));
        let range = wgpu::BufferBinding { buffer: &buf, offset: lead as u64 * 4, size: None };
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        record_scan(&ctx, &mut enc, &range, n as u32).unwrap();
        pollster::block_on(submit(&ctx, "scan test", enc)).unwrap();
        let got = pollster::block_on(read_words(&ctx, &buf, lead + n)).unwrap();
        let want: Vec<u32> = data.iter().scan(0u32, |acc, &v| Some(std::mem::replace(acc, *acc + v))).collect();
        assert!(got[..lead].iter().all(|&w| w == 9), "n = {n}: words before the range changed");
        assert_eq!(got[lead..], want[..], "n = {n}");
    }
}
