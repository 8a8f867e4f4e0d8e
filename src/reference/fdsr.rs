//! The `fdsr` block-DCT path on 4-D tensors (docs/CODEC.md, "`fdsr` on 4-D tensors"): analysis
//! (tile classes, band maxima, allocator statistics), encoding into an [`FdsrBody`] and decoding.
//!
//! Class rule (f32 work that `shaders/fdsr_encode.wgsl` mirrors): a tile is zero when all 64
//! padded pixels are `== 0`; otherwise with `total = Σ c²` accumulated in f32 from 0 over the
//! raster-order coefficients and `ac = total − dc·dc`, it is DC-only when
//! `ac <= dc_threshold · total`, else full. The scale-code base exponent is `e0_for(gmax)` with
//! `gmax` the largest |coefficient| (all 64) of any non-zero tile, whatever the bits.

use super::alloc_rule::class_bits;
use super::dct::{self, tiles_along};
use super::pack::{pack2, words_for_bits, BitReader, BitWriter};
use super::quant::*;
use crate::error::{FdsrError, Result};
use crate::rules::config::{BitChoice, CodecOptions, FdsrConfig, Rounding};
use crate::rules::format::{FdsrBody, TileClass, AC_SCALE_BITS};

pub use crate::rules::alloc::FdsrStats;

/// Tiling of a 4-D tensor `[N, C, H, W]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// `N·C`.
    pub planes: usize,
    /// Plane height.
    pub h: usize,
    /// Plane width.
    pub w: usize,
    /// Tile rows per plane.
    pub tiles_y: usize,
    /// Tile columns per plane.
    pub tiles_x: usize,
}

impl Geometry {
    /// Tiling of `shape`; an error message unless it is rank 4 with non-zero dims.
    pub fn from_shape(shape: &[usize]) -> std::result::Result<Self, String> {
        match *shape {
            [n, c, h, w] if n > 0 && c > 0 && h > 0 && w > 0 => match n.checked_mul(c) {
                Some(planes) => Ok(Self { planes, h, w, tiles_y: tiles_along(h), tiles_x: tiles_along(w) }),
                None => Err(format!("{n}·{c} planes overflow")),
            },
            _ => Err(format!("the block-DCT layout needs a 4-D [N, C, H, W] shape, got {shape:?}")),
        }
    }

    /// Tiles per plane.
    pub fn tiles_per_plane(&self) -> usize {
        self.tiles_y * self.tiles_x
    }

    /// Tiles of the tensor.
    pub fn tiles(&self) -> usize {
        self.planes * self.tiles_per_plane()
    }
}

/// Checks stored band edges, bits per band and e0 (a [`FdsrError::Corrupt`] otherwise).
pub fn check_params(edges: &[u8], bits: &[u8], e0: i32) -> Result<()> {
    let cfg = FdsrConfig { band_edges: edges.to_vec(), bits: BitChoice::Fixed(bits.to_vec()), ..Default::default() };
    cfg.validate().map_err(|e| FdsrError::Corrupt(format!("fdsr parameters: {e}")))?;
    if !(E0_MIN..=E0_MAX).contains(&e0) {
        return Err(FdsrError::Corrupt(format!("base exponent {e0} is not in {E0_MIN}..={E0_MAX}")));
    }
    Ok(())
}

/// Number of references and payload words that `body`'s classes imply for `tiles` tiles.
pub fn expected_lengths(body: &FdsrBody, tiles: usize) -> (usize, usize) {
    let cb = class_bits(&body.band_edges, &body.bits);
    let (mut refs, mut bits) = (0usize, 0u64);
    for t in 0..tiles {
        let c = body.class(t) as usize;
        refs += (c == 3) as usize;
        bits += cb[c] as u64;
    }
    (refs, words_for_bits(bits))
}

/// Checks an `fdsr` body against its tiling: parameters, section lengths, and that every
/// reference points to an earlier tile.
pub fn validate_body(body: &FdsrBody, planes: usize, tiles: usize) -> Result<()> {
    check_params(&body.band_edges, &body.bits, body.e0)?;
    if body.classes.len() != tiles.div_ceil(16) || body.dc_codes.len() != planes {
        return Err(FdsrError::Corrupt(format!(
            "{} class words and {} DC codes stored for {tiles} tiles in {planes} planes",
            body.classes.len(),
            body.dc_codes.len()
        )));
    }
    let (refs, words) = expected_lengths(body, tiles);
    if body.refs.len() != refs || body.payload.len() != words {
        return Err(FdsrError::Corrupt(format!(
            "{} refs and {} payload words stored where the classes imply {refs} and {words}",
            body.refs.len(),
            body.payload.len()
        )));
    }
    let mut next = body.refs.iter();
    for t in (0..tiles).filter(|&t| body.class(t) == TileClass::Reference) {
        match next.next() {
            Some(&src) if (src as usize) < t => {}
            src => return Err(FdsrError::Corrupt(format!("tile {t} references {src:?}, not an earlier tile"))),
        }
    }
    Ok(())
}

/// The analysis pass: zig-zag coefficients, classes, per-(tile, band) maxima and statistics.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Tiling.
    pub geometry: Geometry,
    /// Coefficients per tile in zig-zag order.
    pub coefs: Vec<[f32; 64]>,
    /// Class per tile.
    pub classes: Vec<TileClass>,
    /// Largest |coefficient| per (tile, band), `tile · bands + band`.
    pub band_max: Vec<f32>,
    /// Per plane, the largest |DC| of its non-zero tiles (0 when it has none).
    pub plane_dcmax: Vec<f32>,
    /// Allocator statistics.
    pub stats: FdsrStats,
    /// For each [`TileClass::Reference`] tile in order, its representative (set by
    /// [`super::reuse::apply`]; empty without reuse).
    pub refs: Vec<u32>,
}

/// Tiles, transforms and classifies `x` of 4-D `shape` (already validated).
pub fn analyze(x: &[f32], shape: &[usize], edges: &[u8], dc_threshold: f32) -> Result<Analysis> {
    let g = Geometry::from_shape(shape).map_err(FdsrError::InvalidTensor)?;
    let basis = dct::dct_basis();
    let nb = edges.len() - 1;
    let plane_len = g.h * g.w;
    let mut coefs = Vec::with_capacity(g.tiles());
    let mut classes = Vec::with_capacity(g.tiles());
    let mut band_max = Vec::with_capacity(g.tiles() * nb);
    let mut s = FdsrStats::new(edges);
    (s.numel, s.planes) = ((g.planes * plane_len) as u64, g.planes as u64);
    let mut plane_dcmax = vec![0f32; g.planes];
    let mut nonzero = vec![0u64; g.planes];
    for p in 0..g.planes {
        let plane = &x[p * plane_len..(p + 1) * plane_len];
        for ty in 0..g.tiles_y {
            for tx in 0..g.tiles_x {
                let tile = dct::extract_tile(plane, g.h, g.w, ty, tx);
                let raster = dct::forward(&tile, &basis);
                let zz = dct::to_zigzag(&raster);
                let class = if tile.iter().all(|&v| v == 0.0) {
                    TileClass::Zero
                } else {
                    // Per band the f32 sum of squares in zig-zag order, the bands added in order.
                    let ac = (1..nb).fold(0f32, |acc, j| {
                        acc + zz[edges[j] as usize..edges[j + 1] as usize].iter().fold(0f32, |a, c| a + c * c)
                    });
                    if ac <= dc_threshold * (zz[0] * zz[0] + ac) {
                        TileClass::DcOnly
                    } else {
                        TileClass::Full
                    }
                };
                for j in 0..nb {
                    let band = &zz[edges[j] as usize..edges[j + 1] as usize];
                    let m = band.iter().fold(0f32, |a, c| a.max(c.abs()));
                    band_max.push(m);
                    if class == TileClass::Full && j > 0 {
                        s.band_sum_n_max2[j] += band.len() as f64 * (m as f64).powi(2);
                        s.band_energy[j] += band.iter().map(|&c| (c as f64).powi(2)).sum::<f64>();
                    }
                }
                match class {
                    TileClass::Zero => s.zero_tiles += 1,
                    TileClass::DcOnly => s.dc_tiles += 1,
                    _ => s.full_tiles += 1,
                }
                if class != TileClass::Zero {
                    nonzero[p] += 1;
                    plane_dcmax[p] = plane_dcmax[p].max(zz[0].abs());
                    s.gmax = raster.iter().fold(s.gmax, |a, c| a.max(c.abs()));
                }
                coefs.push(zz);
                classes.push(class);
            }
        }
    }
    s.set_dc(&plane_dcmax, &nonzero);
    Ok(Analysis { geometry: g, coefs, classes, band_max, plane_dcmax, stats: s, refs: Vec::new() })
}

/// Encodes an analysed tensor with `bits` per band (validated: DC and AC in 0..=8 or 16).
pub fn encode(a: &Analysis, bits: &[u8], opts: &CodecOptions) -> FdsrBody {
    let edges = &a.stats.band_edges;
    let nb = bits.len();
    let scaled = |b: u8| (1..=8).contains(&b);
    let e0 = e0_for(a.stats.gmax);
    let dc_codes: Vec<u8> = a.plane_dcmax.iter().map(|&m| encode_scale(m, e0)).collect();
    let cb = class_bits(edges, bits);
    let total: u64 = a.classes.iter().map(|&c| cb[c as usize] as u64).sum();
    let mut w = BitWriter::with_capacity(total);
    let rnd = |i: u64| match opts.rounding {
        Rounding::Stochastic => rng24(opts.seed, opts.tensor_id, i as u32),
        Rounding::Nearest => 0,
    };
    let per_plane = a.geometry.tiles_per_plane();
    let put = |w: &mut BitWriter, v: f32, inv: f32, b: u8, i: u64| match b {
        0 => {}
        16 => w.write(f16_encode(v) as u32, 16),
        b => w.write(quantize_sym(v, inv, b as u32, rnd(i), opts.rounding), b as u32),
    };
    for (t, &c) in a.classes.iter().enumerate() {
        if c != TileClass::DcOnly && c != TileClass::Full {
            continue;
        }
        let zz = &a.coefs[t];
        let base = t as u64 * 64;
        put(&mut w, zz[0], inv_scale(dc_codes[t / per_plane], e0), bits[0], base);
        if c == TileClass::Full {
            for j in (1..nb).filter(|&j| bits[j] > 0) {
                let mut inv = 0.0;
                if scaled(bits[j]) {
                    let code = ac_band_code(a.band_max[t * nb + j], e0, bits[j]);
                    w.write(code as u32, AC_SCALE_BITS);
                    inv = inv_scale(ac_scale_code(code), e0);
                }
                let (lo, hi) = (edges[j] as usize, edges[j + 1] as usize);
                for (i, &v) in zz.iter().enumerate().take(hi).skip(lo) {
                    put(&mut w, v, inv, bits[j], base + i as u64);
                }
            }
        }
    }
    let classes: Vec<u8> = a.classes.iter().map(|&c| c as u8).collect();
    FdsrBody {
        band_edges: edges.clone(),
        bits: bits.to_vec(),
        e0,
        classes: pack2(&classes),
        dc_codes,
        refs: a.refs.clone(),
        payload: w.finish(),
    }
}

/// Reads one coefficient of `b` bits (0: none, 16: f16) with scale `scale`.
fn get(r: &mut BitReader, b: u8, scale: f32) -> Result<f32> {
    Ok(match b {
        0 => 0.0,
        16 => {
            let v = f16_decode(r.read(16)? as u16);
            if !v.is_finite() {
                return Err(FdsrError::Corrupt(format!("non-finite f16 coefficient at bit {}", r.position())));
            }
            v
        }
        b => dequant_sym(r.read(b as u32)?, scale, b as u32),
    })
}

/// Decodes an `fdsr` body of 4-D `shape`, validating every length and reference.
pub fn decode(f: &FdsrBody, shape: &[usize]) -> Result<Vec<f32>> {
    let g = Geometry::from_shape(shape).map_err(FdsrError::Corrupt)?;
    let tiles = g.tiles();
    validate_body(f, g.planes, tiles)?;
    let (edges, bits, nb) = (&f.band_edges, &f.bits, f.bits.len());
    let basis = dct::dct_basis();
    let mut r = BitReader::new(&f.payload);
    let mut out_tiles: Vec<[f32; 64]> = Vec::with_capacity(tiles);
    let mut next_ref = 0;
    for t in 0..tiles {
        let dc_scale = scale_value(f.dc_codes[t / g.tiles_per_plane()], f.e0);
        let tile = match f.class(t) {
            TileClass::Zero => [0f32; 64],
            TileClass::DcOnly => [get(&mut r, bits[0], dc_scale)? / 8.0; 64],
            TileClass::Full => {
                let mut zz = [0f32; 64];
                zz[0] = get(&mut r, bits[0], dc_scale)?;
                for j in (1..nb).filter(|&j| bits[j] > 0) {
                    let scale = if bits[j] == 16 {
                        0.0
                    } else {
                        scale_value(ac_scale_code(r.read(AC_SCALE_BITS)? as u8), f.e0)
                    };
                    for z in &mut zz[edges[j] as usize..edges[j + 1] as usize] {
                        *z = get(&mut r, bits[j], scale)?;
                    }
                }
                dct::inverse(&dct::from_zigzag(&zz), &basis)
            }
            TileClass::Reference => {
                // validate_body checked that every reference points to an earlier tile.
                let src = f.refs.get(next_ref).map_or(usize::MAX, |&s| s as usize);
                next_ref += 1;
                *out_tiles.get(src).ok_or_else(|| FdsrError::Corrupt(format!("bad reference of tile {t}")))?
            }
        };
        out_tiles.push(tile);
    }
    let plane_len = g.h * g.w;
    let mut out = vec![0f32; g.planes * plane_len];
    for (p, plane) in out.chunks_exact_mut(plane_len).enumerate() {
        for ty in 0..g.tiles_y {
            for tx in 0..g.tiles_x {
                let t = (p * g.tiles_y + ty) * g.tiles_x + tx;
                dct::store_tile(plane, g.h, g.w, ty, tx, &out_tiles[t]);
            }
        }
    }
    Ok(out)
}
