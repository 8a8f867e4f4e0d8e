//! Tests of the scalar quantization rules: scale codes, rounding, bf16 and f16.

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
