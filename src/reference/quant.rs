//! Shared quantization primitives (docs/CODEC.md, "Shared primitives"): the counter-based RNG,
//! power-of-two construction, 8-bit log-scale codes and the AC bands' coarser ones, symmetric
//! and asymmetric stochastic quantization, and bf16/f16 conversions. `shaders/rng.wgsl` (the
//! RNG) and `shaders/common.wgsl` (the rest) mirror every function here.

use crate::rules::config::Rounding;
use crate::rules::format::AC_SCALE_BITS;
use half::f16;

/// Smallest allowed base exponent of the scale codes.
pub const E0_MIN: i32 = -90;
/// Largest allowed base exponent of the scale codes.
pub const E0_MAX: i32 = 128;
/// `2^23`, the fixed-point unit of symmetric quantization.
const HALF24: u32 = 1 << 23;
/// Mask of the 24 fraction bits of the rounding fixed point.
const LOW24: u32 = 0x00ff_ffff;

/// lowbias32 integer hash (wrapping u32 arithmetic).
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Uniform 24-bit random integer for value `index` of RNG stream `stream` under `seed`.
pub fn rng24(seed: u32, stream: u32, index: u32) -> u32 {
    hash(hash(hash(seed ^ 0x9e37_79b9) ^ stream) ^ index) >> 8
}

/// `2^n` built from the exponent bits. `n` is clamped to `[-126, 127]` (normal f32 range), so
/// out-of-range requests from corrupt data saturate instead of producing garbage bit patterns.
pub fn pow2(n: i32) -> f32 {
    f32::from_bits(((n.clamp(-126, 127) + 127) as u32) << 23)
}

/// The host tables `T[k] = f32(2^(k/8))` and `I[k] = f32(2^(-k/8))`, computed in f64 then cast.
pub fn scale_tables() -> ([f32; 8], [f32; 8]) {
    let mut t = [0f32; 8];
    let mut i = [0f32; 8];
    for k in 0..8 {
        t[k] = (k as f64 / 8.0).exp2() as f32;
        i[k] = (-(k as f64) / 8.0).exp2() as f32;
    }
    (t, i)
}

/// Unbiased exponent field of `x`; zero and subnormals count as `-126`.
pub fn exponent(x: f32) -> i32 {
    let e = ((x.to_bits() >> 23) & 0xff) as i32;
    if e == 0 {
        -126
    } else {
        e - 127
    }
}

/// Base exponent `e0 = E(gmax) + 1`, clamped to `[E0_MIN, E0_MAX]`.
pub fn e0_for(gmax: f32) -> i32 {
    (exponent(gmax) + 1).clamp(E0_MIN, E0_MAX)
}

/// Scale code of magnitude `m` under base exponent `e0`: 0 for `m <= 0`, else the smallest
/// code whose scale is `>= m` (clamped to `1..=255`, see docs/CODEC.md).
pub fn encode_scale(m: f32, e0: i32) -> u8 {
    if m.is_nan() || m <= 0.0 {
        return 0;
    }
    let (t, _) = scale_tables();
    let mut e = exponent(m);
    let m1 =
        if m.to_bits() & 0x7f80_0000 == 0 { 1.0 } else { f32::from_bits((m.to_bits() & 0x007f_ffff) | 0x3f80_0000) };
    let k = match t.iter().position(|&tk| tk >= m1) {
        Some(k) => k as i32,
        None => {
            e += 1;
            0
        }
    };
    let lo = (255 - 8 * e0 - 1008).max(1);
    (8 * (e - e0) + k + 255).clamp(lo, 255) as u8
}

/// Scale-code steps (eighths of an octave) between neighbouring AC scale codes.
const AC_SCALE_STEP: i32 = 2;
/// The scale code of AC code 0 (unused: AC code 0 means zero); AC code `a > 0` is
/// `AC_SCALE_BASE + AC_SCALE_STEP·a`, the top one 255.
const AC_SCALE_BASE: i32 = 255 - AC_SCALE_STEP * ((1 << AC_SCALE_BITS) - 1);

/// AC scale code of magnitude `m` under `e0`: 0 for `m <= 0`, else the least code (1 up) whose
/// scale ([`ac_scale_code`]) is `>= m`; magnitudes below the lowest code's scale take code 1.
pub fn encode_ac_scale(m: f32, e0: i32) -> u8 {
    match encode_scale(m, e0) {
        0 => 0,
        c => ((c as i32 - AC_SCALE_BASE + AC_SCALE_STEP - 1) / AC_SCALE_STEP).clamp(1, (1 << AC_SCALE_BITS) - 1) as u8,
    }
}

/// AC scale code of a band coded at `b ∈ 1..=8` bits whose largest |coefficient| is `m`:
/// [`encode_ac_scale`], or 0 (the band is zero in this tile) where `m·L·√2` (`L = 2^b − 1`) is
/// below that code's scale. That happens only below the lowest code's range, where the scale is
/// far above `m` and stochastic rounding would turn every value into `±scale/L`, more error
/// than the values themselves.
pub fn ac_band_code(m: f32, e0: i32, b: u8) -> u8 {
    let a = encode_ac_scale(m, e0);
    let l = ((1u32 << b) - 1) as f32;
    if a != 0 && m * l * std::f32::consts::SQRT_2 < scale_value(ac_scale_code(a), e0) {
        0
    } else {
        a
    }
}

/// The scale code (of [`scale_value`], [`inv_scale`]) of AC scale code `a`.
pub fn ac_scale_code(a: u8) -> u8 {
    if a == 0 {
        0
    } else {
        (AC_SCALE_BASE + AC_SCALE_STEP * a as i32) as u8
    }
}

/// The scale an AC band whose largest |coefficient| is `m` is coded with (0 for `m <= 0`).
pub fn ac_scale(m: f32, e0: i32) -> f32 {
    scale_value(ac_scale_code(encode_ac_scale(m, e0)), e0)
}

/// The table index `v = c - 255 + 8·e0` of a non-zero code.
fn code_v(code: u8, e0: i32) -> i32 {
    code as i32 - 255 + 8 * e0
}

/// Scale of a code: `T[v & 7] · 2^(v >> 3)`, and 0 for code 0.
pub fn scale_value(code: u8, e0: i32) -> f32 {
    if code == 0 {
        return 0.0;
    }
    let v = code_v(code, e0);
    scale_tables().0[(v & 7) as usize] * pow2(v >> 3)
}

/// Inverse scale of a code: `I[v & 7] · 2^-(v >> 3)`, and 0 for code 0.
pub fn inv_scale(code: u8, e0: i32) -> f32 {
    if code == 0 {
        return 0.0;
    }
    let v = code_v(code, e0);
    scale_tables().1[(v & 7) as usize] * pow2(-(v >> 3))
}

/// Shared tail of both quantizers: `p = fixed · L`, then round and clamp to `L`.
fn round_code(fixed: u32, bits: u32, r24: u32, rounding: Rounding) -> u32 {
    let l = (1u32 << bits) - 1;
    let p = fixed.wrapping_mul(l);
    let mut q = p >> 24;
    let r = p & LOW24;
    let up = match rounding {
        Rounding::Stochastic => r24 < r,
        Rounding::Nearest => r >= HALF24,
    };
    if up {
        q += 1;
    }
    q.min(l)
}

/// Symmetric code of `x` in `bits ∈ 1..=8` bits with inverse scale `inv`; `r24` is the value's
/// `rng24` draw (ignored for nearest rounding). The result is in `0..=2^bits - 1`.
pub fn quantize_sym(x: f32, inv: f32, bits: u32, r24: u32, rounding: Rounding) -> u32 {
    let v = (x * inv).clamp(-1.0, 1.0);
    let f = (v * HALF24 as f32) as i32;
    round_code((f + HALF24 as i32) as u32, bits, r24, rounding)
}

/// Value of a symmetric code: `(2q - L) · (scale / L)`.
pub fn dequant_sym(q: u32, scale: f32, bits: u32) -> f32 {
    let l = ((1u32 << bits) - 1) as f32;
    ((2 * q) as f32 - l) * (scale / l)
}

/// Asymmetric code of `x` over `[mn, mn + range]` with `inv` the inverse of the range's scale.
pub fn quantize_asym(x: f32, mn: f32, inv: f32, bits: u32, r24: u32, rounding: Rounding) -> u32 {
    let v = ((x - mn) * inv).clamp(0.0, 1.0);
    let f = (v * (1u32 << 24) as f32) as u32;
    round_code(f, bits, r24, rounding)
}

/// Value of an asymmetric code: `mn + q · (range / L)`.
pub fn dequant_asym(q: u32, mn: f32, range: f32, bits: u32) -> f32 {
    let l = ((1u32 << bits) - 1) as f32;
    mn + q as f32 * (range / l)
}

/// Largest bf16 `<= x` (as bf16 bits), never ±inf: below the lowest finite bf16 it saturates.
pub fn bf16_floor(x: f32) -> u16 {
    let b = x.to_bits();
    let mut h = b >> 16;
    if b & 0x8000_0000 != 0 && b & 0xffff != 0 {
        h += 1;
    }
    if h & 0x7fff == 0x7f80 && b & 0x7f80_0000 != 0x7f80_0000 {
        h -= 1; // would round a finite value to infinity
    }
    h as u16
}

/// Nearest bf16 (ties to even) of a finite `x`, saturating at the largest finite bf16.
pub fn bf16_nearest(x: f32) -> u16 {
    let b = x.to_bits();
    let lsb = (b >> 16) & 1;
    let mut h = b.wrapping_add(0x7fff + lsb) >> 16;
    if h & 0x7fff == 0x7f80 && b & 0x7f80_0000 != 0x7f80_0000 {
        h -= 1;
    }
    h as u16
}

/// f32 value of bf16 bits.
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// f16 bits of `x`: nearest-even, saturating at ±65504 (the `b = 16` pass-through).
pub fn f16_encode(x: f32) -> u16 {
    f16::from_f32(x.clamp(-65504.0, 65504.0)).to_bits()
}

/// f32 value of f16 bits.
pub fn f16_decode(h: u16) -> f32 {
    f16::from_bits(h).to_f32()
}

#[cfg(test)]
mod tests;
