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
pub use super::config::coherent_weight_at;

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
    /// Weight of the errors that add up coherently in a weight gradient — the DC band's (constant
    /// over a tile) and a dropped band's (a bias) — against the other bands' rounding noise: 1
    /// for reconstruction error; [`coherent_weight_at`] the budget (or `,grad=W`) for gradient-aware allocation
    /// (`fdsr:…,grad`).
    pub coherent_weight: f64,
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
        }
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
/// DC errors and dropped bands count `coherent_weight` times.
pub fn band_error(stats: &FdsrStats, j: usize, b: u8) -> f64 {
    let e = band_error_unweighted(stats, j, b);
    if j == 0 || b == 0 {
        e * stats.coherent_weight
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
    let n = stats.bands();
    if n == 0 || stats.band_sum_n_max2.len() != n || stats.band_energy.len() != n || stats.numel == 0 {
        return Err(FdsrError::InvalidConfig(format!(
            "statistics for {n} bands and {} values are inconsistent (numel must be set)",
            stats.numel
        )));
    }
    let numel = stats.numel.max(1) as f64;
    let limit = budget * numel;
    let mut min = vec![0u8; n];
    min[0] = 1;
    let min_bits = stored_bits(stats, &min) as f64;
    if min_bits > limit {
        return Err(FdsrError::BudgetTooLow { budget, needed: min_bits / numel });
    }
    if n <= EXHAUSTIVE_MAX_BANDS {
        Ok(exhaustive(stats, limit, n))
    } else {
        Ok(greedy(stats, limit, min))
    }
}

/// Every choice of {1..8,16} for DC and {0..8,16} per AC band, in odometer order (last band
/// fastest). Each band's error at each width is computed once and summed in band order, as
/// [`total_error`] sums it; the size grows with every band's width, so once a choice does not
/// fit, the last band's wider choices are skipped. Same result as trying every choice, with
/// no allocation per choice: the controller calls this for every tensor and level at a probe.
fn exhaustive(stats: &FdsrStats, limit: f64, n: usize) -> Vec<u8> {
    let ladder = |j: usize| -> &'static [u8] {
        if j == 0 {
            &DC_CHOICES
        } else {
            &AC_CHOICES
        }
    };
    let errs: Vec<Vec<f64>> = (0..n).map(|j| ladder(j).iter().map(|&b| band_error(stats, j, b)).collect()).collect();
    let mut best: Option<(f64, usize, Vec<u8>)> = None;
    let mut idx = vec![0usize; n];
    let mut bits = vec![0u8; n];
    loop {
        for (j, b) in bits.iter_mut().enumerate() {
            *b = ladder(j)[idx[j]];
        }
        let size = stored_bytes(stats, &bits);
        if (size * 8) as f64 <= limit {
            let err = errs.iter().zip(&idx).fold(0.0, |e, (t, &i)| e + t[i]);
            if best.as_ref().is_none_or(|(e, s, _)| err < *e || (err == *e && size < *s)) {
                best = Some((err, size, bits.clone()));
            }
        } else {
            // Wider choices of the last band are larger still.
            idx[n - 1] = ladder(n - 1).len() - 1;
        }
        // Odometer increment, last band fastest.
        let mut j = n;
        loop {
            if j == 0 {
                return best.map_or_else(
                    || {
                        let mut m = vec![0; n];
                        m[0] = 1;
                        m
                    },
                    |b| b.2,
                );
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
mod tests {
    use super::*;

    fn stats(bands: usize) -> FdsrStats {
        let edges: Vec<u8> = match bands {
            4 => vec![0, 1, 6, 28, 64],
            5 => vec![0, 1, 6, 28, 45, 64],
            _ => vec![0, 1, 3, 6, 10, 15, 28, 64],
        };
        let mut s = FdsrStats::new(&edges);
        s.numel = 2 * 4 * 64 * 64;
        s.planes = 8;
        (s.zero_tiles, s.dc_tiles, s.full_tiles) = (200, 50, 262);
        for j in 1..s.bands() {
            s.band_sum_n_max2[j] = 1e4 / (1u64 << (2 * j)) as f64;
            s.band_energy[j] = 1e4 / (1u64 << j) as f64;
        }
        s.set_dc(&[10.0; 8], &[39; 8]);
        s
    }

    #[test]
    fn gradient_aware_allocation_drops_fewer_bands() {
        // Energies well under the range bound, as in real activations (most values are small).
        let mut plain = stats(4);
        for j in 1..4 {
            plain.band_energy[j] = plain.band_sum_n_max2[j] / 16.0;
        }
        let grad = FdsrStats { coherent_weight: f64::from(coherent_weight_at(2.0)), ..plain.clone() };
        let dropped = |b: &[u8]| b[1..].iter().filter(|&&x| x == 0).count();
        let mut fewer = false;
        for budget in [0.5, 1.0, 2.0, 3.0] {
            let (p, g) = (choose_bits(&plain, budget).unwrap(), choose_bits(&grad, budget).unwrap());
            assert!(dropped(&g) <= dropped(&p), "budget {budget}: {g:?} vs {p:?}");
            assert!(stored_bits(&grad, &g) as f64 <= budget * grad.numel as f64);
            fewer |= dropped(&g) < dropped(&p);
        }
        assert!(fewer, "the weight changes some choice");
    }

    #[test]
    fn the_search_finds_what_trying_every_choice_finds() {
        for bands in [4, 5] {
            let mut s = stats(bands);
            s.coherent_weight = 8.0;
            for budget in [0.3, 0.8, 1.25, 2.0, 3.0, 4.5, 12.0] {
                let limit = budget * s.numel as f64;
                let combos = 9 * 10usize.pow(bands as u32 - 1);
                let mut best: Option<(f64, usize, Vec<u8>)> = None;
                for k in 0..combos {
                    let (mut r, mut bits) = (k, vec![0u8; bands]);
                    for j in (0..bands).rev() {
                        let ladder: &[u8] = if j == 0 { &DC_CHOICES } else { &AC_CHOICES };
                        bits[j] = ladder[r % ladder.len()];
                        r /= ladder.len();
                    }
                    let (size, err) = (stored_bytes(&s, &bits), total_error(&s, &bits));
                    let fits = (size * 8) as f64 <= limit;
                    if fits && best.as_ref().is_none_or(|(e, z, _)| err < *e || (err == *e && size < *z)) {
                        best = Some((err, size, bits));
                    }
                }
                let want = best.map(|b| b.2);
                assert_eq!(choose_bits(&s, budget).ok(), want, "{bands} bands, budget {budget}");
            }
        }
    }

    #[test]
    fn allocation_fits_and_improves_with_budget() {
        for bands in [4, 7] {
            let s = stats(bands);
            let mut last = f64::INFINITY;
            for budget in [0.3, 0.5, 1.0, 2.0, 3.0, 6.0, 12.0] {
                let bits = choose_bits(&s, budget).unwrap();
                assert_eq!(bits.len(), s.bands());
                assert!(stored_bits(&s, &bits) as f64 <= budget * s.numel as f64);
                let e = total_error(&s, &bits);
                assert!(e <= last, "budget {budget}: error {e} > {last} ({bits:?})");
                last = e;
            }
        }
    }

    #[test]
    fn too_small_budget_is_an_error() {
        let s = stats(4);
        match choose_bits(&s, 0.01) {
            Err(FdsrError::BudgetTooLow { budget, needed }) => {
                assert_eq!(budget, 0.01);
                assert!(needed > 0.01);
            }
            other => panic!("expected BudgetTooLow, got {other:?}"),
        }
        assert!(matches!(choose_bits(&FdsrStats::new(&[0, 1, 64]), 2.0), Err(FdsrError::InvalidConfig(_))));
        assert!(flat_bits_for_budget(1000, 0.5).is_err());
        assert_eq!(flat_bits_for_budget(1 << 16, 2.2).unwrap(), 2);
        assert_eq!(flat_bits_for_budget(1 << 16, 100.0).unwrap(), 8);
        assert_eq!(flat_bits_for_fixed(&[8, 4, 3, 2]), 8);
        assert_eq!(flat_bits_for_fixed(&[0, 0]), 1);
        assert_eq!(class_bits(&[0, 1, 6, 28, 64], &[8, 4, 0, 16]), [0, 8, 8 + AC_SCALE_BITS + 20 + 36 * 16, 0]);
    }
}
