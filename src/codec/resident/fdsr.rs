//! Driver of the `fdsr` 4-D path on the device (`shaders/fdsr_encode.wgsl`, `fdsr_alloc.wgsl`,
//! `fdsr_reuse.wgsl`, `fdsr_decode.wgsl`): records one segment's analysis, bit allocation,
//! reuse and pack (with its accounting) into a command encoder, and its decode. Nothing here
//! waits for the device; the region's header carries the bits from the allocation to the pack,
//! and its block offsets the tiles' places from the pack to the decode.

use super::layout::FdsrLayout;
use crate::codec::config::{BitChoice, CodecOptions, FdsrConfig, Rounding};
use crate::codec::reuse_gpu::{self, ReuseInputs, ReuseParams};
use crate::error::Result;
use crate::gpu::kernel::{dispatch, dispatch_indirect, dispatch_with, grid, uniform, Bindable};
use crate::gpu::{Category, GpuContext, PooledBuffer, STORAGE_USAGE};
use crate::reference::alloc_rule::{self, AllocMode};

pub use super::params::{AllocParams, DecodeParams, EncodeParams};
use super::segment::{edge_constants, edges12, WG};
pub use super::segment::{pack_args, PackLaunch, SegmentGeom};
/// Statistics per analysis workgroup (`STATS` of `shaders/fdsr_tiles.wgsl`).
pub const STATS: u64 = 20;

fn scratch(ctx: &GpuContext, bytes: u64) -> PooledBuffer {
    ctx.pool.get(&ctx.device, Category::Workspace, bytes, STORAGE_USAGE)
}

/// The region of a segment under `cfg` (the budget per value of this tensor, or fixed bits).
pub fn layout(g: &SegmentGeom, cfg: &FdsrConfig) -> Result<FdsrLayout> {
    let (planes, tiles) = (u64::from(g.planes), u64::from(g.tiles()));
    match &cfg.bits {
        BitChoice::Budget(b) => FdsrLayout::for_budget(planes, tiles, g.numel(), *b),
        BitChoice::Fixed(bits) => {
            Ok(FdsrLayout::for_fixed(planes, tiles, alloc_rule::class_bits(&cfg.band_edges, bits)[2]))
        }
    }
}

/// Per-segment buffers of the analysis, read by the allocation, reuse and pack.
pub struct Analysis {
    /// Per tile its class (references marked by the reuse kernels).
    pub classes: PooledBuffer,
    /// Per plane: max |DC| bits, then non-zero tile counts.
    pub dcmax: PooledBuffer,
    /// Per analysis workgroup: [`STATS`] statistics.
    pub partials: PooledBuffer,
    /// The grids of the pack's three launches ([`pack_args`]), written by the allocation on the
    /// device, or by the host on the file path.
    pub pack_args: PooledBuffer,
}

/// Everything one segment's kernels bind besides its own buffers.
pub struct Job<'a> {
    /// The device.
    pub ctx: &'a GpuContext,
    /// Codec tables (binding 0).
    pub tables: &'a wgpu::Buffer,
    /// The segment's tiling and region.
    pub g: SegmentGeom,
    /// See [`Self::g`].
    pub layout: FdsrLayout,
    /// Policy configuration.
    pub cfg: &'a FdsrConfig,
    /// Seed, tensor id and rounding.
    pub opts: &'a CodecOptions,
}

impl Job<'_> {
    fn encode_params(&self, sizes: bool) -> wgpu::Buffer {
        let (g, l) = (&self.g, &self.layout);
        let p = EncodeParams {
            nbands: (self.cfg.band_edges.len() - 1) as u32,
            seed: self.opts.seed,
            stream: self.opts.tensor_id,
            stochastic: u32::from(self.opts.rounding == Rounding::Stochastic),
            dc_threshold: self.cfg.dc_threshold,
            dc_off: l.dc_off as u32,
            cls_off: l.cls_off as u32,
            pay_off: l.pay_off as u32,
            blk_off: l.blk_off as u32,
            sizes: u32::from(sizes),
            edges: edges12(&self.cfg.band_edges),
            ..g.encode_params()
        };
        uniform(self.ctx, "fdsr encode", &p)
    }

    /// Records the analysis of `input` (the segment's values).
    pub fn analyze(&self, enc: &mut wgpu::CommandEncoder, input: &wgpu::Buffer) -> Result<Analysis> {
        let (ctx, g) = (self.ctx, &self.g);
        let a = Analysis {
            classes: scratch(ctx, u64::from(g.tiles()) * 4),
            dcmax: scratch(ctx, u64::from(g.planes) * 8),
            partials: scratch(ctx, u64::from(g.groups()) * STATS * 4),
            pack_args: ctx.pool.get(&ctx.device, Category::Workspace, 36, STORAGE_USAGE | wgpu::BufferUsages::INDIRECT),
        };
        enc.clear_buffer(&a.dcmax, 0, None);
        let (p, unused, no_region) = (self.encode_params(false), scratch(ctx, 4), scratch(ctx, 4));
        let binds: [&dyn Bindable; 8] =
            [self.tables, &p, input, &a.classes, &a.dcmax, &a.partials, &no_region, &unused];
        let c = edge_constants(&self.cfg.band_edges);
        let (x, y) = grid(g.groups());
        dispatch_with(ctx, enc, ("fdsr_encode", "analyze_tiles", &c), &binds, [x, y, 1])?;
        Ok(a)
    }

    /// Clears the region and records the allocation (budget or fixed bits) that writes its
    /// header and the segment's statistics `stats` (the device path). Without reuse the classes
    /// are final, and it also places the blocks and adds the bytes used to the store's totals
    /// `acc`; returns whether it did (for [`Self::pack`]).
    pub fn allocate(
        &self,
        enc: &mut wgpu::CommandEncoder,
        a: &Analysis,
        region: &wgpu::Buffer,
        (stats, acc): (&wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<bool> {
        let (ctx, g, cfg) = (self.ctx, &self.g, self.cfg);
        enc.clear_buffer(region, 0, None);
        let nbands = cfg.band_edges.len() - 1;
        let (mode, fixed) = match &cfg.bits {
            BitChoice::Budget(_) => (alloc_rule::mode_for(nbands), [0u32; 8]),
            BitChoice::Fixed(bits) => {
                let mut f = [0u32; 8];
                bits.iter().enumerate().for_each(|(i, &b)| f[i] = b.into());
                (AllocMode::Fixed, f)
            }
        };
        let w = cfg.weights();
        let p = AllocParams {
            groups: g.groups(),
            planes: g.planes,
            tiles: g.tiles(),
            nbands: nbands as u32,
            limit_bits: self.layout.limit_bits().min(u64::from(u32::MAX)) as u32,
            mode: mode as u32,
            weight: w.dc,
            cls_off: self.layout.cls_off as u32,
            pay_off: self.layout.pay_off as u32,
            reuse: u32::from(cfg.reuse.is_some()),
            blk_off: self.layout.blk_off as u32,
            pack_x: g.tile_grid_x(),
            edges: edges12(&cfg.band_edges),
            inv_l2: alloc_rule::inv_l2_table(),
            fixed,
            drop_weight: w.dropped,
            pad: [0; 3],
        };
        let p = uniform(ctx, "fdsr alloc", &p);
        let binds: [&dyn Bindable; 7] = [&p, &*a.partials, &*a.dcmax, region, stats, acc, &*a.pack_args];
        dispatch(ctx, enc, "fdsr_alloc", "alloc_bits", &binds, 1)?;
        Ok(cfg.reuse.is_none())
    }

    /// Records reuse (where configured), the class and DC sections, and the pack into `region`,
    /// whose header holds the bits and e0 and whose rest is zero but for the blocks' offsets
    /// where the allocation `placed` them; else the class pass adds up the blocks' sizes and
    /// `finish_segment` turns them into offsets and does the accounting into `stats` and `acc`.
    /// The reuse counters are copied into `stats`. Returns the reuse buffers (keys, references).
    pub fn pack(
        &self,
        enc: &mut wgpu::CommandEncoder,
        input: &wgpu::Buffer,
        a: &Analysis,
        region: &wgpu::Buffer,
        (stats, acc): (&wgpu::Buffer, &wgpu::Buffer),
        placed: bool,
    ) -> Result<Option<reuse_gpu::ReuseBuffers>> {
        let (ctx, g, l) = (self.ctx, &self.g, &self.layout);
        let tiles = g.tiles();
        let reuse = match &self.cfg.reuse {
            Some(r) => {
                let inputs =
                    ReuseInputs { tables: self.tables, input, classes: &a.classes, plane_dcmax: &a.dcmax, region };
                let params = ReuseParams {
                    planes: g.planes,
                    h: g.h,
                    w: g.w,
                    tiles_x: g.tiles_x,
                    tiles_per_plane: g.tiles_per_plane,
                    tiles,
                    nbands: (self.cfg.band_edges.len() - 1) as u32,
                    edges: edges12(&self.cfg.band_edges),
                    ..Default::default()
                };
                let rb = reuse_gpu::record(ctx, enc, &inputs, params, r, self.opts.seed)?;
                enc.copy_buffer_to_buffer(
                    &rb.table,
                    rb.counters_offset(),
                    stats,
                    4 * super::layout::STAT_CANDIDATES as u64,
                    8,
                );
                Some(rb)
            }
            None => None,
        };
        let unused;
        let state: &wgpu::Buffer = match &reuse {
            Some(r) => &r.state,
            None => {
                unused = scratch(ctx, 4);
                &unused
            }
        };
        let p = self.encode_params(!placed);
        let binds: [&dyn Bindable; 8] = [self.tables, &p, input, &a.classes, &a.dcmax, &a.partials, region, state];
        let meta_words = (l.blk_off - l.cls_off) + (l.cls_off - l.dc_off);
        dispatch(ctx, enc, "fdsr_encode", "pack_meta", &binds, (meta_words as u32).div_ceil(WG))?;
        if !placed {
            self.finish(enc, a, region, stats, acc)?;
        }
        let edges = edge_constants(&self.cfg.band_edges);
        if ctx.compact_shaders() {
            let (x, y) = grid(tiles.div_ceil(WG));
            dispatch_with(ctx, enc, ("fdsr_encode", "pack_tiles_compact", &edges), &binds, [x, y, 1])?;
        } else {
            // Every launch is recorded; the device gave the grid to the one its bits need.
            let top = self.cfg.band_edges.len().saturating_sub(2); // the top band's index
            for (i, launch) in PackLaunch::ALL.into_iter().enumerate() {
                let (entry, packed) = match launch {
                    PackLaunch::Full => ("pack_tiles", 8),
                    PackLaunch::SkipTop => ("pack_tiles", top),
                    PackLaunch::Compact => ("pack_tiles_compact", 8),
                };
                let mut constants = edges.to_vec();
                constants.push(("PACKED_BANDS", packed as f64));
                let args = (&*a.pack_args, 12 * i as u64);
                dispatch_indirect(ctx, enc, ("fdsr_encode", entry, &constants), &binds, args)?;
            }
        }
        Ok(reuse)
    }

    /// Records the blocks' offsets (from the sizes `pack_meta` added up) and the accounting: the
    /// payload bits used (header and `stats`) and the store's window totals in `acc`.
    fn finish(
        &self,
        enc: &mut wgpu::CommandEncoder,
        a: &Analysis,
        region: &wgpu::Buffer,
        stats: &wgpu::Buffer,
        acc: &wgpu::Buffer,
    ) -> Result<()> {
        let (g, l) = (&self.g, &self.layout);
        let p = AllocParams {
            tiles: g.tiles(),
            cls_off: l.cls_off as u32,
            pay_off: l.pay_off as u32,
            reuse: u32::from(self.cfg.reuse.is_some()),
            blk_off: l.blk_off as u32,
            ..Default::default()
        };
        let p = uniform(self.ctx, "fdsr finish", &p);
        let binds: [&dyn Bindable; 7] = [&p, &*a.partials, &*a.dcmax, region, stats, acc, &*a.pack_args];
        dispatch(self.ctx, enc, "fdsr_alloc", "finish_segment", &binds, 1)
    }
}

/// Records the yardstick of `fdsr bench codec`: one read of every tile of the segment `input`
/// (its values, f32), as each pass of the encode reads them, one word written per tile.
pub fn record_tile_read(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    input: &wgpu::Buffer,
    g: &SegmentGeom,
) -> Result<()> {
    let p = uniform(ctx, "fdsr tile read", &g.encode_params());
    let work = scratch(ctx, u64::from(g.tiles()) * 4);
    let unused: Vec<PooledBuffer> = (0..4).map(|_| scratch(ctx, 4)).collect();
    let tables = crate::codec::tables::Tables::buffer(ctx);
    let binds: [&dyn Bindable; 8] = [&tables, &p, input, &work, &unused[0], &unused[1], &unused[2], &unused[3]];
    dispatch(ctx, enc, "fdsr_encode", "read_tiles", &binds, g.groups())
}

/// Records the decode of a segment's `region` into `out` (the segment's values, f32).
#[allow(clippy::too_many_arguments)]
pub fn record_decode(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    tables: &wgpu::Buffer,
    g: &SegmentGeom,
    layout: &FdsrLayout,
    edges: &[u8],
    region: &wgpu::Buffer,
    out: &wgpu::Buffer,
) -> Result<()> {
    let tiles = g.tiles();
    let p = DecodeParams {
        planes: g.planes,
        h: g.h,
        w: g.w,
        tiles_x: g.tiles_x,
        tiles_per_plane: g.tiles_per_plane,
        tiles,
        nbands: (edges.len() - 1) as u32,
        dc_off: layout.dc_off as u32,
        cls_off: layout.cls_off as u32,
        pay_off: layout.pay_off as u32,
        blk_off: layout.blk_off as u32,
        _p: 0,
        edges: edges12(edges),
    };
    let p = uniform(ctx, "fdsr decode", &p);
    let binds: [&dyn Bindable; 4] = [tables, &p, region, out];
    let entry = if ctx.compact_shaders() { "unpack_tiles_compact" } else { "unpack_tiles" };
    let (x, y) = grid(tiles.div_ceil(WG));
    dispatch_with(ctx, enc, ("fdsr_decode", entry, &edge_constants(edges)), &binds, [x, y, 1])
}
