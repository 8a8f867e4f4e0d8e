//! GPU driver of `division` (`shaders/division.wgsl`): bf16 block means, per-plane residual
//! statistics and range codes, 2-bit word-parallel packing, and the decoder. Tensors larger than
//! one storage binding go through in chunks of whole planes; a chunk's codes start at bit
//! `(2·first value) mod 32` of its first word, which it shares with the previous chunk.

use super::config::{CodecOptions, Rounding};
use super::format::DivisionBody;
use super::tables::Tables;
use super::uniform_gpu::{check_input_size, e0_from_gmax, finite_output, slice_input};
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, storage_init, storage_zeroed, submit, uniform};
use crate::gpu::{read_words, GpuContext};
use crate::reference::{checked_shape, division as reference};

const WG: u32 = 256;
const BITS: usize = reference::RESIDUAL_BITS as usize;

/// Mirror of `DivisionParams` in `shaders/division.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DivisionParams {
    /// Planes in this chunk.
    pub planes: u32,
    /// Plane height.
    pub h: u32,
    /// Plane width.
    pub w: u32,
    /// Blocks per plane row.
    pub blocks_x: u32,
    /// Blocks per plane.
    pub blocks_per_plane: u32,
    /// Blocks in this chunk.
    pub blocks: u32,
    /// Values in this chunk.
    pub n: u32,
    /// Payload words of this chunk.
    pub words: u32,
    /// Global flat index of the chunk's first value, modulo 2^32 (RNG index base).
    pub base: u32,
    /// Bit offset of the chunk's first code within its first word.
    pub bit0: u32,
    /// RNG seed.
    pub seed: u32,
    /// RNG stream (tensor id).
    pub stream: u32,
    /// 1 for stochastic rounding.
    pub stochastic: u32,
    /// Scale-code base exponent.
    pub e0: i32,
    /// Padding.
    pub _pad: [u32; 2],
}

/// Blocks of an `[N, C, H, W]` tensor and its split into chunks of whole planes.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// `N·C`.
    pub planes: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Blocks per plane row.
    pub blocks_x: usize,
    /// Blocks per plane.
    pub blocks_per_plane: usize,
    /// Planes per chunk (one chunk's values fit one storage binding).
    pub chunk_planes: usize,
}

impl Geometry {
    /// Blocking of `shape` (rank 4, non-zero dimensions) under the context's binding limit.
    pub fn new(ctx: &GpuContext, shape: &[usize]) -> Result<Self> {
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        checked_shape(&dims).map_err(FdsrError::InvalidTensor)?;
        let [n, c, h, w] = *shape else {
            return Err(FdsrError::InvalidTensor(format!("division needs a 4-D [N, C, H, W] shape, got {shape:?}")));
        };
        let plane_bytes = (h * w * 4) as u64;
        let chunk_planes = (ctx.max_binding_bytes() / plane_bytes) as usize;
        if chunk_planes == 0 {
            return Err(FdsrError::InvalidTensor(format!(
                "one {h}x{w} plane ({plane_bytes} bytes) exceeds the device's storage binding limit of {} bytes",
                ctx.max_binding_bytes()
            )));
        }
        let (planes, blocks_x) = (n * c, w.div_ceil(8));
        let blocks_per_plane = blocks_x * h.div_ceil(8);
        Ok(Self { planes, h, w, blocks_x, blocks_per_plane, chunk_planes: chunk_planes.min(planes) })
    }

    /// Values of the tensor.
    pub fn numel(&self) -> usize {
        self.planes * self.h * self.w
    }

    /// Chunks as (first plane, plane count).
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.planes).step_by(self.chunk_planes).map(|p| (p, self.chunk_planes.min(self.planes - p)))
    }

    /// Kernel parameters of a chunk (e0 and rounding left at zero) and the index of its first
    /// payload word in the whole tensor's payload.
    pub fn params(&self, first: usize, count: usize) -> (DivisionParams, usize) {
        let (v0, n) = (first * self.h * self.w, count * self.h * self.w);
        let bit0 = (v0 * BITS) % 32;
        let params = DivisionParams {
            planes: count as u32,
            h: self.h as u32,
            w: self.w as u32,
            blocks_x: self.blocks_x as u32,
            blocks_per_plane: self.blocks_per_plane as u32,
            blocks: (count * self.blocks_per_plane) as u32,
            n: n as u32,
            words: (bit0 + n * BITS).div_ceil(32) as u32,
            base: v0 as u32, // the reference's RNG index is the flat index modulo 2^32, too
            bit0: bit0 as u32,
            ..Default::default()
        };
        (params, v0 * BITS / 32)
    }
}

/// Compresses the rank-4 tensor in `input` (f32, `STORAGE | COPY_SRC`) with `division`.
pub async fn compress(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    opts: &CodecOptions,
) -> Result<DivisionBody> {
    let g = Geometry::new(ctx, shape)?;
    check_input_size(input, g.numel())?;
    let plane_len = g.h * g.w;
    let tables = Tables::buffer(ctx);
    let gmax = storage_zeroed(ctx, "division gmax", 8);
    let unused: Vec<wgpu::Buffer> = (0..4).map(|_| storage_zeroed(ctx, "unused", 4)).collect();
    let mut kept = Vec::new();
    for (first, count) in g.chunks() {
        let (params, _) = g.params(first, count);
        let chunk = slice_input(ctx, input, first * plane_len, count * plane_len, g.numel());
        let pbuf = uniform(ctx, "division stats", &params);
        let means = storage_zeroed(ctx, "division means", u64::from(params.blocks) * 4);
        let stats = storage_zeroed(ctx, "division stats", count as u64 * 8);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &chunk, &means, &stats, &gmax, &unused[0], &unused[1], &unused[2]];
        dispatch(ctx, &mut enc, "division", "block_means", &binds, params.blocks.div_ceil(WG))?;
        dispatch(ctx, &mut enc, "division", "plane_stats", &binds, params.planes)?;
        submit(ctx, "division stats", enc).await?;
        kept.push((means, stats));
    }
    let e0 = e0_from_gmax(ctx, &gmax).await?;
    let mut body =
        DivisionBody { e0, means: Vec::new(), mins: Vec::new(), range_codes: Vec::new(), payload: Vec::new() };
    for ((first, count), (means, stats)) in g.chunks().zip(&kept) {
        let (mut params, w0) = g.params(first, count);
        params.seed = opts.seed;
        params.stream = opts.tensor_id;
        params.stochastic = u32::from(opts.rounding == Rounding::Stochastic);
        params.e0 = e0;
        let chunk = slice_input(ctx, input, first * plane_len, count * plane_len, g.numel());
        let pbuf = uniform(ctx, "division pack", &params);
        let info = storage_zeroed(ctx, "division plane info", count as u64 * 4);
        let pay = storage_zeroed(ctx, "division payload", u64::from(params.words) * 4);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &chunk, means, stats, &gmax, &info, &pay, &unused[3]];
        dispatch(ctx, &mut enc, "division", "plane_codes", &binds, params.planes.div_ceil(WG))?;
        dispatch(ctx, &mut enc, "division", "pack_codes", &binds, params.words.div_ceil(WG))?;
        submit(ctx, "division pack", enc).await?;
        body.means.extend(read_words(ctx, means, params.blocks as usize).await?.into_iter().map(|w| w as u16));
        for w in read_words(ctx, &info, count).await? {
            body.mins.push(w as u16);
            body.range_codes.push((w >> 16) as u8);
        }
        // The chunk's first word is shared with the previous chunk when its codes start mid-word.
        let words = read_words(ctx, &pay, params.words as usize).await?;
        let shared = body.payload.len() - w0;
        if let (1, Some(last), Some(first_word)) = (shared, body.payload.last_mut(), words.first()) {
            *last |= first_word;
        }
        body.payload.extend(&words[shared.min(words.len())..]);
    }
    Ok(body)
}

/// Decompresses a `division` body of rank-4 `shape` to f32 values in NCHW order.
pub async fn decompress(ctx: &GpuContext, body: &DivisionBody, shape: &[usize]) -> Result<Vec<f32>> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    checked_shape(&dims).map_err(FdsrError::Corrupt)?;
    reference::validate(body, shape)?;
    let g = Geometry::new(ctx, shape)?;
    let tables = Tables::buffer(ctx);
    let unused: Vec<wgpu::Buffer> = (0..3).map(|_| storage_zeroed(ctx, "unused", 4)).collect();
    let mut out = Vec::with_capacity(g.numel());
    for (first, count) in g.chunks() {
        let (mut params, w0) = g.params(first, count);
        params.e0 = body.e0;
        let b0 = first * g.blocks_per_plane;
        let means: Vec<u32> = body.means[b0..b0 + params.blocks as usize].iter().map(|&m| m.into()).collect();
        let info: Vec<u32> = body.mins[first..first + count]
            .iter()
            .zip(&body.range_codes[first..first + count])
            .map(|(&m, &c)| u32::from(m) | (u32::from(c) << 16))
            .collect();
        let words = &body.payload[w0..w0 + params.words as usize];
        let pbuf = uniform(ctx, "division decode", &params);
        let mbuf = storage_init(ctx, "division means", bytemuck::cast_slice(&means));
        let ibuf = storage_init(ctx, "division plane info", bytemuck::cast_slice(&info));
        let pay = storage_init(ctx, "division payload", bytemuck::cast_slice(words));
        let output = storage_zeroed(ctx, "division output", u64::from(params.n) * 4);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &unused[0], &mbuf, &unused[1], &unused[2], &ibuf, &pay, &output];
        dispatch(ctx, &mut enc, "division", "unpack_codes", &binds, params.n.div_ceil(WG))?;
        submit(ctx, "division decode", enc).await?;
        out.extend(read_words(ctx, &output, params.n as usize).await?.into_iter().map(f32::from_bits));
    }
    finite_output(&out)?;
    Ok(out)
}
