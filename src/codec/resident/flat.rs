//! Drivers of the baselines on the device (`shaders/uniform.wgsl`, `shaders/division.wgsl`):
//! per segment, record the statistics pass, the e0 kernel (on the device path; the file path
//! writes a tensor-wide e0 into the header instead), the metadata and payload passes, and the
//! decode. Nothing here waits for the device.

use super::layout::{DivisionLayout, UniformLayout};
use crate::codec::config::{CodecOptions, Rounding};
use crate::error::Result;
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::{Category, GpuContext, PooledBuffer, STORAGE_USAGE};

const WG: u32 = 256;
/// Values per invocation of uniform's `unpack_groups` (`SLICE` of `shaders/uniform.wgsl`).
const UNIFORM_SLICE: u32 = 32;
/// Workgroup size of division's per-block kernels (`BLOCK_WG` of `shaders/division.wgsl`).
const BLOCK_WG: u32 = 64;

/// Mirror of `UniformParams` in `shaders/uniform.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UniformParams {
    /// Values, groups and payload words of the segment; bits per code.
    pub n: u32,
    /// See [`Self::n`].
    pub groups: u32,
    /// See [`Self::n`].
    pub words: u32,
    /// See [`Self::n`].
    pub bits: u32,
    /// Global flat index of the segment's first value, modulo 2^32 (RNG index base).
    pub base: u32,
    /// RNG seed and stream; 1 for stochastic rounding.
    pub seed: u32,
    /// See [`Self::seed`].
    pub stream: u32,
    /// See [`Self::seed`].
    pub stochastic: u32,
    /// Region words of the minima, the range codes and the payload.
    pub mins_off: u32,
    /// See [`Self::mins_off`].
    pub codes_off: u32,
    /// See [`Self::mins_off`].
    pub pay_off: u32,
    /// Padding.
    pub _p0: u32,
}

/// Mirror of `DivisionParams` in `shaders/division.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DivisionParams {
    /// Planes, plane height and width, blocks per plane row and per plane, blocks, values and
    /// payload words of the segment.
    pub planes: u32,
    /// See [`Self::planes`].
    pub h: u32,
    /// See [`Self::planes`].
    pub w: u32,
    /// See [`Self::planes`].
    pub tiles_x: u32,
    /// See [`Self::planes`].
    pub tiles_per_plane: u32,
    /// See [`Self::planes`].
    pub blocks: u32,
    /// See [`Self::planes`].
    pub n: u32,
    /// See [`Self::planes`].
    pub words: u32,
    /// Global flat index of the segment's first value, modulo 2^32 (RNG index base).
    pub base: u32,
    /// RNG seed and stream; 1 for stochastic rounding.
    pub seed: u32,
    /// See [`Self::seed`].
    pub stream: u32,
    /// See [`Self::seed`].
    pub stochastic: u32,
    /// Region words of the block means, the residual minima, their range codes and the payload.
    pub means_off: u32,
    /// See [`Self::means_off`].
    pub mins_off: u32,
    /// See [`Self::means_off`].
    pub codes_off: u32,
    /// See [`Self::means_off`].
    pub pay_off: u32,
}

fn scratch(ctx: &GpuContext, bytes: u64) -> PooledBuffer {
    ctx.pool.get(&ctx.device, Category::Workspace, bytes, STORAGE_USAGE)
}

/// What the statistics pass leaves for the others: per-item statistics and the segment's
/// `[largest range, out-of-range flag]`.
pub struct Stats {
    /// Two words per group or plane.
    pub items: PooledBuffer,
    /// The largest range's f32 bits and the flag.
    pub gmax: PooledBuffer,
}

/// Records `entry` of `shader` over `groups` workgroups with `[input, stats, gmax, region,
/// output]` (absent ones replaced by one-word dummies).
#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    shader: &'static str,
    entry: &'static str,
    tables: &wgpu::Buffer,
    p: &wgpu::Buffer,
    bufs: [Option<&wgpu::Buffer>; 5],
    groups: u32,
) -> Result<()> {
    let dummies: Vec<PooledBuffer> = bufs.iter().filter(|b| b.is_none()).map(|_| scratch(ctx, 4)).collect();
    let mut d = dummies.iter();
    let mut binds: Vec<&dyn Bindable> = vec![tables, p];
    for b in bufs {
        match b {
            Some(b) => binds.push(b),
            None => binds.push(d.next().map(|x| &**x).unwrap_or(p)),
        }
    }
    dispatch(ctx, enc, shader, entry, &binds, groups)
}

/// One `uniform:B` segment.
pub struct UniformJob<'a> {
    /// The device.
    pub ctx: &'a GpuContext,
    /// Codec tables.
    pub tables: &'a wgpu::Buffer,
    /// The segment's region layout.
    pub layout: UniformLayout,
    /// Flat index of its first value.
    pub base: u64,
    /// Seed, tensor id and rounding.
    pub opts: &'a CodecOptions,
}

impl UniformJob<'_> {
    fn params(&self) -> wgpu::Buffer {
        let l = &self.layout;
        let p = UniformParams {
            n: l.n as u32,
            groups: l.groups as u32,
            words: l.pay_words as u32,
            bits: l.bits.into(),
            base: self.base as u32, // the reference's RNG index is the flat index modulo 2^32, too
            seed: self.opts.seed,
            stream: self.opts.tensor_id,
            stochastic: u32::from(self.opts.rounding == Rounding::Stochastic),
            mins_off: l.mins_off as u32,
            codes_off: l.codes_off as u32,
            pay_off: l.pay_off as u32,
            _p0: 0,
        };
        uniform(self.ctx, "uniform", &p)
    }

    /// Clears the region and records the group statistics of `x`.
    pub fn stats(&self, enc: &mut wgpu::CommandEncoder, x: &wgpu::Buffer, region: &wgpu::Buffer) -> Result<Stats> {
        let st = Stats { items: scratch(self.ctx, self.layout.groups * 8), gmax: scratch(self.ctx, 8) };
        enc.clear_buffer(region, 0, None);
        enc.clear_buffer(&st.gmax, 0, None);
        let p = self.params();
        let bufs = [Some(x), Some(&*st.items), Some(&*st.gmax), None, None];
        run(self.ctx, enc, "uniform", "group_stats", self.tables, &p, bufs, (self.layout.groups as u32).div_ceil(WG))?;
        Ok(st)
    }

    /// Records the segment's e0 into the header (the device path).
    pub fn e0(&self, enc: &mut wgpu::CommandEncoder, st: &Stats, region: &wgpu::Buffer) -> Result<()> {
        let p = self.params();
        run(self.ctx, enc, "uniform", "group_e0", self.tables, &p, [None, None, Some(&st.gmax), Some(region), None], 1)
    }

    /// Records the minima, range codes and payload under the header's e0.
    pub fn pack(
        &self,
        enc: &mut wgpu::CommandEncoder,
        x: &wgpu::Buffer,
        st: &Stats,
        region: &wgpu::Buffer,
    ) -> Result<()> {
        let (l, p) = (&self.layout, self.params());
        let bufs = [Some(x), Some(&*st.items), Some(&*st.gmax), Some(region), None];
        let meta = (l.codes_off - l.mins_off) + (l.pay_off - l.codes_off);
        run(self.ctx, enc, "uniform", "group_meta", self.tables, &p, bufs, (meta as u32).div_ceil(WG))?;
        run(self.ctx, enc, "uniform", "pack_groups", self.tables, &p, bufs, (l.pay_words as u32).div_ceil(WG))
    }

    /// Records the decode of `region` into `out`.
    pub fn decode(&self, enc: &mut wgpu::CommandEncoder, region: &wgpu::Buffer, out: &wgpu::Buffer) -> Result<()> {
        let p = self.params();
        let bufs = [None, None, None, Some(region), Some(out)];
        let slices = (self.layout.n as u32).div_ceil(UNIFORM_SLICE);
        run(self.ctx, enc, "uniform", "unpack_groups", self.tables, &p, bufs, slices.div_ceil(WG))
    }
}

/// One `division` segment of whole planes.
pub struct DivisionJob<'a> {
    /// The device.
    pub ctx: &'a GpuContext,
    /// Codec tables.
    pub tables: &'a wgpu::Buffer,
    /// The segment's region layout.
    pub layout: DivisionLayout,
    /// Plane height and width.
    pub hw: (usize, usize),
    /// Flat index of its first value.
    pub base: u64,
    /// Seed, tensor id and rounding.
    pub opts: &'a CodecOptions,
}

impl DivisionJob<'_> {
    fn params(&self) -> wgpu::Buffer {
        let (l, (h, w)) = (&self.layout, self.hw);
        let tiles_x = w.div_ceil(8) as u32;
        let p = DivisionParams {
            planes: l.planes as u32,
            h: h as u32,
            w: w as u32,
            tiles_x,
            tiles_per_plane: tiles_x * h.div_ceil(8) as u32,
            blocks: l.blocks as u32,
            n: l.n as u32,
            words: l.pay_words as u32,
            base: self.base as u32, // the reference's RNG index is the flat index modulo 2^32, too
            seed: self.opts.seed,
            stream: self.opts.tensor_id,
            stochastic: u32::from(self.opts.rounding == Rounding::Stochastic),
            means_off: l.means_off as u32,
            mins_off: l.mins_off as u32,
            codes_off: l.codes_off as u32,
            pay_off: l.pay_off as u32,
        };
        uniform(self.ctx, "division", &p)
    }

    /// Clears the region and records the block means (into the region) and the per-plane
    /// residual statistics of `x`.
    pub fn stats(&self, enc: &mut wgpu::CommandEncoder, x: &wgpu::Buffer, region: &wgpu::Buffer) -> Result<Stats> {
        let l = &self.layout;
        let st = Stats { items: scratch(self.ctx, l.planes * 8), gmax: scratch(self.ctx, 8) };
        enc.clear_buffer(region, 0, None);
        enc.clear_buffer(&st.items, 0, None);
        enc.clear_buffer(&st.gmax, 0, None);
        let p = self.params();
        let bufs = [Some(x), Some(&*st.items), Some(&*st.gmax), Some(region), None];
        let mean_words = (l.mins_off - l.means_off) as u32;
        run(self.ctx, enc, "division", "block_stats", self.tables, &p, bufs, mean_words.div_ceil(BLOCK_WG))?;
        run(self.ctx, enc, "division", "plane_stats", self.tables, &p, bufs, (l.planes as u32).div_ceil(WG))?;
        Ok(st)
    }

    /// Records the segment's e0 into the header (the device path).
    pub fn e0(&self, enc: &mut wgpu::CommandEncoder, st: &Stats, region: &wgpu::Buffer) -> Result<()> {
        let p = self.params();
        run(
            self.ctx,
            enc,
            "division",
            "division_e0",
            self.tables,
            &p,
            [None, None, Some(&st.gmax), Some(region), None],
            1,
        )
    }

    /// Records the residual minima, range codes and payload under the header's e0.
    pub fn pack(
        &self,
        enc: &mut wgpu::CommandEncoder,
        x: &wgpu::Buffer,
        st: &Stats,
        region: &wgpu::Buffer,
    ) -> Result<()> {
        let (l, p) = (&self.layout, self.params());
        let bufs = [Some(x), Some(&*st.items), Some(&*st.gmax), Some(region), None];
        let meta = (l.pay_off - l.mins_off) as u32;
        run(self.ctx, enc, "division", "plane_meta", self.tables, &p, bufs, meta.div_ceil(WG))?;
        run(self.ctx, enc, "division", "pack_codes", self.tables, &p, bufs, (l.blocks as u32).div_ceil(BLOCK_WG))
    }

    /// Records the decode of `region` into `out`.
    pub fn decode(&self, enc: &mut wgpu::CommandEncoder, region: &wgpu::Buffer, out: &wgpu::Buffer) -> Result<()> {
        let p = self.params();
        let bufs = [None, None, None, Some(region), Some(out)];
        let groups = (self.layout.blocks as u32).div_ceil(BLOCK_WG);
        run(self.ctx, enc, "division", "unpack_codes", self.tables, &p, bufs, groups)
    }
}
