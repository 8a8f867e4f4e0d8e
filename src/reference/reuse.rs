//! Similarity reuse (LSH) of the `fdsr` path (docs/CODEC.md, "Similarity reuse"): SimHash
//! signatures of the leading zig-zag coefficients, buckets by (signature, magnitude key), and
//! verification of each candidate against its bucket's lowest-index tile, in rounds.
//! `shaders/fdsr_reuse.wgsl` mirrors every step; its hash table only finds the same buckets.

use super::fdsr::Analysis;
use super::quant::{ac_scale, encode_scale, f16_encode, hash, scale_value};
use crate::rules::config::ReuseConfig;
use crate::rules::format::TileClass;
use std::collections::HashMap;

/// Verification tolerance factor `1 − 2^-20`: with it, an accepted coefficient is within the
/// exact bound `scale / L` despite the rounding of `|a − b| · L` in f32.
pub const VERIFY_MARGIN: f32 = 1.0 - 1.0 / (1u32 << 20) as f32;

/// Per-tensor reuse statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReuseStats {
    /// Tiles stored as references.
    pub hits: u64,
    /// Verifications of a tile against a different representative (all rounds).
    pub candidates: u64,
    /// Candidates whose verification failed (`candidates − hits`).
    pub rejected: u64,
    /// Full tiles that took part (the hit rate is `hits / eligible`).
    pub eligible: u64,
}

impl ReuseStats {
    /// `hits / eligible` (0 when nothing was eligible).
    pub fn hit_rate(&self) -> f64 {
        if self.eligible == 0 {
            0.0
        } else {
            self.hits as f64 / self.eligible as f64
        }
    }

    /// Adds another chunk's statistics.
    pub fn add(&mut self, o: &ReuseStats) {
        self.hits += o.hits;
        self.candidates += o.candidates;
        self.rejected += o.rejected;
        self.eligible += o.eligible;
    }
}

/// Hyperplane `i`, coefficient `z`: `(hash(hash(seed ^ 0x51ed5eed) ^ (i·64 + z)) >> 8) · 2^-23 − 1`,
/// uniform in `[-1, 1)`, exact in f32. Laid out `i · 64 + z` for `bits` hyperplanes.
pub fn hyperplanes(seed: u32, bits: u8) -> Vec<f32> {
    let key = hash(seed ^ 0x51ed_5eed);
    (0..bits as u32 * 64).map(|i| (hash(key ^ i) >> 8) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0).collect()
}

/// Projection `i` of the `K` leading AC coefficients: `Σ_{z=1..=K} H[i][z] · c[z]`, accumulated
/// in f32 from 0 in zig-zag order. The DC is left out: it would dominate every projection of a
/// post-ReLU tile (all signatures alike); the magnitude key carries it.
pub fn projection(h: &[f32], i: usize, coefs: &[f32; 64], leading: usize) -> f32 {
    (1..=leading).fold(0f32, |acc, z| acc + h[i * 64 + z] * coefs[z])
}

/// Magnitude key: the top 12 bits of `|DC|`'s f32 pattern (exponent and 4 mantissa bits, bins
/// of 1/16 octave).
pub fn magnitude_key(dc: f32) -> u32 {
    (dc.abs().to_bits() >> 19) & 0xfff
}

/// The tile's key: signature bit `i` (`i < bits ≤ 20`) is `projection_i > 0`; bits 20..32 hold
/// the [`magnitude_key`] (never all ones: that would be a non-finite DC).
pub fn tile_key(h: &[f32], coefs: &[f32; 64], cfg: &ReuseConfig) -> u32 {
    let k = cfg.leading as usize;
    let mut sig = 0u32;
    for i in 0..cfg.bits as usize {
        sig |= u32::from(projection(h, i, coefs, k) > 0.0) << i;
    }
    sig | magnitude_key(coefs[0]) << 20
}

/// Whether tile `t` may reuse representative `s`: for every band with `b > 0`, every coefficient
/// obeys `f32(|c_t − c_s|) · L ≤ scale · VERIFY_MARGIN` (`L = 2^b − 1`, `scale` the scale value
/// of `s`'s code: its plane DC code for DC, its band-maximum code for AC bands), or for `b = 16`
/// has the same f16 bits.
pub fn verify(ct: &[f32; 64], cs: &[f32; 64], dc_scale: f32, edges: &[u8], bits: &[u8], e0: i32) -> bool {
    for (j, &b) in bits.iter().enumerate() {
        let (lo, hi) = (edges[j] as usize, edges[j + 1] as usize);
        if b == 0 {
            continue;
        }
        if b == 16 {
            if (lo..hi).any(|z| f16_encode(ct[z]) != f16_encode(cs[z])) {
                return false;
            }
            continue;
        }
        let scale = if j == 0 { dc_scale } else { ac_scale(cs[lo..hi].iter().fold(0f32, |a, c| a.max(c.abs())), e0) };
        let l = ((1u32 << b) - 1) as f32;
        let tol = scale * VERIFY_MARGIN;
        if (lo..hi).any(|z| (ct[z] - cs[z]).abs() * l > tol) {
            return false;
        }
    }
    true
}

/// Finds references among the full tiles of `a`, chunk by chunk of `chunk_planes` planes (a
/// reference never crosses a chunk). Turns the referencing tiles' class into
/// [`TileClass::Reference`] and returns, for each in tile order, its representative's index.
///
/// Rounds: in each, every unresolved full tile claims its key's bucket; the lowest index per
/// bucket becomes a distinct tile; the others verify against it, become references on success
/// and stay unresolved otherwise. Tiles still unresolved after the last round are distinct.
#[allow(clippy::too_many_arguments)]
pub fn find(
    a: &mut Analysis,
    cfg: &ReuseConfig,
    seed: u32,
    bits: &[u8],
    e0: i32,
    dc_codes: &[u8],
    chunk_planes: usize,
) -> (Vec<u32>, ReuseStats) {
    let h = hyperplanes(seed, cfg.bits);
    let per_plane = a.geometry.tiles_per_plane();
    let edges = a.stats.band_edges.clone();
    let mut rep: Vec<Option<u32>> = vec![None; a.classes.len()];
    let mut st = ReuseStats::default();
    let chunk_tiles = chunk_planes.max(1) * per_plane;
    for start in (0..a.classes.len()).step_by(chunk_tiles.max(1)) {
        let end = (start + chunk_tiles).min(a.classes.len());
        let keys: Vec<u32> = (start..end).map(|t| tile_key(&h, &a.coefs[t], cfg)).collect();
        let mut open: Vec<usize> = (start..end).filter(|&t| a.classes[t] == TileClass::Full).collect();
        st.eligible += open.len() as u64;
        for _ in 0..cfg.rounds {
            let mut min_of: HashMap<u32, usize> = HashMap::new();
            for &t in &open {
                min_of.entry(keys[t - start]).or_insert(t); // `open` is in increasing order
            }
            let mut still = Vec::new();
            for &t in &open {
                let s = min_of[&keys[t - start]];
                if s == t {
                    continue;
                }
                st.candidates += 1;
                let dc_scale = scale_value(dc_codes[s / per_plane], e0);
                if verify(&a.coefs[t], &a.coefs[s], dc_scale, &edges, bits, e0) {
                    rep[t] = Some(s as u32);
                    st.hits += 1;
                } else {
                    still.push(t);
                }
            }
            open = still;
        }
    }
    st.rejected = st.candidates - st.hits;
    let mut refs = Vec::new();
    for (t, r) in rep.iter().enumerate() {
        if let Some(s) = r {
            a.classes[t] = TileClass::Reference;
            refs.push(*s);
        }
    }
    a.stats.full_tiles -= st.hits;
    a.stats.ref_tiles += st.hits;
    (refs, st)
}

/// Whether reuse can save bytes at `bits`: a reference costs 32 bits in `refs`, so only when a
/// full tile's payload is larger.
pub fn worthwhile(edges: &[u8], bits: &[u8]) -> bool {
    crate::rules::alloc::class_bits(edges, bits)[2] > 32
}

/// Runs [`find`] on an analysed tensor encoded with `bits` (the base exponent and DC codes that
/// [`super::fdsr::encode`] will use) and stores the references in `a.refs`. Does nothing (but
/// count the eligible tiles) unless [`worthwhile`].
pub fn apply(a: &mut Analysis, cfg: &ReuseConfig, seed: u32, bits: &[u8], chunk_planes: usize) -> ReuseStats {
    if !worthwhile(&a.stats.band_edges, bits) {
        return ReuseStats { eligible: a.stats.full_tiles, ..Default::default() };
    }
    let e0 = super::quant::e0_for(a.stats.gmax);
    let dc_codes: Vec<u8> = a.plane_dcmax.iter().map(|&m| encode_scale(m, e0)).collect();
    let (refs, st) = find(a, cfg, seed, bits, e0, &dc_codes, chunk_planes);
    a.refs = refs;
    st
}
