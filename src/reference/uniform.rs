//! `uniform:B` (ActNN-like) and the `fdsr` flat path (docs/CODEC.md): the flattened tensor in
//! groups of [`GROUP_SIZE`], each with a bf16-floor minimum and an 8-bit scale code of its range,
//! values as asymmetric `B`-bit codes with the flat element index as rounding index.

use super::pack::{BitReader, BitWriter};
use super::quant::*;
use crate::error::{FdsrError, Result};
use crate::rules::config::{CodecOptions, Rounding, GROUP_SIZE};
use crate::rules::format::UniformBody;

/// Group count and payload words of `numel` values at `bits` bits.
pub use crate::rules::sizes::uniform_lengths as lengths;

/// Checks stored bits and e0 (a [`FdsrError::Corrupt`] otherwise).
pub fn check_params(bits: u8, e0: i32) -> Result<()> {
    if !(1..=8).contains(&bits) {
        return Err(FdsrError::Corrupt(format!("uniform bit-width {bits} is not in 1..=8")));
    }
    if !(E0_MIN..=E0_MAX).contains(&e0) {
        return Err(FdsrError::Corrupt(format!("base exponent {e0} is not in {E0_MIN}..={E0_MAX}")));
    }
    Ok(())
}

/// Encodes finite values `x` at `bits ∈ 1..=8` bits.
pub fn encode(x: &[f32], bits: u8, opts: &CodecOptions) -> UniformBody {
    let groups = x.len().div_ceil(GROUP_SIZE);
    let mut mins = Vec::with_capacity(groups);
    let mut ranges = Vec::with_capacity(groups);
    for g in x.chunks(GROUP_SIZE) {
        let (lo, hi) = g.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let mn = bf16_floor(lo);
        mins.push(mn);
        ranges.push(hi - bf16_to_f32(mn));
    }
    let e0 = e0_for(ranges.iter().fold(0f32, |a, &r| a.max(r)));
    let range_codes: Vec<u8> = ranges.iter().map(|&r| encode_scale(r, e0)).collect();
    let mut w = BitWriter::with_capacity(x.len() as u64 * bits as u64);
    for (gi, g) in x.chunks(GROUP_SIZE).enumerate() {
        let mn = bf16_to_f32(mins[gi]);
        let inv = inv_scale(range_codes[gi], e0);
        for (j, &v) in g.iter().enumerate() {
            let r = match opts.rounding {
                Rounding::Stochastic => rng24(opts.seed, opts.tensor_id, (gi * GROUP_SIZE + j) as u32),
                Rounding::Nearest => 0,
            };
            w.write(quantize_asym(v, mn, inv, bits as u32, r, opts.rounding), bits as u32);
        }
    }
    UniformBody { bits, e0, mins, range_codes, payload: w.finish() }
}

/// A stored bf16 minimum as f32, which must be finite.
pub fn finite_bf16(h: u16, what: &str, i: usize) -> Result<f32> {
    let v = bf16_to_f32(h);
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FdsrError::Corrupt(format!("{what} {i} is not finite ({h:#06x})")))
    }
}

/// Decodes `numel` values, validating parameters and lengths.
pub fn decode(u: &UniformBody, numel: usize) -> Result<Vec<f32>> {
    check_params(u.bits, u.e0)?;
    let (groups, words) = lengths(numel as u64, u.bits);
    if u.mins.len() != groups || u.range_codes.len() != groups || u.payload.len() != words {
        return Err(FdsrError::Corrupt(format!(
            "uniform body holds {} mins, {} ranges and {} words where {numel} values need {groups}, {groups} and {words}",
            u.mins.len(),
            u.range_codes.len(),
            u.payload.len()
        )));
    }
    let bits = u.bits as u32;
    let mut r = BitReader::new(&u.payload);
    let mut out = Vec::with_capacity(numel);
    for gi in 0..groups {
        let mn = finite_bf16(u.mins[gi], "group minimum", gi)?;
        let range = scale_value(u.range_codes[gi], u.e0);
        let n = GROUP_SIZE.min(numel - gi * GROUP_SIZE);
        for _ in 0..n {
            out.push(dequant_asym(r.read(bits)?, mn, range, bits));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::quant::hash;

    #[test]
    fn round_trip_error_is_within_one_step() {
        let x: Vec<f32> = (0..1000u32).map(|i| (hash(i) % 20001) as f32 / 1000.0 - 7.0).collect();
        for bits in 1..=8u8 {
            for rounding in [Rounding::Stochastic, Rounding::Nearest] {
                let opts = CodecOptions { seed: 3, tensor_id: 9, rounding };
                let u = encode(&x, bits, &opts);
                let y = decode(&u, x.len()).unwrap();
                for (gi, g) in x.chunks(GROUP_SIZE).enumerate() {
                    let step = scale_value(u.range_codes[gi], u.e0) / ((1u32 << bits) - 1) as f32;
                    let tol = if rounding == Rounding::Nearest { step / 2.0 } else { step } * 1.0001 + 1e-6;
                    for (j, &v) in g.iter().enumerate() {
                        let e = (y[gi * GROUP_SIZE + j] - v).abs();
                        assert!(e <= tol, "bits {bits} {rounding:?}: |err| {e} > {tol}");
                    }
                }
            }
        }
    }

    #[test]
    fn zeros_stay_exact_and_bad_lengths_fail() {
        let x: Vec<f32> = (0..600).map(|i| if i % 3 == 0 { 0.0 } else { i as f32 * 0.01 }).collect();
        let u = encode(&x, 2, &CodecOptions::default());
        let y = decode(&u, x.len()).unwrap();
        assert!(x.iter().zip(&y).all(|(a, b)| *a != 0.0 || *b == 0.0));
        assert!(decode(&u, x.len() + 300).is_err());
        let mut bad = u.clone();
        bad.bits = 9;
        assert!(decode(&bad, x.len()).is_err());
    }
}
