//! Training-step benchmark (native): images/s of `Trainer::step` on synthetic data, the share
//! of GPU time per kernel entry point (timestamp queries where the adapter has them), and the
//! same adapter's copy bandwidth and matrix-product rate, so the gap to the device is visible.

use std::time::Instant;

use crate::data::synthetic;
use crate::engine::batch::{make_batch, Normalization};
use crate::engine::{gemm, ModelName, Tensor, TrainConfig, Trainer};
use crate::error::Result;
use crate::gpu::kernel::{dispatch, storage_zeroed, uniform};
use crate::gpu::{Category, GpuContext, Timings};

/// What one run of the benchmark measured.
#[derive(Clone, Debug)]
pub struct TrainBench {
    /// Adapter description.
    pub adapter: String,
    /// Images per second of whole training steps (upload, forward, backward, update, wait).
    pub images_per_s: f64,
    /// Milliseconds per step.
    pub step_ms: f64,
    /// GPU time per entry point over the timed steps (empty without timestamp queries).
    pub timings: Timings,
    /// Copy kernel bandwidth, GB/s (read + write).
    pub copy_gb_s: f64,
    /// Matrix-product rate of the engine's kernel on a square product, GFLOP/s.
    pub matmul_gflop_s: f64,
}

fn seconds(ctx: &GpuContext, f: impl Fn(&mut wgpu::CommandEncoder) -> Result<()>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        f(&mut enc)?;
        let t = Instant::now();
        ctx.queue.submit([enc.finish()]);
        ctx.wait_for_device()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// Copy bandwidth (GB/s) over `mib` MiB and matmul rate (GFLOP/s) of an `n×n×n` product.
pub fn device_rates(ctx: &GpuContext, mib: usize, n: usize) -> Result<(f64, f64)> {
    let words = mib << 18;
    let (src, dst) =
        (storage_zeroed(ctx, "bench src", words as u64 * 4), storage_zeroed(ctx, "bench dst", words as u64 * 4));
    let params = uniform(ctx, "copy", &[words as u32, 0, 0, 0]);
    let copy = seconds(ctx, |enc| {
        dispatch(ctx, enc, "copy", "copy_words", &[&src, &dst, &params], (words as u32).div_ceil(256))
    })?;
    let a = Tensor::from_slice(ctx, &vec![0.5; n * n], &[n, n], Category::Workspace)?;
    let mm = seconds(ctx, |enc| gemm::linear_forward(ctx, enc, &a, &a, None).map(|_| ()))?;
    Ok((2.0 * words as f64 * 4.0 / copy / 1e9, 2.0 * (n * n * n) as f64 / mm / 1e9))
}

/// Times `steps` training steps of `model` at `batch` after one warm-up step.
pub async fn measure(ctx: &GpuContext, model: ModelName, batch: usize, steps: usize) -> Result<TrainBench> {
    let cfg = TrainConfig {
        model,
        epochs: 1,
        batch,
        lr: 0.05,
        schedule: crate::engine::optim::Schedule::Constant,
        opt: crate::engine::optim::OptConfig::defaults(crate::engine::optim::OptKind::Sgd),
        seed: 0,
        augment: false,
        policy: None,
    };
    let data = synthetic::images(batch, 28, 28, 10, 5);
    let norm = Normalization::of(&data);
    let idx: Vec<usize> = (0..batch).collect();
    let (x, y) = make_batch(&data, &idx, norm, None)?;
    let mut t = Trainer::new(ctx, cfg)?;
    t.step(ctx, &x, &y, 0.05).await?;
    t.read_metrics(ctx).await?;
    let profiling = ctx.profiler.enable(&ctx.device);
    let start = Instant::now();
    for _ in 0..steps {
        t.step(ctx, &x, &y, 0.05).await?;
        t.read_metrics(ctx).await?;
    }
    let secs = start.elapsed().as_secs_f64();
    let timings = if profiling { ctx.profiler.collect(ctx).await? } else { Timings::default() };
    let (copy_gb_s, matmul_gflop_s) = device_rates(ctx, 64, 1024)?;
    Ok(TrainBench {
        adapter: ctx.adapter_description(),
        images_per_s: (steps * batch) as f64 / secs,
        step_ms: 1e3 * secs / steps.max(1) as f64,
        timings,
        copy_gb_s,
        matmul_gflop_s,
    })
}
