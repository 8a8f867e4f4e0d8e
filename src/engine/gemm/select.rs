//! Which GEMM path a context takes (`--compute`): fp32, or cooperative matrices where the adapter
//! offers the kernel's configuration and a self-check against the fp32 kernel passes on seeded
//! products of every kind (strided, conv forward, input and weight gradients, a split of K,
//! gradient-sized operands around 1e-6).

use std::fmt;

use crate::data::synthetic::SplitMix64;
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, Compute, ComputePath, GpuContext};
use crate::reference::conv::ConvGeom;

/// Largest error of a cooperative-matrix product relative to the fp32 product's norm that the
/// self-check accepts: f16 operands carry 11 significant bits (rounding error 2^-12 ≈ 2.4e-4 per
/// operand), so a norm-relative error of about 5e-4 is expected; 2e-3 leaves room for the
/// hardware's accumulation order without letting a wrong tile or scale (errors of order 1) pass.
pub const SELF_CHECK_TOLERANCE: f64 = 2e-3;

/// The outcome of [`select_compute`].
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeReport {
    /// What was asked for.
    pub asked: Compute,
    /// The path the context's GEMMs now take.
    pub path: ComputePath,
    /// Why `auto` took fp32, or the self-check's worst error.
    pub note: Option<String>,
    /// Whether `auto` fell back to fp32 because the self-check failed (worth a warning).
    pub self_check_failed: bool,
}

impl fmt::Display for ComputeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "compute: {}", self.path)?;
        match (&self.note, self.asked) {
            (Some(note), _) => write!(f, " ({note})"),
            (None, Compute::Fp32) => write!(f, " (--compute fp32)"),
            (None, Compute::Auto | Compute::Coop) => Ok(()),
        }
    }
}

/// `‖got − want‖ / ‖want‖`; infinite when either holds a non-finite value or `want` is zero (so
/// a check can never pass on nothing).
pub fn rel_error(got: &[f32], want: &[f32]) -> f64 {
    if got.len() != want.len() || got.iter().chain(want).any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        diff += (f64::from(g) - f64::from(w)).powi(2);
        norm += f64::from(w).powi(2);
    }
    if norm == 0.0 {
        return f64::INFINITY;
    }
    (diff / norm).sqrt()
}

/// Sets the context's GEMM path for `compute` and says which it is and why. Under `auto` a
/// failed self-check (a wrong result or a GPU error) falls back to fp32, and so do cooperative
/// matrices that run a timed layer (`cnn`'s 32→32 conv at batch 32: its forward, input- and
/// weight-gradient products) slower than fp32; the report says so. Under `coop`
/// either is an error, as are missing cooperative matrices.
pub async fn select_compute(ctx: &GpuContext, compute: Compute) -> Result<ComputeReport> {
    let mut report = ComputeReport { asked: compute, path: ComputePath::Fp32, note: None, self_check_failed: false };
    ctx.set_compute_path(ComputePath::Fp32)?;
    if compute == Compute::Fp32 {
        return Ok(report);
    }
    let refuse = |why: String| FdsrError::Gpu {
        stage: "compute path".into(),
        message: format!("--compute coop on {}: {why}", ctx.adapter_description()),
    };
    let path = match ctx.coop_path() {
        Ok(path) => path,
        Err(why) if compute == Compute::Coop => return Err(refuse(format!("no cooperative matrices: {why}"))),
        Err(why) => {
            report.note = Some(format!("no cooperative matrices: {why}"));
            return Ok(report);
        }
    };
    let mut note = match self_check(ctx, path).await {
        Ok(worst) => format!("self-check: worst relative error {worst:.1e}"),
        Err(e) if compute == Compute::Coop => return Err(refuse(format!("the self-check failed: {e}"))),
        Err(e) => {
            report.note = Some(format!("cooperative-matrix self-check failed, using fp32: {e}"));
            report.self_check_failed = true;
            return Ok(report);
        }
    };
    if compute == Compute::Auto {
        let (coop, fp32) = match time_both(ctx, path).await {
            Ok(times) => times,
            Err(e) => {
                report.note = Some(format!("cooperative matrices not timed, using fp32: {e}"));
                return Ok(report);
            }
        };
        let timing = format!(
            "{:.2} ms against fp32's {:.2} ms for the products of a {}→{} conv at batch {}",
            coop * 1e3,
            fp32 * 1e3,
            TIMED.cin,
            TIMED.cout,
            TIMED.batch
        );
        if coop > fp32 {
            report.note = Some(format!("cooperative matrices passed the self-check but are slower: {timing}"));
            return Ok(report);
        }
        note = format!("{note}; {timing}");
    }
    ctx.set_compute_path(path)?;
    report.path = path;
    report.note = Some(note);
    Ok(report)
}

/// The conv layer whose forward, input- and weight-gradient products time the two paths under
/// `auto`: `cnn`'s second layer (32→32 channels, 32×32) at batch 32.
const TIMED: ConvGeom = ConvGeom { batch: 32, cin: 32, h: 32, w: 32, cout: 32, ksize: 3, stride: 1, pad: 1 };
/// Timed rounds per path after a warm-up; the median counts.
const TIMED_ROUNDS: usize = 3;

/// Median seconds of one round of [`TIMED`]'s three products on `path`, then on fp32, on the
/// same operands (uploaded once). Leaves the path at fp32.
async fn time_both(ctx: &GpuContext, path: ComputePath) -> Result<(f64, f64)> {
    let mut rng = SplitMix64::new(0x71_3ed);
    let g = TIMED;
    let mut up = |shape: &[usize], scale: f32| {
        Tensor::from_slice(ctx, &values(&mut rng, shape.iter().product(), scale), shape, Category::Workspace)
    };
    let ops = [up(&[g.batch, g.cin, g.h, g.w], 1.0)?, up(&g.weight_shape(), 0.1)?, up(&g.out_shape(), 1e-3)?];
    let coop = time_products(ctx, path, &ops).await?;
    Ok((coop, time_products(ctx, ComputePath::Fp32, &ops).await?))
}

/// Median seconds of one round of [`TIMED`]'s three products of `[x, w, dy]` on `path` (one
/// submit and one wait each), measured by the host. Native only, as cooperative matrices are (it
/// waits for the device). Leaves the path at fp32.
async fn time_products(ctx: &GpuContext, path: ComputePath, ops: &[Tensor; 3]) -> Result<f64> {
    ctx.set_compute_path(path)?;
    let t = time_rounds(ctx, ops).await;
    ctx.set_compute_path(ComputePath::Fp32)?;
    t
}

async fn time_rounds(ctx: &GpuContext, [x, w, dy]: &[Tensor; 3]) -> Result<f64> {
    let g = TIMED;
    let mut rounds = Vec::with_capacity(TIMED_ROUNDS);
    for round in 0..=TIMED_ROUNDS {
        let t = std::time::Instant::now();
        ctx.scoped("compute timing", || -> Result<()> {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            super::conv2d_forward(ctx, &mut enc, x, w, None, g.stride, g.pad)?;
            super::conv2d_backward_data(ctx, &mut enc, &g, dy, w)?;
            let dw = Tensor::uninit(ctx, &g.weight_shape(), Category::Workspace);
            super::conv2d_backward_weight(ctx, &mut enc, &g, dy, x, &dw)?;
            ctx.submit(enc);
            ctx.wait_for_device()
        })
        .await??;
        if round > 0 {
            rounds.push(t.elapsed().as_secs_f64());
        }
    }
    rounds.sort_by(f64::total_cmp);
    Ok(rounds[rounds.len() / 2])
}

fn values(rng: &mut SplitMix64, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.range(-1.0, 1.0) * scale).collect()
}

/// The self-check's operands, uploaded once.
struct Operands {
    x: Tensor,
    w: Tensor,
    bias: Tensor,
    dy: Tensor,
    cx: Tensor,
    cw: Tensor,
    cb: Tensor,
    dw: Tensor,
    ddy: Tensor,
    dw_dy: Tensor,
    dw_x: Tensor,
}

const LIN: (usize, usize, usize) = (37, 45, 200); // rows, cols, inner
const FWD: ConvGeom = ConvGeom { batch: 2, cin: 5, h: 12, w: 11, cout: 20, ksize: 3, stride: 1, pad: 1 };
const DATA: ConvGeom = ConvGeom { batch: 2, cin: 7, h: 9, w: 9, cout: 12, ksize: 3, stride: 2, pad: 1 };
/// K = 8·16·16 = 2048 onto a 16 × 72 weight gradient: split into many parts on a GPU's plan.
const WGRAD: ConvGeom = ConvGeom { batch: 8, cin: 8, h: 16, w: 16, cout: 16, ksize: 3, stride: 1, pad: 1 };

impl Operands {
    fn new(ctx: &GpuContext) -> Result<Operands> {
        let mut rng = SplitMix64::new(0x5e1f_c0de);
        let (rows, cols, inner) = LIN;
        let mut up = |n: usize, scale: f32, shape: &[usize]| {
            Tensor::from_slice(ctx, &values(&mut rng, n, scale), shape, Category::Workspace)
        };
        let numel = |s: &[usize]| s.iter().product::<usize>();
        Ok(Operands {
            x: up(rows * inner, 1.0, &[rows, inner])?,
            w: up(cols * inner, 0.1, &[cols, inner])?,
            bias: up(cols, 1.0, &[cols])?,
            dy: up(rows * cols, 1e-6, &[rows, cols])?,
            cx: up(FWD.batch * FWD.cin * FWD.h * FWD.w, 2.0, &[FWD.batch, FWD.cin, FWD.h, FWD.w])?,
            cw: up(numel(&FWD.weight_shape()), 0.3, &FWD.weight_shape())?,
            cb: up(FWD.cout, 0.5, &[FWD.cout])?,
            dw: up(numel(&DATA.weight_shape()), 0.3, &DATA.weight_shape())?,
            ddy: up(numel(&DATA.out_shape()), 1e-6, &DATA.out_shape())?,
            dw_dy: up(numel(&WGRAD.out_shape()), 1e-6, &WGRAD.out_shape())?,
            dw_x: up(WGRAD.batch * WGRAD.cin * WGRAD.h * WGRAD.w, 1.0, &[WGRAD.batch, WGRAD.cin, WGRAD.h, WGRAD.w])?,
        })
    }

    /// Every product on the context's current path, read back.
    async fn products(&self, ctx: &GpuContext) -> Result<Vec<Vec<f32>>> {
        let outs = ctx
            .scoped("compute self-check", || -> Result<Vec<Tensor>> {
                let mut enc = ctx.device.create_command_encoder(&Default::default());
                let y = super::linear_forward(ctx, &mut enc, &self.x, &self.w, Some(&self.bias))?;
                let ldw = Tensor::uninit(ctx, &[LIN.1, LIN.2], Category::Workspace);
                super::linear_backward_weight(ctx, &mut enc, &self.dy, &self.x, &ldw)?;
                let cy = super::conv2d_forward(ctx, &mut enc, &self.cx, &self.cw, Some(&self.cb), FWD.stride, FWD.pad)?;
                let dx = super::conv2d_backward_data(ctx, &mut enc, &DATA, &self.ddy, &self.dw)?;
                let cdw = Tensor::uninit(ctx, &WGRAD.weight_shape(), Category::Workspace);
                super::conv2d_backward_weight(ctx, &mut enc, &WGRAD, &self.dw_dy, &self.dw_x, &cdw)?;
                ctx.submit(enc);
                Ok(vec![y, ldw, cy, dx, cdw])
            })
            .await??;
        let mut read = Vec::with_capacity(outs.len());
        for t in &outs {
            read.push(t.to_vec(ctx).await?);
        }
        Ok(read)
    }
}

/// Runs every product on `path` and on fp32 and returns the worst norm-relative error, or an
/// error naming the product that missed [`SELF_CHECK_TOLERANCE`]. Leaves the path at fp32.
async fn self_check(ctx: &GpuContext, path: ComputePath) -> Result<f64> {
    let ops = Operands::new(ctx)?;
    ctx.set_compute_path(ComputePath::Fp32)?;
    let want = ops.products(ctx).await?;
    ctx.set_compute_path(path)?;
    let got = ops.products(ctx).await;
    ctx.set_compute_path(ComputePath::Fp32)?;
    let got = got?;
    let names = [
        "linear forward",
        "linear weight gradient",
        "conv forward",
        "conv input gradient",
        "conv weight gradient (split K)",
    ];
    let mut worst = 0.0f64;
    for ((name, g), w) in names.iter().zip(&got).zip(&want) {
        let e = rel_error(g, w);
        if e.is_nan() || e > SELF_CHECK_TOLERANCE {
            return Err(FdsrError::Gpu {
                stage: "compute self-check".into(),
                message: format!("{name}: relative error {e:.2e} above {SELF_CHECK_TOLERANCE:.0e}"),
            });
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_error_never_passes_on_nothing() {
        assert_eq!(rel_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert!((rel_error(&[1.0, 0.0], &[0.0, 1.0]) - 2f64.sqrt()).abs() < 1e-12);
        assert!(rel_error(&[0.0; 4], &[0.0; 4]).is_infinite(), "all-zero reference");
        assert!(rel_error(&[f32::NAN], &[1.0]).is_infinite());
        assert!(rel_error(&[1.0], &[f32::INFINITY]).is_infinite());
        assert!(rel_error(&[1.0], &[1.0, 2.0]).is_infinite(), "lengths differ");
        let want: Vec<f32> = (1..100).map(|i| i as f32 * 1e-6).collect();
        let got: Vec<f32> = want.iter().map(|w| w * (1.0 + 1e-3)).collect();
        assert!((rel_error(&got, &want) - 1e-3).abs() < 1e-6);
    }

    #[test]
    fn the_report_names_the_path_and_why() {
        let r = ComputeReport {
            asked: Compute::Auto,
            path: ComputePath::Fp32,
            note: Some("no cooperative matrices: x".into()),
            self_check_failed: false,
        };
        assert_eq!(r.to_string(), "compute: fp32 (no cooperative matrices: x)");
        let r = ComputeReport { asked: Compute::Fp32, path: ComputePath::Fp32, note: None, self_check_failed: false };
        assert_eq!(r.to_string(), "compute: fp32 (--compute fp32)");
        let r = ComputeReport { path: ComputePath::Coop { fragment: 16, rounds: 1 }, note: None, ..r };
        assert!(r.to_string().starts_with("compute: cooperative matrix 16x16x16 f16→f32"));
        let r = ComputeReport { path: ComputePath::Coop { fragment: 8, rounds: 1 }, ..r };
        assert!(r.to_string().starts_with("compute: cooperative matrix 8x8x8 f16→f32"));
        let r = ComputeReport { asked: Compute::Coop, ..r };
        assert_eq!(r.to_string(), "compute: cooperative matrix 8x8x8 f16→f32");
    }
}
