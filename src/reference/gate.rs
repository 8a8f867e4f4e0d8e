//! Reference DFQ gate (FracTrain dynamic fractional quantization), the mirror of
//! `shaders/gate_forward.wgsl` and `shaders/gate_backward.wgsl`: per input, channel means →
//! linear logits → (Gumbel-)softmax over the bit options and the chosen option; backward, the
//! straight-through gradient of each option plus the cost regularizer, to the gate's weights.

use super::fakequant::quantize;
use super::quant::rng24;

/// Shapes and training options of one gate call.
#[derive(Clone, Copy, Debug)]
pub struct GateShape {
    /// Inputs in the batch.
    pub n: usize,
    /// Channels of each input.
    pub c: usize,
    /// Values per channel (height × width).
    pub hw: usize,
    /// Bit options.
    pub k: usize,
}

/// What the gate's forward gives: channel means `[n, c]`, option probabilities `[n, k]` and
/// the chosen option of each input.
#[derive(Clone, Debug, PartialEq)]
pub struct GateOut {
    /// Channel means of each input.
    pub means: Vec<f32>,
    /// Softmax of the (noisy) logits over `tau`.
    pub probs: Vec<f32>,
    /// Argmax of the (noisy) logits.
    pub choice: Vec<u32>,
}

/// Gate forward of `x [n, c, hw]` with `weight [k, c]` and `bias [k]`; `noise = Some((seed,
/// stream))` adds Gumbel noise −ln(−ln u), u = (rng24(seed, stream, n·k + j) + ½) / 2²⁴ (training).
pub fn forward(x: &[f32], s: GateShape, weight: &[f32], bias: &[f32], tau: f32, noise: Option<(u32, u32)>) -> GateOut {
    let GateShape { n, c, hw, k } = s;
    let means: Vec<f32> = x.chunks(hw).map(|ch| ch.iter().sum::<f32>() / hw as f32).collect();
    let (mut probs, mut choice) = (vec![0.0; n * k], vec![0u32; n]);
    for i in 0..n {
        let z: Vec<f32> = (0..k)
            .map(|j| {
                let dot: f32 = (0..c).map(|ch| weight[j * c + ch] * means[i * c + ch]).sum();
                let g = noise.map_or(0.0, |(seed, stream)| {
                    let u = (rng24(seed, stream, (i * k + j) as u32) as f32 + 0.5) / (1u32 << 24) as f32;
                    -(-u.ln()).ln()
                });
                (bias[j] + dot + g) / tau
            })
            .collect();
        let best = (1..k).fold(0, |b, j| if z[j] > z[b] { j } else { b });
        let total: f32 = z.iter().map(|v| (v - z[best]).exp()).sum();
        for j in 0..k {
            probs[i * k + j] = (z[j] - z[best]).exp() / total;
        }
        choice[i] = best as u32;
    }
    GateOut { means, probs, choice }
}

/// The regularizer and options of a gate's backward.
#[derive(Clone, Debug)]
pub struct GateCost<'a> {
    /// Forward bits of each option.
    pub fw: &'a [u32],
    /// Relative cost of each option.
    pub costs: &'a [f32],
    /// Target of the mean relative cost.
    pub target: f32,
    /// Weight of `alpha·(R − target)²`.
    pub alpha: f32,
    /// Softmax temperature.
    pub tau: f32,
}

/// Logit gradients `[n, k]` of a gate: `x` is the layer's raw input and `dx` the gradient of
/// its quantized input, both `[n, per]`; `(mn, mx)` the forward's range.
pub fn backward(x: &[f32], dx: &[f32], range: (f32, f32), probs: &[f32], n: usize, cost: &GateCost<'_>) -> Vec<f32> {
    let k = cost.fw.len();
    let per = x.len() / n;
    let (mn, width) = (range.0, range.1 - range.0);
    let r = (0..n * k).map(|i| probs[i] * cost.costs[i % k]).sum::<f32>() / n as f32;
    let pull = 2.0 * cost.alpha * (r - cost.target) / n as f32;
    let mut out = vec![0.0; n * k];
    for i in 0..n {
        let a: Vec<f32> = (0..k)
            .map(|j| {
                let dot: f32 = (0..per)
                    .map(|t| {
                        let v = x[i * per + t];
                        let q = if width > 0.0 { quantize(v, mn, width, cost.fw[j], 0.5) } else { v };
                        dx[i * per + t] * q
                    })
                    .sum();
                dot + pull * cost.costs[j]
            })
            .collect();
        let p = &probs[i * k..(i + 1) * k];
        let mean: f32 = p.iter().zip(&a).map(|(p, a)| p * a).sum();
        for j in 0..k {
            out[i * k + j] = p[j] * (a[j] - mean) / cost.tau;
        }
    }
    out
}

/// Gradients of the gate's `weight [k, c]` and `bias [k]` from the logit gradients `[n, k]`.
pub fn weight_grads(dlogit: &[f32], means: &[f32], n: usize, c: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let w = (0..k * c).map(|j| (0..n).map(|i| dlogit[i * k + j / c] * means[i * c + j % c]).sum()).collect();
    let b = (0..k).map(|j| (0..n).map(|i| dlogit[i * k + j]).sum()).collect();
    (w, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_free_gates_pick_the_largest_logit_and_noise_samples_the_softmax() {
        let s = GateShape { n: 1, c: 2, hw: 2, k: 3 };
        let x = [1.0, 3.0, -2.0, 0.0];
        let out = forward(&x, s, &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0], &[0.0, 0.0, 1.5], 1.0, None);
        assert_eq!(out.means, vec![2.0, -1.0]);
        assert_eq!(out.choice, vec![0]);
        assert!((out.probs.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // Logits (0, ln 2, ln 3)·: with noise, option j wins with probability ∝ e^logit.
        let (w, b) = (vec![0.0; 3], [0.0, 2f32.ln(), 3f32.ln()]);
        let s = GateShape { n: 1, c: 1, hw: 1, k: 3 };
        let mut wins = [0usize; 3];
        for t in 0..6000 {
            wins[forward(&[0.0], s, &w, &b, 1.0, Some((7, t))).choice[0] as usize] += 1;
        }
        for (j, want) in [1000.0, 2000.0, 3000.0].into_iter().enumerate() {
            assert!((wins[j] as f64 - want).abs() < 150.0, "option {j}: {wins:?}");
        }
    }

    #[test]
    fn the_logit_gradient_matches_finite_differences_of_the_relaxed_loss() {
        // Relaxed loss L(logits) = sum_n <dx_n, sum_k p_nk Q_k(x_n)> + alpha (R - target)^2.
        let (n, per, k) = (3, 5, 3);
        let x: Vec<f32> = (0..n * per).map(|i| ((i * 7) % 11) as f32 / 5.0 - 1.0).collect();
        let dx: Vec<f32> = (0..n * per).map(|i| ((i * 5) % 7) as f32 / 3.0 - 1.0).collect();
        let (fw, costs) = ([2u32, 4, 8], [0.3f32, 0.5, 0.9]);
        let cost = GateCost { fw: &fw, costs: &costs, target: 0.4, alpha: 2.0, tau: 0.7 };
        let range = super::super::fakequant::min_max(&x);
        let logits: Vec<f64> = (0..n * k).map(|i| (i % 4) as f64 * 0.3 - 0.4).collect();
        let loss = |l: &[f64]| -> f64 {
            let mut total = 0.0;
            let mut r = 0.0;
            for i in 0..n {
                let z: Vec<f64> = (0..k).map(|j| l[i * k + j] / f64::from(cost.tau)).collect();
                let m = z.iter().cloned().fold(f64::MIN, f64::max);
                let e: f64 = z.iter().map(|v| (v - m).exp()).sum();
                for j in 0..k {
                    let p = (z[j] - m).exp() / e;
                    r += p * f64::from(costs[j]) / n as f64;
                    for t in 0..per {
                        let q = quantize(x[i * per + t], range.0, range.1 - range.0, fw[j], 0.5);
                        total += p * f64::from(dx[i * per + t]) * f64::from(q);
                    }
                }
            }
            total + f64::from(cost.alpha) * (r - f64::from(cost.target)).powi(2)
        };
        let probs: Vec<f32> = (0..n * k)
            .map(|i| {
                let row = &logits[i / k * k..i / k * k + k];
                let e: f64 = row.iter().map(|v| (v / f64::from(cost.tau)).exp()).sum();
                ((logits[i] / f64::from(cost.tau)).exp() / e) as f32
            })
            .collect();
        let g = backward(&x, &dx, range, &probs, n, &cost);
        for i in 0..n * k {
            let (mut up, mut down) = (logits.clone(), logits.clone());
            up[i] += 1e-4;
            down[i] -= 1e-4;
            let fd = (loss(&up) - loss(&down)) / 2e-4;
            assert!((fd - f64::from(g[i])).abs() < 1e-3 * (1.0 + fd.abs()), "logit {i}: {fd} vs {}", g[i]);
        }
        let means = vec![0.5, -1.0, 2.0, 0.0, 1.0, 1.0];
        let (w, b) = weight_grads(&g, &means, n, 2, k);
        assert!((w[k * 2 - 1] - (0..n).map(|i| g[i * k + k - 1] * means[i * 2 + 1]).sum::<f32>()).abs() < 1e-6);
        assert!((b[0] - (g[0] + g[k] + g[2 * k])).abs() < 1e-6);
    }
}
