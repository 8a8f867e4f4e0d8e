//! GPU driver of similarity reuse (`shaders/fdsr_reuse.wgsl`, docs/CODEC.md "Similarity
//! reuse"): records the key, claim and verify rounds of one segment, whose references the pack
//! then stores in the tile bitstream.

use crate::error::Result;
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::{read_words, Category, GpuContext, PooledBuffer, STORAGE_USAGE};
use crate::reference::reuse::hyperplanes;
use crate::rules::config::ReuseConfig;

const WG: u32 = 64;
/// Hyperplane slots of the uniform (20 bits × 64 coefficients).
pub const HYPER_LEN: usize = 20 * 64;

/// Mirror of `ReuseParams` in `shaders/fdsr_reuse.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReuseParams {
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
    /// Padding.
    pub _p1: u32,
    /// Leading zig-zag coefficients projected.
    pub leading: u32,
    /// Signature bits.
    pub sig_bits: u32,
    /// Hash-table slots − 1 (a power of two minus one).
    pub table_mask: u32,
    /// Padding.
    pub _pad: u32,
    /// Band edges.
    pub edges: [u32; 12],
}

/// Mirror of `Hyper` in `shaders/fdsr_reuse.wgsl`: the hyperplanes `H[i · 64 + z]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Hyper {
    /// Coefficients, zero past the configured bits.
    pub h: [f32; HYPER_LEN],
}

impl Hyper {
    /// The hyperplanes of [`hyperplanes`] for `seed`.
    pub fn new(seed: u32, bits: u8) -> Self {
        let mut h = [0f32; HYPER_LEN];
        h.iter_mut().zip(hyperplanes(seed, bits.min(20))).for_each(|(d, s)| *d = s);
        Self { h }
    }
}

/// Buffers of one segment's reuse pass: the hash table (its two counters after the slots) and
/// the per-tile state the pack reads the references from.
pub struct ReuseBuffers {
    /// Slots, then the candidate and hit counters.
    pub table: PooledBuffer,
    /// Per tile: key, slot, state (the representative of a reference).
    pub state: PooledBuffer,
    slots: u32,
    tiles: u32,
}

/// Hash-table slots for `tiles` tiles: the power of two at least twice the count.
pub fn table_slots(tiles: u32) -> u32 {
    (2 * tiles.max(1)).next_power_of_two()
}

/// Buffers shared by the recorded passes of one segment.
pub struct ReuseInputs<'a> {
    /// Codec tables (binding 0).
    pub tables: &'a wgpu::Buffer,
    /// The segment's input values.
    pub input: &'a wgpu::Buffer,
    /// The segment's classes (full tiles that become references are set to 3).
    pub classes: &'a wgpu::Buffer,
    /// Per plane of the segment, the bits of its max |DC|.
    pub plane_dcmax: &'a wgpu::Buffer,
    /// The segment's region: its header holds the bits and e0.
    pub region: &'a wgpu::Buffer,
}

/// Records the key pass and `cfg.rounds` clear/claim/verify rounds of one segment into `enc`.
pub fn record(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    b: &ReuseInputs,
    mut params: ReuseParams,
    cfg: &ReuseConfig,
    seed: u32,
) -> Result<ReuseBuffers> {
    let tiles = params.tiles;
    let slots = table_slots(tiles);
    params.leading = cfg.leading.into();
    params.sig_bits = cfg.bits.into();
    params.table_mask = slots - 1;
    let pbuf = uniform(ctx, "reuse params", &params);
    let hbuf = uniform(ctx, "reuse hyperplanes", &Hyper::new(seed, cfg.bits));
    let table = ctx.pool.get(&ctx.device, Category::Workspace, (u64::from(slots) * 2 + 2) * 4, STORAGE_USAGE);
    enc.clear_buffer(&table, 0, None);
    let state = ctx.pool.get(&ctx.device, Category::Workspace, u64::from(tiles.max(1)) * 12, STORAGE_USAGE);
    let binds: [&dyn Bindable; 9] =
        [b.tables, &pbuf, b.input, &hbuf, b.classes, b.plane_dcmax, &table, &state, b.region];
    let groups = tiles.div_ceil(WG);
    dispatch(ctx, enc, "fdsr_reuse", "reuse_keys", &binds, groups)?;
    for _ in 0..cfg.rounds {
        dispatch(ctx, enc, "fdsr_reuse", "reuse_clear", &binds, slots.div_ceil(WG))?;
        dispatch(ctx, enc, "fdsr_reuse", "reuse_claim", &binds, groups)?;
        dispatch(ctx, enc, "fdsr_reuse", "reuse_verify", &binds, groups)?;
    }
    Ok(ReuseBuffers { table, state, slots, tiles })
}

impl ReuseBuffers {
    /// Byte offset of the (candidates, hits) counters in the table.
    pub fn counters_offset(&self) -> u64 {
        u64::from(self.slots) * 8
    }

    /// Per tile key (0 for tiles that are not full), after submission.
    pub async fn keys(&self, ctx: &GpuContext) -> Result<Vec<u32>> {
        let s = read_words(ctx, &self.state, 3 * self.tiles as usize).await?;
        Ok(s.chunks(3).map(|c| c[0]).collect())
    }
}
