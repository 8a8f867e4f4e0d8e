//! The uniform parameter structs of the `fdsr` kernels, each the `#[repr(C)]` mirror of its WGSL
//! struct (tests/param_layouts.rs checks the sizes).

/// Mirror of `FdsrParams` in `shaders/fdsr_tiles.wgsl` (the encoder's prelude).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EncodeParams {
    /// Planes, plane height and width, tiles per plane row.
    pub planes: u32,
    /// See [`Self::planes`].
    pub h: u32,
    /// See [`Self::planes`].
    pub w: u32,
    /// See [`Self::planes`].
    pub tiles_x: u32,
    /// Tiles per plane, tiles of the segment, global index of its first tile (RNG index base).
    pub tiles_per_plane: u32,
    /// See [`Self::tiles_per_plane`].
    pub tiles: u32,
    /// See [`Self::tiles_per_plane`].
    pub tile_base: u32,
    /// Number of bands.
    pub nbands: u32,
    /// RNG seed and stream (tensor id); 1 for stochastic rounding.
    pub seed: u32,
    /// See [`Self::seed`].
    pub stream: u32,
    /// See [`Self::seed`].
    pub stochastic: u32,
    /// DC-only threshold.
    pub dc_threshold: f32,
    /// Region words of the DC codes, the classes and the payload.
    pub dc_off: u32,
    /// See [`Self::dc_off`].
    pub cls_off: u32,
    /// See [`Self::dc_off`].
    pub pay_off: u32,
    /// Region word of the blocks' bit offsets (`FdsrLayout::blk_off`).
    pub blk_off: u32,
    /// 1 where `pack_meta` adds up the blocks' sizes for `finish_segment` (reuse, the file
    /// path); 0 where the allocation placed the blocks.
    pub sizes: u32,
    /// Padding.
    pub _pad: [u32; 3],
    /// Band edges (up to 9).
    pub edges: [u32; 12],
}

/// Mirror of `DecodeParams` in `shaders/fdsr_decode.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DecodeParams {
    /// Planes, plane height and width, tiles per plane row, per plane, in the segment.
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
    pub tiles: u32,
    /// Number of bands.
    pub nbands: u32,
    /// Region words of the DC codes, the classes and the payload.
    pub dc_off: u32,
    /// See [`Self::dc_off`].
    pub cls_off: u32,
    /// See [`Self::dc_off`].
    pub pay_off: u32,
    /// Region word of the blocks' bit offsets (`FdsrLayout::blk_off`).
    pub blk_off: u32,
    /// Padding.
    pub _p: u32,
    /// Band edges.
    pub edges: [u32; 12],
}

/// Mirror of `AllocParams` in `shaders/fdsr_alloc.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AllocParams {
    /// Analysis workgroups, planes and tiles of the segment, bands.
    pub groups: u32,
    /// See [`Self::groups`].
    pub planes: u32,
    /// See [`Self::groups`].
    pub tiles: u32,
    /// See [`Self::groups`].
    pub nbands: u32,
    /// Payload bits the region holds.
    pub limit_bits: u32,
    /// 0 greedy, 1 exhaustive, 2 fixed bits.
    pub mode: u32,
    /// Weight of the DC band's error (`AllocWeights::dc`).
    pub weight: f32,
    /// Region words of the classes and the payload.
    pub cls_off: u32,
    /// See [`Self::cls_off`].
    pub pay_off: u32,
    /// 1 when similarity reuse runs (the window counts its tiles).
    pub reuse: u32,
    /// Region word of the blocks' bit offsets (`FdsrLayout::blk_off`).
    pub blk_off: u32,
    /// Workgroups per row of the pack's grid (`fdsr::pack_args`).
    pub pack_x: u32,
    /// Band edges.
    pub edges: [u32; 12],
    /// `1 / (2^b − 1)²` at index `b`.
    pub inv_l2: [f32; 12],
    /// Bits per band of the fixed mode.
    pub fixed: [u32; 8],
    /// Weight of a dropped band's error (`AllocWeights::dropped`).
    pub drop_weight: f32,
    /// Padding to the uniform's 16-byte rows.
    pub pad: [u32; 3],
}
