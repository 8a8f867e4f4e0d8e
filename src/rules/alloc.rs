//! Bit allocation under a budget (docs/CODEC.md, "Bit allocation under a budget"): from the
//! statistics of one analysis pass, choose bits per band of least estimated error whose exact
//! stored size fits `budget · numel` bits. Pure Rust; the reference and the codec share it.

use super::format::AC_SCALE_BITS;
use super::sizes::{self as serialize, words_for_bits};
use crate::error::{FdsrError, Result};

/// Bit-widths an AC band may take.
pub const AC_CHOICES: [u8; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 16];
/// Bit-widths the DC band may take under a budget.
pub const DC_CHOICES: [u8; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 16];
/// Up to this many bands (DC included) the search is exhaustive; above it, greedy.
pub const EXHAUSTIVE_MAX_BANDS: usize = 5;
pub use super::config::{coherent_weight_at, AllocWeights};

/// Payload bits per full tile of an AC band of `n` coefficients at `b` bits: an
/// [`AC_SCALE_BITS`]-bit scale code (none at 16 bits, nothing at 0) and `n · b` bits of codes.
pub fn ac_band_bits(n: u32, b: u8) -> u32 {
    match b {
        0 => 0,
        16 => 16 * n,
        b => AC_SCALE_BITS + n * u32::from(b),
    }
}

/// Payload bits of one tile by class (zero, DC-only, full, reference in the serialized form):
/// DC `b_0` bits for classes 1 and 2, plus for class 2 each AC band with `b > 0`: an
/// [`AC_SCALE_BITS`]-bit scale code (unless `b = 16`) and `n_band · b` bits.
pub fn class_bits(edges: &[u8], bits: &[u8]) -> [u32; 4] {
    let dc = bits.first().copied().unwrap_or(0) as u32;
    let mut ac = 0u32;
    for (j, &b) in bits.iter().enumerate().skip(1) {
        let n = edges.get(j + 1).zip(edges.get(j)).map_or(0, |(e1, e0)| e1.saturating_sub(*e0)) as u32;
        ac += ac_band_bits(n, b);
    }
    [0, dc, dc + ac, 0]
}
/// Rank whose header the flat path's size is computed with (the largest rank it serves).
pub const FLAT_HEADER_RANK: usize = 3;

/// What the allocator needs to know about one 4-D tensor, from one analysis pass.
///
/// AC sums run over full tiles, in f64 across tiles. The DC group is per plane, so its term is
/// `Σ_planes nonzero_tiles(p) · dcmax(p)²` ([`FdsrStats::set_dc`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FdsrStats {
    /// Zig-zag band edges.
    pub band_edges: Vec<u8>,
    /// Values of the tensor (the budget is per value).
    pub numel: u64,
    /// Planes `N·C`.
    pub planes: u64,
    /// Tiles of class zero.
    pub zero_tiles: u64,
    /// Tiles of class DC-only.
    pub dc_tiles: u64,
    /// Tiles of class full.
    pub full_tiles: u64,
    /// Tiles of class reference.
    pub ref_tiles: u64,
    /// Per band, `Σ n_band · maxabs²` over full tiles (`maxabs` the tile's largest |coefficient|
    /// in the band); index 0 (DC) unused.
    pub band_sum_n_max2: Vec<f64>,
    /// Per band, `Σ coef²` over full tiles; index 0 unused.
    pub band_energy: Vec<f64>,
    /// `Σ_planes nonzero_tiles · dcmax²`: the DC group term.
    pub dc_sum_n_max2: f64,
    /// Largest |coefficient| (all 64) over non-zero tiles: `e0 = e0_for(gmax)`.
    pub gmax: f32,
    /// Weight of the DC band's error (constant over a tile, it adds up coherently in a weight
    /// gradient) against the AC bands' rounding noise: 1 for reconstruction error, else
    /// [`AllocWeights::dc`] (`fdsr:…,grad`).
    pub coherent_weight: f64,
    /// Weight of a dropped band's error (a bias): 1 for reconstruction error, else
    /// [`AllocWeights::dropped`].
    pub dropped_weight: f64,
}

impl FdsrStats {
    /// Empty statistics for `band_edges`.
    pub fn new(band_edges: &[u8]) -> Self {
        let n = band_edges.len().saturating_sub(1);
        Self {
            band_edges: band_edges.to_vec(),
            numel: 0,
            planes: 0,
            zero_tiles: 0,
            dc_tiles: 0,
            full_tiles: 0,
            ref_tiles: 0,
            band_sum_n_max2: vec![0.0; n],
            band_energy: vec![0.0; n],
            dc_sum_n_max2: 0.0,
            gmax: 0.0,
            coherent_weight: 1.0,
            dropped_weight: 1.0,
        }
    }

    /// Sets both weights from `w`.
    pub fn set_weights(&mut self, w: AllocWeights) {
        (self.coherent_weight, self.dropped_weight) = (w.dc.into(), w.dropped.into());
    }

    /// Number of bands (DC included).
    pub fn bands(&self) -> usize {
        self.band_edges.len().saturating_sub(1)
    }

    /// Tiles of the tensor.
    pub fn tiles(&self) -> u64 {
        self.zero_tiles + self.dc_tiles + self.full_tiles + self.ref_tiles
    }

    /// Sets the DC term from per-plane DC maxima and non-zero tile counts.
    pub fn set_dc(&mut self, plane_dcmax: &[f32], plane_nonzero: &[u64]) {
        self.dc_sum_n_max2 = plane_dcmax.iter().zip(plane_nonzero).map(|(&m, &n)| n as f64 * (m as f64).powi(2)).sum();
    }
}

/// Estimated squared error of band `j` at `b` bits: the band's energy when dropped; for f16 the
/// half-ulp bound `Σ n·maxabs²·2^-22`; else the stochastic-rounding variance bound
/// `Σ n·maxabs² / (2^b − 1)²` (step `2·maxabs/(2^b − 1)`, variance at most step²/4).
/// For DC (`j = 0`) the term is `dc_sum_n_max2`, which also bounds the DC energy for `b = 0`.
/// DC errors count `coherent_weight` times, dropped bands `dropped_weight` times.
pub fn band_error(stats: &FdsrStats, j: usize, b: u8) -> f64 {
    let e = band_error_unweighted(stats, j, b);
    if j == 0 {
        e * stats.coherent_weight
    } else if b == 0 {
        e * stats.dropped_weight
    } else {
        e
    }
}

fn band_error_unweighted(stats: &FdsrStats, j: usize, b: u8) -> f64 {
    let sum_n_max2 = if j == 0 { stats.dc_sum_n_max2 } else { stats.band_sum_n_max2[j] };
    match b {
        0 if j == 0 => sum_n_max2,
        0 => stats.band_energy[j],
        16 => sum_n_max2 / (1u64 << 22) as f64,
        b => {
            let l = ((1u32 << b) - 1) as f64;
            sum_n_max2 / (l * l)
        }
    }
}

/// Estimated squared error of a whole choice.
pub fn total_error(stats: &FdsrStats, bits: &[u8]) -> f64 {
    bits.iter().enumerate().map(|(j, &b)| band_error(stats, j, b)).sum()
}

/// Exact serialized bytes of the tensor encoded with `bits`, header and metadata included.
pub fn stored_bytes(stats: &FdsrStats, bits: &[u8]) -> usize {
    let cb = class_bits(&stats.band_edges, bits);
    let payload = stats.dc_tiles * cb[1] as u64 + stats.full_tiles * cb[2] as u64;
    serialize::fdsr_stored_bytes(
        4,
        stats.band_edges.len(),
        stats.tiles() as usize,
        stats.planes as usize,
        stats.ref_tiles as usize,
        words_for_bits(payload),
    )
}

/// Exact serialized size in bits (`8 · stored_bytes`).
pub fn stored_bits(stats: &FdsrStats, bits: &[u8]) -> u64 {
    stored_bytes(stats, bits) as u64 * 8
}

/// Bits per band of least estimated error that fit `budget` bits per value (metadata included).
/// Errors with [`FdsrError::BudgetTooLow`] when even DC at 1 bit and no AC band does not fit.
/// Ties in error go to the smaller size, then to the first choice in search order.
pub fn choose_bits(stats: &FdsrStats, budget: f64) -> Result<Vec<u8>> {
    let mut one = choose_bits_at(stats, &[budget])?;
    // choose_bits_at answers each budget it is given: one here.
    one.pop().expect("one budget, one answer")
}

/// [`choose_bits`] at each of `budgets`, from one search where the bands are few enough for the
/// exhaustive one: the controller asks for every level of every tensor at a probe. The outer
/// error is for inconsistent statistics, the inner ones per budget.
pub fn choose_bits_at(stats: &FdsrStats, budgets: &[f64]) -> Result<Vec<Result<Vec<u8>>>> {
    let n = stats.bands();
    if n == 0 || stats.band_sum_n_max2.len() != n || stats.band_energy.len() != n || stats.numel == 0 {
        return Err(FdsrError::InvalidConfig(format!(
            "statistics for {n} bands and {} values are inconsistent (numel must be set)",
            stats.numel
        )));
    }
    let numel = stats.numel.max(1) as f64;
    let min = least(n);
    let min_bits = stored_bits(stats, &min) as f64;
    let fits = |budget: f64| min_bits <= budget * numel;
    let limits: Vec<f64> = budgets.iter().filter(|&&b| fits(b)).map(|&b| b * numel).collect();
    let mut found = if n <= EXHAUSTIVE_MAX_BANDS {
        exhaustive(stats, &limits, n)
    } else {
        limits.iter().map(|&limit| greedy(stats, limit, min.clone())).collect()
    }
    .into_iter();
    Ok(budgets
        .iter()
        .map(|&budget| match fits(budget) {
            // The search answered each fitting budget, in order.
            true => Ok(found.next().expect("one choice per fitting budget")),
            false => Err(FdsrError::BudgetTooLow { budget, needed: min_bits / numel }),
        })
        .collect())
}

/// The best choice seen for some limits: its error, size and place in search order.
#[derive(Clone)]
struct Best {
    err: f64,
    size: usize,
    order: u64,
    bits: [u8; EXHAUSTIVE_MAX_BANDS],
}

impl Best {
    /// Less error, then smaller size, then earlier in search order.
    fn beats(&self, other: &Best) -> bool {
        (self.err, self.size, self.order) < (other.err, other.size, other.order)
    }
}

/// Every choice of {1..8,16} for DC and {0..8,16} per AC band, in odometer order (last band
/// fastest), for all of `limits` (bits; each fits DC at 1 bit) at once. Each band's error at
/// each width is computed once and summed in band order, as [`total_error`] sums it. A choice
/// counts for the least limit it fits and, through a running best in increasing limit, for
/// every larger one. The size grows with every band's width, so once a choice fits no limit,
/// the last band's wider choices are skipped. Same result per limit as trying every choice.
fn exhaustive(stats: &FdsrStats, limits: &[f64], n: usize) -> Vec<Vec<u8>> {
    let ladder = |j: usize| -> &'static [u8] {
        if j == 0 {
            &DC_CHOICES
        } else {
            &AC_CHOICES
        }
    };
    let errs: Vec<Vec<f64>> = (0..n).map(|j| ladder(j).iter().map(|&b| band_error(stats, j, b)).collect()).collect();
    let mut by_limit: Vec<usize> = (0..limits.len()).collect();
    by_limit.sort_by(|&a, &b| limits[a].total_cmp(&limits[b]));
    let sorted: Vec<f64> = by_limit.iter().map(|&i| limits[i]).collect();
    // bucket[k]: the best choice whose least fitting limit is sorted[k].
    let mut bucket: Vec<Option<Best>> = vec![None; sorted.len()];
    let mut idx = [0usize; EXHAUSTIVE_MAX_BANDS];
    let mut bits = [0u8; EXHAUSTIVE_MAX_BANDS];
    let mut order = 0u64;
    loop {
        for (j, b) in bits.iter_mut().enumerate().take(n) {
            *b = ladder(j)[idx[j]];
        }
        let size = stored_bytes(stats, &bits[..n]);
        let k = sorted.partition_point(|&l| l < (size * 8) as f64);
        if let Some(slot) = bucket.get_mut(k) {
            let err = errs.iter().zip(&idx).fold(0.0, |e, (t, &i)| e + t[i]);
            let seen = Best { err, size, order, bits };
            if slot.as_ref().is_none_or(|b| seen.beats(b)) {
                *slot = Some(seen);
            }
        } else {
            // Wider choices of the last band are larger still.
            idx[n - 1] = ladder(n - 1).len() - 1;
        }
        order += 1;
        // Odometer increment, last band fastest.
        let mut j = n;
        loop {
            if j == 0 {
                return pick(bucket, &by_limit, n);
            }
            j -= 1;
            idx[j] += 1;
            if idx[j] < ladder(j).len() {
                break;
            }
            idx[j] = 0;
        }
    }
}

/// The least choice: DC at 1 bit, no AC band.
fn least(n: usize) -> Vec<u8> {
    let mut min = vec![0u8; n];
    min[0] = 1;
    min
}

/// Per limit (in the order given), the best of the buckets up to its own in increasing limit.
fn pick(bucket: Vec<Option<Best>>, by_limit: &[usize], n: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(); by_limit.len()];
    let mut best: Option<Best> = None;
    for (seen, &i) in bucket.into_iter().zip(by_limit) {
        if let Some(seen) = seen.filter(|s| best.as_ref().is_none_or(|b| s.beats(b))) {
            best = Some(seen);
        }
        // Every limit fits DC at 1 bit, which the search visits, so some choice fits; were none
        // to, the least choice (DC at 1 bit, no AC band) stands, as [`choose_bits`] validates.
        out[i] = best.as_ref().map_or_else(|| least(n), |b| b.bits[..n].to_vec());
    }
    out
}

/// Greedy marginal gain: repeatedly move one band to whichever larger width gives the most
/// error reduction per added byte and still fits.
fn greedy(stats: &FdsrStats, limit: f64, mut bits: Vec<u8>) -> Vec<u8> {
    loop {
        let size = stored_bytes(stats, &bits);
        let mut best: Option<(f64, usize, u8)> = None;
        for j in 0..bits.len() {
            let ladder: &[u8] = if j == 0 { &DC_CHOICES } else { &AC_CHOICES };
            let e_now = band_error(stats, j, bits[j]);
            for &b in ladder.iter().filter(|&&b| b > bits[j]) {
                let mut trial = bits.clone();
                trial[j] = b;
                let s = stored_bytes(stats, &trial);
                if (s * 8) as f64 > limit {
                    continue;
                }
                let gain = (e_now - band_error(stats, j, b)) / s.saturating_sub(size).max(1) as f64;
                if gain > 0.0 && best.is_none_or(|(g, _, _)| gain > g) {
                    best = Some((gain, j, b));
                }
            }
        }
        match best {
            Some((_, j, b)) => bits[j] = b,
            None => return bits,
        }
    }
}

/// Flat path: the largest `B ∈ 1..=8` whose `uniform:B` size for `numel` values fits `budget`
/// bits per value, sized with the rank-[`FLAT_HEADER_RANK`] header (exact for rank 3, at most
/// 16 bytes over for lower ranks), so the stored size never exceeds the budget.
pub fn flat_bits_for_budget(numel: usize, budget: f64) -> Result<u8> {
    let limit = budget * numel.max(1) as f64;
    let bits_of = |b: u8| (serialize::uniform_stored_bytes(FLAT_HEADER_RANK, numel, b) * 8) as f64;
    (1..=8u8)
        .rev()
        .find(|&b| bits_of(b) <= limit)
        .ok_or(FdsrError::BudgetTooLow { budget, needed: bits_of(1) / numel.max(1) as f64 })
}

/// Flat path with fixed band widths: the largest width, capped at 8, at least 1.
pub fn flat_bits_for_fixed(bits: &[u8]) -> u8 {
    bits.iter().copied().max().unwrap_or(1).clamp(1, 8)
}

#[cfg(test)]
mod tests;
