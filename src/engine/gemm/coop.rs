//! The cooperative-matrix GEMM (`shaders/gemm_coop.wgsl`): per product, the abs-max of both
//! operand tensors in one dispatch (`shaders/gemm_scale.wgsl`, into a two-word scales buffer the
//! GEMM binds; nothing is read back), then the product over the same grid and plan as the fp32
//! kernel.

use super::{GemmParams, GemmPlan};
use crate::engine::tensor::Tensor;
use crate::error::Result;
use crate::gpu::kernel::{dispatch_grid, dispatch_with, uniform, Bindable};
use crate::gpu::{Category, GpuContext};

/// Mirror of `ScaleParams` in `shaders/gemm_scale.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ScaleParams {
    len_a: u32,
    len_b: u32,
    groups_a: u32,
    _pad: u32,
}

/// Most workgroups one abs-max pass spreads over (each invocation then walks the rest).
const MAX_SCALE_GROUPS: usize = 1024;

/// Values of the A and B buffers the product `entry` with `p` reads: the abs-max of each
/// covers exactly what the kernel stages (pooled buffers can be longer than their tensors).
pub fn operand_lens(entry: &str, p: &GemmParams) -> (usize, usize) {
    let [m, n, k] = [p.m, p.n, p.k].map(|x| x.max(1) as usize);
    let weights = (p.cout * p.cin * p.ksize * p.ksize) as usize;
    let input = (p.batch * p.cin * p.h * p.w) as usize;
    let grads = (p.batch * p.cout * p.oh * p.ow) as usize;
    match entry {
        "conv_forward" => (weights, input),
        "conv_backward_data" => (weights, grads),
        "conv_backward_weight" => (grads, input),
        _ => {
            let (sam, sak, sbk, sbn) = (p.sam as usize, p.sak as usize, p.sbk as usize, p.sbn as usize);
            ((m - 1) * sam + (k - 1) * sak + 1, (k - 1) * sbk + (n - 1) * sbn + 1)
        }
    }
}

/// The exponent `e` of the scale 2^e the kernel gives an operand whose max |x| is `max_abs`: the
/// mirror of `scale_exp` in `shaders/gemm_coop.wgsl` (from the bits: 14 minus the least `e'`
/// with `max_abs < 2^e'`, zero and subnormals counting as 2^-126, clamped to [-126, 126], where
/// 2^e is an exact normal f32).
pub fn scale_exponent(max_abs: f32) -> i32 {
    let e = ((max_abs.to_bits() >> 23) & 0xff) as i32 - 126;
    (14 - e).clamp(-126, 126)
}

/// The mirror of `unscale` in `shaders/gemm_coop.wgsl`: `c · 2^t` in two steps of at most 126.
pub fn unscale(c: f32, t: i32) -> f32 {
    let h = t / 2;
    c * 2f32.powi(h) * 2f32.powi(t - h)
}

/// Workgroups of an abs-max pass over `len` values (per operand).
pub fn scale_groups(len: usize) -> u32 {
    len.div_ceil(256 * 8).clamp(1, MAX_SCALE_GROUPS) as u32
}

/// Records, in one dispatch, `scales[0] = max(scales[0], bits of max |a|)` over the first `alen`
/// values of `a` and the same for `b` into `scales[1]` (`scales` cleared beforehand then holds
/// the bits of each operand's abs-max).
pub fn record_absmax(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    [(a, alen), (b, blen)]: [(&dyn Bindable, usize); 2],
    scales: &dyn Bindable,
) -> Result<()> {
    let groups_a = scale_groups(alen);
    let q = ScaleParams { len_a: alen as u32, len_b: blen as u32, groups_a, _pad: 0 };
    let qbuf = uniform(ctx, "absmax", &q);
    let groups = groups_a + scale_groups(blen);
    dispatch_grid(ctx, enc, "gemm_scale", "absmax", &[&qbuf, a, b, scales], [groups, 1, 1])
}

/// Records the scales of the product's operands and the product itself (partial sums into
/// `out`, which is C or the split-K workspace; the caller adds the splits).
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (entry, fragment, rounds): (&'static str, u32, u32),
    plan: &GemmPlan,
    p: &GemmParams,
    pbuf: &wgpu::Buffer,
    [a, b, bias]: [&dyn Bindable; 3],
    out: &dyn Bindable,
    grid: [u32; 3],
) -> Result<()> {
    let scales = Tensor::uninit(ctx, &[2], Category::Workspace);
    enc.clear_buffer(scales.buffer(), 0, None);
    let (alen, blen) = operand_lens(entry, p);
    record_absmax(ctx, enc, [(a, alen), (b, blen)], &scales)?;
    let constants = [("TM", plan.tm as f64), ("ROUNDS", f64::from(rounds))];
    let shader = if fragment == 8 { "gemm_coop8" } else { "gemm_coop" };
    dispatch_with(ctx, enc, (shader, entry, &constants[..]), &[pbuf, a, b, bias, out, &scales], grid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::conv::ConvGeom;

    /// The largest index the strided addressing of `gemm_addr.wgsl` reads, plus one.
    fn strided_extent(p: &GemmParams) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for k in 0..p.k as usize {
            for m in 0..p.m as usize {
                a = a.max(m * p.sam as usize + k * p.sak as usize + 1);
            }
            for n in 0..p.n as usize {
                b = b.max(k * p.sbk as usize + n * p.sbn as usize + 1);
            }
        }
        (a, b)
    }

    #[test]
    fn strided_lengths_cover_exactly_what_is_read() {
        // linear forward, input gradient, weight gradient, column sums (A = ones, sam = 0).
        let cases = [(7, 5, 9, 9, 1, 1, 9), (7, 9, 5, 5, 1, 9, 1), (5, 9, 7, 1, 5, 9, 1), (1, 5, 7, 0, 1, 5, 1)];
        for (m, n, k, sam, sak, sbk, sbn) in cases {
            let p = GemmParams { m, n, k, sam, sak, sbk, sbn, ..Default::default() };
            assert_eq!(operand_lens("matmul_strided", &p), strided_extent(&p), "{p:?}");
        }
    }

    #[test]
    fn conv_lengths_are_the_operand_tensors() {
        let g = ConvGeom { batch: 3, cin: 4, h: 10, w: 9, cout: 6, ksize: 3, stride: 2, pad: 1 };
        let p = g.params(1, 1, 1);
        let (w, x, dy) = (6 * 4 * 9, 3 * 4 * 10 * 9, 3 * 6 * g.oh() * g.ow());
        assert_eq!(operand_lens("conv_forward", &p), (w, x));
        assert_eq!(operand_lens("conv_backward_data", &p), (w, dy));
        assert_eq!(operand_lens("conv_backward_weight", &p), (dy, x));
    }

    #[test]
    fn scales_put_the_largest_value_just_below_2_to_the_14() {
        for max in [1.0f32, 0.75, 3.5e-6, 1e-6, 2.0, 65504.0, 1e-30, 3e38, f32::MIN_POSITIVE, 6e-8] {
            let scaled = f64::from(max) * 2f64.powi(scale_exponent(max));
            // The largest staged value fits f16 (max 65504) with room, and keeps f16's precision.
            assert!(scaled < 16384.0, "{max}: {scaled}");
            assert!(scaled >= 8192.0 || scale_exponent(max) == 126, "{max}: {scaled}");
            // A value 2^-20 below the max is still a normal f16 (>= 2^-14).
            assert!(scaled * 2f64.powi(-20) >= 2f64.powi(-14) || scale_exponent(max) == 126, "{max}");
        }
        assert_eq!(scale_exponent(0.0), 126, "zeros: any scale, clamped");
        assert_eq!(scale_exponent(1.0), 13, "1.0 < 2^1: scaled to 2^13");
        assert_eq!(scale_exponent(f32::MAX), -114);
        assert_eq!(scale_exponent(f32::INFINITY), -115, "inf stays inf");
        assert!(f32::INFINITY * 2f32.powi(-115) == f32::INFINITY);
    }

    #[test]
    fn unscaling_is_exact_and_does_not_overflow_on_the_way() {
        // A huge A (scale 2^-114) times a tiny B (scale 2^114): a moderate product.
        let (ea, eb) = (scale_exponent(3e38), scale_exponent(1e-34));
        let c = (3e38f64 * 2f64.powi(ea)) * (1e-34f64 * 2f64.powi(eb));
        let got = unscale(c as f32, -(ea + eb));
        assert!((f64::from(got) / (3e38 * 1e-34) - 1.0).abs() < 1e-6, "{got}");
        for t in [-252, -126, -1, 0, 1, 127, 252] {
            assert!((-126..=126).contains(&(t / 2)) && (-126..=126).contains(&(t - t / 2)), "{t}");
        }
        assert_eq!(unscale(3.0, -40), 3.0 * 2f32.powi(-40), "powers of two: exact");
    }

    #[test]
    fn scale_passes_stay_bounded() {
        assert_eq!(scale_groups(0), 1);
        assert_eq!(scale_groups(2048), 1);
        assert_eq!(scale_groups(2049), 2);
        assert_eq!(scale_groups(1 << 30), MAX_SCALE_GROUPS as u32);
    }
}
