//! Drivers of `shaders/gemm.wgsl`: linear layers and conv2d (forward, input and weight
//! gradients) as tiled matrix products recorded into a command encoder.

use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, dispatch_grid, uniform};
use crate::gpu::{Category, GpuContext};
pub use crate::reference::conv::ConvGeom;

/// Rows of C per workgroup.
const TM: usize = 64;
/// Columns of C per workgroup.
const TN: usize = 64;
/// Largest K one workgroup walks before the weight gradient splits K over the grid's z.
const SPLIT_K: usize = 4096;

/// Mirror of `GemmParams` in `shaders/gemm.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GemmParams {
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// Inner dimension.
    pub k: u32,
    /// K values per split (grid z).
    pub k_split: u32,
    /// Conv: batch.
    pub batch: u32,
    /// Conv: input channels.
    pub cin: u32,
    /// Conv: input height.
    pub h: u32,
    /// Conv: input width.
    pub w: u32,
    /// Conv: output channels.
    pub cout: u32,
    /// Conv: output height.
    pub oh: u32,
    /// Conv: output width.
    pub ow: u32,
    /// Conv: kernel side.
    pub ksize: u32,
    /// Conv: stride.
    pub stride: u32,
    /// Conv: zero padding.
    pub pad: u32,
    /// 1 when a bias is added.
    pub has_bias: u32,
    /// Number of K splits.
    pub splits: u32,
    /// Strided A: step per row.
    pub sam: u32,
    /// Strided A: step per k.
    pub sak: u32,
    /// Strided B: step per k.
    pub sbk: u32,
    /// Strided B: step per column.
    pub sbn: u32,
}

impl ConvGeom {
    fn params(&self, m: usize, n: usize, k: usize) -> GemmParams {
        GemmParams {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            k_split: k as u32,
            batch: self.batch as u32,
            cin: self.cin as u32,
            h: self.h as u32,
            w: self.w as u32,
            cout: self.cout as u32,
            oh: self.oh() as u32,
            ow: self.ow() as u32,
            ksize: self.ksize as u32,
            stride: self.stride as u32,
            pad: self.pad as u32,
            splits: 1,
            ..Default::default()
        }
    }
}

fn check_len(t: &Tensor, want: usize, what: &str) -> Result<()> {
    if t.numel() != want {
        return Err(FdsrError::InvalidTensor(format!("{what} has shape {:?}, expected {want} values", t.shape())));
    }
    Ok(())
}

fn too_big(p: &GemmParams) -> Result<()> {
    let biggest =
        [p.m as u64 * p.n as u64 * u64::from(p.splits.max(1)), p.m as u64 * p.k as u64, p.k as u64 * p.n as u64];
    if biggest.iter().any(|&x| x >= u64::from(u32::MAX)) {
        return Err(FdsrError::InvalidTensor(format!("matrix product {}x{}x{} is too large", p.m, p.n, p.k)));
    }
    Ok(())
}

/// Records `entry` over C's tiles, splitting K into `p.splits` parts when more than one.
/// With splits, the partial sums go to a workspace and are added in order into `out`.
#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    entry: &'static str,
    mut p: GemmParams,
    a: &wgpu::Buffer,
    b: &wgpu::Buffer,
    bias: Option<&wgpu::Buffer>,
    out: &Tensor,
) -> Result<()> {
    too_big(&p)?;
    let grid_xy = [(p.n as usize).div_ceil(TN) as u32, (p.m as usize).div_ceil(TM) as u32];
    if grid_xy.iter().any(|&g| g > crate::gpu::kernel::MAX_GROUPS_PER_DIM) {
        return Err(FdsrError::InvalidTensor(format!("matrix product {}x{} has too many tiles", p.m, p.n)));
    }
    p.has_bias = u32::from(bias.is_some());
    let bias = bias.unwrap_or(a);
    let splits = p.splits.max(1);
    p.splits = splits;
    p.k_split = p.k.div_ceil(splits).next_multiple_of(8).max(8);
    let pbuf = uniform(ctx, entry, &p);
    if splits == 1 {
        return dispatch_grid(ctx, enc, "gemm", entry, &[&pbuf, a, b, bias, out.buffer()], [grid_xy[0], grid_xy[1], 1]);
    }
    let partial = Tensor::uninit(ctx, &[splits as usize, p.m as usize, p.n as usize], Category::Workspace);
    dispatch_grid(ctx, enc, "gemm", entry, &[&pbuf, a, b, bias, partial.buffer()], [grid_xy[0], grid_xy[1], splits])?;
    let groups = (p.m * p.n).div_ceil(256);
    dispatch(ctx, enc, "gemm", "reduce_splits", &[&pbuf, partial.buffer(), b, b, out.buffer()], groups)
}

/// `y = x · wᵀ (+ bias)`: `x [rows, inner]`, `w [cols, inner]`, `bias [cols]` → `y [rows, cols]`.
pub fn linear_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let (&[rows, inner], &[cols, winner]) = (x.shape(), w.shape()) else {
        return Err(FdsrError::InvalidTensor(format!(
            "linear needs rank-2 x and w, got {:?} and {:?}",
            x.shape(),
            w.shape()
        )));
    };
    if winner != inner {
        return Err(FdsrError::InvalidTensor(format!("linear of x {:?} with w {:?}", x.shape(), w.shape())));
    }
    if let Some(b) = bias {
        check_len(b, cols, "linear bias")?;
    }
    let y = Tensor::uninit(ctx, &[rows, cols], Category::Workspace);
    let p = GemmParams {
        m: rows as u32,
        n: cols as u32,
        k: inner as u32,
        sam: inner as u32,
        sak: 1,
        sbk: 1,
        sbn: inner as u32,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, x.buffer(), w.buffer(), bias.map(Tensor::buffer), &y)?;
    Ok(y)
}

/// `dx = dy · w`: `dy [rows, cols]`, `w [cols, inner]` → `dx [rows, inner]`.
pub fn linear_backward_data(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    w: &Tensor,
) -> Result<Tensor> {
    let (&[rows, cols], &[wcols, inner]) = (dy.shape(), w.shape()) else {
        return Err(FdsrError::InvalidTensor(format!("linear backward of dy {:?}, w {:?}", dy.shape(), w.shape())));
    };
    if wcols != cols {
        return Err(FdsrError::InvalidTensor(format!("linear backward of dy {:?}, w {:?}", dy.shape(), w.shape())));
    }
    let dx = Tensor::uninit(ctx, &[rows, inner], Category::Workspace);
    let p = GemmParams {
        m: rows as u32,
        n: inner as u32,
        k: cols as u32,
        sam: cols as u32,
        sak: 1,
        sbk: inner as u32,
        sbn: 1,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, dy.buffer(), w.buffer(), None, &dx)?;
    Ok(dx)
}

/// `dw = dyᵀ · x` written into `dw [cols, inner]`, from `dy [rows, cols]` and `x [rows, inner]`.
pub fn linear_backward_weight(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    x: &Tensor,
    dw: &Tensor,
) -> Result<()> {
    let (&[rows, cols], &[xrows, inner]) = (dy.shape(), x.shape()) else {
        return Err(FdsrError::InvalidTensor(format!(
            "linear weight gradient of dy {:?}, x {:?}",
            dy.shape(),
            x.shape()
        )));
    };
    if xrows != rows {
        return Err(FdsrError::InvalidTensor(format!(
            "linear weight gradient of dy {:?}, x {:?}",
            dy.shape(),
            x.shape()
        )));
    }
    check_len(dw, cols * inner, "linear weight gradient")?;
    let splits = rows.div_ceil(SPLIT_K) as u32;
    let p = GemmParams {
        m: cols as u32,
        n: inner as u32,
        k: rows as u32,
        sam: 1,
        sak: cols as u32,
        sbk: inner as u32,
        sbn: 1,
        splits,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, dy.buffer(), x.buffer(), None, dw)
}

/// `db[c] = Σ_rows dy[row, c]` written into `db [cols]`; `ones` holds `ones_len ≥ rows` ones.
pub fn column_sums(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    (ones, ones_len): (&wgpu::Buffer, usize),
    db: &Tensor,
) -> Result<()> {
    let &[rows, cols] = dy.shape() else {
        return Err(FdsrError::InvalidTensor(format!("column sums of a rank-{} tensor", dy.shape().len())));
    };
    check_len(db, cols, "bias gradient")?;
    if ones_len < rows {
        return Err(FdsrError::InvalidTensor(format!("{ones_len} ones for {rows} rows")));
    }
    let splits = rows.div_ceil(SPLIT_K) as u32;
    let p = GemmParams {
        m: 1,
        n: cols as u32,
        k: rows as u32,
        sam: 0,
        sak: 1,
        sbk: cols as u32,
        sbn: 1,
        splits,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, ones, dy.buffer(), None, db)
}

/// Conv2d forward: `x [b, cin, h, w]` with `w [cout, cin, k, k]` (+ `bias [cout]`) → `y`.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    pad: usize,
) -> Result<Tensor> {
    let g = ConvGeom::of(x.shape(), w.shape(), stride, pad)?;
    if let Some(b) = bias {
        check_len(b, g.cout, "conv bias")?;
    }
    let y = Tensor::uninit(ctx, &g.out_shape(), Category::Workspace);
    let p = g.params(g.cout, g.batch * g.oh() * g.ow(), g.cin * g.ksize * g.ksize);
    run(ctx, enc, "conv_forward", p, w.buffer(), x.buffer(), bias.map(Tensor::buffer), &y)?;
    Ok(y)
}

/// Conv2d input gradient: `dx [b, cin, h, w]` from `dy [b, cout, oh, ow]` and the weights.
pub fn conv2d_backward_data(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    g: &ConvGeom,
    dy: &Tensor,
    w: &Tensor,
) -> Result<Tensor> {
    check_len(dy, g.out_shape().iter().product(), "conv output gradient")?;
    check_len(w, g.weight_shape().iter().product(), "conv weights")?;
    let dx = Tensor::uninit(ctx, &[g.batch, g.cin, g.h, g.w], Category::Workspace);
    let p = g.params(g.cin, g.batch * g.h * g.w, g.cout * g.ksize * g.ksize);
    run(ctx, enc, "conv_backward_data", p, w.buffer(), dy.buffer(), None, &dx)?;
    Ok(dx)
}

/// Conv2d weight gradient written into `dw [cout, cin, k, k]` from `dy` and the input `x`.
pub fn conv2d_backward_weight(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    g: &ConvGeom,
    dy: &Tensor,
    x: &Tensor,
    dw: &Tensor,
) -> Result<()> {
    check_len(dy, g.out_shape().iter().product(), "conv output gradient")?;
    check_len(x, g.batch * g.cin * g.h * g.w, "conv input")?;
    check_len(dw, g.weight_shape().iter().product(), "conv weight gradient")?;
    let k = g.batch * g.oh() * g.ow();
    let mut p = g.params(g.cout, g.cin * g.ksize * g.ksize, k);
    p.splits = k.div_ceil(SPLIT_K) as u32;
    run(ctx, enc, "conv_backward_weight", p, dy.buffer(), x.buffer(), None, dw)
}
