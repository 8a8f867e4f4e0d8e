//! Training-step benchmark (native): images/s of `Trainer::step` on synthetic data under a
//! saved-activation policy (and of one step with its gradient-error probe), dispatches
//! and GPU time per kernel entry point (timestamp queries where the adapter has them), the
//! arithmetic rate of the step and of each matrix-product kernel beside the same adapter's copy
//! bandwidth and matrix-product rate (so the gap to the device is visible on any adapter), and
//! what the adapter offers: the features fdsr can use and its cooperative-matrix configurations.

use std::fmt::Write as _;
use std::time::Instant;

use crate::codec::config::Policy;
use crate::data::synthetic;
use crate::engine::batch::{make_batch, Normalization};
use crate::engine::controller::ControllerConfig;
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
    /// How saved activations were stored (`none`: fp32).
    pub policy: String,
    /// Images per step.
    pub batch: usize,
    /// Timed steps.
    pub steps: usize,
    /// Images per second of whole training steps (upload, forward, backward, update, wait).
    pub images_per_s: f64,
    /// Milliseconds per step.
    pub step_ms: f64,
    /// Host milliseconds per step spent recording it (the step's calls, queue submissions
    /// excluded). The steps run back to back, so a step takes about the larger of this and its
    /// GPU time: the host limits the step where this is the larger.
    pub record_ms: f64,
    /// Host milliseconds per step spent inside queue submissions: a driver that blocks there
    /// until earlier work drains (lavapipe does) shows it here, not in `record_ms`.
    pub submit_ms: f64,
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
    /// A step with the gradient-error probe (lossy policies; the timed steps have none).
    pub probe: Option<ProbeStep>,
}

/// What one training step with the gradient-error probe cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeStep {
    /// Milliseconds of the step, probe included.
    pub ms: f64,
    /// Bytes uploaded and read back, host waits and passes of the step.
    pub transfers: TransferCounts,
}

fn seconds(ctx: &GpuContext, f: impl Fn(&mut wgpu::CommandEncoder) -> Result<()>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        f(&mut enc)?;
        let t = Instant::now();
        ctx.submit(enc);
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

/// What every policy of one benchmark run shares: the GEMM path (selected once, with its
/// self-check under `auto`) and the adapter's copy and matmul rates on that path.
#[derive(Clone, Debug)]
pub struct BenchDevice {
    /// How conv and linear layers multiply, as asked.
    pub compute: Compute,
    /// `compute: …`: the path taken and why (`engine::gemm::ComputeReport`).
    pub report: String,
    /// [`device_rates`]: copy GB/s and matmul GFLOP/s.
    pub rates: (f64, f64),
}

impl BenchDevice {
    /// Measures the rates on the path `ctx` takes, which `report` (of
    /// `engine::gemm::select_compute` for `compute`) describes.
    pub fn measure(ctx: &GpuContext, compute: Compute, report: String) -> Result<BenchDevice> {
        Ok(BenchDevice { compute, report, rates: device_rates(ctx, 64, 1024)? })
    }
}

/// Times `steps` training steps of `model` at `batch` after one warm-up step (back to back, one
/// wait after the last), saved activations stored under `policy` (`None`: fp32) without the
/// gradient-error probe; then, for a lossy policy, one step with the probe (after one more
/// warm-up), on `device`'s GEMM path.
pub async fn measure(
    ctx: &GpuContext,
    model: ModelName,
    batch: usize,
    steps: usize,
    policy: Option<&Policy>,
    device: &BenchDevice,
) -> Result<TrainBench> {
    let cfg = TrainConfig {
        model,
        epochs: 1,
        batch,
        lr: 0.05,
        schedule: crate::engine::optim::Schedule::Constant,
        opt: crate::engine::optim::OptConfig::defaults(crate::engine::optim::OptKind::Sgd),
        seed: 0,
        augment: false,
        policy: policy.cloned(),
        compute: device.compute,
    };
    let data = synthetic::images(batch, 28, 28, 10, 5);
    let norm = Normalization::of(&data);
    let idx: Vec<usize> = (0..batch).collect();
    let (x, y) = make_batch(&data, &idx, norm, None)?;
    let mut t = Trainer::new(ctx, cfg)?;
    t.set_controller(None)?;
    t.step(ctx, &x, &y, 0.05).await?;
    t.read_metrics(ctx).await?;
    ctx.profiler.enable(&ctx.device);
    ctx.profiler.collect(ctx).await?; // the warm-up's counts
    let before = ctx.transfer_counts();
    let start = Instant::now();
    // Throughput as training runs: the host records each step while the device runs the last
    // one, and waits once, for the metrics after the last.
    let (mut recording, submitted_before) = (0.0, ctx.seconds_in_submit());
    for _ in 0..steps {
        let at = Instant::now();
        t.step(ctx, &x, &y, 0.05).await?;
        recording += at.elapsed().as_secs_f64();
    }
    let submitting = ctx.seconds_in_submit() - submitted_before;
    t.read_metrics(ctx).await?;
    let secs = start.elapsed().as_secs_f64();
    let transfers = ctx.transfer_counts().since(&before);
    let timings = ctx.profiler.collect(ctx).await?;
    let probe = probe_step(ctx, &mut t, &x, &y).await?;
    ctx.profiler.collect(ctx).await?; // the probe steps' counts, not the timed steps'
    let (copy_gb_s, matmul_gflop_s) = device.rates;
    let enabled = ctx.device.features();
    Ok(TrainBench {
        adapter: ctx.adapter_description(),
        model,
        policy: policy.map_or("none".into(), Policy::to_string),
        batch,
        steps,
        images_per_s: (steps * batch) as f64 / secs,
        step_ms: 1e3 * secs / steps.max(1) as f64,
        record_ms: 1e3 * (recording - submitting).max(0.0) / steps.max(1) as f64,
        submit_ms: 1e3 * submitting / steps.max(1) as f64,
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
        compute: device.report.clone(),
        probe,
    })
}

/// One step of `t` with the gradient-error probe, timed after a warm-up probe step (`None`
/// where the policy has no probe).
async fn probe_step(ctx: &GpuContext, t: &mut Trainer, x: &[f32], y: &[u8]) -> Result<Option<ProbeStep>> {
    t.set_controller(Some(ControllerConfig { every: 1, ..ControllerConfig::default() }))?;
    if t.controller.is_none() {
        return Ok(None);
    }
    t.step(ctx, x, y, 0.05).await?;
    t.read_metrics(ctx).await?;
    let before = ctx.transfer_counts();
    let start = Instant::now();
    t.step(ctx, x, y, 0.05).await?;
    t.read_metrics(ctx).await?;
    let ms = 1e3 * start.elapsed().as_secs_f64();
    Ok(Some(ProbeStep { ms, transfers: ctx.transfer_counts().since(&before) }))
}

/// `16x16x16 F16·F16 → F32` (and `, saturating` where it is).
pub fn describe_cooperative(c: &wgpu::CooperativeMatrixProperties) -> String {
    let sat = if c.saturating_accumulation { ", saturating" } else { "" };
    format!("{}x{}x{} {:?}·{:?} → {:?}{sat}", c.m_size, c.n_size, c.k_size, c.ab_type, c.ab_type, c.cr_type)
}

impl TrainBench {
    /// The printout of `fdsr bench train` (after the adapter line): [`Self::header`] then
    /// [`Self::body`].
    pub fn report(&self) -> String {
        self.header() + &self.body()
    }

    /// What the adapter offers and runs at: the GEMM path, features, subgroup sizes,
    /// cooperative-matrix configurations, copy and matmul rates.
    pub fn header(&self) -> String {
        let mut o = String::new();
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
        let _ =
            writeln!(o, "device: copy {:.2} GB/s, matmul (1024^3) {:.2} GFLOP/s", self.copy_gb_s, self.matmul_gflop_s);
        o
    }

    /// Dispatches and GPU milliseconds (0 without timestamps) per timed step.
    pub fn per_step(&self) -> (f64, f64) {
        let steps = self.steps.max(1) as f64;
        let dispatches: u64 = self.timings.work.values().map(|w| w.dispatches).sum();
        let ns: f64 = self.timings.by_entry.values().map(|t| t.0).sum();
        (dispatches as f64 / steps, ns / 1e6 / steps)
    }

    /// The step: images/s, host traffic, the probe step, arithmetic rates, and a table of the
    /// entry points by GPU time (by dispatches where the adapter has no timestamps).
    pub fn body(&self) -> String {
        let mut o = String::new();
        let steps = self.steps.max(1) as f64;
        let flops: f64 = self.timings.work.values().map(|w| w.flops).sum();
        let (dispatches, gpu_ms) = self.per_step();
        let ns = gpu_ms * 1e6 * steps;
        let _ = writeln!(
            o,
            "model {}, batch {}, policy {}: {:.1} images/s, {:.1} ms per step, {dispatches:.0} dispatches per step",
            self.model, self.batch, self.policy, self.images_per_s, self.step_ms,
        );
        let t = &self.transfers;
        let _ = writeln!(
            o,
            "host traffic per step: {:.1} KiB uploaded, {:.1} KiB read back, {:.1} host waits, {:.1} submits",
            t.uploaded as f64 / 1024.0 / steps,
            t.read_back as f64 / 1024.0 / steps,
            t.host_waits as f64 / steps,
            t.submits as f64 / steps
        );
        let gpu = if gpu_ms > 0.0 { format!(" (the GPU's: {gpu_ms:.2} ms)") } else { String::new() };
        let _ = writeln!(
            o,
            "host time per step: {:.2} ms recording, {:.2} ms inside queue submissions{gpu}",
            self.record_ms, self.submit_ms
        );
        if let Some(p) = &self.probe {
            let t = &p.transfers;
            let _ = writeln!(
                o,
                "probe step: {:.1} ms ({:.2}x a step), {} dispatches, {:.1} KiB read back, {} host waits",
                p.ms,
                p.ms / self.step_ms,
                t.dispatches,
                t.read_back as f64 / 1024.0,
                t.host_waits
            );
        }
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

/// The policies' steps side by side (one run, one adapter), step time as a multiple of the first
/// row's.
pub fn side_by_side(rows: &[TrainBench]) -> String {
    let mut o = String::from(
        "| policy | images/s | step ms | step time vs first | dispatches per step | GPU ms per step | probe step ms |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let first = rows.first().map_or(1.0, |r| r.step_ms);
    for r in rows {
        let (dispatches, gpu_ms) = r.per_step();
        let gpu = if gpu_ms > 0.0 { format!("{gpu_ms:.2}") } else { "—".into() };
        let probe = r.probe.map_or("—".into(), |p| format!("{:.1}", p.ms));
        let _ = writeln!(
            o,
            "| {} | {:.1} | {:.2} | {:.2} | {dispatches:.0} | {gpu} | {probe} |",
            r.policy,
            r.images_per_s,
            r.step_ms,
            r.step_ms / first
        );
    }
    o
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        100.0 * a / b
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests;
