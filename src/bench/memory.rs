//! How much more fits: for each saved-activation policy, the largest batch whose training steps —
//! a probe step of the budget controller included — keep the buffer pool's peak (every category)
//! under a cap, found by following the line the peaks draw over the batch (two steps per
//! candidate batch).

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
        compute: crate::gpu::Compute::Fp32,
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
    let mut peak_of = async |b: usize| -> Result<u64> {
        let p = step_peak(ctx, model, b, policy).await?;
        eprintln!("  {name}: batch {b}: peak {:.1} MiB", p as f64 / (1 << 20) as f64);
        Ok(p)
    };
    let (max_batch, tried) = search(cap, limit, &mut peak_of).await?;
    let peak_bytes = tried.iter().find(|t| t.0 == max_batch).map_or(0, |t| t.1);
    Ok(MemoryRow { policy: name, max_batch, peak_bytes, tried })
}

/// The largest batch in `1..=limit` whose `peak_of` is at most `cap` (0 if none), with every
/// batch tried. The peak grows about linearly with the batch, so each candidate is where the line
/// through the nearest measured points meets the cap: two small batches, the prediction, then its
/// neighbour to confirm it when the line holds. Where predictions stop halving the bracket (a bent
/// line) it bisects. It assumes the peak does not fall as the batch grows.
pub async fn search(
    cap: u64,
    limit: usize,
    peak_of: &mut impl AsyncFnMut(usize) -> Result<u64>,
) -> Result<(usize, Vec<(usize, u64)>)> {
    let mut tried: Vec<(usize, u64)> = Vec::new();
    // Largest batch known under the cap, smallest known over it (hi.1 None: none known).
    let (mut lo, mut hi) = ((0usize, 0u64), (limit + 1, None::<u64>));
    let (mut next, mut slow) = (limit.min(8), 0);
    while hi.0 - lo.0 > 1 {
        let b = next.clamp(lo.0 + 1, hi.0 - 1);
        let p = peak_of(b).await?;
        tried.push((b, p));
        let width = hi.0 - lo.0;
        if p <= cap {
            lo = (b, p);
        } else {
            hi = (b, Some(p));
        }
        slow = if (hi.0 - lo.0) * 2 > width { slow + 1 } else { 0 };
        let line = match hi.1 {
            Some(ph) => Some((lo, (hi.0, ph))),
            None => nearest_below(&tried, cap, lo),
        };
        next = match line.and_then(|(a, c)| crossing(a, c, cap)) {
            _ if slow >= 2 && hi.1.is_some() => lo.0 + (hi.0 - lo.0) / 2,
            Some(x) => x.max(lo.0 + 1),
            None if hi.1.is_none() => lo.0.saturating_mul(2).max(1),
            None => lo.0 + (hi.0 - lo.0) / 2,
        };
    }
    Ok((lo.0, tried))
}

/// The largest measured batch under `cap` below `lo`, and `lo`: the line to extrapolate.
fn nearest_below(tried: &[(usize, u64)], cap: u64, lo: (usize, u64)) -> Option<((usize, u64), (usize, u64))> {
    let prev = tried.iter().filter(|t| t.1 <= cap && t.0 < lo.0).max_by_key(|t| t.0)?;
    Some((*prev, lo))
}

/// The largest batch at which the line through `a` and `c` stays at or under `cap` (`None` if the
/// line does not rise).
fn crossing(a: (usize, u64), c: (usize, u64), cap: u64) -> Option<usize> {
    let (db, dp) = (c.0 as f64 - a.0 as f64, c.1 as f64 - a.1 as f64);
    if db == 0.0 || dp <= 0.0 {
        return None;
    }
    let x = a.0 as f64 + (cap as f64 - a.1 as f64) * db / dp;
    Some(x.floor().max(0.0).min(usize::MAX as f64 / 2.0) as usize)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The search's answer and tries for `peak`, and the answer by trying every batch.
    fn run(cap: u64, limit: usize, peak: impl Fn(usize) -> u64) -> (usize, usize, usize) {
        let mut f = async |b: usize| -> Result<u64> { Ok(peak(b)) };
        let (found, tried) = pollster::block_on(search(cap, limit, &mut f)).unwrap();
        let truth = (1..=limit).take_while(|&b| peak(b) <= cap).last().unwrap_or(0);
        (found, truth, tried.len())
    }

    #[test]
    fn a_straight_line_takes_four_tries() {
        let (found, truth, tries) = run(50_000, 8192, |b| 1_000 + 37 * b as u64);
        assert_eq!((found, truth), (1324, 1324));
        assert!(tries <= 4, "{tries} tries");
    }

    #[test]
    fn bent_and_stepped_peaks_still_give_the_exact_batch() {
        let curves: Vec<Box<dyn Fn(usize) -> u64>> = vec![
            Box::new(|b| 5_000 + (b * b) as u64),
            Box::new(|b| 20_000 + 256 * (b as u64 * 40).div_ceil(256)),
            Box::new(|b| if b < 300 { 10 * b as u64 } else { 3_000 + 90 * b as u64 }),
            Box::new(|b| (b as f64).sqrt() as u64 * 1_000),
        ];
        for (i, f) in curves.iter().enumerate() {
            for cap in [1_000u64, 30_000, 99_999, 1_000_000] {
                let (found, truth, tries) = run(cap, 4096, f);
                assert_eq!(found, truth, "curve {i}, cap {cap}");
                assert!(tries <= 40, "curve {i}, cap {cap}: {tries} tries");
            }
        }
    }

    #[test]
    fn nothing_fits_or_everything_fits() {
        assert_eq!(run(10, 100, |b| 100 + b as u64).0, 0);
        let (found, _, tries) = run(1 << 40, 100, |b| 100 + b as u64);
        assert_eq!((found, tries), (100, 3));
        assert_eq!(run(1 << 40, 1, |b| b as u64).0, 1);
    }

    #[test]
    fn random_rising_peaks() {
        let mut seed = 12345u64;
        for _ in 0..50 {
            let mut steps = Vec::new();
            let mut acc = 0u64;
            for _ in 0..600 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                acc += (seed >> 33) % 500;
                steps.push(acc);
            }
            let cap = steps[(seed >> 20) as usize % 600];
            let (found, truth, _) = run(cap, 599, |b| steps[b]);
            assert_eq!(found, truth);
        }
    }
}
