//! Training-step benchmark (native): images/s of `Trainer::step` on synthetic data, dispatches
//! and GPU time per kernel entry point (timestamp queries where the adapter has them), the
//! arithmetic rate of the step and of each matrix-product kernel beside the same adapter's copy
//! bandwidth and matrix-product rate (so the gap to the device is visible on any adapter), and
//! what the adapter offers: the features fdsr can use and its cooperative-matrix configurations.

use std::fmt::Write as _;
use std::time::Instant;

use crate::data::synthetic;
use crate::engine::batch::{make_batch, Normalization};
use crate::engine::{gemm, ModelName, Tensor, TrainConfig, Trainer};
use crate::error::Result;
use crate::gpu::kernel::{dispatch, storage_zeroed, uniform};
use crate::gpu::{Category, Compute, GpuContext, Timings, TransferCounts};

/// Adapter features that matter to fdsr's kernels, in report order.
pub const FEATURES: [(&str, wgpu::Features); 4] = [
    ("SUBGROUP", wgpu::Features::SUBGROUP),
    ("SHADER_F16", wgpu::Features::SHADER_F16),
    ("TIMESTAMP_QUERY", wgpu::Features::TIMESTAMP_QUERY),
    ("EXPERIMENTAL_COOPERATIVE_MATRIX", wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
];

/// What one run of the benchmark measured.
#[derive(Clone, Debug)]
pub struct TrainBench {
    /// Adapter description.
    pub adapter: String,
    /// Model and batch size.
    pub model: ModelName,
    /// Images per step.
    pub batch: usize,
    /// Timed steps.
    pub steps: usize,
    /// Images per second of whole training steps (upload, forward, backward, update, wait).
    pub images_per_s: f64,
    /// Milliseconds per step.
    pub step_ms: f64,
    /// GPU time (where timestamps exist) and dispatches and operations per entry point, over
    /// the timed steps.
    pub timings: Timings,
    /// Copy kernel bandwidth, GB/s (read + write).
    pub copy_gb_s: f64,
    /// Matrix-product rate of the engine's kernel on a square product, GFLOP/s.
    pub matmul_gflop_s: f64,
    /// [`FEATURES`]: (name, offered by the adapter, enabled on the device).
    pub features: Vec<(&'static str, bool, bool)>,
    /// Smallest and largest subgroup size the adapter reports.
    pub subgroup_sizes: (u32, u32),
    /// The adapter's cooperative-matrix configurations.
    pub cooperative_matrix: Vec<wgpu::CooperativeMatrixProperties>,
    /// Bytes uploaded and read back, host waits and passes over the timed steps.
    pub transfers: TransferCounts,
    /// `compute: …`: the GEMM path that ran, and why (`engine::gemm::ComputeReport`).
    pub compute: String,
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
/// The GEMMs take the path `compute` selects (a self-check first under `auto`).
pub async fn measure(
    ctx: &GpuContext,
    model: ModelName,
    batch: usize,
    steps: usize,
    compute: Compute,
) -> Result<TrainBench> {
    let report = gemm::select_compute(ctx, compute).await?;
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
        compute,
    };
    let data = synthetic::images(batch, 28, 28, 10, 5);
    let norm = Normalization::of(&data);
    let idx: Vec<usize> = (0..batch).collect();
    let (x, y) = make_batch(&data, &idx, norm, None)?;
    let mut t = Trainer::new(ctx, cfg)?;
    t.step(ctx, &x, &y, 0.05).await?;
    t.read_metrics(ctx).await?;
    ctx.profiler.enable(&ctx.device);
    ctx.profiler.collect(ctx).await?; // the warm-up's counts
    let before = ctx.transfer_counts();
    let start = Instant::now();
    for _ in 0..steps {
        t.step(ctx, &x, &y, 0.05).await?;
        t.read_metrics(ctx).await?;
    }
    let secs = start.elapsed().as_secs_f64();
    let transfers = ctx.transfer_counts().since(&before);
    let timings = ctx.profiler.collect(ctx).await?;
    let (copy_gb_s, matmul_gflop_s) = device_rates(ctx, 64, 1024)?;
    let enabled = ctx.device.features();
    Ok(TrainBench {
        adapter: ctx.adapter_description(),
        model,
        batch,
        steps,
        images_per_s: (steps * batch) as f64 / secs,
        step_ms: 1e3 * secs / steps.max(1) as f64,
        timings,
        copy_gb_s,
        matmul_gflop_s,
        features: FEATURES
            .iter()
            .map(|&(name, f)| (name, ctx.adapter_features.contains(f), enabled.contains(f)))
            .collect(),
        subgroup_sizes: (ctx.info.subgroup_min_size, ctx.info.subgroup_max_size),
        cooperative_matrix: ctx.cooperative_matrix.clone(),
        transfers,
        compute: report.to_string(),
    })
}

/// `16x16x16 F16·F16 → F32` (and `, saturating` where it is).
pub fn describe_cooperative(c: &wgpu::CooperativeMatrixProperties) -> String {
    let sat = if c.saturating_accumulation { ", saturating" } else { "" };
    format!("{}x{}x{} {:?}·{:?} → {:?}{sat}", c.m_size, c.n_size, c.k_size, c.ab_type, c.ab_type, c.cr_type)
}

impl TrainBench {
    /// The printout of `fdsr bench train` (after the adapter line): features, rates, and a table
    /// of the entry points by GPU time (by dispatches where the adapter has no timestamps).
    pub fn report(&self) -> String {
        let mut o = String::new();
        let steps = self.steps.max(1) as f64;
        let feats: Vec<String> = self
            .features
            .iter()
            .map(|(n, offered, on)| match (offered, on) {
                (true, true) => format!("{n} (used)"),
                (true, false) => format!("{n} (offered)"),
                _ => format!("no {n}"),
            })
            .collect();
        let _ = writeln!(o, "{}", self.compute);
        let _ = writeln!(o, "features: {}", feats.join(", "));
        let _ = writeln!(o, "subgroup sizes: {}..{}", self.subgroup_sizes.0, self.subgroup_sizes.1);
        let coop: Vec<String> = self.cooperative_matrix.iter().map(describe_cooperative).collect();
        let coop = if coop.is_empty() { "none".to_string() } else { coop.join("; ") };
        let _ = writeln!(o, "cooperative-matrix configurations: {coop}");
        let (mut ns, mut dispatches, mut flops) = (0.0, 0u64, 0.0);
        for w in self.timings.work.values() {
            dispatches += w.dispatches;
            flops += w.flops;
        }
        for (t, _) in self.timings.by_entry.values() {
            ns += t;
        }
        let _ = writeln!(
            o,
            "model {}, batch {}: {:.1} images/s, {:.1} ms per step, {:.0} dispatches per step",
            self.model,
            self.batch,
            self.images_per_s,
            self.step_ms,
            dispatches as f64 / steps
        );
        let t = &self.transfers;
        let _ = writeln!(
            o,
            "host traffic per step: {:.1} KiB uploaded, {:.1} KiB read back, {:.1} host waits",
            t.uploaded as f64 / 1024.0 / steps,
            t.read_back as f64 / 1024.0 / steps,
            t.host_waits as f64 / steps
        );
        let _ =
            writeln!(o, "device: copy {:.2} GB/s, matmul (1024^3) {:.2} GFLOP/s", self.copy_gb_s, self.matmul_gflop_s);
        let step_gflop = flops / steps / 1e9;
        let _ = write!(o, "step: {step_gflop:.2} GFLOP, {:.2} GFLOP/s of wall time", step_gflop / (self.step_ms / 1e3));
        if ns > 0.0 {
            let rate = flops / ns;
            let _ = write!(
                o,
                ", {rate:.2} GFLOP/s of GPU time ({:.0}% of the matmul rate)",
                pct(rate, self.matmul_gflop_s)
            );
        }
        o.push('\n');
        if ns == 0.0 {
            o.push_str("(no timestamp queries on this adapter: no per-kernel times)\n");
        }
        o.push_str("| kernel | dispatches per step | GPU ms per step | share | GFLOP/s | of matmul rate |\n");
        o.push_str("|---|---:|---:|---:|---:|---:|\n");
        let mut rows: Vec<_> = self.timings.work.iter().collect();
        let time = |e: &str| self.timings.by_entry.get(e).map_or(0.0, |t| t.0);
        rows.sort_by(|a, b| time(b.0).total_cmp(&time(a.0)).then(b.1.dispatches.cmp(&a.1.dispatches)));
        for (entry, w) in rows {
            let t = time(entry);
            let (ms, share) = if ns > 0.0 {
                (format!("{:.2}", t / 1e6 / steps), format!("{:.1}%", 100.0 * t / ns))
            } else {
                ("—".into(), "—".into())
            };
            let (rate, of) = if w.flops > 0.0 && t > 0.0 {
                let r = w.flops / t;
                (format!("{r:.2}"), format!("{:.0}%", pct(r, self.matmul_gflop_s)))
            } else {
                ("—".into(), "—".into())
            };
            let _ = writeln!(o, "| {entry} | {:.0} | {ms} | {share} | {rate} | {of} |", w.dispatches as f64 / steps);
        }
        o
    }
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        100.0 * a / b
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Work;

    fn bench(coop: Vec<wgpu::CooperativeMatrixProperties>, timed: bool) -> TrainBench {
        let mut timings = Timings::default();
        timings.work.insert("conv_forward", Work { dispatches: 10, flops: 4e9 });
        timings.work.insert("bn_apply", Work { dispatches: 10, flops: 0.0 });
        if timed {
            timings.by_entry.insert("conv_forward", (2e6, 10));
            timings.by_entry.insert("bn_apply", (1e6, 10));
        }
        TrainBench {
            adapter: "test".into(),
            model: ModelName::Cnn,
            batch: 128,
            steps: 2,
            images_per_s: 1000.0,
            step_ms: 10.0,
            timings,
            copy_gb_s: 800.0,
            matmul_gflop_s: 4000.0,
            features: vec![("SUBGROUP", true, true), ("EXPERIMENTAL_COOPERATIVE_MATRIX", false, false)],
            subgroup_sizes: (32, 32),
            cooperative_matrix: coop,
            transfers: TransferCounts { uploaded: 4096, read_back: 2048, host_waits: 4, dispatches: 20 },
            compute: "compute: fp32 (no cooperative matrices: none offered)".into(),
        }
    }

    #[test]
    fn report_without_cooperative_matrices_or_timestamps() {
        let r = bench(Vec::new(), false).report();
        assert!(r.contains("cooperative-matrix configurations: none"), "{r}");
        assert!(r.starts_with("compute: fp32 (no cooperative matrices"), "{r}");
        assert!(r.contains("SUBGROUP (used), no EXPERIMENTAL_COOPERATIVE_MATRIX"), "{r}");
        assert!(r.contains("10 dispatches per step"), "{r}");
        assert!(r.contains("2.0 KiB uploaded, 1.0 KiB read back, 2.0 host waits"), "{r}");
        assert!(r.contains("no per-kernel times") && r.contains("| conv_forward | 5 | — | — | — | — |"), "{r}");
        assert!(r.contains("step: 2.00 GFLOP, 200.00 GFLOP/s of wall time"), "{r}");
    }

    #[test]
    fn report_with_cooperative_matrices_and_timestamps() {
        let c = wgpu::CooperativeMatrixProperties {
            m_size: 16,
            n_size: 16,
            k_size: 16,
            ab_type: wgpu::CooperativeScalarType::F16,
            cr_type: wgpu::CooperativeScalarType::F32,
            saturating_accumulation: false,
        };
        let r = bench(vec![c, c], true).report();
        assert!(r.contains("configurations: 16x16x16 F16·F16 → F32; 16x16x16"), "{r}");
        // 4 GFLOP over 2 ms of conv_forward: 2000 GFLOP/s, half the matmul rate.
        assert!(r.contains("| conv_forward | 5 | 1.00 | 66.7% | 2000.00 | 50% |"), "{r}");
        assert!(r.contains("| bn_apply | 5 | 0.50 | 33.3% | — | — |"), "{r}");
        assert!(r.contains("GFLOP/s of GPU time (33% of the matmul rate)"), "{r}");
    }
}
