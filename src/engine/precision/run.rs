//! The trainer's side of a precision policy: the bits of each compute layer this step (the
//! PFQ stage or the DPC map), the quantization plan handed to the layers, the BitOPs counted
//! per step against a static fw=8/bw=16 run (weights at 8 bits), PFQ's schedule (its checks,
//! the loss they read, the final stretch) and the state a checkpoint carries.
//! Under DFQ the gated layers' BitOPs come from the options their gates picked ([`PrecisionRun::add_gate_counts`]).

use std::collections::HashMap;

use super::bitops::{dfq_costs, gated, layer_bitops, layer_bits, step_bitops};
use super::geometry::{layers, ComputeLayer};
use super::pfq::Signal;
use super::policy::Precision;
use super::schedule::{Check, PfqState};
use crate::engine::model_name::ModelName;
pub use crate::engine::ops::gate::DfqPlan;
use crate::error::{FdsrError, Result};

/// What the layers of one step quantize: per compute layer (by name) its index (the RNG stream
/// of its output gradient), its forward and backward bits (32 bits is full precision) and
/// whether a DFQ gate picks its bits per input.
#[derive(Clone, Debug, Default)]
pub struct QuantPlan {
    bits: HashMap<String, (u32, u8, u8, bool)>,
    /// Seed of the stochastic rounding of output gradients.
    pub seed: u32,
    /// Training step (the RNG stream varies with it).
    pub step: u64,
    /// Weights are quantized to the forward bits too.
    pub weights: bool,
    /// The gates' options (`fractrain-dfq` only).
    pub dfq: Option<DfqPlan>,
}

impl QuantPlan {
    /// Forward bits of layer `name` (of its weights, where gated), `None` at full precision.
    pub fn forward_bits(&self, name: &str) -> Option<u32> {
        self.bits.get(name).and_then(|&(_, fw, _, _)| (fw < 32).then_some(u32::from(fw)))
    }

    /// Backward bits of layer `name` and its RNG stream, `None` at full precision.
    pub fn backward_bits(&self, name: &str) -> Option<(u32, u32)> {
        let &(i, _, bw, _) = self.bits.get(name)?;
        (bw < 32).then(|| (u32::from(bw), crate::reference::fakequant::stream(self.step, i)))
    }

    /// The gate options of layer `name` and the RNG stream of its Gumbel noise, where it is gated.
    pub fn gate(&self, name: &str) -> Option<(&DfqPlan, u32)> {
        let &(i, _, _, g) = self.bits.get(name)?;
        let stream = crate::reference::fakequant::stream(self.step, i | 0x8000_0000);
        self.dfq.as_ref().filter(|_| g).map(|d| (d, stream))
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
    gated: Vec<bool>,
    baseline: Vec<(u8, u8)>,
    /// BitOPs of the steps taken (in fp32 MACs: MACs × bits × bits / 1024).
    pub bitops: f64,
    /// BitOPs the same steps take under `static:fw=8;bw=16`.
    pub baseline_bitops: f64,
}

impl PrecisionRun {
    /// The run of `policy` on `model` over `total` steps (PFQ's cadence follows from them).
    pub fn new(model: ModelName, policy: Option<Precision>, total: u64) -> PrecisionRun {
        let layers = layers(model);
        let full_ends = policy.as_ref().is_none_or(Precision::full_ends);
        let base = Precision::Static { fw: 8, bw: 16, full_ends, weights: true };
        let baseline = layer_bits(&base, &layers, 0);
        let pfq = match &policy {
            Some(Precision::Pfq { pfq, .. }) => Some(PfqState::new(pfq, total)),
            _ => None,
        };
        let gated = policy.as_ref().map_or(vec![false; layers.len()], |p| gated(p, &layers));
        PrecisionRun { policy, pfq, layers, gated, baseline, bitops: 0.0, baseline_bitops: 0.0 }
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

    /// The layers with a DFQ gate, in forward order.
    pub fn gated_layers(&self) -> impl Iterator<Item = &ComputeLayer> {
        self.layers.iter().zip(&self.gated).filter(|(_, &g)| g).map(|(l, _)| l)
    }

    /// The plan of step `step`, `None` without a policy.
    pub fn plan(&self, seed: u32, step: u64) -> Option<QuantPlan> {
        let policy = self.policy.as_ref()?;
        let bits = self.layers.iter().zip(self.bits()).zip(&self.gated).enumerate();
        let bits = bits.map(|(i, ((l, (fw, bw)), &g))| (l.name.clone(), (i as u32, fw, bw, g))).collect();
        let dfq = match policy {
            Precision::Dfq { dfq: d, weights, .. } => Some(DfqPlan {
                fw: d.fw.iter().map(|&b| u32::from(b)).collect(),
                bw: d.bw.iter().map(|&b| u32::from(b)).collect(),
                costs: dfq_costs(&d.fw, &d.bw, *weights).into_iter().map(|c| c as f32).collect(),
                target: d.target as f32,
                alpha: d.alpha as f32,
                tau: d.tau as f32,
            }),
            _ => None,
        };
        Some(QuantPlan { bits, seed, step, weights: self.weights(), dfq })
    }

    /// Whether weights are quantized (fp32 runs count 32 bits anyway).
    pub fn weights(&self) -> bool {
        self.policy.as_ref().is_none_or(Precision::weights)
    }

    /// Counts one training step of `images` images (gated layers are counted by
    /// [`Self::add_gate_counts`]) and moves PFQ's schedule on by a step.
    pub fn count_step(&mut self, images: usize) {
        let w = self.weights();
        let bits = self.bits();
        let fixed = self.layers.iter().zip(&bits).zip(&self.gated).filter(|(_, &g)| !g);
        let fixed: f64 = fixed.map(|((l, &(fw, bw)), _)| layer_bitops(l, fw, if w { fw } else { 32 }, bw)).sum();
        self.bitops += fixed * images as f64;
        self.baseline_bitops += step_bitops(&self.layers, &self.baseline, true) * images as f64;
        if let (Some(Precision::Pfq { pfq, .. }), Some(s)) = (&self.policy, &mut self.pfq) {
            s.step(pfq);
        }
    }

    /// Counts the inputs gated layer `name` computed at each DFQ option since the last call.
    pub fn add_gate_counts(&mut self, name: &str, counts: &[f32]) -> Result<()> {
        let Some(Precision::Dfq { dfq, weights, .. }) = &self.policy else {
            return Err(FdsrError::InvalidConfig(format!("gate counts of {name} without a DFQ policy")));
        };
        let l = self.layers.iter().find(|l| l.name == name);
        let l = l.ok_or_else(|| FdsrError::InvalidConfig(format!("gate counts of an unknown layer {name}")))?;
        let w = if *weights { dfq.fw[dfq.fw.len() - 1] } else { 32 };
        let opts = dfq.fw.iter().zip(&dfq.bw).zip(counts);
        self.bitops += opts.map(|((&a, &g), &n)| f64::from(n) * layer_bitops(l, a, w, g)).sum::<f64>();
        Ok(())
    }

    /// Fraction of BitOPs saved against static fw=8/bw=16 over the steps counted.
    pub fn saved_vs_static(&self) -> Option<f64> {
        (self.baseline_bitops > 0.0).then(|| 1.0 - self.bitops / self.baseline_bitops)
    }

    /// The loss PFQ's plateau rule reads (`None` for other policies).
    pub fn signal(&self) -> Option<Signal> {
        match &self.policy {
            Some(Precision::Pfq { pfq, .. }) => Some(pfq.signal),
            _ => None,
        }
    }

    /// Whether PFQ's plateau rule is checked after the steps taken so far.
    pub fn check_due(&self) -> bool {
        match (&self.policy, &self.pfq) {
            (Some(Precision::Pfq { pfq, .. }), Some(s)) => s.due(pfq),
            _ => false,
        }
    }

    /// Adds the sum of `steps` per-step training losses read from the device (what the rule
    /// reads under `signal=train`); nothing for other policies.
    pub fn add_train_loss(&mut self, sum: f64, steps: u64) {
        if let Some(s) = &mut self.pfq {
            s.add_train_loss(sum, steps);
        }
    }

    /// Checks PFQ's plateau rule with the validation loss `val` (`signal=val`) or the mean
    /// training loss since the last check (`signal=train`); `None` when no check is due or its
    /// loss is missing.
    pub fn check(&mut self, val: Option<f64>) -> Option<Check> {
        let (Some(Precision::Pfq { pfq, .. }), Some(s)) = (&self.policy, &mut self.pfq) else { return None };
        if !s.due(pfq) {
            return None;
        }
        let loss = match pfq.signal {
            Signal::Train => s.take_train_loss()?,
            Signal::Val => val?,
        };
        Some(s.check(pfq, loss))
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
            (Some(Precision::Pfq { pfq, .. }), Some(text)) => {
                let total = self.pfq.as_ref().map_or(0, |s| s.cadence.total);
                Some(PfqState::from_text(pfq, total, text)?)
            }
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
        // Checked after every step of 100 (the final stretch starts after step 75).
        let mut r = PrecisionRun::new(ModelName::Tiny, Some("fractrain-pfq:checks=100".parse().unwrap()), 100);
        let plan = r.plan(3, 5).unwrap();
        // First conv and the classifier stay at full precision; the middle conv at stage 0.
        assert_eq!(plan.forward_bits("layer1.conv"), None);
        assert_eq!(plan.backward_bits("fc"), None);
        assert_eq!(plan.forward_bits("layer2.conv"), Some(3));
        assert_eq!(plan.backward_bits("layer2.conv").map(|b| b.0), Some(6));
        assert!(!r.check_due() && r.check(None).is_none(), "no check before the first step");
        for i in 1..=5 {
            r.count_step(8);
            assert!(r.check_due());
            r.add_train_loss(2.0, 2);
            assert_eq!(r.check(None).map(|c| (c.step, c.loss, c.turned)), Some((i, 1.0, i == 5)));
        }
        assert!(r.saved_vs_static().unwrap() > 0.0);
        assert_eq!((r.pfq.as_ref().unwrap().stage, r.signal()), (1, Some(Signal::Train)));
        r.count_step(8);
        assert!(r.check(None).is_none(), "no training loss was read since the last check");
        r.add_train_loss(0.5, 1);
        let mut back = PrecisionRun::new(ModelName::Tiny, r.policy.clone(), 100);
        back.restore(&r.state()).unwrap();
        assert_eq!((back.bitops, back.baseline_bitops, back.pfq.clone()), (r.bitops, r.baseline_bitops, r.pfq.clone()));
        let mut shorter = PrecisionRun::new(ModelName::Tiny, r.policy.clone(), 50);
        assert!(shorter.restore(&r.state()).unwrap_err().to_string().contains("100 steps, this run has 50"));
        // The final stretch: the last stage (8/8) from step 76 on, whatever the rule said.
        for _ in 6..75 {
            r.count_step(8);
        }
        assert_eq!((r.pfq.as_ref().unwrap().stage, r.pfq.as_ref().unwrap().final_step), (3, Some(75)));
        assert_eq!(r.plan(3, 75).unwrap().forward_bits("layer2.conv"), Some(8));
        assert!(!r.check_due());
        // Under signal=val the rule reads the validation loss it is given.
        let mut v =
            PrecisionRun::new(ModelName::Tiny, Some("fractrain-pfq:signal=val;checks=100".parse().unwrap()), 100);
        v.count_step(8);
        v.add_train_loss(2.0, 1);
        assert!(v.check(None).is_none());
        assert_eq!(v.check(Some(0.7)).map(|c| c.loss), Some(0.7));
        let mut none = PrecisionRun::new(ModelName::Tiny, None, 100);
        assert!(none.check(Some(1.0)).is_none() && none.signal().is_none());
        assert!(none.plan(0, 0).is_none());
        assert!(none.restore(&r.state()).is_err());
        none.count_step(1);
        assert!(none.saved_vs_static().unwrap() < 0.0, "fp32 costs more than 8/16 bits");
    }

    #[test]
    fn dfq_counts_gated_layers_from_the_gates() {
        let mut r = PrecisionRun::new(ModelName::Tiny, Some("fractrain-dfq:fw=4,8;bw=8,16".parse().unwrap()), 2);
        let plan = r.plan(1, 0).unwrap();
        assert!(plan.gate("layer2.conv").is_some() && plan.gate("layer1.conv").is_none() && plan.gate("fc").is_none());
        assert_eq!(plan.dfq.as_ref().unwrap().costs, vec![0.4, 1.0]);
        assert_eq!(r.gated_layers().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["layer2.conv"]);
        r.count_step(4);
        // All four images at the 8/16 option: the same BitOPs as the baseline.
        r.add_gate_counts("layer2.conv", &[0.0, 4.0]).unwrap();
        assert!(r.saved_vs_static().unwrap().abs() < 1e-12);
        r.count_step(4);
        r.add_gate_counts("layer2.conv", &[4.0, 0.0]).unwrap();
        assert!(r.saved_vs_static().unwrap() > 0.0);
        assert!(r.add_gate_counts("fc2", &[1.0, 0.0]).is_err());
        let mut s = PrecisionRun::new(ModelName::Tiny, Some("dpc".parse().unwrap()), 2);
        assert!(s.add_gate_counts("layer2.conv", &[1.0]).is_err());
    }
}
