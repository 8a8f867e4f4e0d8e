//! The tiling of one `fdsr` segment (whole planes of an `[N, C, H, W]` tensor) and the words its
//! kernels take that follow from it: geometry parameters, band edges, the pack's launch grids.

use super::params::EncodeParams;
use crate::gpu::kernel::grid;

/// Tiles per workgroup of the fdsr kernels (`WG` of `shaders/fdsr_tiles.wgsl`).
pub(super) const WG: u32 = 64;

/// Tiling of one segment (whole planes) of an `[N, C, H, W]` tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentGeom {
    /// Global index of the segment's first plane.
    pub first_plane: u64,
    /// Planes of the segment.
    pub planes: u32,
    /// Plane height.
    pub h: u32,
    /// Plane width.
    pub w: u32,
    /// Tiles per plane row.
    pub tiles_x: u32,
    /// Tiles per plane.
    pub tiles_per_plane: u32,
}

impl SegmentGeom {
    /// Planes `[first, first + planes)` of `h × w`.
    pub fn new(first_plane: u64, planes: u64, h: usize, w: usize) -> Self {
        let tiles_x = w.div_ceil(8) as u32;
        let tiles_per_plane = tiles_x * h.div_ceil(8) as u32;
        SegmentGeom { first_plane, planes: planes as u32, h: h as u32, w: w as u32, tiles_x, tiles_per_plane }
    }

    /// Tiles of the segment.
    pub fn tiles(&self) -> u32 {
        self.planes * self.tiles_per_plane
    }

    /// Values of the segment.
    pub fn numel(&self) -> u64 {
        u64::from(self.planes) * u64::from(self.h) * u64::from(self.w)
    }

    /// Analysis workgroups.
    pub fn groups(&self) -> u32 {
        self.tiles().div_ceil(WG)
    }

    /// Workgroups per row of the grid of a pass with one invocation per tile (the pack's).
    pub(super) fn tile_grid_x(&self) -> u32 {
        grid(self.groups()).0
    }

    /// The encoder's parameters that describe the segment's tiling (the rest zero).
    pub(super) fn encode_params(&self) -> EncodeParams {
        EncodeParams {
            planes: self.planes,
            h: self.h,
            w: self.w,
            tiles_x: self.tiles_x,
            tiles_per_plane: self.tiles_per_plane,
            tiles: self.tiles(),
            tile_base: (self.first_plane * u64::from(self.tiles_per_plane)) as u32,
            ..Default::default()
        }
    }
}

/// Band edges as the kernels' `[u32; 12]`.
pub(super) fn edges12(edges: &[u8]) -> [u32; 12] {
    let mut e = [0u32; 12];
    edges.iter().enumerate().for_each(|(i, &x)| e[i] = x.into());
    e
}

/// The band edges 2..=8 as the pipeline constants of the analysis and pack kernels (64 past the
/// last band).
pub(super) fn edge_constants(edges: &[u8]) -> [(&'static str, f64); 7] {
    const NAMES: [&str; 7] = ["EDGE2", "EDGE3", "EDGE4", "EDGE5", "EDGE6", "EDGE7", "EDGE8"];
    std::array::from_fn(|i| (NAMES[i], f64::from(edges.get(i + 2).copied().unwrap_or(64))))
}

/// The pack's launches, in the order of their indirect grids ([`pack_args`]); the bits give one
/// of them the segment's grid, the others none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackLaunch {
    /// `pack_tiles`, every AC band.
    Full,
    /// `pack_tiles` built without the top AC band (`PACKED_BANDS` = bands − 1), which has 0 bits:
    /// a CPU rasterizer, which runs both sides of a branch, then skips its coefficients.
    SkipTop,
    /// `pack_tiles_compact`: some AC band at 16 bits (f16 codes).
    Compact,
}

impl PackLaunch {
    /// Every launch, in grid order.
    pub const ALL: [PackLaunch; 3] = [PackLaunch::Full, PackLaunch::SkipTop, PackLaunch::Compact];

    /// The launch that packs a segment with per-band `bits` (DC first), as the allocation kernel
    /// picks it.
    pub fn for_bits(bits: &[u8]) -> PackLaunch {
        let ac = bits.get(1..).unwrap_or_default();
        if ac.contains(&16) {
            PackLaunch::Compact
        } else if ac.last() == Some(&0) {
            PackLaunch::SkipTop
        } else {
            PackLaunch::Full
        }
    }
}

/// The indirect grids of the pack's launches (3 words each, [`PackLaunch::ALL`] order): the
/// one `launch` names covers the segment, the others are empty. The allocation kernel writes
/// the same words on the device.
pub fn pack_args(g: &SegmentGeom, launch: PackLaunch) -> [u32; 9] {
    let x = g.tile_grid_x();
    let rows = g.groups().div_ceil(x);
    let mut a = [0, 1, 1, 0, 1, 1, 0, 1, 1];
    let on = 3 * launch as usize;
    (a[on], a[on + 1]) = (x, rows);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bits_pick_one_pack_launch_and_only_it_gets_the_grid() {
        assert_eq!(PackLaunch::for_bits(&[8, 4, 3, 2]), PackLaunch::Full);
        assert_eq!(PackLaunch::for_bits(&[8, 4, 3, 0]), PackLaunch::SkipTop);
        assert_eq!(PackLaunch::for_bits(&[8, 4, 0, 2]), PackLaunch::Full, "only the top band is left out");
        assert_eq!(PackLaunch::for_bits(&[8, 16, 3, 0]), PackLaunch::Compact, "f16 codes first");
        assert_eq!(PackLaunch::for_bits(&[16, 4, 3, 2]), PackLaunch::Full, "an f16 DC is pack_tiles'");
        assert_eq!(PackLaunch::for_bits(&[8]), PackLaunch::Full);
        assert_eq!(PackLaunch::for_bits(&[]), PackLaunch::Full);
        let g = SegmentGeom::new(0, 300, 64, 64);
        let (x, rows) = (g.tile_grid_x(), g.groups().div_ceil(g.tile_grid_x()));
        for (i, launch) in PackLaunch::ALL.into_iter().enumerate() {
            let a = pack_args(&g, launch);
            for (j, grid) in a.chunks(3).enumerate() {
                let want = if i == j { [x, rows, 1] } else { [0, 1, 1] };
                assert_eq!(grid, want, "{launch:?}: grid {j}");
            }
        }
    }
}
