//! Pure-Rust oracle of every GPU stage (no wgpu): the specification in executable form.
//!
//! [`compress`] and [`decompress`] are the reference entry points of every policy; the GPU
//! drivers must produce the same integer outputs for the same inputs, options and seed.
//!
//! Choices on top of docs/CODEC.md:
//! - Lossy policies accept values with `|x| < 2^120` ([`MAX_LOSSY_MAGNITUDE`]) so that every
//!   range, DCT coefficient and scale stays inside the normal f32 exponent range that the
//!   bit-built powers of two cover; `lossless` accepts every finite value.
//! - `fdsr` on rank < 4 takes the flat path (`uniform:B`): under a budget `B` is the largest width
//!   that fits ([`crate::rules::alloc::flat_bits_for_budget`]); with fixed bits it is the largest
//!   given band width capped at 8 (at least 1), i.e. the DC width for the usual `8,4,3,2`.
//! - `division` needs a 4-D tensor.
//! - Decoding checks that every decoded value is finite.

pub mod alloc_rule;
pub mod conv;
pub mod dct;
pub mod division;
pub mod fakequant;
pub mod fdsr;
pub mod gate;
pub mod nn;
pub mod nn_train;
pub mod pack;
pub mod quant;
pub mod reuse;
pub mod uniform;

#[cfg(test)]
mod tests;

use crate::error::{FdsrError, Result};
use crate::rules::alloc;
use crate::rules::config::{BitChoice, CodecOptions, Policy};
use crate::rules::format::{Body, Compressed};

/// Most values one tensor may hold.
pub const MAX_NUMEL: u64 = 1 << 34;
/// Magnitude bound of lossy inputs, `2^120`.
pub const MAX_LOSSY_MAGNITUDE: f32 = f32::from_bits((120 + 127) << 23);

/// The shape of `dims` as `usize`, or why it is unacceptable: rank outside 1..=4, a zero
/// dimension, or more than [`MAX_NUMEL`] values.
pub fn checked_shape(dims: &[u64]) -> std::result::Result<Vec<usize>, String> {
    if !(1..=4).contains(&dims.len()) {
        return Err(format!("rank {} is not in 1..=4 (shape {dims:?})", dims.len()));
    }
    let mut n = 1u64;
    for &d in dims {
        if d == 0 {
            return Err(format!("shape {dims:?} has a zero dimension"));
        }
        n = n
            .checked_mul(d)
            .filter(|&n| n <= MAX_NUMEL)
            .ok_or_else(|| format!("shape {dims:?} holds more than the {MAX_NUMEL} values one tensor may have"))?;
    }
    // On 32-bit targets the product itself must fit a usize (then every dimension does).
    usize::try_from(n).map_err(|_| format!("shape {dims:?} holds more values than this platform addresses"))?;
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// Checks shape and values of an input tensor.
fn check_input(x: &[f32], shape: &[usize], lossy: bool) -> Result<()> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let s = checked_shape(&dims).map_err(FdsrError::InvalidTensor)?;
    let numel: usize = s.iter().product();
    if numel != x.len() {
        return Err(FdsrError::InvalidTensor(format!(
            "shape {shape:?} holds {numel} values but {} were given",
            x.len()
        )));
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(FdsrError::InvalidTensor(format!("value {} at index {i} is not finite", x[i])));
    }
    if lossy {
        if let Some(i) = x.iter().position(|v| v.abs() >= MAX_LOSSY_MAGNITUDE) {
            return Err(FdsrError::InvalidTensor(format!(
                "value {:e} at index {i} is beyond the ±2^120 that lossy policies accept",
                x[i]
            )));
        }
    }
    Ok(())
}

/// Compresses `x` of `shape` (rank 1..=4, NCHW for rank 4) with `policy`.
pub fn compress(x: &[f32], shape: &[usize], policy: &Policy, opts: &CodecOptions) -> Result<Compressed> {
    Ok(compress_with_stats(x, shape, policy, opts)?.0)
}

/// Like [`compress`], also returning the reuse statistics (`None` unless `fdsr` with reuse on a
/// 4-D tensor). References are searched over the whole tensor (one GPU chunk).
pub fn compress_with_stats(
    x: &[f32],
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
) -> Result<(Compressed, Option<reuse::ReuseStats>)> {
    policy.validate()?;
    let mut stats = None;
    check_input(x, shape, *policy != Policy::Lossless)?;
    let body = match policy {
        Policy::Lossless => Body::Lossless { data: x.iter().map(|v| v.to_bits()).collect() },
        Policy::Uniform { bits } => Body::Uniform(uniform::encode(x, *bits, opts)),
        Policy::Division => Body::Division(division::encode(x, shape, opts)?),
        Policy::Fdsr(cfg) if shape.len() == 4 => {
            let mut a = fdsr::analyze(x, shape, &cfg.band_edges, cfg.dc_threshold)?;
            a.stats.set_weights(cfg.weights());
            let bits = match &cfg.bits {
                BitChoice::Fixed(b) => b.clone(),
                BitChoice::Budget(budget) => alloc::choose_bits(&a.stats, *budget)?,
            };
            if let Some(r) = &cfg.reuse {
                let planes = a.geometry.planes;
                stats = Some(reuse::apply(&mut a, r, opts.seed, &bits, planes));
            }
            Body::Fdsr(fdsr::encode(&a, &bits, opts))
        }
        Policy::Fdsr(cfg) => {
            let bits = match &cfg.bits {
                BitChoice::Fixed(b) => alloc::flat_bits_for_fixed(b),
                BitChoice::Budget(budget) => alloc::flat_bits_for_budget(x.len(), *budget)?,
            };
            Body::Uniform(uniform::encode(x, bits, opts))
        }
    };
    let c =
        Compressed { shape: shape.to_vec(), seed: opts.seed, tensor_id: opts.tensor_id, rounding: opts.rounding, body };
    Ok((c, stats))
}

/// Decompresses, validating shape, every length and every stored value; errors, never panics.
pub fn decompress(c: &Compressed) -> Result<Vec<f32>> {
    let dims: Vec<u64> = c.shape.iter().map(|&d| d as u64).collect();
    let shape = checked_shape(&dims).map_err(FdsrError::Corrupt)?;
    let numel: usize = shape.iter().product();
    let out = match &c.body {
        Body::Lossless { data } => {
            if data.len() != numel {
                return Err(FdsrError::Corrupt(format!("{} values stored for shape {shape:?}", data.len())));
            }
            data.iter().map(|&b| f32::from_bits(b)).collect()
        }
        Body::Uniform(u) => uniform::decode(u, numel)?,
        Body::Division(d) => division::decode(d, &shape)?,
        Body::Fdsr(f) => fdsr::decode(f, &shape)?,
    };
    if let Some(i) = out.iter().position(|v| !v.is_finite()) {
        return Err(FdsrError::Corrupt(format!("decoded value at index {i} is not finite")));
    }
    Ok(out)
}
