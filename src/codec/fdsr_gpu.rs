//! GPU driver of the `fdsr` 4-D path: analysis, bit allocation, scan, fused DCT+quantize+pack,
//! optional similarity reuse ([`super::reuse_gpu`]) and the decoder; tensors larger than one
//! storage binding go through in chunks of planes (references never cross a chunk).

use super::alloc::{self, FdsrStats};
use super::bits::{append_bits, pack2};
use super::config::{BitChoice, CodecOptions, FdsrConfig, Rounding};
use super::format::FdsrBody;
use super::reuse_gpu::{self, ReuseInputs, ReuseParams};
use super::scan::{record_class_sizes, record_scan, Keep};
use super::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, storage_init, storage_zeroed, submit, uniform};
use crate::gpu::{read_words, GpuContext};
use crate::reference::quant;
use crate::reference::reuse::{worthwhile, ReuseStats};

pub use super::fdsr_decode_gpu::decompress;

const STATS: usize = 20;
const WG: u32 = 64;

/// Mirror of `FdsrParams` in `shaders/fdsr_encode.wgsl` (and, truncated, `DecodeParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EncodeParams {
    /// Planes in this chunk.
    pub planes: u32,
    /// Plane height.
    pub h: u32,
    /// Plane width.
    pub w: u32,
    /// Tiles per plane row.
    pub tiles_x: u32,
    /// Tiles per plane.
    pub tiles_per_plane: u32,
    /// Tiles in this chunk.
    pub tiles: u32,
    /// Global index of the chunk's first tile (RNG index base).
    pub tile_base: u32,
    /// Number of bands.
    pub nbands: u32,
    /// RNG seed.
    pub seed: u32,
    /// RNG stream (tensor id).
    pub stream: u32,
    /// 1 for stochastic rounding.
    pub stochastic: u32,
    /// Scale-code base exponent.
    pub e0: i32,
    /// DC-only threshold.
    pub dc_threshold: f32,
    /// Padding.
    pub _pad: [u32; 3],
    /// Band edges (up to 9).
    pub edges: [u32; 12],
    /// Bits per band (up to 8).
    pub bits: [u32; 8],
    /// Tile size in bits by class.
    pub class_bits: [u32; 4],
}

/// Mirror of `DecodeParams` in `shaders/fdsr_decode.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DecodeParams {
    /// Planes in this chunk.
    pub planes: u32,
    /// Plane height.
    pub h: u32,
    /// Plane width.
    pub w: u32,
    /// Tiles per plane row.
    pub tiles_x: u32,
    /// Tiles per plane.
    pub tiles_per_plane: u32,
    /// Tiles in this chunk.
    pub tiles: u32,
    /// Number of bands.
    pub nbands: u32,
    /// Scale-code base exponent.
    pub e0: i32,
    /// Band edges.
    pub edges: [u32; 12],
    /// Bits per band.
    pub bits: [u32; 8],
}

/// Tiling of an `[N, C, H, W]` tensor and its split into chunks of whole planes.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// `N·C`.
    pub planes: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Tiles per row.
    pub tiles_x: usize,
    /// Tiles per plane.
    pub tiles_per_plane: usize,
    /// Planes per chunk (fits one storage binding).
    pub chunk_planes: usize,
}

impl Geometry {
    /// Tiling of `shape` (rank 4) under the context's binding limit.
    pub fn new(ctx: &GpuContext, shape: &[usize]) -> Result<Self> {
        let [n, c, h, w] = shape else {
            return Err(FdsrError::InvalidTensor(format!("the DCT path needs rank 4, got shape {shape:?}")));
        };
        let (planes, tiles_x) = (n * c, w.div_ceil(8));
        let tiles_per_plane = tiles_x * h.div_ceil(8);
        let plane_bytes = (h * w * 4) as u64;
        let chunk_planes = (ctx.max_binding_bytes() / plane_bytes) as usize;
        if chunk_planes == 0 {
            return Err(FdsrError::InvalidTensor(format!(
                "one {h}x{w} plane ({plane_bytes} bytes) exceeds the device's storage binding limit of {} bytes",
                ctx.max_binding_bytes()
            )));
        }
        if planes * tiles_per_plane > u32::MAX as usize / 64 {
            return Err(FdsrError::InvalidTensor(format!("shape {shape:?} has too many tiles")));
        }
        Ok(Self { planes, h: *h, w: *w, tiles_x, tiles_per_plane, chunk_planes: chunk_planes.min(planes) })
    }

    /// Chunks as (first plane, plane count).
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.planes).step_by(self.chunk_planes).map(|p| (p, self.chunk_planes.min(self.planes - p)))
    }

    /// Encoder parameters of the chunk of planes `[first, first+count)`.
    pub(crate) fn params(&self, first: usize, count: usize, edges: &[u8], bits: &[u8]) -> EncodeParams {
        let mut e = [0u32; 12];
        let mut b = [0u32; 8];
        edges.iter().enumerate().for_each(|(i, &x)| e[i] = x.into());
        bits.iter().enumerate().for_each(|(i, &x)| b[i] = x.into());
        EncodeParams {
            planes: count as u32,
            h: self.h as u32,
            w: self.w as u32,
            tiles_x: self.tiles_x as u32,
            tiles_per_plane: self.tiles_per_plane as u32,
            tiles: (count * self.tiles_per_plane) as u32,
            tile_base: (first * self.tiles_per_plane) as u32,
            nbands: (edges.len() - 1) as u32,
            edges: e,
            bits: b,
            ..Default::default()
        }
    }
}

/// The chunk of `input` holding planes `[first, first+count)`: the buffer itself when it is
/// the whole tensor, else a copy.
fn chunk_input(ctx: &GpuContext, input: &wgpu::Buffer, g: &Geometry, first: usize, count: usize) -> wgpu::Buffer {
    let plane_bytes = (g.h * g.w * 4) as u64;
    if count == g.planes {
        return input.clone();
    }
    let buf = storage_zeroed(ctx, "fdsr chunk", count as u64 * plane_bytes);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(input, first as u64 * plane_bytes, &buf, 0, count as u64 * plane_bytes);
    ctx.queue.submit([enc.finish()]);
    buf
}

struct Analysis {
    classes: Vec<wgpu::Buffer>,
    chunk_counts: Vec<[u64; 3]>,
    plane_dcmax: Vec<f32>,
    plane_nonzero: Vec<u64>,
    stats: FdsrStats,
}

async fn analyze(
    ctx: &GpuContext,
    tables: &wgpu::Buffer,
    input: &wgpu::Buffer,
    g: &Geometry,
    cfg: &FdsrConfig,
) -> Result<Analysis> {
    let nb = cfg.band_edges.len() - 1;
    let mut out = Analysis {
        classes: vec![],
        chunk_counts: vec![],
        plane_dcmax: vec![],
        plane_nonzero: vec![],
        stats: FdsrStats {
            coherent_weight: if cfg.grad_aware { alloc::GRAD_COHERENT_WEIGHT } else { 1.0 },
            ..FdsrStats::new(&cfg.band_edges)
        },
    };
    for (first, count) in g.chunks() {
        let mut params = g.params(first, count, &cfg.band_edges, &[]);
        params.dc_threshold = cfg.dc_threshold;
        let tiles = params.tiles;
        let groups = tiles.div_ceil(WG);
        let chunk = chunk_input(ctx, input, g, first, count);
        let pbuf = uniform(ctx, "fdsr analyze", &params);
        let classes = storage_zeroed(ctx, "fdsr classes", u64::from(tiles) * 4);
        let dcmax = storage_zeroed(ctx, "fdsr plane dc max", count as u64 * 8);
        let partials = storage_zeroed(ctx, "fdsr partials", u64::from(groups) * STATS as u64 * 4);
        let tile_stats = storage_zeroed(ctx, "fdsr tile stats", u64::from(tiles) * STATS as u64 * 4);
        let (offsets, payload) = (storage_zeroed(ctx, "unused", 4), storage_zeroed(ctx, "unused", 4));
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let binds = [tables, &pbuf, &chunk, &classes, &dcmax, &partials, &offsets, &payload, &tile_stats];
        dispatch(ctx, &mut enc, "fdsr_encode", "analyze_tiles", &binds, groups)?;
        dispatch(ctx, &mut enc, "fdsr_encode", "reduce_stats", &binds, (groups * STATS as u32).div_ceil(WG))?;
        submit(ctx, "fdsr analyze", enc).await?;
        let part: Vec<f32> = bytemuck::cast_slice(&read_words(ctx, &partials, groups as usize * STATS).await?).to_vec();
        let mut counts = [0u64; 3];
        for p in part.chunks(STATS) {
            for b in 1..nb {
                out.stats.band_sum_n_max2[b] += f64::from(p[b]);
                out.stats.band_energy[b] += f64::from(p[8 + b]);
            }
            for (c, n) in counts.iter_mut().enumerate() {
                *n += p[16 + c] as u64;
            }
            out.stats.gmax = out.stats.gmax.max(p[19]);
        }
        out.stats.zero_tiles += counts[0];
        out.stats.dc_tiles += counts[1];
        out.stats.full_tiles += counts[2];
        out.chunk_counts.push(counts);
        let dc = read_words(ctx, &dcmax, 2 * count).await?;
        out.plane_dcmax.extend(dc[..count].iter().map(|&b| f32::from_bits(b)));
        out.plane_nonzero.extend(dc[count..].iter().map(|&n| u64::from(n)));
        out.classes.push(classes);
    }
    out.stats.planes = g.planes as u64;
    out.stats.numel = (g.planes * g.h * g.w) as u64;
    out.stats.set_dc(&out.plane_dcmax, &out.plane_nonzero);
    Ok(out)
}

/// Compresses the rank-4 tensor in `input` (f32, `STORAGE | COPY_SRC`) with the DCT path.
pub async fn compress(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<FdsrBody> {
    Ok(compress_inner(ctx, input, shape, cfg, opts).await?.0)
}

/// Like [`compress`], also returning the reuse statistics (`None` without `cfg.reuse`) and the
/// analysis pass's statistics (classes, band energies and ranges: what bit allocation saw).
pub async fn compress_with_stats(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<(FdsrBody, Option<ReuseStats>, FdsrStats)> {
    let (body, stats, _, analysis) = compress_inner(ctx, input, shape, cfg, opts).await?;
    Ok((body, stats, analysis))
}

/// The reuse key of every tile (0 for tiles that are not full), as the GPU computes it: for
/// comparing signatures with [`crate::reference::reuse::tile_key`]. Needs `cfg.reuse`.
pub async fn reuse_keys(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<Vec<u32>> {
    Ok(compress_inner(ctx, input, shape, cfg, opts).await?.2)
}

fn reuse_params(p: &EncodeParams) -> ReuseParams {
    ReuseParams {
        planes: p.planes,
        h: p.h,
        w: p.w,
        tiles_x: p.tiles_x,
        tiles_per_plane: p.tiles_per_plane,
        tiles: p.tiles,
        nbands: p.nbands,
        e0: p.e0,
        edges: p.edges,
        bits: p.bits,
        ..Default::default()
    }
}

async fn compress_inner(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<(FdsrBody, Option<ReuseStats>, Vec<u32>, FdsrStats)> {
    cfg.validate()?;
    let g = Geometry::new(ctx, shape)?;
    let tables = Tables::buffer(ctx);
    let a = analyze(ctx, &tables, input, &g, cfg).await?;
    let bits = match &cfg.bits {
        BitChoice::Fixed(b) => b.clone(),
        BitChoice::Budget(budget) => alloc::choose_bits(&a.stats, *budget)?,
    };
    let e0 = quant::e0_for(a.stats.gmax);
    let dc_codes: Vec<u8> = a.plane_dcmax.iter().map(|&m| quant::encode_scale(m, e0)).collect();
    let class_bits = alloc::class_bits(&cfg.band_edges, &bits);
    let reuse = cfg.reuse.filter(|_| worthwhile(&cfg.band_edges, &bits));
    let mut stats = cfg.reuse.map(|_| ReuseStats::default());
    let (mut classes_all, mut payload, mut refs, mut keys) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut payload_len = 0u64;
    for (((first, count), classes), counts) in g.chunks().zip(&a.classes).zip(&a.chunk_counts) {
        let mut params = g.params(first, count, &cfg.band_edges, &bits);
        params.seed = opts.seed;
        params.stream = opts.tensor_id;
        params.stochastic = u32::from(opts.rounding == Rounding::Stochastic);
        params.e0 = e0;
        params.class_bits = class_bits;
        let tiles = params.tiles;
        // Without references; reuse only lowers it.
        let max_bits: u64 = (0..3).map(|c| counts[c] * u64::from(class_bits[c])).sum();
        let chunk = chunk_input(ctx, input, &g, first, count);
        let pbuf = uniform(ctx, "fdsr pack", &params);
        let dcmax: Vec<u32> = a.plane_dcmax[first..first + count].iter().map(|m| m.to_bits()).collect();
        let dcbuf = storage_init(ctx, "fdsr plane dc max", bytemuck::cast_slice(&dcmax));
        let offsets = storage_zeroed(ctx, "fdsr offsets", u64::from(tiles) * 4);
        let max_words = max_bits.div_ceil(32).max(1);
        let pay = storage_zeroed(ctx, "fdsr payload", max_words * 4);
        // WebGPU forbids one buffer in two writable bindings: a dummy per unused writable slot.
        let (unused_partials, unused_stats) = (storage_zeroed(ctx, "unused", 4), storage_zeroed(ctx, "unused", 4));
        let mut keep: Keep = Vec::new();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let reuse_bufs = match &reuse {
            Some(r) => {
                let inputs = ReuseInputs { tables: &tables, input: &chunk, classes, plane_dcmax: &dcbuf };
                Some(reuse_gpu::record(ctx, &mut enc, &inputs, reuse_params(&params), r, opts.seed, &mut keep)?)
            }
            None => None,
        };
        enc.copy_buffer_to_buffer(classes, 0, &offsets, 0, u64::from(tiles) * 4);
        record_class_sizes(ctx, &mut enc, &offsets, tiles, class_bits, &mut keep)?;
        record_scan(ctx, &mut enc, &offsets, tiles, &mut keep)?;
        let binds = [&tables, &pbuf, &chunk, classes, &dcbuf, &unused_partials, &offsets, &pay, &unused_stats];
        dispatch(ctx, &mut enc, "fdsr_encode", "pack_tiles", &binds, tiles.div_ceil(WG))?;
        submit(ctx, "fdsr pack", enc).await?;
        let cls = read_words(ctx, classes, tiles as usize).await?;
        let total_bits: u64 = cls.iter().map(|&c| u64::from(class_bits[(c & 3) as usize])).sum();
        classes_all.extend(cls);
        let words = read_words(ctx, &pay, total_bits.div_ceil(32).max(1) as usize).await?;
        append_bits(&mut payload, &mut payload_len, &words, total_bits);
        if let Some(rb) = reuse_bufs {
            let (r, mut st) = rb.results(ctx, params.tile_base).await?;
            refs.extend(r);
            keys.extend(rb.keys(ctx).await?);
            st.eligible = counts[2];
            stats.get_or_insert_with(ReuseStats::default).add(&st);
        } else if let Some(st) = stats.as_mut() {
            st.eligible += counts[2];
        }
    }
    let body = FdsrBody {
        band_edges: cfg.band_edges.clone(),
        bits,
        e0,
        classes: pack2(&classes_all),
        dc_codes,
        refs,
        payload,
    };
    Ok((body, stats, keys, a.stats))
}
