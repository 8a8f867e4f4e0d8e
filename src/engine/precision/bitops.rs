//! BitOPs: multiply-accumulates weighted by the bits of their two operands, normalized to
//! 32×32 (one fp32 MAC = 1). Forward: MACs × act bits × weight bits. Backward: the input
//! gradient (not for the first conv) MACs × grad bits × weight bits, and the weight gradient
//! MACs × grad bits × act bits. Full-precision layers count 32 bits per operand, and so do
//! weights that are not quantized. Under `fractrain-dfq` each gated layer's bits vary per input:
//! its BitOPs are counted from the options its gate picked (weights at the largest forward option).

use super::dpc;
use super::geometry::ComputeLayer;
use super::policy::Precision;

/// Whether each layer is quantized under `p` (not a full-precision end).
fn quantized(p: &Precision, layers: &[ComputeLayer]) -> Vec<bool> {
    let n = layers.len();
    (0..n).map(|i| !(p.full_ends() && (layers[i].first || i == n - 1))).collect()
}

/// Which layers have a DFQ gate: under `fractrain-dfq`, the quantized convs with an input
/// gradient (the gate learns from it), i.e. not the first conv and not the classifier.
pub fn gated(p: &Precision, layers: &[ComputeLayer]) -> Vec<bool> {
    let n = layers.len();
    let q = quantized(p, layers);
    (0..n).map(|i| matches!(p, Precision::Dfq { .. }) && q[i] && !layers[i].first && i != n - 1).collect()
}

/// Forward and backward bits of each layer under `p`, with PFQ at `stage`; DFQ's gated layers
/// show their largest option (the bits of their weights).
pub fn layer_bits(p: &Precision, layers: &[ComputeLayer], stage: usize) -> Vec<(u8, u8)> {
    let quantized = quantized(p, layers);
    let uniform =
        |fw: u8, bw: u8| -> Vec<(u8, u8)> { quantized.iter().map(|&q| if q { (fw, bw) } else { (32, 32) }).collect() };
    match p {
        Precision::Static { fw, bw, .. } => uniform(*fw, *bw),
        Precision::Pfq { pfq, .. } => {
            let s = stage.min(pfq.fw.len() - 1);
            uniform(pfq.fw[s], pfq.bw[s])
        }
        Precision::Dpc { fw, bw, .. } => {
            dpc::bits(layers, &quantized, *fw).into_iter().zip(dpc::bits(layers, &quantized, *bw)).collect()
        }
        Precision::Dfq { dfq, .. } => uniform(dfq.fw[dfq.fw.len() - 1], dfq.bw[dfq.bw.len() - 1]),
    }
}

/// BitOPs per image of layer `l` with activations at `a` bits, weights at `w` and output
/// gradients at `g`.
pub fn layer_bitops(l: &ComputeLayer, a: u8, w: u8, g: u8) -> f64 {
    let (a, w, g) = (f64::from(a), f64::from(w), f64::from(g));
    let input_grad = if l.first { 0.0 } else { g * w };
    l.macs as f64 * (a * w + input_grad + g * a) / 1024.0
}

/// Cost of each DFQ option of a gated layer (which has an input gradient) relative to the
/// same layer under static fw=8/bw=16 with 8-bit weights; independent of the layer's size.
pub fn dfq_costs(fw: &[u8], bw: &[u8], weights: bool) -> Vec<f64> {
    let unit = ComputeLayer { name: String::new(), macs: 1024, params: 0, inputs: 0, depth: 1, first: false };
    let w = if weights { fw[fw.len() - 1] } else { 32 };
    let base = layer_bitops(&unit, 8, 8, 16);
    fw.iter().zip(bw).map(|(&a, &g)| layer_bitops(&unit, a, w, g) / base).collect()
}

/// BitOPs of one training step per image (forward and backward) with these bits; weights at
/// the forward bits when `weights`, else at 32.
pub fn step_bitops(layers: &[ComputeLayer], bits: &[(u8, u8)], weights: bool) -> f64 {
    layers.iter().zip(bits).map(|(l, &(fw, bw))| layer_bitops(l, fw, if weights { fw } else { 32 }, bw)).sum()
}

/// BitOPs per image over a run that spends `steps[s]` steps in PFQ stage `s` (one entry for
/// policies without stages).
pub fn run_bitops(p: &Precision, layers: &[ComputeLayer], steps: &[u64]) -> f64 {
    steps.iter().enumerate().map(|(s, &n)| n as f64 * step_bitops(layers, &layer_bits(p, layers, s), p.weights())).sum()
}

/// Fraction of BitOPs `p` saves against `baseline` over the same number of steps.
pub fn savings(p: &Precision, baseline: &Precision, layers: &[ComputeLayer], steps: &[u64]) -> f64 {
    let total: u64 = steps.iter().sum();
    1.0 - run_bitops(p, layers, steps) / run_bitops(baseline, layers, &[total])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model_name::ModelName;
    use crate::engine::precision::geometry::layers;

    fn prec(s: &str) -> Precision {
        s.parse().unwrap()
    }

    #[test]
    fn fp32_counts_macs_three_times_less_the_first_input_gradient() {
        let l = layers(ModelName::Tiny);
        let fp = vec![(32, 32); l.len()];
        let macs: u64 = l.iter().map(|c| c.macs).sum();
        assert_eq!(step_bitops(&l, &fp, true), (3 * macs - l[0].macs) as f64);
        let half = vec![(16, 16); l.len()];
        assert_eq!(step_bitops(&l, &half, true) * 4.0, step_bitops(&l, &fp, true));
        assert_eq!(step_bitops(&l, &fp, false), step_bitops(&l, &fp, true));
        assert!(step_bitops(&l, &half, false) > step_bitops(&l, &half, true));
    }

    #[test]
    fn resnet20_savings_against_static_8_16() {
        let l = layers(ModelName::Resnet20);
        let base = prec("static:fw=8,bw=16");
        assert!(savings(&base, &base, &l, &[100]).abs() < 1e-12);
        // Equal time in the four PFQ stages.
        let pfq = savings(&prec("fractrain-pfq"), &base, &l, &[25, 25, 25, 25]);
        assert!(pfq > 0.5, "pfq saves {pfq}");
        let dpc = savings(&prec("dpc"), &base, &l, &[100]);
        assert!(dpc > 0.16, "dpc saves {dpc}");
        eprintln!("resnet20 savings against static:fw=8,bw=16: pfq (equal stages) {pfq:.4}, dpc {dpc:.4}");
        // A run that never leaves the last stage (8/8) saves less than the whole schedule.
        assert!(savings(&prec("fractrain-pfq"), &base, &l, &[0, 0, 0, 100]) < pfq);
    }

    #[test]
    fn dfq_gates_the_middle_convs_and_costs_options_relative_to_8_16() {
        let l = layers(ModelName::Resnet20);
        let g = gated(&prec("fractrain-dfq"), &l);
        assert_eq!(g.iter().filter(|&&x| x).count(), l.len() - 2);
        assert!(!g[0] && !g[l.len() - 1]);
        assert!(gated(&prec("dpc"), &l).iter().all(|&x| !x));
        // (8 fw, 8 w, 16 bw) is the baseline itself; (4, 8, 8) costs 32+64+32 of 64+128+128.
        assert_eq!(dfq_costs(&[4, 8], &[8, 16], true), vec![0.4, 1.0]);
        let unit = &l[1];
        assert_eq!(layer_bitops(unit, 8, 8, 16), step_bitops(&l[1..2], &[(8, 16)], true));
    }
}
