//! How a matrix product is laid over the GPU: the tile shape of a workgroup and how many parts K
//! is split into, chosen from the shapes alone (so one device always runs one product the same
//! way, and results stay bit for bit reproducible).
//!
//! A real GPU needs thousands of workgroups in flight; a weight gradient is a product whose
//! reduction runs over N·H·W (131,072 for `cnn`'s first layers at batch 128) onto a few thousand
//! outputs, so without a split it fills a handful of workgroups. The plan picks the tile shape
//! that pads the product least (16, 32 or 64 rows; a tile always holds 4096 values), then splits K
//! until the grid reaches the device's target (`GpuContext::target_groups`: 2048 workgroups on a
//! GPU, none on a CPU adapter), each split walking at least [`MIN_SPLIT_K`] values of K and all
//! splits' partial sums fitting [`MAX_PARTIAL_BYTES`].
//!
//! Whatever the target, no split walks more than [`MAX_SPLIT_K`] values of K: llvmpipe (lavapipe,
//! the CI's adapter) ends every loop of a shader invocation once its loops have run 65,535
//! iterations in all (Mesa's `LP_MAX_TGSI_LOOP_ITERATIONS`), silently, so a longer reduction
//! came out wrong there (`cnn`'s first two weight gradients at batch 40 and more, K = N·32·32).

/// Values of C per workgroup tile (rows × columns).
pub const TILE: usize = 4096;
/// Tile heights (rows of C per workgroup) the kernel is built for.
pub const TILE_ROWS: [usize; 3] = crate::shaders::GEMM_TILE_ROWS;
/// Fewest K values one split walks (16 steps of 8).
pub const MIN_SPLIT_K: usize = 128;
/// Most K values one split walks (2,048 steps of 8; as compiled, about 13 loop iterations per
/// step, well under llvmpipe's 65,535 per invocation). Longer reductions split on every adapter
/// (where the partial sums fit one binding).
pub const MAX_SPLIT_K: usize = 16384;
/// Most bytes of partial sums one split product stages in its workspace (more only where
/// [`MAX_SPLIT_K`] needs more splits).
pub const MAX_PARTIAL_BYTES: usize = 16 << 20;
/// Most workgroups in one grid dimension (WebGPU's default limit).
const MAX_DIM: usize = 65535;

/// The layout of one product `C[m][n] = Σ_k A·B` over the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    /// Rows of C per workgroup (16, 32 or 64).
    pub tm: usize,
    /// Columns of C per workgroup (`TILE / tm`).
    pub tn: usize,
    /// Parts K is split into (grid z); 1 writes C directly.
    pub splits: usize,
    /// K values per split (a multiple of 8).
    pub k_split: usize,
    /// Lanes per output of the split reduction (a power of two, at most 64).
    pub lanes: usize,
}

impl GemmPlan {
    /// The plan of an `m × n × k` product that splits K until `target` workgroups (if it can),
    /// its partial sums taking at most `max_binding` bytes in one binding.
    pub fn choose(m: usize, n: usize, k: usize, target: usize, max_binding: u64) -> GemmPlan {
        GemmPlan::choose_among(&TILE_ROWS, m, n, k, target, max_binding)
    }

    /// [`GemmPlan::choose`] with the tile height one of `rows` (a subset of [`TILE_ROWS`],
    /// tallest first; one height where the context fixes it).
    pub fn choose_among(rows: &[usize], m: usize, n: usize, k: usize, target: usize, max_binding: u64) -> GemmPlan {
        let (m, n, k) = (m.max(1), n.max(1), k.max(1));
        // Least padded area; on a tie the squarer tile (fewer loads per multiply-add).
        let padded = |tm: usize| m.next_multiple_of(tm) * n.next_multiple_of(TILE / tm);
        let first = rows.first().copied().unwrap_or(TILE_ROWS[0]);
        let tm = rows.iter().fold(first, |best, &tm| if padded(tm) < padded(best) { tm } else { best });
        let tn = TILE / tm;
        let tiles = m.div_ceil(tm) * n.div_ceil(tn);
        // Slices of partial sums (m × n f32 each) that `bytes` hold.
        let slices = |bytes: u64| usize::try_from(bytes / (m as u64 * n as u64 * 4)).unwrap_or(usize::MAX);
        // Splits of at most MAX_SPLIT_K where their partial sums fit one binding.
        let least = k.div_ceil(MAX_SPLIT_K).min(slices(max_binding)).max(1);
        let most = (k / MIN_SPLIT_K).min(slices((MAX_PARTIAL_BYTES as u64).min(max_binding))).min(MAX_DIM).max(least);
        let wanted = target.div_ceil(tiles).clamp(least, most);
        let k_split = k.div_ceil(wanted).next_multiple_of(8);
        let splits = k.div_ceil(k_split);
        let lanes = if splits == 1 { 1 } else { splits.div_ceil(16).next_power_of_two().min(64) };
        GemmPlan { tm, tn, splits, k_split, lanes }
    }

    /// Workgroups of the product pass.
    pub fn groups(&self, m: usize, n: usize) -> usize {
        m.div_ceil(self.tm) * n.div_ceil(self.tn) * self.splits
    }

    /// Workgroups of the reduction pass over `outputs` values (0 without a split).
    pub fn reduce_groups(&self, outputs: usize) -> usize {
        if self.splits == 1 {
            0
        } else {
            outputs.div_ceil(256 / self.lanes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINDING: u64 = 128 << 20;
    const GPU: usize = crate::gpu::GPU_TARGET_GROUPS;

    /// Weight gradients of `cnn` at batch 128 (M = cout, N = cin·9, K = 128·H·W).
    const CNN_WGRAD: [(usize, usize, usize); 5] = [
        (32, 9, 128 * 32 * 32),
        (32, 288, 128 * 32 * 32),
        (64, 288, 128 * 16 * 16),
        (64, 576, 128 * 16 * 16),
        (128, 576, 128 * 8 * 8),
    ];

    #[test]
    fn weight_gradients_fill_a_large_gpu() {
        for (m, n, k) in CNN_WGRAD {
            let p = GemmPlan::choose(m, n, k, GPU, BINDING);
            let groups = p.groups(m, n);
            // Before: one split per 4096 of K, 64×64 tiles: 32 to 160 workgroups.
            assert!(groups >= 500, "{m}x{n}x{k}: {p:?} gives {groups} workgroups");
            assert!(p.k_split >= MIN_SPLIT_K && p.k_split.is_multiple_of(8), "{p:?}");
            assert!(p.splits * m * n * 4 <= MAX_PARTIAL_BYTES, "{p:?}");
            assert!(p.splits * p.k_split >= k && (p.splits - 1) * p.k_split < k, "every split has work: {p:?}");
        }
        // The shapes that dominate: about a thousand workgroups (before: 160 and 72).
        assert!(GemmPlan::choose(32, 288, 131072, GPU, BINDING).groups(32, 288) >= 900);
        assert!(GemmPlan::choose(64, 576, 32768, GPU, BINDING).groups(64, 576) >= 900);
    }

    #[test]
    fn tiles_follow_the_short_side() {
        assert_eq!(GemmPlan::choose(16, 131072, 9, GPU, BINDING).tm, 16, "resnet20 stem forward");
        assert_eq!(GemmPlan::choose(32, 131072, 288, GPU, BINDING).tm, 32);
        assert_eq!(GemmPlan::choose(64, 8192, 576, GPU, BINDING).tm, 64);
        assert_eq!(GemmPlan::choose(16, 144, 131072, GPU, BINDING).tm, 16, "resnet20 stage-1 weight gradient");
        assert_eq!(GemmPlan::choose(1024, 1024, 1024, GPU, BINDING).tm, 64);
        // A tie keeps the square tile.
        assert_eq!(GemmPlan::choose(32, 9, 4096, GPU, BINDING).tm, 64);
        // One height given: every product takes it.
        assert_eq!(GemmPlan::choose_among(&[64], 16, 131072, 9, GPU, BINDING).tm, 64);
        assert_eq!(GemmPlan::choose_among(&[32], 1024, 1024, 1024, GPU, BINDING).tm, 32);
    }

    #[test]
    fn large_grids_and_short_reductions_do_not_split() {
        let p = GemmPlan::choose(32, 131072, 288, GPU, BINDING);
        assert_eq!((p.splits, p.lanes), (1, 1), "conv forward of cnn's second layer: {p:?}");
        let p = GemmPlan::choose(5, 7, 100, GPU, BINDING);
        assert_eq!(p.splits, 1, "K below two minimal splits: {p:?}");
        assert_eq!(p.reduce_groups(35), 0);
    }

    #[test]
    fn a_cpu_adapter_splits_only_what_one_split_cannot_walk() {
        for (m, n, k) in CNN_WGRAD {
            let p = GemmPlan::choose(m, n, k, 1, BINDING);
            let splits = k.div_ceil(MAX_SPLIT_K);
            assert_eq!((p.splits, p.k_split), (splits, k.div_ceil(splits).next_multiple_of(8)), "{p:?}");
            assert_eq!(p.lanes, 1, "{p:?}");
        }
        let p = GemmPlan::choose(32, 9, 4096, 1, BINDING);
        assert_eq!((p.splits, p.k_split, p.lanes), (1, 4096, 1), "{p:?}");
    }

    #[test]
    fn no_split_walks_more_than_the_cap_on_any_adapter() {
        for target in [1, 64, GPU] {
            for k in [8, 16384, 16392, 40960, 131072, 1 << 20] {
                for (m, n) in [(32, 9), (64, 576), (512, 576)] {
                    let p = GemmPlan::choose(m, n, k, target, BINDING);
                    assert!(p.k_split <= MAX_SPLIT_K, "{m}x{n}x{k} at {target}: {p:?}");
                    assert!(p.splits * p.k_split >= k && (p.splits - 1) * p.k_split < k, "{p:?}");
                }
            }
        }
    }

    #[test]
    fn the_partial_sums_respect_the_binding_limit() {
        let p = GemmPlan::choose(64, 576, 1 << 20, GPU, 4 << 20);
        assert!(p.splits * 64 * 576 * 4 <= 4 << 20, "{p:?}");
        let p = GemmPlan::choose(4096, 4096, 1 << 20, GPU, 4 << 20);
        assert_eq!(p.splits, 1, "no room for even two slices: {p:?}");
    }

    #[test]
    fn reduction_lanes_grow_with_the_splits() {
        for (m, n, k) in CNN_WGRAD {
            let p = GemmPlan::choose(m, n, k, GPU, BINDING);
            assert!(p.lanes.is_power_of_two() && p.lanes <= 64, "{p:?}");
            assert!(p.splits.div_ceil(p.lanes) <= 16 || p.lanes == 64, "{p:?}");
            assert!(p.reduce_groups(m * n) * (256 / p.lanes) >= m * n, "{p:?}");
        }
    }
}
