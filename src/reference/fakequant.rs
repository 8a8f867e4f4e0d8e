//! Reference fake quantization for quantized-compute simulation (FracTrain-style): asymmetric
//! per-tensor min/max, `bits` in 2..=16, quantize then dequantize; nearest rounding for
//! forward operands, stochastic rounding from the counter-based RNG for output gradients.

use super::quant::{hash, rng24};

/// RNG stream of the output gradient of compute layer `layer` at training step `step`.
pub fn stream(step: u64, layer: u32) -> u32 {
    hash(hash(step as u32 ^ hash((step >> 32) as u32)) ^ layer)
}

/// Per-tensor `(min, max)` of `x`.
pub fn min_max(x: &[f32]) -> (f32, f32) {
    let mn = x.iter().copied().fold(f32::INFINITY, f32::min);
    (mn, x.iter().copied().fold(f32::NEG_INFINITY, f32::max))
}

/// `v` quantized to `bits` over `[mn, mn + range]` (range > 0) and dequantized, with offset
/// `u` in [0, 1): 1/2 rounds to nearest, a uniform draw stochastically.
pub fn quantize(v: f32, mn: f32, range: f32, bits: u32, u: f32) -> f32 {
    let levels = ((1u32 << bits) - 1) as f32;
    let q = ((v - mn) * (levels / range) + u).floor().clamp(0.0, levels);
    mn + q * (range / levels)
}

/// Quantize-dequantize `x` in place with `bits`; `rng = Some((seed, stream))` rounds
/// stochastically (value `i` draws `rng24(seed, stream, i)`), `None` to nearest. A constant
/// tensor is left as it is.
pub fn fake_quant(x: &mut [f32], bits: u32, rng: Option<(u32, u32)>) {
    assert!((2..=16).contains(&bits), "bits {bits} outside 2..=16");
    fake_quant_per_input(x, x.len(), &[0], &[bits], rng);
}

/// [`fake_quant`] over the range of the whole tensor `x` (inputs of `per` values each), with
/// the bits of input `n` = `opts[choice[n]]` (DFQ's gates pick them).
pub fn fake_quant_per_input(x: &mut [f32], per: usize, choice: &[u32], opts: &[u32], rng: Option<(u32, u32)>) {
    let (mn, mx) = min_max(x);
    let range = mx - mn;
    if range.is_nan() || range <= 0.0 {
        return;
    }
    for (i, v) in x.iter_mut().enumerate() {
        let u = match rng {
            Some((seed, s)) => rng24(seed, s, i as u32) as f32 * (1.0 / (1u32 << 24) as f32),
            None => 0.5,
        };
        *v = quantize(*v, mn, range, opts[choice[i / per] as usize], u);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<f32> {
        (0..n).map(|i| rng24(seed, 7, i as u32) as f32 / (1u32 << 24) as f32 * 6.0 - 2.0).collect()
    }

    #[test]
    fn nearest_is_within_half_a_step_on_the_grid() {
        for bits in [2, 3, 4, 6, 8, 16] {
            let x = data(1000, bits);
            let mut y = x.clone();
            fake_quant(&mut y, bits, None);
            let (mn, mx) = x.iter().fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
            let step = (mx - mn) / ((1u32 << bits) - 1) as f32;
            let mut distinct: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(distinct.len() <= 1 << bits);
            for (a, b) in x.iter().zip(&y) {
                assert!((a - b).abs() <= step * 0.5 + 1e-5, "bits {bits}: {a} -> {b}");
            }
        }
        let mut c = vec![1.5; 8];
        fake_quant(&mut c, 4, None);
        assert_eq!(c, vec![1.5; 8]);
    }

    #[test]
    fn stochastic_is_bounded_and_unbiased() {
        let x = data(64, 3);
        let bits = 3;
        let (mn, mx) = x.iter().fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let step = (mx - mn) / 7.0;
        let trials = 4000;
        let mut mean = vec![0f64; x.len()];
        for t in 0..trials {
            let mut y = x.clone();
            fake_quant(&mut y, bits, Some((11, stream(t, 2))));
            for (i, (a, b)) in x.iter().zip(&y).enumerate() {
                assert!((a - b).abs() <= step + 1e-5 && *b >= mn - 1e-5 && *b <= mx + 1e-5);
                mean[i] += f64::from(*b) / trials as f64;
            }
        }
        // Standard error of one mean is at most step/2/sqrt(trials) = 0.0067 step; allow 6x.
        for (a, m) in x.iter().zip(&mean) {
            assert!((f64::from(*a) - m).abs() < 0.04 * f64::from(step), "{a} vs mean {m}");
        }
        // Same seed and stream, same result; another step, another draw.
        let (mut y1, mut y2, mut y3) = (x.clone(), x.clone(), x.clone());
        fake_quant(&mut y1, bits, Some((1, stream(5, 0))));
        fake_quant(&mut y2, bits, Some((1, stream(5, 0))));
        fake_quant(&mut y3, bits, Some((1, stream(6, 0))));
        assert_eq!(y1, y2);
        assert_ne!(y1, y3);
    }

    #[test]
    fn per_input_bits_follow_the_choices() {
        let x = data(40, 5);
        let mut y = x.clone();
        fake_quant_per_input(&mut y, 10, &[0, 1, 1, 0], &[2, 8], None);
        let distinct = |v: &[f32]| {
            let mut d: Vec<u32> = v.iter().map(|v| v.to_bits()).collect();
            d.sort_unstable();
            d.dedup();
            d.len()
        };
        assert!(distinct(&y[0..10]) <= 4 && distinct(&y[30..40]) <= 4);
        assert!(distinct(&y[10..30]) > 4);
        let mut whole = x.clone();
        fake_quant(&mut whole, 8, None);
        assert_eq!(y[10..30], whole[10..30], "one range for the whole tensor");
    }
}
