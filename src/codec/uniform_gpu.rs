//! GPU driver of `uniform:B` and the `fdsr` flat path (`shaders/uniform.wgsl`): group statistics,
//! range codes under the tensor's e0, word-parallel packing, and the decoder. Tensors larger than
//! one storage binding go through in chunks of whole groups; a group fills `8·B` whole payload
//! words, so chunk payloads simply concatenate.

use super::config::{CodecOptions, Rounding, GROUP_SIZE};
use super::format::UniformBody;
use super::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, storage_init, storage_zeroed, submit, uniform};
use crate::gpu::{read_words, GpuContext};
use crate::reference::{checked_shape, quant, uniform as reference};

const WG: u32 = 256;

/// Mirror of `UniformParams` in `shaders/uniform.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UniformParams {
    /// Values in this chunk.
    pub n: u32,
    /// Groups in this chunk.
    pub groups: u32,
    /// Payload words of this chunk.
    pub words: u32,
    /// Bits per code, 1..=8.
    pub bits: u32,
    /// Global flat index of the chunk's first value, modulo 2^32 (RNG index base).
    pub base: u32,
    /// RNG seed.
    pub seed: u32,
    /// RNG stream (tensor id).
    pub stream: u32,
    /// 1 for stochastic rounding.
    pub stochastic: u32,
    /// Scale-code base exponent.
    pub e0: i32,
    /// Padding.
    pub _pad: [u32; 3],
}

/// A flat tensor in groups of [`GROUP_SIZE`] and its split into chunks of whole groups.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Values of the tensor.
    pub numel: usize,
    /// Groups of the tensor (the last one may be partial).
    pub groups: usize,
    /// Groups per chunk (one chunk's values fit one storage binding).
    pub chunk_groups: usize,
}

impl Geometry {
    /// Grouping of `shape` (rank 1..=4, non-zero dimensions) under the context's binding limit.
    pub fn new(ctx: &GpuContext, shape: &[usize]) -> Result<Self> {
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let numel: usize = checked_shape(&dims).map_err(FdsrError::InvalidTensor)?.iter().product();
        let groups = numel.div_ceil(GROUP_SIZE);
        // The context guarantees at least 4096 bytes per binding: at least 4 groups.
        let per_chunk = (ctx.max_binding_bytes() / (GROUP_SIZE as u64 * 4)).max(1) as usize;
        Ok(Self { numel, groups, chunk_groups: per_chunk.min(groups) })
    }

    /// Chunks as (first group, group count).
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.groups).step_by(self.chunk_groups).map(|g| (g, self.chunk_groups.min(self.groups - g)))
    }

    /// First value and value count of a chunk.
    pub fn values(&self, first: usize, count: usize) -> (usize, usize) {
        let v0 = first * GROUP_SIZE;
        (v0, (count * GROUP_SIZE).min(self.numel - v0))
    }

    /// Kernel parameters of a chunk (e0 and rounding left at zero).
    pub fn params(&self, first: usize, count: usize, bits: u8) -> UniformParams {
        let (v0, n) = self.values(first, count);
        UniformParams {
            n: n as u32,
            groups: count as u32,
            words: (n * usize::from(bits)).div_ceil(32) as u32,
            bits: bits.into(),
            base: v0 as u32, // the reference's RNG index is the flat index modulo 2^32, too
            ..Default::default()
        }
    }
}

/// The values `[v0, v0 + n)` of `input`: the buffer itself when that is all of it, else a copy.
pub(crate) fn slice_input(ctx: &GpuContext, input: &wgpu::Buffer, v0: usize, n: usize, all: usize) -> wgpu::Buffer {
    if v0 == 0 && n == all {
        return input.clone();
    }
    let buf = storage_zeroed(ctx, "input chunk", n as u64 * 4);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(input, v0 as u64 * 4, &buf, 0, n as u64 * 4);
    ctx.queue.submit([enc.finish()]);
    buf
}

/// Checks that `input` holds `numel` f32 values.
pub(crate) fn check_input_size(input: &wgpu::Buffer, numel: usize) -> Result<()> {
    if input.size() < numel as u64 * 4 {
        return Err(FdsrError::InvalidTensor(format!(
            "input buffer of {} bytes cannot hold {numel} f32 values",
            input.size()
        )));
    }
    Ok(())
}

/// Reads the `[max range, out-of-range flag]` words and returns e0, or the input error.
pub(crate) async fn e0_from_gmax(ctx: &GpuContext, gmax: &wgpu::Buffer) -> Result<i32> {
    let g = read_words(ctx, gmax, 2).await?;
    if g[1] != 0 {
        return Err(FdsrError::InvalidTensor(
            "a value is not finite or beyond the ±2^120 that lossy policies accept".into(),
        ));
    }
    Ok(quant::e0_for(f32::from_bits(g[0])))
}

/// Compresses the tensor of `shape` in `input` (f32, `STORAGE | COPY_SRC`) at `bits` bits.
pub async fn compress(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    bits: u8,
    opts: &CodecOptions,
) -> Result<UniformBody> {
    if !(1..=8).contains(&bits) {
        return Err(FdsrError::InvalidConfig(format!("uniform bits {bits} must be in 1..=8")));
    }
    let g = Geometry::new(ctx, shape)?;
    check_input_size(input, g.numel)?;
    let tables = Tables::buffer(ctx);
    let gmax = storage_zeroed(ctx, "uniform gmax", 8);
    let unused: Vec<wgpu::Buffer> = (0..5).map(|_| storage_zeroed(ctx, "unused", 4)).collect();
    let mut stats = Vec::new();
    for (first, count) in g.chunks() {
        let (v0, n) = g.values(first, count);
        let chunk = slice_input(ctx, input, v0, n, g.numel);
        let pbuf = uniform(ctx, "uniform stats", &g.params(first, count, bits));
        let sbuf = storage_zeroed(ctx, "uniform stats", count as u64 * 8);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &chunk, &sbuf, &gmax, &unused[0], &unused[1], &unused[2]];
        dispatch(ctx, &mut enc, "uniform", "group_stats", &binds, count as u32)?;
        submit(ctx, "uniform stats", enc).await?;
        stats.push(sbuf);
    }
    let e0 = e0_from_gmax(ctx, &gmax).await?;
    let mut body = UniformBody { bits, e0, mins: Vec::new(), range_codes: Vec::new(), payload: Vec::new() };
    for ((first, count), sbuf) in g.chunks().zip(&stats) {
        let (v0, n) = g.values(first, count);
        let mut params = g.params(first, count, bits);
        params.seed = opts.seed;
        params.stream = opts.tensor_id;
        params.stochastic = u32::from(opts.rounding == Rounding::Stochastic);
        params.e0 = e0;
        let chunk = slice_input(ctx, input, v0, n, g.numel);
        let pbuf = uniform(ctx, "uniform pack", &params);
        let info = storage_zeroed(ctx, "uniform group info", count as u64 * 4);
        let pay = storage_zeroed(ctx, "uniform payload", u64::from(params.words) * 4);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &chunk, sbuf, &gmax, &info, &pay, &unused[3]];
        dispatch(ctx, &mut enc, "uniform", "group_codes", &binds, (count as u32).div_ceil(WG))?;
        dispatch(ctx, &mut enc, "uniform", "pack_groups", &binds, params.words.div_ceil(WG))?;
        submit(ctx, "uniform pack", enc).await?;
        for w in read_words(ctx, &info, count).await? {
            body.mins.push(w as u16);
            body.range_codes.push((w >> 16) as u8);
        }
        body.payload.extend(read_words(ctx, &pay, params.words as usize).await?);
    }
    Ok(body)
}

/// Checks a body against `numel` values exactly as the reference decoder does.
fn validate(body: &UniformBody, numel: usize) -> Result<()> {
    reference::check_params(body.bits, body.e0)?;
    let (groups, words) = reference::lengths(numel as u64, body.bits);
    if body.mins.len() != groups || body.range_codes.len() != groups || body.payload.len() != words {
        return Err(FdsrError::Corrupt(format!(
            "uniform body holds {} mins, {} ranges and {} words where {numel} values need {groups}, {groups} and {words}",
            body.mins.len(),
            body.range_codes.len(),
            body.payload.len()
        )));
    }
    for (i, &m) in body.mins.iter().enumerate() {
        reference::finite_bf16(m, "group minimum", i)?;
    }
    Ok(())
}

/// Decompresses a `uniform` body of `shape` to f32 values in row-major order.
pub async fn decompress(ctx: &GpuContext, body: &UniformBody, shape: &[usize]) -> Result<Vec<f32>> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    checked_shape(&dims).map_err(FdsrError::Corrupt)?;
    let g = Geometry::new(ctx, shape)?;
    validate(body, g.numel)?;
    let tables = Tables::buffer(ctx);
    let unused: Vec<wgpu::Buffer> = (0..3).map(|_| storage_zeroed(ctx, "unused", 4)).collect();
    let mut out = Vec::with_capacity(g.numel);
    for (first, count) in g.chunks() {
        let mut params = g.params(first, count, body.bits);
        params.e0 = body.e0;
        let info: Vec<u32> = body.mins[first..first + count]
            .iter()
            .zip(&body.range_codes[first..first + count])
            .map(|(&m, &c)| u32::from(m) | (u32::from(c) << 16))
            .collect();
        let w0 = first * GROUP_SIZE * usize::from(body.bits) / 32;
        let words = &body.payload[w0..w0 + params.words as usize];
        let pbuf = uniform(ctx, "uniform decode", &params);
        let ibuf = storage_init(ctx, "uniform group info", bytemuck::cast_slice(&info));
        let pay = storage_init(ctx, "uniform payload", bytemuck::cast_slice(words));
        let output = storage_zeroed(ctx, "uniform output", u64::from(params.n) * 4);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [&tables, &pbuf, &unused[0], &unused[1], &unused[2], &ibuf, &pay, &output];
        dispatch(ctx, &mut enc, "uniform", "unpack_groups", &binds, params.n.div_ceil(WG))?;
        submit(ctx, "uniform decode", enc).await?;
        out.extend(read_words(ctx, &output, params.n as usize).await?.into_iter().map(f32::from_bits));
    }
    finite_output(&out)?;
    Ok(out)
}

/// Every decoded value must be finite, as in the reference decoder.
pub(crate) fn finite_output(out: &[f32]) -> Result<()> {
    match out.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(FdsrError::Corrupt(format!("decoded value at index {i} is not finite"))),
        None => Ok(()),
    }
}
