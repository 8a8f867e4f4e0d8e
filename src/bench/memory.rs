//! How much more fits: for each saved-activation policy, the largest batch whose training steps —
//! a probe step of the budget controller included — keep the buffer pool's peak (every category)
//! under a cap, found by doubling then bisection with two steps per candidate batch.

use crate::codec::config::Policy;
use crate::data::synthetic;
use crate::engine::batch::{make_batch, Normalization};
use crate::engine::controller::ControllerConfig;
use crate::engine::optim::{OptConfig, OptKind, Schedule};
use crate::engine::{ModelName, TrainConfig, Trainer};
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;

/// One policy's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryRow {
    /// `none` or the policy.
    pub policy: String,
    /// Largest batch under the cap (0: not even one image fits).
    pub max_batch: usize,
    /// Pool peak at that batch, bytes.
    pub peak_bytes: u64,
    /// Batches tried, with their peaks.
    pub tried: Vec<(usize, u64)>,
}

/// Pool peak (bytes) of two training steps of `model` at `batch` with `policy`, the second a
/// probe step of the controller (where the policy has one).
pub async fn step_peak(ctx: &GpuContext, model: ModelName, batch: usize, policy: Option<&Policy>) -> Result<u64> {
    let cfg = TrainConfig {
        model,
        epochs: 1,
        batch,
        lr: 0.01,
        schedule: Schedule::Constant,
        opt: OptConfig::defaults(OptKind::Sgd),
        seed: 0,
        augment: false,
        policy: policy.cloned(),
    };
    let data = synthetic::images(batch, 28, 28, 10, 7);
    let (x, y) = make_batch(&data, &(0..batch).collect::<Vec<_>>(), Normalization::of(&data), None)?;
    ctx.pool.trim();
    ctx.pool.reset_peaks();
    let mut t = Trainer::new(ctx, cfg)?;
    t.set_controller(Some(ControllerConfig { every: 2, ..ControllerConfig::default() }))?;
    for _ in 0..2 {
        t.step(ctx, &x, &y, 0.01).await?;
    }
    t.read_metrics(ctx).await?;
    Ok(ctx.pool.report().peak_total)
}

/// The largest batch of `model` with `policy` whose [`step_peak`] stays at or under `cap` bytes,
/// searching up to `limit` images (progress on stderr).
pub async fn largest_batch(
    ctx: &GpuContext,
    model: ModelName,
    policy: Option<&Policy>,
    cap: u64,
    limit: usize,
) -> Result<MemoryRow> {
    let name = policy.map_or("none".to_string(), |p| p.to_string());
    let mut tried = Vec::new();
    let peak_of = async |b: usize, tried: &mut Vec<(usize, u64)>| -> Result<u64> {
        let p = step_peak(ctx, model, b, policy).await?;
        eprintln!("  {name}: batch {b}: peak {:.1} MiB", p as f64 / (1 << 20) as f64);
        tried.push((b, p));
        Ok(p)
    };
    let (mut lo, mut hi) = (0usize, None);
    let mut b = 1usize;
    while b <= limit {
        if peak_of(b, &mut tried).await? <= cap {
            lo = b;
            b *= 2;
        } else {
            hi = Some(b);
            break;
        }
    }
    let mut hi = hi.unwrap_or(limit + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if peak_of(mid, &mut tried).await? <= cap {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let peak_bytes = tried.iter().find(|t| t.0 == lo).map_or(0, |t| t.1);
    Ok(MemoryRow { policy: name, max_batch: lo, peak_bytes, tried })
}

/// Checks the search's inputs.
pub fn check(cap_mib: f64, limit: usize) -> Result<()> {
    if !(cap_mib.is_finite() && cap_mib > 0.0) || limit == 0 {
        return Err(FdsrError::InvalidConfig(format!(
            "--cap-mib {cap_mib} must be positive and --max-batch {limit} at least 1"
        )));
    }
    Ok(())
}

/// The rows as a markdown table, each policy's largest batch also as a multiple of the first row's.
pub fn markdown(rows: &[MemoryRow], cap_mib: f64) -> String {
    let base = rows.first().map_or(0, |r| r.max_batch).max(1) as f64;
    let mut t =
        format!("| policy | largest batch under {cap_mib} MiB | × first row | pool peak MiB |\n|---|---:|---:|---:|\n");
    for r in rows {
        t += &format!(
            "| {} | {} | {:.2} | {:.1} |\n",
            r.policy,
            r.max_batch,
            r.max_batch as f64 / base,
            r.peak_bytes as f64 / (1 << 20) as f64
        );
    }
    t
}
