//! The budget controller of `fdsr` (DESIGN.md §2.6). Every `every` steps a probe computes weight
//! gradients twice, from exact and from compressed activations (for any lossy policy: the
//! measurement alone is logged for the others). Under a budget with `,realloc` the average bits
//! per compressed value are the step's plan (the budget less what masks and exact tensors take)
//! and the controller shares them out per saved tensor to minimize `Σ_l κ_l·E_l(b_l)` under
//! `Σ_l n_l·b_l ≤ average·Σ_l n_l`, where `E_l(b)` is the codec's estimated error of tensor `l`
//! at `b` bits per value (bits per band chosen by [`choose_bits`] from its last analysis) and
//! the sensitivity `κ_l = r_l² / E_l(b_used)` is calibrated by the probe (`r_l²` the squared
//! relative error of the gradient of the layer's weight, plus those of the weights whose inputs
//! are recomputed from tensor `l`): the total never moves. Only an `,auto` policy
//! lets the average follow the error (above `high`: ×`raise`; below `low`: ÷`lower`). Every
//! decision is kept for the metrics log.

use std::collections::HashMap;

use super::saved::{TensorRecord, MIN_CODEC_BUDGET};
use crate::codec::alloc::{choose_bits, total_error};
use crate::codec::config::{BitChoice, FdsrConfig, Policy};
use crate::error::{FdsrError, Result};
use levels::{level_bits, spend, Item};

/// Step between budget levels the allocation considers (bits per value).
pub const LEVEL_STEP: f64 = 0.25;
/// A tensor's budget stays within this factor of the average.
pub const MAX_SPREAD: f64 = 2.0;
/// A tensor's sensitivity stays within this factor of the median one (measured on the
/// gradient-error frontier of `cnn`: ×2 held back the allocation at 9–16x; BENCHMARKS.md).
pub const SENSITIVITY_SPREAD: f64 = 16.0;

/// Share of a batch the gradient-error probe runs on by default: `⌈n / PROBE_SHARE⌉` images
/// (`ControllerConfig::share`).
pub const PROBE_SHARE: usize = 8;

/// When and how the controller moves the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerConfig {
    /// Steps between probes (the first probe is at step `every − 1`).
    pub every: u64,
    /// Relative gradient error under which the budget is lowered.
    pub low: f64,
    /// Relative gradient error above which the budget is raised.
    pub high: f64,
    /// Factor of a raise.
    pub raise: f64,
    /// Divisor of a lowering.
    pub lower: f64,
    /// Least average budget (bits per value).
    pub min_budget: f64,
    /// Largest average budget.
    pub max_budget: f64,
    /// The probe runs on the first `⌈n / share⌉` images of a batch of `n` (1: all of it, which
    /// holds the fp32 form of every activation of the batch while it runs).
    pub share: usize,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            every: 50,
            low: 0.1,
            high: 0.3,
            raise: 1.25,
            lower: 1.1,
            min_budget: 1.0,
            max_budget: 8.0,
            share: PROBE_SHARE,
        }
    }
}

impl ControllerConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        let ok = self.every > 0
            && self.share > 0
            && self.low.is_finite()
            && self.high.is_finite()
            && 0.0 <= self.low
            && self.low < self.high
            && self.raise > 1.0
            && self.lower > 1.0
            && MIN_CODEC_BUDGET <= self.min_budget
            && self.min_budget <= self.max_budget
            && self.max_budget <= 32.0;
        if ok {
            Ok(())
        } else {
            Err(FdsrError::InvalidConfig(format!(
                "controller {self:?}: needs every > 0, share > 0, 0 ≤ low < high, raise and lower > 1, \
                 {MIN_CODEC_BUDGET} ≤ min budget ≤ max budget ≤ 32"
            )))
        }
    }
}

/// One parameter's gradient from exact and from compressed activations.
#[derive(Clone, Debug, PartialEq)]
pub struct GradPair {
    /// Parameter name (`conv2.weight`).
    pub name: String,
    /// `‖g_compressed − g_exact‖²`.
    pub diff2: f64,
    /// `‖g_exact‖²`.
    pub norm2: f64,
}

impl GradPair {
    /// `‖g_c − g_e‖ / ‖g_e‖` (0 for a zero gradient).
    pub fn relative(&self) -> f64 {
        if self.norm2 > 0.0 {
            (self.diff2 / self.norm2).sqrt()
        } else {
            0.0
        }
    }
}

/// What one probe decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Training step of the probe.
    pub step: u64,
    /// Root mean square of the relative errors of the weights whose layer input is compressed.
    pub grad_error: f64,
    /// Relative error per weight.
    pub per_weight: Vec<(String, f64)>,
    /// Average budget before the probe (`None` where the controller only measures).
    pub budget_before: Option<f64>,
    /// Average budget after it.
    pub budget: Option<f64>,
    /// Budget per saved tensor for the next steps (bits per value, an own zero mask included).
    pub budgets: Vec<(String, f64)>,
}

/// The controller's state: the average budget, the per-tensor budgets and the decisions made.
#[derive(Clone, Debug)]
pub struct Controller {
    /// Configuration.
    pub config: ControllerConfig,
    /// Average bits per compressed value since the last probe (`None`: not yet probed, or a
    /// policy without a budget, which the controller only measures).
    pub budget: Option<f64>,
    adaptive: bool,
    auto: bool,
    /// The policy that shares out budgets (`adaptive`): the device weighs each tensor's errors
    /// as its weights at the tensor's budget say ([`FdsrConfig::weights_at`]), so the estimate of
    /// each budget level does too.
    fdsr: Option<FdsrConfig>,
    budgets: HashMap<String, f64>,
    decisions: Vec<Decision>,
}

/// The weight whose gradient a saved tensor feeds (`conv2.input` → `conv2.weight`).
fn weight_of(tensor: &str) -> Option<String> {
    tensor.strip_suffix(".input").map(|l| format!("{l}.weight"))
}

/// The squared relative gradient errors that stored tensor `r`'s codec error causes: of its own
/// layer's weight and of the weights of the tensors recomputed from it (`None`: none measured).
fn squared_error_of(r: &TensorRecord, records: &[TensorRecord], rel: &HashMap<&str, f64>) -> Option<f64> {
    let from_r = records.iter().filter(|d| d.derived_from.as_deref() == Some(r.name.as_str()));
    let errors: Vec<f64> = std::iter::once(r)
        .chain(from_r)
        .filter_map(|t| weight_of(&t.name))
        .filter_map(|w| rel.get(w.as_str()).copied())
        .collect();
    (!errors.is_empty()).then(|| errors.iter().map(|e| e * e).sum())
}

impl Controller {
    /// A controller for a lossy `policy` (`None` for fp32 and `lossless`). It shares out budgets
    /// only for `fdsr` under a budget with `,realloc` (moving the total only with `,auto`); for
    /// the others its probes only measure the gradient error.
    pub fn for_policy(policy: Option<&Policy>, config: ControllerConfig) -> Result<Option<Controller>> {
        config.validate()?;
        let (adaptive, auto, fdsr) = match policy {
            None | Some(Policy::Lossless) => return Ok(None),
            Some(Policy::Fdsr(c @ FdsrConfig { bits: BitChoice::Budget(_), realloc: true, .. })) => {
                (true, c.auto, Some(c.clone()))
            }
            Some(_) => (false, false, None),
        };
        Ok(Some(Controller {
            config,
            budget: None,
            adaptive,
            auto,
            fdsr,
            budgets: HashMap::new(),
            decisions: Vec::new(),
        }))
    }

    /// Whether it shares out budgets (`fdsr` under a budget) rather than only measuring.
    pub fn adaptive(&self) -> bool {
        self.adaptive
    }

    /// Whether `step` is a probe step.
    pub fn due(&self, step: u64) -> bool {
        step % self.config.every == self.config.every - 1
    }

    /// Whether its probes move bits between tensors (`fdsr` budgets with `,realloc`), which
    /// needs what the device measured of each tensor; otherwise they only measure.
    pub fn reallocates(&self) -> bool {
        self.adaptive
    }

    /// The per-tensor budgets now (empty before the first probe: the policy's budget applies).
    pub fn budgets(&self) -> &HashMap<String, f64> {
        &self.budgets
    }

    /// Takes the decisions made since the last call (for the metrics log).
    pub fn take_decisions(&mut self) -> Vec<Decision> {
        std::mem::take(&mut self.decisions)
    }

    /// Updates the allocation (and with `,auto` the average) from a probe at `step`: `grads` of
    /// every weight, `records` of the probed pass's saved tensors, `average` the step plan's
    /// bits per compressed value (the total the allocation keeps unless `,auto` moves it).
    pub fn update(&mut self, step: u64, grads: &[GradPair], records: &[TensorRecord], average: f64) -> Decision {
        let rel: HashMap<&str, f64> = grads.iter().map(|g| (g.name.as_str(), g.relative())).collect();
        let probed: Vec<f64> =
            records.iter().filter_map(|r| weight_of(&r.name)).filter_map(|w| rel.get(w.as_str()).copied()).collect();
        let grad_error = if probed.is_empty() {
            0.0
        } else {
            (probed.iter().map(|r| r * r).sum::<f64>() / probed.len() as f64).sqrt()
        };
        let before = self.budget;
        let c = self.config;
        if self.adaptive {
            let mut b = if self.auto { self.budget.unwrap_or(average) } else { average };
            if self.auto && grad_error > c.high {
                b = (b * c.raise).min(c.max_budget.max(average));
            } else if self.auto && grad_error < c.low {
                b = (b / c.lower).max(c.min_budget.min(average));
            }
            self.budget = Some(b);
            if let Some(budgets) = self.allocate(b, &rel, records) {
                self.budgets = budgets;
            }
        }
        let mut budgets: Vec<(String, f64)> = self.budgets.iter().map(|(k, v)| (k.clone(), *v)).collect();
        budgets.sort_by(|a, b| a.0.cmp(&b.0));
        let mut per_weight: Vec<(String, f64)> = rel.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        per_weight.sort_by(|a, b| a.0.cmp(&b.0));
        let d = Decision { step, grad_error, per_weight, budget_before: before, budget: self.budget, budgets };
        self.decisions.push(d.clone());
        d
    }

    /// The state a resumed run needs, as one metadata string:
    /// `every,low,high,raise,lower,min,max;budget;name=b,name=b…` (f64 printed exactly).
    pub fn state(&self) -> String {
        let c = self.config;
        let mut b: Vec<String> = self.budgets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        b.sort();
        format!(
            "{},{},{},{},{},{},{};{};{}",
            c.every,
            c.low,
            c.high,
            c.raise,
            c.lower,
            c.min_budget,
            c.max_budget,
            self.budget.map_or("none".to_string(), |b| b.to_string()),
            b.join(",")
        )
    }

    /// Restores [`Self::state`]; the configuration must be this controller's.
    pub fn restore(&mut self, state: &str) -> Result<()> {
        let bad = || FdsrError::Corrupt(format!("controller state '{state}' is malformed"));
        let mut parts = state.split(';');
        let (Some(cfg), Some(budget), Some(budgets), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let mine = self.state();
        if mine.split(';').next() != Some(cfg) {
            return Err(FdsrError::InvalidConfig(format!(
                "the checkpoint's controller ({cfg}) differs from this run's ({})",
                mine.split(';').next().unwrap_or("")
            )));
        }
        let budget = match budget {
            "none" => None,
            b => Some(b.parse::<f64>().map_err(|_| bad())?),
        };
        if budget.is_some() && !self.adaptive() {
            return Err(bad());
        }
        let mut map = HashMap::new();
        for kv in budgets.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(bad)?;
            map.insert(k.to_string(), v.parse::<f64>().map_err(|_| bad())?);
        }
        self.budget = budget;
        self.budgets = map;
        Ok(())
    }

    /// Levels from the codec's least budget to twice the largest, [`LEVEL_STEP`] apart.
    fn levels(&self) -> Vec<f64> {
        let (lo, hi) = (MIN_CODEC_BUDGET, 2.0 * self.config.max_budget);
        let n = ((hi - lo) / LEVEL_STEP).floor() as usize;
        (0..=n).map(|i| lo + i as f64 * LEVEL_STEP).collect()
    }

    /// Greedy allocation: every tensor starts at its least level within `budget / MAX_SPREAD`
    /// that its metadata allows; the move of best error reduction per bit, to any higher level,
    /// is taken while the total stays within `budget` per value. `None` when even the start does
    /// not fit.
    fn allocate(
        &self,
        budget: f64,
        rel: &HashMap<&str, f64>,
        records: &[TensorRecord],
    ) -> Option<HashMap<String, f64>> {
        let levels = self.levels();
        let mut items = Vec::new();
        let mut kappa = Vec::new();
        for r in records {
            let (Some(a), Some(used)) = (&r.analysis, r.budget) else { continue };
            // As the store does: an own mask takes one bit of the budget where that leaves the codec
            // its least, else the tensor goes without one.
            let codec = |b: f64| if r.own_mask && b - 1.0 >= MIN_CODEC_BUDGET { b - 1.0 } else { b };
            // Bits as the device would choose them at b, their error measured as at the budget used.
            let codec_levels: Vec<f64> = levels.iter().map(|&b| codec(b)).collect();
            let errors: Vec<Option<f64>> = level_bits(a, self.fdsr.as_ref(), &codec_levels)
                .into_iter()
                .map(|bits| bits.map(|bits| total_error(a, &bits)))
                .collect();
            let e_used = choose_bits(a, used).ok().map(|bits| total_error(a, &bits));
            kappa.push(match (squared_error_of(r, records, rel), e_used) {
                (Some(r2), Some(e)) if e > 0.0 => Some(r2 / e),
                _ => None,
            });
            items.push(Item { name: &r.name, numel: r.fp32_bytes as f64 / 4.0, errors });
        }
        // Sensitivities relative to their median, clamped: one probe is a noisy measure, and it
        // attributes each weight's whole gradient error to its own input, although errors also
        // flow down from later layers.
        let mut known: Vec<f64> = kappa.iter().flatten().copied().collect();
        known.sort_by(f64::total_cmp);
        let median = known.get(known.len() / 2).copied().filter(|m| *m > 0.0).unwrap_or(1.0);
        let spread = SENSITIVITY_SPREAD;
        let kappa: Vec<f64> =
            kappa.iter().map(|k| k.map_or(1.0, |k| (k / median).clamp(1.0 / spread, spread))).collect();
        let total: f64 = items.iter().map(|i| i.numel).sum();
        let allowed = budget * total;
        // Each tensor stays within a factor MAX_SPREAD of the average, starting at its least level.
        let hi = levels.iter().rposition(|&l| l <= budget * MAX_SPREAD).unwrap_or(0);
        let mut at: Vec<usize> = items
            .iter()
            .map(|i| {
                let lo = levels.iter().position(|&l| l >= budget / MAX_SPREAD).unwrap_or(0);
                (lo..levels.len()).find(|&l| i.errors[l].is_some()).unwrap_or(levels.len() - 1)
            })
            .collect();
        let spent = spend(&items, &kappa, &levels, &mut at, hi, allowed);
        (spent <= allowed + 1e-9)
            .then(|| items.iter().zip(&at).map(|(i, &l)| (i.name.to_string(), levels[l])).collect())
    }
}

mod levels;
#[cfg(test)]
mod tests;
