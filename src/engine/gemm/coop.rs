//! The cooperative-matrix GEMM (`shaders/gemm_coop.wgsl`): per product, the abs-max of each
//! operand tensor (`shaders/gemm_scale.wgsl`, into a two-word scales buffer the GEMM binds;
//! nothing is read back), then the product over the same grid and plan as the fp32 kernel.

use super::{GemmParams, GemmPlan};
use crate::engine::tensor::Tensor;
use crate::error::Result;
use crate::gpu::kernel::{dispatch, dispatch_with, uniform};
use crate::gpu::{Category, GpuContext};

/// Mirror of `ScaleParams` in `shaders/gemm_scale.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ScaleParams {
    len: u32,
    slot: u32,
    _pad: [u32; 2],
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

/// Workgroups of an abs-max pass over `len` values.
pub fn scale_groups(len: usize) -> u32 {
    len.div_ceil(256 * 8).clamp(1, MAX_SCALE_GROUPS) as u32
}

/// Records the scales of the product's operands and the product itself (partial sums into
/// `out`, which is C or the split-K workspace; the caller adds the splits).
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (entry, rounds): (&'static str, u32),
    plan: &GemmPlan,
    p: &GemmParams,
    pbuf: &wgpu::Buffer,
    [a, b, bias]: [&wgpu::Buffer; 3],
    out: &wgpu::Buffer,
    grid: [u32; 3],
) -> Result<()> {
    let scales = Tensor::uninit(ctx, &[2], Category::Workspace);
    enc.clear_buffer(scales.buffer(), 0, None);
    let (alen, blen) = operand_lens(entry, p);
    for (slot, (buf, len)) in [(a, alen), (b, blen)].into_iter().enumerate() {
        let q = ScaleParams { len: len as u32, slot: slot as u32, ..Default::default() };
        let qbuf = uniform(ctx, "absmax", &q);
        dispatch(ctx, enc, "gemm_scale", "absmax", &[&qbuf, buf, scales.buffer()], scale_groups(len))?;
    }
    let constants = [("TM", plan.tm as f64), ("ROUNDS", f64::from(rounds))];
    dispatch_with(ctx, enc, ("gemm_coop", entry, &constants[..]), &[pbuf, a, b, bias, out, scales.buffer()], grid)
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
    fn scale_passes_stay_bounded() {
        assert_eq!(scale_groups(0), 1);
        assert_eq!(scale_groups(2048), 1);
        assert_eq!(scale_groups(2049), 2);
        assert_eq!(scale_groups(1 << 30), MAX_SCALE_GROUPS as u32);
    }
}
