//! Drivers of `shaders/ops_pool.wgsl`: max-pool 2×2 stride 2 (argmax saved as 2 bits per output;
//! the output recomputed from its input and the argmax) and global average pool
//! `[N, C, H, W] → [N, C]`, forward and backward.

use super::{dummy, groups, WG};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform};
use crate::gpu::{Category, GpuContext};

/// Mirror of `PoolParams` in `shaders/ops_pool.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PoolParams {
    /// `N · C`.
    pub planes: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Number of max-pool outputs.
    pub outputs: u32,
    /// Number of index words (`ceil(outputs / 16)`).
    pub words: u32,
    /// Number of input values.
    pub total: u32,
    /// Padding.
    pub _a: u32,
    /// Padding.
    pub _b: u32,
}

/// What max-pool saves for its backward: the argmax of each 2×2 window as 2 bits per output
/// (output `o` in bits `2(o mod 16)..` of word `o / 16`; 0 top-left, 1 top-right, 2 bottom-left,
/// 3 bottom-right; the first maximum in that order wins).
#[derive(Clone, Debug)]
pub struct PoolIndex {
    /// `ceil(len / 16)` u32 words (seen as a tensor of as many f32 slots).
    pub words: Tensor,
    /// Number of outputs.
    pub len: usize,
}

impl PoolIndex {
    /// Whether it indexes every output of a max-pool with parameters `p`.
    fn fits(&self, p: &PoolParams) -> bool {
        self.len == p.outputs as usize && self.words.numel() == p.words as usize
    }
}

fn rank4(shape: &[usize], what: &str) -> Result<[usize; 4]> {
    match *shape {
        [n, c, h, w] if n * c * h * w > 0 => Ok([n, c, h, w]),
        _ => Err(FdsrError::InvalidTensor(format!("{what} needs a non-empty [N, C, H, W] tensor, got {shape:?}"))),
    }
}

fn params(shape: [usize; 4], what: &str) -> Result<PoolParams> {
    let [n, c, h, w] = shape;
    let total = n * c * h * w;
    groups(total, what)?;
    let outputs = n * c * (h / 2) * (w / 2);
    Ok(PoolParams {
        planes: (n * c) as u32,
        h: h as u32,
        w: w as u32,
        outputs: outputs as u32,
        words: outputs.div_ceil(16) as u32,
        total: total as u32,
        ..Default::default()
    })
}

fn even(shape: [usize; 4], what: &str) -> Result<()> {
    if !shape[2].is_multiple_of(2) || !shape[3].is_multiple_of(2) {
        return Err(FdsrError::InvalidTensor(format!("{what} needs even H and W, got {shape:?}")));
    }
    Ok(())
}

/// Max-pool 2×2 stride 2 of `x [N, C, H, W]` (H, W even) → `[N, C, H/2, W/2]` and the argmax
/// indices (in [`Category::SavedActivations`]).
pub fn maxpool2_forward(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: &Tensor) -> Result<(Tensor, PoolIndex)> {
    let s = rank4(x.shape(), "max-pool")?;
    even(s, "max-pool")?;
    let p = params(s, "max-pool")?;
    let y = Tensor::uninit(ctx, &[s[0], s[1], s[2] / 2, s[3] / 2], Category::Workspace);
    let words = Tensor::uninit(ctx, &[p.words as usize], Category::SavedActivations);
    let pb = uniform(ctx, "maxpool_forward", &p);
    let g = (p.words as usize).div_ceil(WG) as u32;
    dispatch(ctx, enc, "ops_pool", "maxpool_forward", &[&pb, &x, &x, &y, &words], g)?;
    Ok((y, PoolIndex { words, len: p.outputs as usize }))
}

/// The values of `x [N, C, H, W]` at the argmax of each window that `index` records: the output
/// of [`maxpool2_forward`] again, bit for bit, when `x` is its input (from a recomputed input,
/// its stand-in).
pub fn maxpool2_gather(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    index: &PoolIndex,
) -> Result<Tensor> {
    let s = rank4(x.shape(), "max-pool gather")?;
    even(s, "max-pool gather")?;
    let p = params(s, "max-pool gather")?;
    if !index.fits(&p) {
        return Err(FdsrError::InvalidTensor(format!(
            "max-pool gather of {:?} needs {} indices, got {}",
            x.shape(),
            p.outputs,
            index.len
        )));
    }
    let y = Tensor::uninit(ctx, &[s[0], s[1], s[2] / 2, s[3] / 2], Category::Workspace);
    let (pb, d) = (uniform(ctx, "maxpool_gather", &p), dummy(ctx));
    let g = groups(p.outputs as usize, "max-pool gather")?;
    dispatch(ctx, enc, "ops_pool", "maxpool_gather", &[&pb, x, &index.words, &y, &d], g)?;
    Ok(y)
}

/// Input gradient of [`maxpool2_forward`]: `dy [N, C, H/2, W/2]` routed to each window's argmax.
pub fn maxpool2_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    index: &PoolIndex,
    input_shape: &[usize],
) -> Result<Tensor> {
    let s = rank4(input_shape, "max-pool backward")?;
    even(s, "max-pool backward")?;
    let p = params(s, "max-pool backward")?;
    let out_shape = [s[0], s[1], s[2] / 2, s[3] / 2];
    if dy.shape() != out_shape || !index.fits(&p) {
        return Err(FdsrError::InvalidTensor(format!(
            "max-pool backward to input {input_shape:?} needs dy {out_shape:?}, got dy {:?} and {} indices",
            dy.shape(),
            index.len
        )));
    }
    let dx = Tensor::uninit(ctx, input_shape, Category::Workspace);
    let (pb, d) = (uniform(ctx, "maxpool_backward", &p), dummy(ctx));
    let g = groups(p.total as usize, "max-pool backward")?;
    dispatch(ctx, enc, "ops_pool", "maxpool_backward", &[&pb, &dy, &index.words, &dx, &d], g)?;
    Ok(dx)
}

/// Global average pool: `x [N, C, H, W]` → `[N, C]` (sums in raster order, then divides by H·W).
pub fn avgpool_forward(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, x: &Tensor) -> Result<Tensor> {
    let s = rank4(x.shape(), "average pool")?;
    let p = params(s, "average pool")?;
    let y = Tensor::uninit(ctx, &[s[0], s[1]], Category::Workspace);
    let (pb, d) = (uniform(ctx, "avgpool_forward", &p), dummy(ctx));
    let g = groups(p.planes as usize, "average pool")?;
    dispatch(ctx, enc, "ops_pool", "avgpool_forward", &[&pb, &x, &x, &y, &d], g)?;
    Ok(y)
}

/// Input gradient of [`avgpool_forward`]: `dx[n, c, y, x] = dy[n, c] / (H·W)`.
pub fn avgpool_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    dy: &Tensor,
    input_shape: &[usize],
) -> Result<Tensor> {
    let s = rank4(input_shape, "average pool backward")?;
    if dy.shape() != [s[0], s[1]] {
        return Err(FdsrError::InvalidTensor(format!(
            "average pool backward to input {input_shape:?} needs dy [{}, {}], got {:?}",
            s[0],
            s[1],
            dy.shape()
        )));
    }
    let p = params(s, "average pool backward")?;
    let dx = Tensor::uninit(ctx, input_shape, Category::Workspace);
    let (pb, d) = (uniform(ctx, "avgpool_backward", &p), dummy(ctx));
    let g = groups(p.total as usize, "average pool backward")?;
    dispatch(ctx, enc, "ops_pool", "avgpool_backward", &[&pb, &dy, &dy, &dx, &d], g)?;
    Ok(dx)
}
