//! Drivers of `shaders/gemm.wgsl`: linear layers and conv2d (forward, input and weight
//! gradients) as tiled matrix products recorded into a command encoder, each laid over the GPU
//! by a [`GemmPlan`] (tile shape and split of K from the shapes).

mod coop;
mod plan;
mod select;

pub use coop::{operand_lens, record_absmax, scale_exponent, scale_groups, unscale};
pub use plan::{GemmPlan, TILE_ROWS};
pub use select::{rel_error, select_compute, ComputeReport, SELF_CHECK_TOLERANCE};

use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, dispatch_with, uniform, Bindable, MAX_GROUPS_PER_DIM};
use crate::gpu::{Category, ComputePath, GpuContext};
pub use crate::reference::conv::ConvGeom;

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
    /// Lanes per output of the split reduction.
    pub lanes: u32,
    /// Padding.
    pub _a: [u32; 3],
}

impl ConvGeom {
    fn params(&self, m: usize, n: usize, k: usize) -> GemmParams {
        GemmParams {
            m: m as u32,
            n: n as u32,
            k: k as u32,
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

fn too_big(p: &GemmParams, splits: usize) -> Result<()> {
    let (m, n, k) = (u64::from(p.m), u64::from(p.n), u64::from(p.k));
    if [m * n * splits as u64, m * k, k * n].iter().any(|&x| x >= u64::from(u32::MAX)) {
        return Err(FdsrError::InvalidTensor(format!("matrix product {m}x{n}x{k} is too large")));
    }
    Ok(())
}

/// Records `entry` over C's tiles as [`GemmPlan::choose`] lays it out. With a split of K the
/// partial sums go to a workspace and `reduce_splits` adds them in order into `out`. The product
/// runs on cooperative matrices where the context's compute path says so.
#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    entry: &'static str,
    mut p: GemmParams,
    a: &dyn Bindable,
    b: &dyn Bindable,
    bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<()> {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let fixed = ctx.tile_rows().map(|tm| [tm]);
    let rows = fixed.as_ref().map_or(&TILE_ROWS[..], |r| &r[..]);
    let plan = GemmPlan::choose_among(rows, m, n, k, ctx.target_groups(), ctx.max_binding_bytes());
    too_big(&p, plan.splits)?;
    let grid = [n.div_ceil(plan.tn) as u32, m.div_ceil(plan.tm) as u32, plan.splits as u32];
    if grid[..2].iter().any(|&g| g > MAX_GROUPS_PER_DIM) {
        return Err(FdsrError::InvalidTensor(format!("matrix product {m}x{n} has too many tiles")));
    }
    p.has_bias = u32::from(bias.is_some());
    p.splits = plan.splits as u32;
    p.k_split = plan.k_split as u32;
    p.lanes = plan.lanes as u32;
    let bias: &dyn Bindable = match bias {
        Some(t) => t,
        None => a,
    };
    ctx.profiler.add_flops(entry, 2.0 * m as f64 * n as f64 * k as f64);
    let pbuf = uniform(ctx, entry, &p);
    let product = |enc: &mut wgpu::CommandEncoder, target: &Tensor| match ctx.compute_path() {
        ComputePath::Fp32 => {
            let kernel = ("gemm", entry, &[("TM", plan.tm as f64)][..]);
            dispatch_with(ctx, enc, kernel, &[&pbuf, a, b, bias, target], grid)
        }
        ComputePath::Coop { fragment, rounds } => {
            coop::record(ctx, enc, (entry, fragment, rounds), &plan, &p, &pbuf, [a, b, bias], target, grid)
        }
    };
    if plan.splits == 1 {
        return product(enc, out);
    }
    let partial = Tensor::uninit(ctx, &[plan.splits, m, n], Category::Workspace);
    product(enc, &partial)?;
    let groups = plan.reduce_groups(m * n) as u32;
    dispatch(ctx, enc, "gemm", "reduce_splits", &[&pbuf, &partial, b, b, out], groups)
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
    run(ctx, enc, "matmul_strided", p, x, w, bias, &y)?;
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
    run(ctx, enc, "matmul_strided", p, dy, w, None, &dx)?;
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
    let p = GemmParams {
        m: cols as u32,
        n: inner as u32,
        k: rows as u32,
        sam: 1,
        sak: cols as u32,
        sbk: inner as u32,
        sbn: 1,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, dy, x, None, dw)
}

/// `db[c] = Σ_rows dy[row, c]` written into `db [cols]`; `ones` holds `ones_len ≥ rows` ones.
pub fn column_sums(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    (ones, ones_len): (&dyn Bindable, usize),
    db: &Tensor,
) -> Result<()> {
    let &[rows, cols] = dy.shape() else {
        return Err(FdsrError::InvalidTensor(format!("column sums of a rank-{} tensor", dy.shape().len())));
    };
    check_len(db, cols, "bias gradient")?;
    if ones_len < rows {
        return Err(FdsrError::InvalidTensor(format!("{ones_len} ones for {rows} rows")));
    }
    let p = GemmParams {
        m: 1,
        n: cols as u32,
        k: rows as u32,
        sam: 0,
        sak: 1,
        sbk: cols as u32,
        sbn: 1,
        ..Default::default()
    };
    run(ctx, enc, "matmul_strided", p, ones, dy, None, db)
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
    run(ctx, enc, "conv_forward", p, w, x, bias, &y)?;
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
    run(ctx, enc, "conv_backward_data", p, w, dy, None, &dx)?;
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
    let p = g.params(g.cout, g.cin * g.ksize * g.ksize, g.batch * g.oh() * g.ow());
    run(ctx, enc, "conv_backward_weight", p, dy, x, None, dw)
}
