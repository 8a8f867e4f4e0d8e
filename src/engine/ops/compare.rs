//! Driver of `shaders/ops_compare.wgsl`: the gradient-error probe's sums on the device — for a
//! gradient from exact and one from compressed activations, `Σ (c − e)²` and `Σ e²` as partial
//! sums per workgroup — so a probe reads back a few words, not every gradient.

use super::{expect_shape, reducing};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::GpuContext;

/// The shader, with workgroup-memory and with subgroup sums.
const SHADER: [&str; 2] = ["ops_compare", "ops_compare_sg"];
/// Values one workgroup sums (`CHUNK` in the shader).
pub const CHUNK: usize = 4096;

/// Mirror of `CompareParams` in `shaders/ops_compare.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CompareParams {
    /// Values compared.
    pub n: u32,
    /// First pair of `out` written.
    pub offset: u32,
    /// Padding.
    pub _a: [u32; 2],
}

/// Pairs of partial sums [`diff_sums`] writes for `n` values.
pub fn partials(n: usize) -> usize {
    n.div_ceil(CHUNK).max(1)
}

/// Records pairs `first ..` of `out` (f32 pairs): pair `first + g` holds `Σ (c − e)²` and `Σ e²`
/// over values `[g · CHUNK, (g + 1) · CHUNK)` of `exact` (e) and `compressed` (c), one pair per
/// [`partials`]`(n)`; summing the pairs in order gives the totals.
pub fn diff_sums(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    exact: &Tensor,
    compressed: &Tensor,
    out: &Tensor,
    first: usize,
) -> Result<()> {
    expect_shape(compressed, exact.shape(), "compressed-path gradient")?;
    let (n, groups) = (exact.numel(), partials(exact.numel()));
    if 2 * (first + groups) > out.numel() || n as u64 >= u64::from(u32::MAX) {
        return Err(FdsrError::InvalidTensor(format!(
            "gradient sums of {n} values from pair {first} do not fit {} words",
            out.numel()
        )));
    }
    let p = uniform(ctx, "diff_sums", &CompareParams { n: n as u32, offset: first as u32, _a: [0; 2] });
    let bufs: [&dyn Bindable; 4] = [&p, &exact, &compressed, &out];
    dispatch(ctx, enc, reducing(ctx, SHADER), "diff_sums", &bufs, groups as u32)
}
