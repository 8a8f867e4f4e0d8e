//! The `.fdsr` file path: a device tensor compressed into a host [`Compressed`] and back, through
//! the device-resident kernels ([`super::resident`]) plus the readback and upload a file needs.
//! Where the stored format has one value per tensor (e0, the bits of `fdsr`), the host reads the
//! segments' statistics back, decides it once and writes it into every segment's header, so a
//! tensor cut into segments gives the same bytes as one that is not.

mod fdsr;

use super::bits::{append_bits, extract_bits};
use super::resident::flat::{DivisionJob, Stats, UniformJob};
use super::resident::layout::{segments, DivisionLayout, UniformLayout, FLAG_OUT_OF_RANGE, H_E0};
use super::resident::{check_input, slice};
use super::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::submit;
use crate::gpu::{read_buffer, read_words, Category, GpuContext, PooledBuffer, STORAGE_USAGE};
use crate::reference::{checked_shape, division as ref_division, quant, uniform as ref_uniform};
use crate::rules::alloc;
use crate::rules::config::{BitChoice, CodecOptions, Policy, GROUP_SIZE};
use crate::rules::format::{Body, Compressed, DivisionBody, UniformBody};

pub use crate::reference::reuse::ReuseStats;
pub use crate::rules::alloc::FdsrStats;
pub use fdsr::reuse_keys;

/// What compressing one tensor measured besides its stored form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodecStats {
    /// Similarity reuse counts (`fdsr` on a 4-D tensor with reuse on).
    pub reuse: Option<ReuseStats>,
    /// The DCT analysis pass (`fdsr` on a 4-D tensor): tile classes, band energies and ranges.
    pub analysis: Option<FdsrStats>,
}

fn workspace(ctx: &GpuContext, words: u64) -> PooledBuffer {
    ctx.pool.get(&ctx.device, Category::Workspace, words * 4, STORAGE_USAGE)
}

/// A region of `words` words holding `data` (the rest zero), uploaded before the next submit.
fn upload(ctx: &GpuContext, words: u64, data: &[u32]) -> PooledBuffer {
    let buf = workspace(ctx, words);
    let mut all = data.to_vec();
    all.resize(words as usize, 0);
    ctx.write_buffer(&buf, 0, bytemuck::cast_slice(&all));
    buf
}

/// Values packed `per` to a word of `32 / per` bits each.
fn pack_words(values: impl Iterator<Item = u32>, per: usize) -> Vec<u32> {
    let v: Vec<u32> = values.collect();
    let bits = 32 / per;
    v.chunks(per).map(|c| c.iter().enumerate().fold(0, |w, (i, &x)| w | (x << (bits * i)))).collect()
}

/// `n` values of `32 / per` bits each from packed `words`.
fn unpack_words(words: &[u32], n: usize, per: usize) -> Vec<u32> {
    let bits = 32 / per;
    let mask = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
    (0..n).map(|i| (words.get(i / per).copied().unwrap_or(0) >> (bits * (i % per))) & mask).collect()
}

/// Every decoded value must be finite, as in the reference decoders.
fn finite_output(out: &[f32]) -> Result<()> {
    match out.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(FdsrError::Corrupt(format!("decoded value at index {i} is not finite"))),
        None => Ok(()),
    }
}

/// The tensor-wide e0 from every segment's `[largest range, out-of-range flag]`.
async fn tensor_e0(ctx: &GpuContext, stats: &[Stats]) -> Result<i32> {
    let mut gmax = 0f32;
    for st in stats {
        let g = read_words(ctx, &st.gmax, 2).await?;
        if g[1] & FLAG_OUT_OF_RANGE != 0 {
            return Err(FdsrError::InvalidTensor(
                "a value is not finite or beyond the ±2^120 that lossy policies accept".into(),
            ));
        }
        gmax = gmax.max(f32::from_bits(g[0]));
    }
    Ok(quant::e0_for(gmax))
}

/// Compresses `numel` values of `shape` in `input` (f32, `STORAGE | COPY_SRC`) with `policy`.
pub async fn compress(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<(Compressed, CodecStats)> {
    let numel = check_input(input, shape, policy)?;
    let mut stats = CodecStats::default();
    let body = match policy {
        Policy::Lossless => Body::Lossless { data: lossless(ctx, input, numel).await? },
        Policy::Uniform { bits } => Body::Uniform(uniform(ctx, input, numel, *bits, opts).await?),
        Policy::Division => Body::Division(division(ctx, input, shape, opts).await?),
        Policy::Fdsr(cfg) if shape.len() == 4 => {
            let (body, reuse, analysis) = fdsr::compress(ctx, input, shape, cfg, opts).await?;
            stats = CodecStats { reuse, analysis: Some(analysis) };
            Body::Fdsr(body)
        }
        Policy::Fdsr(cfg) => {
            let bits = match &cfg.bits {
                BitChoice::Budget(b) => alloc::flat_bits_for_budget(numel, *b)?,
                BitChoice::Fixed(b) => alloc::flat_bits_for_fixed(b),
            };
            Body::Uniform(uniform(ctx, input, numel, bits, opts).await?)
        }
    };
    let c =
        Compressed { shape: shape.to_vec(), seed: opts.seed, tensor_id: opts.tensor_id, rounding: opts.rounding, body };
    Ok((c, stats))
}

/// Decompresses to f32 values in the original shape's row-major order.
pub async fn decompress(ctx: &GpuContext, c: &Compressed) -> Result<Vec<f32>> {
    let dims: Vec<u64> = c.shape.iter().map(|&d| d as u64).collect();
    checked_shape(&dims).map_err(FdsrError::Corrupt)?;
    let opts = CodecOptions { seed: c.seed, tensor_id: c.tensor_id, rounding: c.rounding };
    let out = match &c.body {
        Body::Lossless { data } => {
            if data.len() != c.numel() {
                return Err(FdsrError::Corrupt(format!("{} values stored for {} expected", data.len(), c.numel())));
            }
            data.iter().map(|&b| f32::from_bits(b)).collect()
        }
        Body::Uniform(u) => decode_uniform(ctx, u, c.numel(), &opts).await?,
        Body::Division(d) => decode_division(ctx, d, &c.shape, &opts).await?,
        Body::Fdsr(f) => fdsr::decompress(ctx, f, &c.shape).await?,
    };
    finite_output(&out)?;
    Ok(out)
}

/// The f32 bit patterns of `input`, read in pieces of at most one storage binding; only finite
/// values are accepted, as by the reference.
async fn lossless(ctx: &GpuContext, input: &wgpu::Buffer, numel: usize) -> Result<Vec<u32>> {
    let (bytes, piece) = (numel as u64 * 4, (ctx.max_binding_bytes() / 4).max(1) * 4);
    let mut data = Vec::with_capacity(numel);
    let mut offset = 0;
    while offset < bytes {
        let size = piece.min(bytes - offset);
        data.extend(bytemuck::pod_collect_to_vec::<u8, u32>(&read_buffer(ctx, input, offset, size).await?));
        offset += size;
    }
    if let Some(i) = data.iter().position(|&b| !f32::from_bits(b).is_finite()) {
        return Err(FdsrError::InvalidTensor(format!("value {} at index {i} is not finite", f32::from_bits(data[i]))));
    }
    Ok(data)
}

fn uniform_segments(ctx: &GpuContext, numel: usize, bits: u8) -> Result<Vec<(u64, UniformLayout)>> {
    let groups = numel.div_ceil(GROUP_SIZE) as u64;
    Ok(segments(groups, GROUP_SIZE as u64 * 4, ctx.max_binding_bytes())?
        .into_iter()
        .map(|(g0, count)| {
            let v0 = g0 * GROUP_SIZE as u64;
            (v0, UniformLayout::new((count * GROUP_SIZE as u64).min(numel as u64 - v0), bits))
        })
        .collect())
}

async fn uniform(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    numel: usize,
    bits: u8,
    opts: &CodecOptions,
) -> Result<UniformBody> {
    if !(1..=8).contains(&bits) {
        return Err(FdsrError::InvalidConfig(format!("uniform bits {bits} must be in 1..=8")));
    }
    let tables = Tables::buffer(ctx);
    let segs = uniform_segments(ctx, numel, bits)?;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let (mut kept, mut stats) = (Vec::new(), Vec::new());
    for &(v0, layout) in &segs {
        let region = workspace(ctx, layout.words);
        let x = slice(ctx, &mut enc, input, v0 * 4, layout.n * 4, numel as u64 * 4);
        stats.push(UniformJob { ctx, tables: &tables, layout, base: v0, opts }.stats(&mut enc, &x, &region)?);
        kept.push((region, x));
    }
    submit(ctx, "uniform stats", enc).await?;
    let e0 = tensor_e0(ctx, &stats).await?;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for ((&(v0, layout), (region, x)), st) in segs.iter().zip(&kept).zip(&stats) {
        ctx.write_buffer(region, H_E0 as u64 * 4, bytemuck::bytes_of(&e0));
        UniformJob { ctx, tables: &tables, layout, base: v0, opts }.pack(&mut enc, x, st, region)?;
    }
    submit(ctx, "uniform pack", enc).await?;
    let mut body = UniformBody { bits, e0, mins: Vec::new(), range_codes: Vec::new(), payload: Vec::new() };
    for (&(_, l), (region, _)) in segs.iter().zip(&kept) {
        let w = read_words(ctx, region, l.words as usize).await?;
        let groups = l.groups as usize;
        body.mins.extend(unpack_words(&w[l.mins_off as usize..], groups, 2).into_iter().map(|m| m as u16));
        body.range_codes.extend(unpack_words(&w[l.codes_off as usize..], groups, 4).into_iter().map(|c| c as u8));
        body.payload.extend_from_slice(&w[l.pay_off as usize..]);
    }
    Ok(body)
}

async fn decode_uniform(ctx: &GpuContext, u: &UniformBody, numel: usize, opts: &CodecOptions) -> Result<Vec<f32>> {
    ref_uniform::check_params(u.bits, u.e0)?;
    let (groups, words) = ref_uniform::lengths(numel as u64, u.bits);
    if u.mins.len() != groups || u.range_codes.len() != groups || u.payload.len() != words {
        return Err(FdsrError::Corrupt(format!(
            "uniform body holds {} mins, {} ranges and {} words where {numel} values need {groups}, {groups} and {words}",
            u.mins.len(),
            u.range_codes.len(),
            u.payload.len()
        )));
    }
    for (i, &m) in u.mins.iter().enumerate() {
        ref_uniform::finite_bf16(m, "group minimum", i)?;
    }
    let tables = Tables::buffer(ctx);
    let mut out = Vec::with_capacity(numel);
    for (v0, l) in uniform_segments(ctx, numel, u.bits)? {
        let g0 = (v0 / GROUP_SIZE as u64) as usize;
        let gs = g0..g0 + l.groups as usize;
        let mut words = vec![0u32; l.pay_off as usize];
        words[H_E0] = u.e0 as u32;
        let mins = pack_words(u.mins[gs.clone()].iter().map(|&m| u32::from(m)), 2);
        let codes = pack_words(u.range_codes[gs].iter().map(|&c| u32::from(c)), 4);
        words[l.mins_off as usize..][..mins.len()].copy_from_slice(&mins);
        words[l.codes_off as usize..][..codes.len()].copy_from_slice(&codes);
        let w0 = (v0 * u64::from(u.bits) / 32) as usize;
        words.extend_from_slice(&u.payload[w0..w0 + l.pay_words as usize]);
        let region = upload(ctx, l.words, &words);
        let dst = workspace(ctx, l.n);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        UniformJob { ctx, tables: &tables, layout: l, base: v0, opts }.decode(&mut enc, &region, &dst)?;
        submit(ctx, "uniform decode", enc).await?;
        out.extend(read_words(ctx, &dst, l.n as usize).await?.into_iter().map(f32::from_bits));
    }
    Ok(out)
}

fn division_segments(ctx: &GpuContext, shape: &[usize]) -> Result<Vec<(u64, DivisionLayout)>> {
    let (planes, h, w) = ((shape[0] * shape[1]) as u64, shape[2] as u64, shape[3] as u64);
    Ok(segments(planes, h * w * 4, ctx.max_binding_bytes())?
        .into_iter()
        .map(|(p0, count)| (p0, DivisionLayout::new(count, h, w)))
        .collect())
}

async fn division(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    opts: &CodecOptions,
) -> Result<DivisionBody> {
    let tables = Tables::buffer(ctx);
    let (hw, plane) = ((shape[2], shape[3]), (shape[2] * shape[3]) as u64);
    let total = shape.iter().product::<usize>() as u64 * 4;
    let segs = division_segments(ctx, shape)?;
    let job = |p0: u64, layout| DivisionJob { ctx, tables: &tables, layout, hw, base: p0 * plane, opts };
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let (mut kept, mut stats) = (Vec::new(), Vec::new());
    for &(p0, layout) in &segs {
        let region = workspace(ctx, layout.words);
        let x = slice(ctx, &mut enc, input, p0 * plane * 4, layout.n * 4, total);
        stats.push(job(p0, layout).stats(&mut enc, &x, &region)?);
        kept.push((region, x));
    }
    submit(ctx, "division stats", enc).await?;
    let e0 = tensor_e0(ctx, &stats).await?;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for ((&(p0, layout), (region, x)), st) in segs.iter().zip(&kept).zip(&stats) {
        ctx.write_buffer(region, H_E0 as u64 * 4, bytemuck::bytes_of(&e0));
        job(p0, layout).pack(&mut enc, x, st, region)?;
    }
    submit(ctx, "division pack", enc).await?;
    let mut body =
        DivisionBody { e0, means: Vec::new(), mins: Vec::new(), range_codes: Vec::new(), payload: Vec::new() };
    let mut bits = 0u64;
    for (&(_, l), (region, _)) in segs.iter().zip(&kept) {
        let w = read_words(ctx, region, l.words as usize).await?;
        body.means.extend(unpack_words(&w[l.means_off as usize..], l.blocks as usize, 2).into_iter().map(|m| m as u16));
        body.mins.extend(unpack_words(&w[l.mins_off as usize..], l.planes as usize, 2).into_iter().map(|m| m as u16));
        body.range_codes
            .extend(unpack_words(&w[l.codes_off as usize..], l.planes as usize, 4).into_iter().map(|c| c as u8));
        append_bits(&mut body.payload, &mut bits, &w[l.pay_off as usize..], 2 * l.n);
    }
    Ok(body)
}

async fn decode_division(ctx: &GpuContext, d: &DivisionBody, shape: &[usize], opts: &CodecOptions) -> Result<Vec<f32>> {
    ref_division::validate(d, shape)?;
    let tables = Tables::buffer(ctx);
    let (hw, plane) = ((shape[2], shape[3]), (shape[2] * shape[3]) as u64);
    let blocks_per_plane = (shape[2].div_ceil(8) * shape[3].div_ceil(8)) as u64;
    let mut out = Vec::with_capacity(shape.iter().product());
    for (p0, l) in division_segments(ctx, shape)? {
        let (ps, bs) = (p0 as usize..(p0 + l.planes) as usize, (p0 * blocks_per_plane) as usize..);
        let mut words = vec![0u32; l.pay_off as usize];
        words[H_E0] = d.e0 as u32;
        let means = pack_words(d.means[bs][..l.blocks as usize].iter().map(|&m| u32::from(m)), 2);
        let mins = pack_words(d.mins[ps.clone()].iter().map(|&m| u32::from(m)), 2);
        let codes = pack_words(d.range_codes[ps].iter().map(|&c| u32::from(c)), 4);
        words[l.means_off as usize..][..means.len()].copy_from_slice(&means);
        words[l.mins_off as usize..][..mins.len()].copy_from_slice(&mins);
        words[l.codes_off as usize..][..codes.len()].copy_from_slice(&codes);
        words.extend(extract_bits(&d.payload, 2 * p0 * plane, 2 * l.n));
        let region = upload(ctx, l.words, &words);
        let dst = workspace(ctx, l.n);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let job = DivisionJob { ctx, tables: &tables, layout: l, hw, base: p0 * plane, opts };
        job.decode(&mut enc, &region, &dst)?;
        submit(ctx, "division decode", enc).await?;
        out.extend(read_words(ctx, &dst, l.n as usize).await?.into_iter().map(f32::from_bits));
    }
    Ok(out)
}
