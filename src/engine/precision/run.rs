//! The trainer's side of a precision policy: the bits of each compute layer this step (the
//! PFQ stage or the DPC map), the quantization plan handed to the layers, the BitOPs counted
//! per step against a static fw=8/bw=16 run (weights at 8 bits), and the state a checkpoint carries.

use std::collections::HashMap;

use super::bitops::{layer_bits, step_bitops};
use super::geometry::{layers, ComputeLayer};
use super::policy::Precision;
use super::schedule::PfqState;
use crate::engine::model::ModelName;
use crate::error::{FdsrError, Result};

/// What the layers of one step quantize: per compute layer (by name) its index (the RNG stream
/// of its output gradient) and its forward and backward bits; 32 bits is full precision.
#[derive(Clone, Debug, Default)]
pub struct QuantPlan {
    bits: HashMap<String, (u32, u8, u8)>,
    /// Seed of the stochastic rounding of output gradients.
    pub seed: u32,
    /// Training step (the RNG stream varies with it).
    pub step: u64,
    /// Weights are quantized to the forward bits too.
    pub weights: bool,
}

impl QuantPlan {
    /// Forward bits of layer `name`, `None` at full precision.
    pub fn forward_bits(&self, name: &str) -> Option<u32> {
        self.bits.get(name).and_then(|&(_, fw, _)| (fw < 32).then_some(u32::from(fw)))
    }

    /// Backward bits of layer `name` and its RNG stream, `None` at full precision.
    pub fn backward_bits(&self, name: &str) -> Option<(u32, u32)> {
        let &(i, _, bw) = self.bits.get(name)?;
        (bw < 32).then(|| (u32::from(bw), crate::reference::fakequant::stream(self.step, i)))
    }
}

/// The precision policy of a run (or none: full precision, still counted) and its counters.
#[derive(Clone, Debug)]
pub struct PrecisionRun {
    /// The policy; `None` computes in fp32.
    pub policy: Option<Precision>,
    /// The PFQ schedule's state (`fractrain-pfq` only).
    pub pfq: Option<PfqState>,
    layers: Vec<ComputeLayer>,
    baseline: Vec<(u8, u8)>,
    /// BitOPs of the steps taken (in fp32 MACs: MACs × bits × bits / 1024).
    pub bitops: f64,
    /// BitOPs the same steps take under `static:fw=8;bw=16`.
    pub baseline_bitops: f64,
}

impl PrecisionRun {
    /// The run of `policy` on `model`.
    pub fn new(model: ModelName, policy: Option<Precision>) -> PrecisionRun {
        let layers = layers(model);
        let full_ends = policy.as_ref().is_none_or(Precision::full_ends);
        let base = Precision::Static { fw: 8, bw: 16, full_ends, weights: true };
        let baseline = layer_bits(&base, &layers, 0);
        let pfq = match &policy {
            Some(Precision::Pfq { pfq, .. }) => Some(PfqState::new(pfq)),
            _ => None,
        };
        PrecisionRun { policy, pfq, layers, baseline, bitops: 0.0, baseline_bitops: 0.0 }
    }

    /// Forward and backward bits of every compute layer now, in forward order.
    pub fn bits(&self) -> Vec<(u8, u8)> {
        match &self.policy {
            Some(p) => layer_bits(p, &self.layers, self.pfq.as_ref().map_or(0, |s| s.stage)),
            None => vec![(32, 32); self.layers.len()],
        }
    }

    /// The compute layers, in forward order.
    pub fn layers(&self) -> &[ComputeLayer] {
        &self.layers
    }

    /// The plan of step `step`, `None` without a policy.
    pub fn plan(&self, seed: u32, step: u64) -> Option<QuantPlan> {
        self.policy.as_ref()?;
        let bits = self.layers.iter().zip(self.bits()).enumerate();
        let bits = bits.map(|(i, (l, (fw, bw)))| (l.name.clone(), (i as u32, fw, bw))).collect();
        Some(QuantPlan { bits, seed, step, weights: self.weights() })
    }

    /// Whether weights are quantized (fp32 runs count 32 bits anyway).
    pub fn weights(&self) -> bool {
        self.policy.as_ref().is_none_or(Precision::weights)
    }

    /// BitOPs of one step of `images` images at the current bits.
    pub fn step_bitops(&self, images: usize) -> f64 {
        step_bitops(&self.layers, &self.bits(), self.weights()) * images as f64
    }

    /// Counts one training step of `images` images.
    pub fn count_step(&mut self, images: usize) {
        self.bitops += self.step_bitops(images);
        self.baseline_bitops += step_bitops(&self.layers, &self.baseline, true) * images as f64;
    }

    /// Fraction of BitOPs saved against static fw=8/bw=16 over the steps counted.
    pub fn saved_vs_static(&self) -> Option<f64> {
        (self.baseline_bitops > 0.0).then(|| 1.0 - self.bitops / self.baseline_bitops)
    }

    /// Feeds an evaluation loss to the PFQ plateau rule; returns whether the stage advanced.
    pub fn observe(&mut self, loss: f64) -> bool {
        match (&self.policy, &mut self.pfq) {
            (Some(Precision::Pfq { pfq, .. }), Some(s)) => s.observe(pfq, loss),
            _ => false,
        }
    }

    /// The counters and the PFQ state as one line (f64 values by their bits).
    pub fn state(&self) -> String {
        let pfq = self.pfq.as_ref().map_or(String::new(), |s| format!(" {}", s.to_text()));
        format!("bitops={:016x} baseline={:016x}{pfq}", self.bitops.to_bits(), self.baseline_bitops.to_bits())
    }

    /// Restores [`Self::state`] (checked against this run's policy); nothing changes on error.
    pub fn restore(&mut self, state: &str) -> Result<()> {
        let bad = |why: &str| FdsrError::Corrupt(format!("precision state '{state}': {why}"));
        let mut parts = state.splitn(3, ' ');
        let mut float = |key: &str| -> Result<f64> {
            let v = parts.next().and_then(|f| f.strip_prefix(key)).ok_or_else(|| bad(&format!("no {key}")))?;
            u64::from_str_radix(v, 16).map(f64::from_bits).map_err(|_| bad("bad number"))
        };
        let (bitops, baseline) = (float("bitops=")?, float("baseline=")?);
        let pfq = match (&self.policy, parts.next()) {
            (Some(Precision::Pfq { pfq, .. }), Some(text)) => Some(PfqState::from_text(pfq, text)?),
            (Some(Precision::Pfq { .. }), None) => return Err(bad("no PFQ schedule state")),
            (_, None) => None,
            (_, Some(_)) => return Err(bad("a PFQ schedule state for a run without one")),
        };
        (self.bitops, self.baseline_bitops, self.pfq) = (bitops, baseline, pfq);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_counts_and_state_round_trip() {
        let mut r = PrecisionRun::new(ModelName::Tiny, Some("fractrain-pfq".parse().unwrap()));
        let plan = r.plan(3, 5).unwrap();
        // First conv and the classifier stay at full precision; the middle conv at stage 0.
        assert_eq!(plan.forward_bits("layer1.conv"), None);
        assert_eq!(plan.backward_bits("fc"), None);
        assert_eq!(plan.forward_bits("layer2.conv"), Some(3));
        assert_eq!(plan.backward_bits("layer2.conv").map(|b| b.0), Some(6));
        r.count_step(8);
        assert!(r.saved_vs_static().unwrap() > 0.0);
        for l in [1.0, 1.0, 1.0, 1.0, 1.0] {
            r.observe(l);
        }
        assert_eq!(r.pfq.as_ref().unwrap().stage, 1);
        let mut back = PrecisionRun::new(ModelName::Tiny, r.policy.clone());
        back.restore(&r.state()).unwrap();
        assert_eq!((back.bitops, back.baseline_bitops, back.pfq.clone()), (r.bitops, r.baseline_bitops, r.pfq.clone()));
        let mut none = PrecisionRun::new(ModelName::Tiny, None);
        assert!(none.plan(0, 0).is_none());
        assert!(none.restore(&r.state()).is_err());
        none.count_step(1);
        assert!(none.saved_vs_static().unwrap() < 0.0, "fp32 costs more than 8/16 bits");
    }
}
