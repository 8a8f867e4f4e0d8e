//! `division` (DIVISION-like, docs/CODEC.md): per 8×8 block of each edge-padded plane the mean in
//! bf16 (nearest), and the residual `x − mean` quantized asymmetrically to 2 bits with a per-plane
//! bf16-floor minimum and range scale code. 4-D tensors only.
//!
//! Block means are summed in f32 from 0 over the 64 padded values in raster order, then divided
//! by 64. Codes are in element order with the flat element index as rounding index.

use super::dct::{extract_tile, tiles_along};
use super::fdsr::Geometry;
use super::pack::{words_for_bits, BitReader, BitWriter};
use super::quant::*;
use super::uniform::finite_bf16;
use crate::error::{FdsrError, Result};
use crate::rules::config::{CodecOptions, Rounding};
use crate::rules::format::DivisionBody;

/// Residual bits.
pub const RESIDUAL_BITS: u32 = 2;

/// Block count, plane count and payload words of 4-D `shape` (an error message otherwise).
pub fn lengths(shape: &[usize]) -> std::result::Result<(usize, usize, usize), String> {
    let g = Geometry::from_shape(shape).map_err(|e| format!("division: {e}"))?;
    let numel = (g.planes * g.h * g.w) as u64;
    Ok((g.tiles(), g.planes, words_for_bits(numel * RESIDUAL_BITS as u64)))
}

/// Per-pixel block mean (f32 of the stored bf16) for each pixel of plane `p`.
fn block_means<'a>(means: &'a [u16], g: &Geometry, p: usize) -> impl Fn(usize, usize) -> f32 + 'a {
    let base = p * g.tiles_per_plane();
    let tx = g.tiles_x;
    move |y, x| bf16_to_f32(means[base + (y / 8) * tx + x / 8])
}

/// Encodes a validated 4-D tensor.
pub fn encode(x: &[f32], shape: &[usize], opts: &CodecOptions) -> Result<DivisionBody> {
    let g = Geometry::from_shape(shape).map_err(FdsrError::InvalidTensor)?;
    let plane_len = g.h * g.w;
    let mut means = Vec::with_capacity(g.tiles());
    for plane in x.chunks_exact(plane_len) {
        for ty in 0..tiles_along(g.h) {
            for tx in 0..tiles_along(g.w) {
                let t = extract_tile(plane, g.h, g.w, ty, tx);
                let sum = t.iter().fold(0f32, |a, &v| a + v);
                means.push(bf16_nearest(sum / 64.0));
            }
        }
    }
    let mut mins = Vec::with_capacity(g.planes);
    let mut ranges = Vec::with_capacity(g.planes);
    for (p, plane) in x.chunks_exact(plane_len).enumerate() {
        let mean = block_means(&means, &g, p);
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for (i, &v) in plane.iter().enumerate() {
            let r = v - mean(i / g.w, i % g.w);
            lo = lo.min(r);
            hi = hi.max(r);
        }
        let mn = bf16_floor(lo);
        mins.push(mn);
        ranges.push(hi - bf16_to_f32(mn));
    }
    let e0 = e0_for(ranges.iter().fold(0f32, |a, &r| a.max(r)));
    let range_codes: Vec<u8> = ranges.iter().map(|&r| encode_scale(r, e0)).collect();
    let mut w = BitWriter::with_capacity(x.len() as u64 * RESIDUAL_BITS as u64);
    for (p, plane) in x.chunks_exact(plane_len).enumerate() {
        let mean = block_means(&means, &g, p);
        let (mn, inv) = (bf16_to_f32(mins[p]), inv_scale(range_codes[p], e0));
        for (i, &v) in plane.iter().enumerate() {
            let rnd = match opts.rounding {
                Rounding::Stochastic => rng24(opts.seed, opts.tensor_id, (p * plane_len + i) as u32),
                Rounding::Nearest => 0,
            };
            let res = v - mean(i / g.w, i % g.w);
            w.write(quantize_asym(res, mn, inv, RESIDUAL_BITS, rnd, opts.rounding), RESIDUAL_BITS);
        }
    }
    Ok(DivisionBody { e0, means, mins, range_codes, payload: w.finish() })
}

/// Checks a `division` body against `shape`: every length, the base exponent, and that every
/// stored bf16 mean and minimum is finite. Returns the number of planes.
pub fn validate(d: &DivisionBody, shape: &[usize]) -> Result<usize> {
    let (blocks, planes, words) = lengths(shape).map_err(FdsrError::Corrupt)?;
    if d.means.len() != blocks || d.mins.len() != planes || d.range_codes.len() != planes || d.payload.len() != words {
        return Err(FdsrError::Corrupt(format!(
            "division body holds {} means, {} mins, {} ranges, {} words where the shape needs {blocks}, {planes}, {planes}, {words}",
            d.means.len(),
            d.mins.len(),
            d.range_codes.len(),
            d.payload.len()
        )));
    }
    if !(E0_MIN..=E0_MAX).contains(&d.e0) {
        return Err(FdsrError::Corrupt(format!("base exponent {} is not in {E0_MIN}..={E0_MAX}", d.e0)));
    }
    for (i, &m) in d.means.iter().enumerate() {
        finite_bf16(m, "block mean", i)?;
    }
    for (i, &m) in d.mins.iter().enumerate() {
        finite_bf16(m, "plane minimum", i)?;
    }
    Ok(planes)
}

/// Decodes a `division` body of 4-D `shape`, validating every length and stored float.
pub fn decode(d: &DivisionBody, shape: &[usize]) -> Result<Vec<f32>> {
    let planes = validate(d, shape)?;
    let g = Geometry::from_shape(shape).map_err(FdsrError::Corrupt)?;
    let plane_len = g.h * g.w;
    let mut r = BitReader::new(&d.payload);
    let mut out = Vec::with_capacity(planes * plane_len);
    for p in 0..planes {
        let mean = block_means(&d.means, &g, p);
        let mn = finite_bf16(d.mins[p], "plane minimum", p)?;
        let range = scale_value(d.range_codes[p], d.e0);
        for i in 0..plane_len {
            let res = dequant_asym(r.read(RESIDUAL_BITS)?, mn, range, RESIDUAL_BITS);
            out.push(mean(i / g.w, i % g.w) + res);
        }
    }
    Ok(out)
}
