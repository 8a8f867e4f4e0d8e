//! The bit allocation rule as the device runs it (`shaders/fdsr_alloc.wgsl`, docs/CODEC.md "Bit
//! allocation on the device"), step for step in f32: the tree reduction of a segment's analysis,
//! the estimated error of each band at each width, and the choice of least error whose payload
//! fits the region. Pure Rust; imports nothing it judges.

use crate::rules::alloc::ac_band_bits;
pub use crate::rules::alloc::{class_bits, AC_CHOICES, DC_CHOICES, EXHAUSTIVE_MAX_BANDS};

/// Statistics per analysis workgroup: 8 × `Σ n·max²`, 8 × `Σ c²`, zero, DC-only, full, max.
pub const STATS: usize = 20;
/// Lanes of the allocation workgroup.
pub const LANES: usize = 256;
/// The f16 pass-through's error factor, `2^-22`.
pub const F16_ERR: f32 = 2.384_185_8e-7;

/// How the bits are chosen (`AllocParams::mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocMode {
    /// Greedy marginal gain.
    Greedy = 0,
    /// Every combination.
    Exhaustive = 1,
    /// Given bits.
    Fixed = 2,
}

/// The search for `nbands` bands.
pub fn mode_for(nbands: usize) -> AllocMode {
    if nbands <= EXHAUSTIVE_MAX_BANDS {
        AllocMode::Exhaustive
    } else {
        AllocMode::Greedy
    }
}

/// `1 / (2^b − 1)²` at index `b ∈ 1..=8` (f32, computed in f64 and rounded once).
pub fn inv_l2_table() -> [f32; 12] {
    let mut t = [0f32; 12];
    for (b, v) in t.iter_mut().enumerate().take(9).skip(1) {
        let l = ((1u32 << b) - 1) as f64;
        *v = (1.0 / (l * l)) as f32;
    }
    t
}

/// A segment's totals as the allocation kernel reduces them.
#[derive(Clone, Debug, PartialEq)]
pub struct Totals {
    /// The [`STATS`] statistics summed (the last max-ed) over the analysis workgroups.
    pub stats: [f32; STATS],
    /// `Σ_planes f32(nonzero) · dcmax²`.
    pub dc_term: f32,
}

fn fold(a: f32, b: f32, is_max: bool) -> f32 {
    if is_max {
        a.max(b)
    } else {
        a + b
    }
}

/// `v` reduced as the kernel does: lane `l` folds items `l, l + 256, …` in order, then the
/// pairwise tree of strides 128, …, 1.
fn lanes_then_tree(n: usize, item: impl Fn(usize) -> f32, is_max: bool) -> f32 {
    let mut lanes = [0f32; LANES];
    for (l, v) in lanes.iter_mut().enumerate() {
        let mut i = l;
        while i < n {
            *v = fold(*v, item(i), is_max);
            i += LANES;
        }
    }
    let mut stride = LANES / 2;
    while stride > 0 {
        for l in 0..stride {
            lanes[l] = fold(lanes[l], lanes[l + stride], is_max);
        }
        stride /= 2;
    }
    lanes[0]
}

/// The totals of `groups` rows of `partials` and of per-plane `dcmax` bits and `nonzero` counts.
pub fn reduce(partials: &[f32], groups: usize, dcmax: &[u32], nonzero: &[u32]) -> Totals {
    let mut stats = [0f32; STATS];
    for (s, v) in stats.iter_mut().enumerate() {
        *v = lanes_then_tree(groups, |r| partials[r * STATS + s], s == STATS - 1);
    }
    let dc_term = lanes_then_tree(
        dcmax.len(),
        |q| {
            let m = f32::from_bits(dcmax[q]);
            nonzero[q] as f32 * (m * m)
        },
        false,
    );
    Totals { stats, dc_term }
}

/// Width of choice `c` of band `j`.
pub fn choice_bits(j: usize, c: usize) -> u8 {
    if j == 0 {
        DC_CHOICES[c]
    } else {
        AC_CHOICES[c]
    }
}

/// The estimated error of band `j` at choice `c`.
fn term(t: &Totals, j: usize, c: usize, lim: &Limits<'_>, inv: &[f32; 12]) -> f32 {
    let b = choice_bits(j, c);
    let f = |s: f32| if b == 16 { s * F16_ERR } else { s * inv[b as usize] };
    if j == 0 {
        f(t.dc_term) * lim.weight
    } else if b == 0 {
        t.stats[8 + j] * lim.drop_weight
    } else {
        f(t.stats[j])
    }
}

/// Everything the choice needs besides the totals.
#[derive(Clone, Copy, Debug)]
pub struct Limits<'a> {
    /// Zig-zag band edges.
    pub edges: &'a [u8],
    /// Payload bits the region holds.
    pub limit_bits: u32,
    /// Weight of the DC band's error (`AllocWeights::dc`).
    pub weight: f32,
    /// Weight of a dropped band's error (`AllocWeights::dropped`).
    pub drop_weight: f32,
}

fn payload(c: &[usize], edges: &[u8], nonzero: u32, full: u32) -> u32 {
    let mut ac = 0u32;
    for (j, &cj) in c.iter().enumerate().skip(1) {
        ac += ac_band_bits(u32::from(edges[j + 1] - edges[j]), choice_bits(j, cj));
    }
    nonzero.wrapping_mul(u32::from(choice_bits(0, c[0]))).wrapping_add(full.wrapping_mul(ac))
}

/// The bits per band the kernel chooses (exhaustive or greedy by the band count) and whether no
/// choice fitted (then the least one, DC at 1 bit and no AC band).
pub fn choose(t: &Totals, lim: &Limits<'_>) -> (Vec<u8>, bool) {
    let nb = lim.edges.len() - 1;
    let inv = inv_l2_table();
    let terms: Vec<Vec<f32>> =
        (0..nb).map(|j| (0..if j == 0 { 9 } else { 10 }).map(|c| term(t, j, c, lim, &inv)).collect()).collect();
    let full = t.stats[18] as u32;
    let nonzero = t.stats[17] as u32 + full;
    let err = |c: &[usize]| c.iter().enumerate().fold(0f32, |e, (j, &cj)| e + terms[j][cj]);
    let mut c = vec![0usize; nb];
    let mut no_fit = false;
    if mode_for(nb) == AllocMode::Exhaustive {
        let combos = 9 * 10usize.pow(nb as u32 - 1);
        let mut best: Option<(f32, u32, Vec<usize>)> = None;
        for idx in 0..combos {
            let mut r = idx;
            let mut trial = vec![0usize; nb];
            for j in (1..nb).rev() {
                trial[j] = r % 10;
                r /= 10;
            }
            trial[0] = r;
            let size = payload(&trial, lim.edges, nonzero, full);
            if size > lim.limit_bits {
                continue;
            }
            let e = err(&trial);
            if best.as_ref().is_none_or(|(be, bs, _)| e < *be || (e == *be && size < *bs)) {
                best = Some((e, size, trial));
            }
        }
        match best {
            Some((_, _, b)) => c = b,
            None => no_fit = true,
        }
    } else {
        greedy(&mut c, &terms, lim, nonzero, full);
    }
    (c.iter().enumerate().map(|(j, &cj)| choice_bits(j, cj)).collect(), no_fit)
}

/// Greedy marginal gain, gains compared by cross products as the kernel does.
fn greedy(c: &mut [usize], terms: &[Vec<f32>], lim: &Limits<'_>, nonzero: u32, full: u32) {
    for _ in 0..80 {
        let size = payload(c, lim.edges, nonzero, full);
        let mut best: Option<(usize, usize, f32, f32)> = None;
        for j in 0..c.len() {
            let now = c[j];
            for k in now + 1..terms[j].len() {
                c[j] = k;
                let s = payload(c, lim.edges, nonzero, full);
                c[j] = now;
                if s > lim.limit_bits {
                    continue;
                }
                let num = terms[j][now] - terms[j][k];
                let den = s.saturating_sub(size).max(1) as f32;
                if num > 0.0 && best.is_none_or(|(_, _, bn, bd)| num * bd > bn * den) {
                    best = Some((j, k, num, den));
                }
            }
        }
        match best {
            Some((j, k, _, _)) => c[j] = k,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(energy_scale: f32) -> Totals {
        let mut stats = [0f32; STATS];
        for j in 1..8 {
            stats[j] = 1e4 / (1u32 << (2 * j)) as f32;
            stats[8 + j] = energy_scale * stats[j];
        }
        (stats[16], stats[17], stats[18], stats[19]) = (200.0, 50.0, 262.0, 30.0);
        Totals { stats, dc_term: 3900.0 }
    }

    #[test]
    fn choices_fit_and_improve_with_the_limit() {
        for edges in [&[0u8, 1, 6, 28, 64][..], &[0, 1, 3, 6, 10, 15, 28, 64]] {
            let t = totals(0.1);
            let mut last = f32::INFINITY;
            for limit_bits in [312, 2_000, 10_000, 40_000, 200_000, 2_000_000] {
                let lim = Limits { edges, limit_bits, weight: 1.0, drop_weight: 1.0 };
                let (bits, no_fit) = choose(&t, &lim);
                assert!(!no_fit && bits.len() == edges.len() - 1);
                let c: Vec<usize> = bits
                    .iter()
                    .enumerate()
                    .map(|(j, &b)| {
                        if j == 0 {
                            DC_CHOICES.iter().position(|&x| x == b).unwrap()
                        } else {
                            AC_CHOICES.iter().position(|&x| x == b).unwrap()
                        }
                    })
                    .collect();
                assert!(payload(&c, edges, 312, 262) <= limit_bits, "{bits:?} over {limit_bits}");
                let e: f32 = c.iter().enumerate().map(|(j, &cj)| term(&t, j, cj, &lim, &inv_l2_table())).sum();
                assert!(e <= last * 1.0001, "limit {limit_bits}: error {e} > {last} ({bits:?})");
                last = e;
            }
        }
        let (bits, no_fit) =
            choose(&totals(0.1), &Limits { edges: &[0, 1, 6, 28, 64], limit_bits: 100, weight: 1.0, drop_weight: 1.0 });
        assert!(no_fit && bits == vec![1, 0, 0, 0]);
    }

    #[test]
    fn the_tree_reduction_sums_in_its_own_order() {
        let partials: Vec<f32> = (0..300 * STATS).map(|i| (i % 7) as f32 * 0.5).collect();
        let t = reduce(&partials, 300, &[2f32.to_bits(), 3f32.to_bits()], &[4, 1]);
        let direct: f32 = (0..300).map(|r| partials[r * STATS + 3]).sum();
        assert_eq!(t.stats[3], direct, "small integers sum exactly in any order");
        assert_eq!(t.dc_term, 4.0 * 4.0 + 9.0);
        assert_eq!(t.stats[19], 3.0);
    }
}
