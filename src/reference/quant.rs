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
mod tests {
    use super::*;

    /// Deterministic test values: random mantissas over a wide exponent range.
    fn values() -> Vec<f32> {
        let mut v: Vec<f32> = (0..20000u32)
            .map(|i| {
                let h = hash(i.wrapping_mul(2654435761));
                f32::from_bits(h & 0x7fff_ffff)
            })
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        v.extend([f32::MIN_POSITIVE, 1e-45, 1.0, 2.0, 0.5, 1.0e30, 3.0e38, 1.8340081, 1.8340082]);
        v.extend((-126..=127).map(pow2));
        v
    }

    #[test]
    fn tables_and_pow2() {
        let (t, i) = scale_tables();
        assert_eq!(t[0], 1.0);
        assert_eq!(i[0], 1.0);
        for k in 0..8 {
            assert!((t[k] * i[k] - 1.0).abs() < 1e-6);
        }
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(-126), f32::MIN_POSITIVE);
        assert_eq!(pow2(10), 1024.0);
    }

    #[test]
    fn scale_covers_magnitude() {
        for m in values() {
            let e0 = e0_for(m);
            let c = encode_scale(m, e0);
            assert!(c >= 1);
            let s = scale_value(c, e0);
            // The top octave of f32 (m > T[7]·2^127) needs 2^128: that case saturates.
            if m <= scale_tables().0[7] * pow2(127) {
                assert!(s >= m, "m {m:e} e0 {e0} code {c} scale {s:e}");
                if c > 1 && m >= pow2(-120) {
                    assert!(scale_value(c - 1, e0) < m, "code {c} not minimal for {m:e}");
                }
            }
            // A larger e0 (a bigger tensor maximum) still covers m while in range.
            let e0b = (e0 + 5).min(E0_MAX);
            let cb = encode_scale(m, e0b);
            if cb > 1 && m <= pow2(100) {
                assert!(scale_value(cb, e0b) >= m);
            }
        }
        assert_eq!(encode_scale(0.0, 3), 0);
        assert_eq!(scale_value(0, 3), 0.0);
    }

    #[test]
    fn ac_scale_covers_magnitude_at_a_quarter_octave() {
        for m in values() {
            let e0 = e0_for(m);
            let a = encode_ac_scale(m, e0);
            assert!((1..32).contains(&a), "m {m:e}: code {a}");
            let s = scale_value(ac_scale_code(a), e0);
            // The top octave of f32 saturates (its top code needs 2^128).
            if m <= pow2(127) {
                assert!(s >= m, "m {m:e} e0 {e0} code {a} scale {s:e}");
                // Minimal, and within a quarter octave of m where m is in the codes' range.
                if a > 1 && m >= pow2(-120) && m <= pow2(100) {
                    assert!(scale_value(ac_scale_code(a - 1), e0) < m, "code {a} not minimal for {m:e}");
                    assert!(s <= m * 2f32.powf(0.25) * 1.0001, "m {m:e} scale {s:e}");
                }
            }
        }
        let e0 = e0_for(1.0);
        assert_eq!(encode_ac_scale(0.0, e0), 0);
        assert_eq!(ac_scale_code(0), 0);
        assert_eq!(ac_scale_code(31), 255);
        // Far below the tensor's maximum: the lowest code, whose scale still covers m.
        assert_eq!(encode_ac_scale(1e-6, e0), 1);
        assert!(scale_value(ac_scale_code(1), e0) >= 1e-6);
    }

    #[test]
    fn a_band_far_below_the_lowest_ac_scale_is_zero() {
        let e0 = e0_for(1.0);
        let low = scale_value(ac_scale_code(1), e0);
        for b in 1..=8u8 {
            let l = ((1u32 << b) - 1) as f32;
            // In the codes' range the code is encode_ac_scale's, at every width.
            for m in [1.0, 0.3, 0.01, low] {
                assert_eq!(ac_band_code(m, e0, b), encode_ac_scale(m, e0), "m {m} b {b}");
            }
            // Below it: zero where ±low/L would be the larger error, the lowest code above that.
            assert_eq!(ac_band_code(low / l * 0.7, e0, b), 0, "b {b}");
            assert_eq!(ac_band_code(low / l * 0.72, e0, b), 1, "b {b}");
            assert_eq!(ac_band_code(0.0, e0, b), 0);
        }
    }

    #[test]
    fn codes_in_range_and_nearest_is_close() {
        for bits in 1..=8u32 {
            let l = (1u32 << bits) - 1;
            for (i, &x) in [-1.5f32, -1.0, -0.3, 0.0, 0.2, 0.999, 1.0, 2.0].iter().enumerate() {
                for rounding in [Rounding::Stochastic, Rounding::Nearest] {
                    let q = quantize_sym(x, 1.0, bits, rng24(1, 2, i as u32), rounding);
                    assert!(q <= l);
                    let qa = quantize_asym(x, -1.0, 0.5, bits, rng24(1, 2, i as u32), rounding);
                    assert!(qa <= l);
                    if rounding == Rounding::Nearest {
                        let d = dequant_sym(q, 1.0, bits);
                        assert!((d - x.clamp(-1.0, 1.0)).abs() <= 1.0 / l as f32 + 1e-6);
                    }
                }
            }
        }
    }

    #[test]
    fn stochastic_rounding_is_unbiased() {
        let n = 20000u32;
        for (bits, x) in [(2u32, 0.37f32), (3, -0.61), (1, 0.1), (8, 0.0123)] {
            let (mut s, mut sa) = (0f64, 0f64);
            for i in 0..n {
                let r = rng24(7, bits, i);
                s += dequant_sym(quantize_sym(x, 1.0, bits, r, Rounding::Stochastic), 1.0, bits) as f64;
                let qa = quantize_asym(x, -1.0, 0.5, bits, r, Rounding::Stochastic);
                sa += dequant_asym(qa, -1.0, 2.0, bits) as f64;
            }
            // Per-draw standard deviation is at most a half step of 2/L; allow 5 standard errors.
            let tol = 5.0 * (1.0 / ((1u32 << bits) - 1) as f64) / (n as f64).sqrt();
            assert!((s / n as f64 - x as f64).abs() < tol, "sym bits {bits}: {}", s / n as f64);
            assert!((sa / n as f64 - x as f64).abs() < tol, "asym bits {bits}: {}", sa / n as f64);
        }
    }

    #[test]
    fn bf16_floor_is_the_largest_below() {
        let next_up = |h: u16| match h {
            0x8000 => 0x0001,
            h if h & 0x8000 != 0 => h - 1,
            h => h + 1,
        };
        for m in values() {
            for x in [m, -m] {
                let h = bf16_floor(x);
                let f = bf16_to_f32(h);
                assert!(f.is_finite(), "{x:e} -> {f:e}");
                if h == 0xff7f && x < f {
                    continue; // below the lowest finite bf16: saturates
                }
                assert!(f <= x, "{x:e} -> {f:e}");
                if h != 0x7f7f {
                    assert!(bf16_to_f32(next_up(h)) > x, "{x:e}: next above {f:e} is <= x");
                }
                let n = bf16_to_f32(bf16_nearest(x));
                let half_ulp = (x.abs() / 256.0).max(bf16_to_f32(1) / 2.0);
                assert!(n.is_finite() && (n - x).abs() <= half_ulp, "{x:e} -> {n:e}");
            }
        }
        assert_eq!(bf16_floor(-f32::MAX), 0xff7f);
        assert_eq!(bf16_nearest(f32::MAX), 0x7f7f);
        assert_eq!(bf16_nearest(1.0 + 1.0 / 256.0), 0x3f80); // tie to even
        assert_eq!(bf16_nearest(1.0 + 3.0 / 256.0), 0x3f82);
    }

    #[test]
    fn f16_saturates() {
        assert_eq!(f16_decode(f16_encode(1e6)), 65504.0);
        assert_eq!(f16_decode(f16_encode(-1e6)), -65504.0);
        assert_eq!(f16_decode(f16_encode(0.5)), 0.5);
    }
}
